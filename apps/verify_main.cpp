// `verify`: a thin command line over the verifier library.
#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/cli_inputs.hpp"
#include "apps/replay_flags.hpp"
#include "sim/json_io.hpp"
#include "sim/systemc/replay.hpp"
#include "traces/html_report.hpp"
#include "traces/replay_files.hpp"
#include "traces/report.hpp"
#include "verifier/bound.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;

namespace {
constexpr int kValid = 0, kInvalid = 1, kMalformed = 2;
}

// libsystemc (linked for --replay) provides main() and calls sc_main.
extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{
      "Verify an MLSys 2026 schedule against the rule book and compute its latency.\n"
      "Exit codes: 0 valid, 1 the schedule breaks a rule, 2 malformed input or bad usage."};
  std::string problem_path, solution_path;
  bool strict = false, json_out = false, steps = false, bound_only = false, replay = false;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_option("solution", solution_path, "solution JSON (omit with --lower-bound)");
  ModelFlags model_flags;
  model_flags.add_model_to(app);
  app.add_flag("--strict", strict, "a wrong reported latency (M27) is an error");
  app.add_flag("--json", json_out, "print one JSON report on stdout");
  app.add_flag("--steps", steps,
               "list every step: slices loaded/reused, compute per op, stores, working set");
  app.add_flag("--lower-bound", bound_only, "print the rule book's lower bounds for the problem and exit");
  double cover_seconds = kReportCoverSeconds;
  app.add_option("--cover-seconds", cover_seconds,
                 "seconds for the cover bound in the certified bound (docs/bounds.md#theorem-6); only a "
                 "complete one counts; 0 skips it (a validity check in milliseconds)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--replay", replay, "after the analytic check, replay the schedule in the SystemC engine");
  ReplayFlags replay_flags;
  replay_flags.add_to(app, "with --replay: ");
  std::string html_path;
  app.add_option("--html", html_path, "also write the HTML report (as the report program does) to this file");
  app.add_option("--max-steps", model_flags.max_steps,
                 "largest number of steps --steps and --replay walk one by one (the total never needs it)")
      ->check(CLI::PositiveNumber)
      ->default_val(kDefaultMaxSteps);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kMalformed;
  }
  VerifyOptions options = model_flags.options();
  options.strict = strict;
  try {
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    LowerBound lb = lower_bound(problem, graph);
    lb.certified = certified_bound_with_cover(problem, graph, options.model, cover_seconds).bound;
    if (bound_only) {
      if (json_out) {
        std::cout << nlohmann::json{{"compute_full_k", lb.compute_full_k},
                                    {"compute_native_k", lb.compute_native_k},
                                    {"io", lb.io},
                                    {"bound", lb.bound(options.model.matmul_compute)},
                                    {"certified_bound", lb.certified}}
                         .dump(2)
                  << "\n";
      } else {
        std::cout << "compute bound (full-k): " << format_number(lb.compute_full_k) << "\n"
                  << "compute bound (native-k): " << format_number(lb.compute_native_k) << "\n"
                  << "io bound: " << format_number(lb.io) << "\n"
                  << "lower bound: " << format_number(lb.bound(options.model.matmul_compute)) << "\n"
                  << "certified bound: " << format_certified(lb.certified)
                  << " (bound PROBLEM gives its terms)\n";
      }
      return kValid;
    }
    if (solution_path.empty()) {
      std::cerr << "error: a SOLUTION.json is required (or use --lower-bound)\n";
      return kMalformed;
    }
    const Schedule schedule = load_schedule(solution_path, problem);
    if (steps || replay)
      check_step_budget(problem, graph, schedule, options.model, options.max_walk_steps,
                        steps ? "--steps" : "--replay", solution_path);
    if (steps && !json_out)
      options.on_step = [&](const SubgraphModel& m, const StepDetail& d) {
        print_step(std::cout, m.index(), d, problem.fast_memory_capacity);
      };
    const ScheduleReport report = verify_schedule(problem, graph, schedule, options);
    if (report.refused) throw InputError(solution_path, "--max-steps", "limits", *report.refused);
    nlohmann::json json_report = report_to_json(report, lb, options.model.matmul_compute);
    if (!json_out) print_report(std::cout, report, lb, options.model.matmul_compute);
    if (replay && report.valid) {
      const ReplayResult r = replay_flags.replay(problem, graph, schedule, options.model, solution_path);
      const std::string& timing = replay_flags.timing;
      json_report["replay_timing"] = timing;
      json_report["replay_total_latency"] = r.completed ? nlohmann::json(r.total_latency) : nullptr;
      json_report["replay_peak_occupancy"] = r.peak_occupancy;
      if (!json_out)
        std::cout << "replay total (" << (timing == "contest" ? "contest" : "overlapped, what-if")
                  << "): " << format_number(r.total_latency) << ", peak occupancy " << r.peak_occupancy
                  << "\n";
      if (r.error) std::cerr << "replay error: " << describe_error(*r.error) << "\n";
    }
    if (!html_path.empty())
      write_schedule_report(html_path, problem_path, solution_path, problem, graph, schedule, report,
                            options.model, options.max_walk_steps);
    if (json_out) std::cout << json_report.dump(2) << "\n";
    for (const auto& w : report.warnings) std::cerr << "warning: " << w.describe() << "\n";
    if (report.error) std::cerr << "error: " << describe_error(*report.error) << "\n";
    return report.valid ? kValid : kInvalid;
  } catch (const InputError& e) {
    if (json_out)
      std::cout << nlohmann::json{{"valid", false},
                                  {"malformed", true},
                                  {"errors",
                                   {{{"rule", e.rule()},
                                     {"file", e.file()},
                                     {"field", e.field()},
                                     {"message", e.what()}}}}}
                       .dump(2)
                << "\n";
    std::cerr << "error: " << e.what() << "\n";
    return kMalformed;
  }
}
