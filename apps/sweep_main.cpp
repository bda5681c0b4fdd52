// `sweep`: latency against fast-memory capacity and bandwidth. Thin CLI over solver/sweep.
//   sweep PROBLEM --capacity A:B:N|LIST --bandwidth A:B:N|LIST [--timeout S] [--threads N] [--shard I/N] -o
//   DIR sweep merge DIR... -o OUT
#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "apps/cli_inputs.hpp"
#include "sim/json_io.hpp"
#include "solver/sweep.hpp"
#include "traces/atomic_file.hpp"
#include "traces/sweep_csv.hpp"
#include "traces/sweep_report.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop.store(true);
}

// Writes the points (sorted into grid order) and a copy of the problem, so that a merge needs nothing else.
void finish(const std::string& dir, const std::string& name, const Problem& problem,
            std::vector<SweepPoint> points) {
  std::sort(points.begin(), points.end(), [](const SweepPoint& a, const SweepPoint& b) {
    return a.capacity != b.capacity ? a.capacity < b.capacity : a.bandwidth < b.bandwidth;
  });
  write_sweep(dir, name, points);
  write_file_atomic(dir + "/problem.json", problem_to_json(problem).dump(1) + "\n");
  int feasible = 0;
  for (const SweepPoint& p : points) feasible += p.feasible;
  std::cerr << "wrote " << dir << "/sweep.csv, " << dir << "/sweep.html and " << feasible << " schedules ("
            << points.size() - feasible << " points without a valid schedule)\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Solve a problem at every (fast-memory capacity, bandwidth) point of a grid and draw latency against "
      "capacity.\nExit codes: 0 written, 2 bad input or usage."};
  std::string problem_path, out_dir, capacity_text, bandwidth_text, shard_text = "0/1";
  double timeout = 0;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t seed = 1;
  int64_t max_orders = 0;
  app.add_option("problem", problem_path, "problem JSON (its capacity and bandwidth are replaced)");
  app.add_option("--capacity", capacity_text,
                 "capacities: A:B:N (N values from A to B, log-spaced) or v1,v2,...");
  app.add_option("--bandwidth", bandwidth_text, "bandwidths: A:B:N (log-spaced) or v1,v2,...");
  app.add_option("--timeout", timeout, "seconds per point (default: the contest's, by op count)");
  app.add_option("--threads", threads, "search threads per point")->check(CLI::Range(1, 256));
  app.add_option("--seed", seed, "random seed of the search");
  app.add_option("--orders", max_orders,
                 "per point: stop after this many orders (reproducible with --threads 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--shard", shard_text,
                 "solve only part I of N of the grid (0 <= I < N); merge the parts later");
  ModelFlags model_flags;
  model_flags.add_model_to(app);
  app.add_option("-o,--out", out_dir, "output directory")->required();
  std::vector<std::string> merge_dirs;
  CLI::App* merge = app.add_subcommand("merge", "combine the directories of sharded runs into -o DIR");
  merge->add_option("dirs", merge_dirs, "directories written by sweep --shard")->required();
  merge->fallthrough();  // -o DIR after the directories belongs to the main command
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const ModelOptions model = model_flags.model();
  try {
    if (merge->parsed()) {
      const std::string first = merge_dirs.front() + "/problem.json";
      const Problem problem = load_problem(first);
      const Graph graph = analyze_graph(problem, first);
      std::map<std::pair<double, double>, SweepPoint> all;
      for (const std::string& dir : merge_dirs) {
        if (problem_to_json(load_problem(dir + "/problem.json")) != problem_to_json(problem))
          throw InputError(dir + "/problem.json", "", "usage", "differs from " + first + ": not one sweep");
        for (SweepPoint& p : read_sweep(dir, problem)) {
          const auto key = std::pair{p.capacity, p.bandwidth};
          if (all.count(key))
            throw InputError(dir + "/sweep.csv", "", "usage", "a point appears in two shards");
          all[key] = std::move(p);
        }
      }
      std::vector<SweepPoint> points;
      for (auto& [key, p] : all) points.push_back(std::move(p));
      // Fill each point's numbers from its own schedule, then re-price across the shards.
      for (SweepPoint& p : points) {
        p.lower_bound =
            lower_bound(problem_at(problem, p.capacity, p.bandwidth), graph).bound(model.matmul_compute);
        if (!p.schedule) continue;
        const Schedule own = *p.schedule;
        if (!price_at_point(problem, graph, model, own, p))
          throw InputError(p.schedule_file, "", "usage", "this schedule is not valid at its own point");
      }
      const int improved = reprice_dominated(problem, graph, model, points);
      std::cerr << "merged " << points.size() << " points from " << merge_dirs.size() << " directories; "
                << improved << " improved by a schedule of a point with less capacity or bandwidth\n";
      finish(out_dir, problem_path.empty() ? first : problem_path, problem, points);
      return 0;
    }
    if (problem_path.empty() || capacity_text.empty() || bandwidth_text.empty())
      throw InputError("", "", "usage",
                       "sweep needs PROBLEM, --capacity and --bandwidth (or: sweep merge DIR...)");
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    SweepOptions options;
    options.capacities = parse_sweep_values(capacity_text, "--capacity", /*whole=*/true);
    options.bandwidths = parse_sweep_values(bandwidth_text, "--bandwidth");
    std::tie(options.shard, options.shards) = parse_shard(shard_text);
    options.solve.timeout_seconds =
        search_seconds_within(timeout > 0 ? timeout : default_timeout_seconds(problem.num_ops()));
    options.solve.threads = threads;
    options.solve.seed = seed;
    options.solve.max_orders = max_orders;
    options.solve.model = model;
    options.on_progress = [](const std::string& line) { std::cerr << line << "\n"; };
    for (double c : options.capacities)  // the readers' ranges apply to every point
      if (c > 4611686018427387904.0) throw InputError("", "--capacity", "M1", "capacities must be <= 2^62");
    for (double b : options.bandwidths)
      if (b < 1e-9 || b > 1e18)
        throw InputError("", "--bandwidth", "M1", "bandwidths must be in [1e-9, 1e18]");
    const int total = static_cast<int>(options.capacities.size() * options.bandwidths.size());
    std::cerr << "sweep: " << options.capacities.size() << " capacities x " << options.bandwidths.size()
              << " bandwidths = " << total << " points; shard " << options.shard << "/" << options.shards
              << ", the search stops after " << options.solve.timeout_seconds << " s at each\n";
    std::vector<SweepPoint> points = run_sweep(problem, graph, options, g_stop);
    const int improved = reprice_dominated(problem, graph, model, points);
    std::cerr << improved << " points improved by a schedule of a point with less capacity or bandwidth\n";
    finish(out_dir, problem_path, problem, points);
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
