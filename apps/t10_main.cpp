// `t10`: verify, replay and search compute-shift plans (rule book docs/t10-model.md).
//   t10 verify PROBLEM.json PLAN.json [--profile strict|engdesign] [--json]
//   t10 simulate PROBLEM.json PLAN.json [--timing grader|exchange|calibrated] [--trace F.json] [--json]
//   t10 solve PROBLEM.json [--timing grader|exchange|calibrated] [--top N] [--json]
//   t10 report PROBLEM.json PLAN.json -o F.html;  t10 sweep PROBLEM.json ... -o DIR
//   t10 compile MODEL [-o PROGRAM.json] [--reconcile exact|heuristic] [--json] [--trace F] [--html F]
//   t10 sweep MODEL --sram LIST --exchange-bytes-per-cycle LIST [--shard I/N] -o DIR;  t10 merge DIR... -o
//   OUT t10 serve MODEL.json --batch B --seq L [--layers N] [--chip PRESET|FILE] [--policy ours|elk|fastest]
//   [--json]
// Exit codes: 0 accepted / found, 1 the plan breaks a rule (or nothing accepted), 2 malformed input or usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "apps/t10_compile.hpp"
#include "apps/t10_serve.hpp"
#include "sim/json_io.hpp"
#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_replay.hpp"
#include "sim/violation.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"
#include "traces/atomic_file.hpp"
#include "traces/html_page.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/report.hpp"
#include "traces/t10_report.hpp"
#include "traces/t10_sweep_report.hpp"
#include "traces/t10_text.hpp"

using namespace mlsys;
using namespace mlsys::t10;
using nlohmann::json;

namespace {

// Everything the subcommands read from the command line.
struct Args {
  std::string problem_path, plan_path, profile_name = "strict", trace_path, out_path, sweep_dir;
  std::string timing_name = "grader", solve_timing = "grader", report_timing = "calibrated",
              functional_check = "auto", sweep_timing = "exchange";
  bool json_out = false, representative = false, functional = false;
  uint64_t seed = 1;
  size_t top = 1;
  int64_t core_tracks = 0, max_simulations = 5000, sweep_simulations = 5000;
  std::vector<double> sweep_bandwidths{2, 4, 8};
  std::vector<int64_t> sweep_srams{638976};
  Profile profile() const { return profile_name == "engdesign" ? Profile::EngDesign : Profile::Strict; }
};

// Each throws InputError (exit 2) naming the file and the rule.
t10::Problem read_problem(const std::string& path, Profile profile) {
  t10::Problem problem = t10::parse_problem(read_json_file(path), path);
  check_profile(problem, profile, path);
  return problem;
}

Plan read_plan(const std::string& path) {
  return parse_plan(read_json_file(path), path);
}

int report_violations(const Evaluation& e) {
  for (const auto& v : e.violations) std::cerr << "error: [" << v.code << "] " << v.message << "\n";
  return e.accepted ? 0 : 1;
}

int run_sweep(const Args& a, const t10::Problem& problem) {
  size_t done = 0;
  const size_t total = a.sweep_bandwidths.size() * a.sweep_srams.size();
  const CoreTiming timing = *core_timing_from(a.sweep_timing);
  const size_t variants = timing == CoreTiming::Calibrated ? a.sweep_srams.size() : total;
  const auto points = sweep_chip(
      problem, a.profile(), a.sweep_bandwidths, a.sweep_srams, a.sweep_simulations,
      [&](const ChipVariantPoint& p) {
        std::cerr << "variant " << ++done << "/" << variants << " ("
                  << format_number(p.exchange_bytes_per_cycle) << " B/cycle, SRAM " << p.sram_bytes_per_core
                  << " B): "
                  << (p.best ? format_number(sweep_cycles(p)) + " cycles" : std::string("no accepted plan"))
                  << "\n";
      },
      timing);
  std::filesystem::create_directories(a.sweep_dir);
  write_file_atomic(a.sweep_dir + "/t10-sweep.csv", chip_sweep_csv(points));
  write_file_atomic(a.sweep_dir + "/t10-sweep.html", chip_sweep_html(a.problem_path, points));
  std::cout << a.sweep_dir << "/t10-sweep.csv\n" << a.sweep_dir << "/t10-sweep.html\n";
  return std::any_of(points.begin(), points.end(), [](const auto& p) { return p.best.has_value(); }) ? 0 : 1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_solve_exchange(const Args& a, const t10::Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  std::cerr << "ranking plans by the exchange timing (" << a.profile_name << ")...\n";
  const ExchangeSearchResult r = search_exchange(problem, a.profile(), a.top, a.max_simulations);
  std::cerr << r.accepted << " accepted plans, " << r.simulated << " simulated on every core in "
            << format_number(seconds_since(start)) << " s; "
            << (r.proven ? "the bound proves the best" : "stopped at --max-simulations: not proven") << "\n";
  if (r.top.empty()) {
    std::cerr << "error: no accepted plan could be simulated\n";
    return 1;
  }
  print_exchange_search(std::cout, r, a.json_out);
  return 0;
}

int run_solve_calibrated(const Args& a, const t10::Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  std::cerr << "pricing every plan of the calibrated model's search space...\n";
  const CalibratedSearchResult r = search_calibrated(problem, a.top);
  std::cerr << r.evaluated << " plans over " << r.fops << " F_op priced, " << r.accepted << " accepted, in "
            << format_number(seconds_since(start)) << " s; exhaustive: the best is proven\n";
  if (r.top.empty()) {
    std::cerr << "error: the calibrated model accepts no plan of this problem\n";
    return 1;
  }
  // The best plans on every core: the engine's makespan is the model's total (checked, not assumed).
  CoreSimOptions options;
  options.timing = CoreTiming::Calibrated;
  std::vector<CoresResult> on_cores;
  for (const CalibratedRankedPlan& rp : r.top) on_cores.push_back(simulate_cores(problem, rp.plan, options));
  print_calibrated_search(std::cout, r, on_cores, a.json_out);
  return 0;
}

int run_solve_grader(const Args& a, const t10::Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  std::cerr << "searching all plans (" << a.profile_name << ")...\n";
  const SearchResult r = search(problem, a.profile(), a.top);
  std::cerr << "evaluated " << r.evaluated << " plans in " << format_number(seconds_since(start)) << " s ("
            << r.pruned_fops << " F_op pruned by the compute bound)\n";
  if (r.top.empty()) {
    std::cerr << "error: no plan is accepted under " << a.profile_name << "\n";
    return 1;
  }
  print_grader_search(std::cout, problem, r, a.profile(), a.json_out);
  return 0;
}

int run_report(const Args& a, const t10::Problem& problem, const Plan& plan, const Evaluation& e) {
  PlanReportPage page;
  page.problem_name = a.problem_path;
  page.plan_name = a.plan_path;
  page.problem = &problem;
  page.plan = &plan;
  page.evaluation = &e;
  page.profile = a.profile_name;
  if (e.cost) {
    page.replay = replay_plan(problem, plan);
    CoreSimOptions every_core;
    every_core.timing = CoreTiming::Exchange;
    page.cores = simulate_cores(problem, plan, every_core);
    if (!e.derived.misaligned) {  // the calibrated model prices chains only
      every_core.timing = CoreTiming::Calibrated;
      page.calibrated = simulate_cores(problem, plan, every_core);
    }
  }
  page.timing = a.report_timing;
  std::cerr << "searching the best plans for the report...\n";
  page.top = search(problem, a.profile(), a.top > 1 ? a.top : 10).top;
  page.calibrated_top = search_calibrated(problem, a.top > 1 ? a.top : 10).top;
  if (page.timing == "exchange")
    page.exchange_top = search_exchange(problem, a.profile(), a.top > 1 ? a.top : 10).top;
  page.docs = docs_location(a.out_path);
  write_file_atomic(a.out_path, plan_report_html(page));
  std::cout << a.out_path << "\n";
  return report_violations(e);
}

int run_simulate_cores(const Args& a, const t10::Problem& problem, const Plan& plan, const Evaluation& e) {
  CoreSimOptions options;
  options.timing = *core_timing_from(a.timing_name);
  options.functional = a.functional;
  options.functional_check = a.functional_check == "exact"       ? FunctionalCheck::Exact
                             : a.functional_check == "projected" ? FunctionalCheck::Projected
                                                                 : FunctionalCheck::Auto;
  options.seed = a.seed;
  options.core_tracks = a.core_tracks;
  std::cerr << "simulating " << e.derived.cores << " cores, " << e.derived.steps << " compute steps"
            << (a.functional ? " (functional)" : "") << "...\n";
  PerfettoTrace trace("t10 all cores: " + a.plan_path);
  const CoresResult r = simulate_cores(problem, plan, options, a.trace_path.empty() ? nullptr : &trace);
  if (!a.trace_path.empty()) trace.write(a.trace_path);
  if (a.json_out) {
    json j = evaluation_to_json(problem, plan, e, a.profile());
    j["cores"] = cores_result_to_json(r, options.timing);
    std::cout << j.dump(2) << "\n";
  } else {
    print_breakdown(std::cout, problem, plan, e);
    print_cores_result(std::cout, r, options.timing);
  }
  if (r.violation) {
    const CoreViolation& v = *r.violation;
    std::cerr << "error: data consistency (T35 on every core): "
              << (v.step >= 0 ? "step " + std::to_string(v.step) + ", " : "") << "core (" << v.core[0] << ", "
              << v.core[1] << ", " << v.core[2] << "), tensor " << v.tensor << ": " << v.message
              << (r.misaligned ? " (misaligned plan: its operands are never moved)" : "") << "\n";
    return 1;
  }
  return report_violations(e);
}

int run_replay(const Args& a, const t10::Problem& problem, const Plan& plan, const Evaluation& e) {
  PerfettoTrace trace("t10 replay: " + a.plan_path);
  const ReplaySummary s = replay_plan(problem, plan, a.trace_path.empty() ? nullptr : &trace);
  if (!a.trace_path.empty()) trace.write(a.trace_path);
  if (a.json_out) {
    json j = evaluation_to_json(problem, plan, e, a.profile());
    j["replay"] = {{"total_cycles", s.total},          {"makespan", s.makespan},
                   {"compute_steps", s.compute_steps}, {"shift_events", s.shift_events},
                   {"peak_bytes", s.peak_bytes},       {"consistent", s.consistent},
                   {"misaligned", s.misaligned}};
    std::cout << j.dump(2) << "\n";
  } else {
    print_breakdown(std::cout, problem, plan, e);
    std::cout << "replay: total " << format_number(s.total) << " cycles (makespan "
              << format_number(s.makespan) << "), " << s.compute_steps << " compute steps, " << s.shift_events
              << " shift events, SRAM peak " << s.peak_bytes << " B on each of " << e.derived.cores
              << " identical cores"
              << (s.misaligned ? "; misaligned: operands not moved, shift charged 0" : "") << "\n";
  }
  if (!s.consistent) std::cerr << "error: data consistency (T35): " << s.consistency_error << "\n";
  return report_violations(e);
}

void add_options(CLI::App& app, Args& a, CLI::App*& verify, CLI::App*& simulate, CLI::App*& report,
                 CLI::App*& solve, CLI::App*& sweep);

}  // namespace

extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{
      "T10 mode: compute-shift MatMul plans on an IPU-style chip (verify, simulate, solve), and whole "
      "networks compiled into one program (compile)."};
  Args a;
  CLI::App *verify, *simulate, *report, *solve, *sweep;
  add_options(app, a, verify, simulate, report, solve, sweep);
  CompileArgs compile_args;
  CLI::App* compile = add_compile_command(app, compile_args);
  ServeArgs serve_args;
  CLI::App* serve = add_serve_command(app, serve_args);
  std::string shard = "0/1";
  sweep->add_option("--shard", shard, "a whole model's sweep: only the points I of N (merge with t10 merge)");
  std::vector<std::string> merge_dirs;
  std::string merge_out;
  CLI::App* merge = app.add_subcommand("merge", "combine the -o directories of sharded model sweeps");
  merge->add_option("dirs", merge_dirs, "directories written by t10 sweep MODEL --shard I/N")->required();
  merge->add_option("-o,--out", merge_out, "directory for the merged t10-model-sweep.csv")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*compile) return run_compile(compile_args);
    if (*serve) return run_serve(serve_args);
    if (*merge) return run_model_merge(merge_dirs, merge_out);
    if (*sweep && is_model_file(a.problem_path))
      return run_model_sweep(a.problem_path, a.sweep_srams, a.sweep_bandwidths, shard, a.sweep_dir);
    const t10::Problem problem = read_problem(a.problem_path, a.profile());
    if (*sweep) return run_sweep(a, problem);
    if (*solve && a.solve_timing == "exchange") return run_solve_exchange(a, problem);
    if (*solve && a.solve_timing == "calibrated") return run_solve_calibrated(a, problem);
    if (*solve) return run_solve_grader(a, problem);
    const Plan plan = read_plan(a.plan_path);
    const Evaluation e = evaluate(problem, plan, a.profile());
    if (*report) return run_report(a, problem, plan, e);
    if (*verify) {
      if (a.json_out)
        std::cout << evaluation_to_json(problem, plan, e, a.profile()).dump(2) << "\n";
      else
        print_breakdown(std::cout, problem, plan, e);
      return report_violations(e);
    }
    if (!e.cost) {
      std::cerr << "error: [" << e.violations.front().code << "] " << e.violations.front().message
                << " (the plan has no defined cost to replay)\n";
      return 1;
    }
    return a.representative ? run_replay(a, problem, plan, e) : run_simulate_cores(a, problem, plan, e);
  } catch (const std::invalid_argument& refused) {  // beyond what the search or the engine takes on
    std::cerr << "error: " << refused.what() << "\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

namespace {

void add_options(CLI::App& app, Args& a, CLI::App*& verify, CLI::App*& simulate, CLI::App*& report,
                 CLI::App*& solve, CLI::App*& sweep) {
  app.require_subcommand(1);
  auto common = [&](CLI::App* sub, bool with_plan) {
    sub->add_option("problem", a.problem_path, "problem JSON (t10-problem/1)")->required();
    if (with_plan) sub->add_option("plan", a.plan_path, "plan JSON (the seed's seven fields)")->required();
    sub->add_option("--profile", a.profile_name,
                    "strict (default: SRAM, chains, splits) or engdesign (the benchmark's grader)")
        ->check(CLI::IsMember({"strict", "engdesign"}));
    sub->add_flag("--json", a.json_out, "print JSON on stdout");
  };
  const std::vector<std::string> timings{"grader", "exchange", "calibrated"};
  verify = app.add_subcommand("verify", "check a plan and compute its cycles and score");
  common(verify, true);
  simulate = app.add_subcommand("simulate", "replay a plan event by event in SystemC");
  common(simulate, true);
  simulate->add_option("--trace", a.trace_path, "write a Chrome/Perfetto trace-event JSON file");
  simulate
      ->add_option(
          "--timing", a.timing_name,
          "grader (default: each phase costs what the rule book charges), exchange (bulk-synchronous IPU "
          "exchange: per-tile bandwidth, sync, AMP compute of each core's real block) or calibrated (the "
          "T10 authors' IPU-fitted cost model, docs/t10-model.md#calibrated)")
      ->check(CLI::IsMember(timings));
  simulate->add_flag(
      "--functional", a.functional,
      "multiply real integer matrices with the pieces each core holds; C must equal A·B exactly");
  simulate->add_option("--seed", a.seed, "seed of the functional mode's matrices");
  simulate
      ->add_option(
          "--functional-check", a.functional_check,
          "auto (default: exact up to 2^24 elements per operand, else projected), exact (every element "
          "of C) or projected (Freivalds: C·r = A·(B·r) modulo 2^61 - 1, memory bounded)")
      ->check(CLI::IsMember({"auto", "exact", "projected"}));
  simulate
      ->add_option("--core-tracks", a.core_tracks,
                   "with --trace: also one track for each of the first N cores")
      ->check(CLI::Range(int64_t{0}, kIpuCoresPerChip));
  simulate->add_flag("--representative", a.representative,
                     "replay one representative core (rule book T31) instead of every core");
  report = app.add_subcommand("report", "write an HTML report of a plan (breakdown, SRAM, best plans)");
  common(report, true);
  report->add_option("-o,--out", a.out_path, "HTML file to write")->required();
  report
      ->add_option("--timing", a.report_timing,
                   "the timing of the headline, the breakdown and the ranking: calibrated (default, the "
                   "IPU-fitted model), exchange or grader (the rule book's)")
      ->check(CLI::IsMember(timings));
  report->add_option("--top", a.top, "best plans of the search to list (default 10)")
      ->check(CLI::Range(1, 1000));
  solve = app.add_subcommand("solve", "exhaustive search for the fastest accepted plan");
  common(solve, false);
  solve->add_option("--top", a.top, "print the N best plans")->check(CLI::Range(1, 1000));
  solve
      ->add_option(
          "--timing", a.solve_timing,
          "grader (default: the rule book's cycles, exhaustive), exchange (rank by the all-cores engine's "
          "exchange timing, plans simulated in order of a lower bound) or calibrated (every plan of the "
          "calibrated model's search space priced, the best simulated on every core)")
      ->check(CLI::IsMember(timings));
  solve
      ->add_option("--max-simulations", a.max_simulations,
                   "with --timing exchange: at most this many plans simulated")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  sweep = app.add_subcommand(
      "sweep", "the best plan under the exchange timing for each chip variant (exchange bandwidth x SRAM)");
  common(sweep, false);
  sweep->add_option("--exchange-bytes-per-cycle", a.sweep_bandwidths, "exchange bandwidths per tile (a list)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sweep->add_option("--sram", a.sweep_srams, "SRAM bytes per core (a list)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sweep
      ->add_option("--max-simulations", a.sweep_simulations, "per variant: at most this many plans simulated")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  sweep->add_option("-o,--out", a.sweep_dir, "directory for t10-sweep.csv and t10-sweep.html")->required();
  sweep
      ->add_option(
          "--timing", a.sweep_timing,
          "exchange (default: every bandwidth x SRAM variant) or calibrated (the IPU-fitted model, which "
          "has no bandwidth: one point per SRAM size)")
      ->check(CLI::IsMember({"exchange", "calibrated"}));
}

}  // namespace
