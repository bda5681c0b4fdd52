// `t10`: verify, replay and search compute-shift plans (rule book docs/t10-model.md).
//   t10 verify PROBLEM.json PLAN.json [--profile strict|engdesign] [--json]
//   t10 simulate PROBLEM.json PLAN.json [--profile ...] [--trace F.json] [--json]
//   t10 solve PROBLEM.json [--profile ...] [--top N] [--json]
// Exit codes: 0 accepted / found, 1 the plan breaks a rule (or nothing accepted), 2 malformed input or usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "sim/json_io.hpp"
#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_replay.hpp"
#include "sim/violation.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"
#include "traces/html_page.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/report.hpp"
#include "traces/t10_report.hpp"
#include "traces/t10_sweep_report.hpp"
#include "traces/atomic_file.hpp"

using namespace mlsys;
using namespace mlsys::t10;
using nlohmann::json;

namespace {

struct Malformed {
  std::string message;
};

t10::Problem read_problem(const std::string& path, Profile profile) {
  auto parsed = t10::parse_problem(read_json_file(path));
  if (auto* f = std::get_if<InputFault>(&parsed)) throw Malformed{path + ": [" + f->code + "] " + f->message};
  auto problem = std::get<t10::Problem>(parsed);
  if (auto f = check_profile(problem, profile)) throw Malformed{path + ": [" + f->code + "] " + f->message};
  return problem;
}

Plan read_plan(const std::string& path) {
  auto parsed = parse_plan(read_json_file(path));
  if (auto* f = std::get_if<InputFault>(&parsed)) throw Malformed{path + ": [" + f->code + "] " + f->message};
  return std::get<Plan>(parsed);
}

void print_breakdown(const t10::Problem& p, const Plan& plan, const Evaluation& e) {
  std::cout << plan_to_json(plan).dump() << "\n";
  if (e.cost) {
    const Cost& c = *e.cost;
    std::cout << "total " << format_number(c.total) << " cycles = comp " << format_number(c.comp)
              << " (compute " << format_number(c.compute) << ", load " << format_number(c.load) << ", store "
              << format_number(c.store) << ") + shift " << c.shift << " + broadcast " << c.bcast
              << " + reduce " << c.reduce << "\n";
  }
  std::cout << "cores " << e.derived.cores << " of " << p.chip.cores << ", SRAM peak " << e.derived.hot_bytes
            << " B per core (capacity " << p.chip.sram_bytes_per_core << ")";
  if (e.score) std::cout << ", benchmark score " << format_number(*e.score);
  std::cout << "\n";
}

}  // namespace

extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{"T10 mode: compute-shift MatMul plans on an IPU-style chip (verify, simulate, solve)."};
  app.require_subcommand(1);
  std::string problem_path, plan_path, profile_name = "strict", trace_path;
  bool json_out = false;
  size_t top = 1;
  auto common = [&](CLI::App* sub, bool with_plan) {
    sub->add_option("problem", problem_path, "problem JSON (t10-problem/1)")->required();
    if (with_plan) sub->add_option("plan", plan_path, "plan JSON (the seed's seven fields)")->required();
    sub->add_option("--profile", profile_name,
                    "strict (default: SRAM, chains, splits) or engdesign (the benchmark's grader)")
        ->check(CLI::IsMember({"strict", "engdesign"}));
    sub->add_flag("--json", json_out, "print JSON on stdout");
  };
  CLI::App* verify = app.add_subcommand("verify", "check a plan and compute its cycles and score");
  common(verify, true);
  CLI::App* simulate = app.add_subcommand("simulate", "replay a plan event by event in SystemC");
  common(simulate, true);
  simulate->add_option("--trace", trace_path, "write a Chrome/Perfetto trace-event JSON file");
  std::string timing_name = "grader";
  bool representative = false, functional = false;
  uint64_t seed = 1;
  simulate
      ->add_option(
          "--timing", timing_name,
          "grader (default: each phase costs what the rule book charges) or exchange (bulk-synchronous "
          "IPU exchange: per-tile bandwidth, sync, AMP compute of each core's real block)")
      ->check(CLI::IsMember({"grader", "exchange"}));
  simulate->add_flag(
      "--functional", functional,
      "multiply real integer matrices with the pieces each core holds; C must equal A·B exactly");
  simulate->add_option("--seed", seed, "seed of the functional mode's matrices");
  int64_t core_tracks = 0;
  simulate
      ->add_option("--core-tracks", core_tracks, "with --trace: also one track for each of the first N cores")
      ->check(CLI::Range(int64_t{0}, int64_t{1472}));
  simulate->add_flag("--representative", representative,
                     "replay one representative core (rule book T31) instead of every core");
  std::string out_path;
  CLI::App* report =
      app.add_subcommand("report", "write an HTML report of a plan (breakdown, SRAM, best plans)");
  common(report, true);
  report->add_option("-o,--out", out_path, "HTML file to write")->required();
  report->add_option("--top", top, "best plans of the search to list (default 10)")
      ->check(CLI::Range(1, 1000));
  CLI::App* solve = app.add_subcommand("solve", "exhaustive search for the fastest accepted plan");
  common(solve, false);
  solve->add_option("--top", top, "print the N best plans")->check(CLI::Range(1, 1000));
  std::string solve_timing = "grader";
  int64_t max_simulations = 5000;
  solve
      ->add_option("--timing", solve_timing,
                   "grader (default: the rule book's cycles, exhaustive) or exchange (rank by the all-cores "
                   "engine's exchange timing, plans simulated in order of a lower bound)")
      ->check(CLI::IsMember({"grader", "exchange"}));
  solve
      ->add_option("--max-simulations", max_simulations,
                   "with --timing exchange: at most this many plans simulated")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  CLI::App* sweep = app.add_subcommand(
      "sweep", "the best plan under the exchange timing for each chip variant (exchange bandwidth x SRAM)");
  common(sweep, false);
  std::vector<double> sweep_bandwidths{2, 4, 8};
  std::vector<int64_t> sweep_srams{638976};
  std::string sweep_dir;
  int64_t sweep_simulations = 5000;
  sweep->add_option("--exchange-bytes-per-cycle", sweep_bandwidths, "exchange bandwidths per tile (a list)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sweep->add_option("--sram", sweep_srams, "SRAM bytes per core (a list)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  sweep->add_option("--max-simulations", sweep_simulations, "per variant: at most this many plans simulated")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  sweep->add_option("-o,--out", sweep_dir, "directory for t10-sweep.csv and t10-sweep.html")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const Profile profile = profile_name == "engdesign" ? Profile::EngDesign : Profile::Strict;
  try {
    const t10::Problem problem = read_problem(problem_path, profile);
    if (*sweep) {
      size_t done = 0;
      const size_t total = sweep_bandwidths.size() * sweep_srams.size();
      const auto points = sweep_chip(
          problem, profile, sweep_bandwidths, sweep_srams, sweep_simulations, [&](const ChipVariantPoint& p) {
            std::cerr << "variant " << ++done << "/" << total << " ("
                      << format_number(p.exchange_bytes_per_cycle) << " B/cycle, SRAM "
                      << p.sram_bytes_per_core << " B): "
                      << (p.best ? format_number(p.best->exchange_total) + " cycles"
                                 : std::string("no accepted plan"))
                      << "\n";
          });
      std::filesystem::create_directories(sweep_dir);
      write_file_atomic(sweep_dir + "/t10-sweep.csv", chip_sweep_csv(points));
      write_file_atomic(sweep_dir + "/t10-sweep.html", chip_sweep_html(problem_path, points));
      std::cout << sweep_dir << "/t10-sweep.csv\n" << sweep_dir << "/t10-sweep.html\n";
      return std::any_of(points.begin(), points.end(), [](const auto& p) { return p.best.has_value(); }) ? 0
                                                                                                         : 1;
    }
    if (*solve && solve_timing == "exchange") {
      const auto start = std::chrono::steady_clock::now();
      std::cerr << "ranking plans by the exchange timing (" << profile_name << ")...\n";
      const ExchangeSearchResult r = search_exchange(problem, profile, top, max_simulations);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << r.accepted << " accepted plans, " << r.simulated << " simulated on every core in "
                << format_number(seconds) << " s; "
                << (r.proven ? "the bound proves the best" : "stopped at --max-simulations: not proven")
                << "\n";
      if (r.top.empty()) {
        std::cerr << "error: no accepted plan could be simulated\n";
        return 1;
      }
      if (json_out) {
        json list = json::array();
        for (const ExchangeRankedPlan& rp : r.top)
          list.push_back({{"plan", plan_to_json(rp.plan)},
                          {"exchange_cycles", rp.exchange_total},
                          {"grader_cycles", rp.grader_total}});
        std::cout << json{{"top", list},
                          {"proven", r.proven},
                          {"simulated", r.simulated},
                          {"accepted", r.accepted}}
                         .dump(2)
                  << "\n";
      } else {
        for (const ExchangeRankedPlan& rp : r.top)
          std::cout << plan_to_json(rp.plan).dump() << "  exchange " << format_number(rp.exchange_total)
                    << " cycles, grader " << format_number(rp.grader_total) << "\n";
      }
      return 0;
    }
    if (*solve) {
      const auto start = std::chrono::steady_clock::now();
      std::cerr << "searching all plans (" << profile_name << ")...\n";
      const SearchResult r = search(problem, profile, top);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << "evaluated " << r.evaluated << " plans in " << format_number(seconds) << " s ("
                << r.pruned_fops << " F_op pruned by the compute bound)\n";
      if (r.top.empty()) {
        std::cerr << "error: no plan is accepted under " << profile_name << "\n";
        return 1;
      }
      if (json_out) {
        json list = json::array();
        for (const RankedPlan& rp : r.top)
          list.push_back({{"plan", plan_to_json(rp.plan)}, {"total_cycles", rp.total}});
        const Evaluation e = evaluate(problem, r.top[0].plan, profile);
        json j = evaluation_to_json(problem, r.top[0].plan, e, profile);
        j["ties"] = r.ties;
        j["top"] = list;
        j["evaluated"] = r.evaluated;
        std::cout << j.dump(2) << "\n";
      } else {
        for (size_t i = 0; i < r.top.size(); ++i) {
          if (r.top.size() > 1) std::cout << "#" << i + 1 << " ";
          print_breakdown(problem, r.top[i].plan, evaluate(problem, r.top[i].plan, profile));
        }
        std::cout << "plans with the best total: " << r.ties << "\n";
      }
      return 0;
    }
    const Plan plan = read_plan(plan_path);
    const Evaluation e = evaluate(problem, plan, profile);
    if (*report) {
      PlanReportPage page;
      page.problem_name = problem_path;
      page.plan_name = plan_path;
      page.problem = &problem;
      page.plan = &plan;
      page.evaluation = &e;
      page.profile = profile_name;
      if (e.cost) {
        page.replay = replay_plan(problem, plan);
        CoreSimOptions every_core;
        every_core.timing = CoreTiming::Exchange;
        page.cores = simulate_cores(problem, plan, every_core);
      }
      std::cerr << "searching the best plans for the report...\n";
      page.top = search(problem, profile, top > 1 ? top : 10).top;
      page.docs = docs_location(out_path);
      write_file_atomic(out_path, plan_report_html(page));
      std::cout << out_path << "\n";
      for (const auto& v : e.violations) std::cerr << "error: [" << v.code << "] " << v.message << "\n";
      return e.accepted ? 0 : 1;
    }
    if (*verify) {
      if (json_out)
        std::cout << evaluation_to_json(problem, plan, e, profile).dump(2) << "\n";
      else
        print_breakdown(problem, plan, e);
    } else {
      if (!e.cost) {
        std::cerr << "error: [" << e.violations.front().code << "] " << e.violations.front().message
                  << " (the plan has no defined cost to replay)\n";
        return 1;
      }
      if (!representative) {
        CoreSimOptions options;
        options.timing = timing_name == "exchange" ? CoreTiming::Exchange : CoreTiming::Grader;
        options.functional = functional;
        options.seed = seed;
        options.core_tracks = core_tracks;
        std::cerr << "simulating " << e.derived.cores << " cores, " << e.derived.steps << " compute steps"
                  << (functional ? " (functional)" : "") << "...\n";
        PerfettoTrace trace("t10 all cores: " + plan_path);
        CoresResult r;
        try {
          r = simulate_cores(problem, plan, options, trace_path.empty() ? nullptr : &trace);
        } catch (const std::invalid_argument& refused) {
          std::cerr << "error: " << refused.what() << "\n";
          return 2;
        }
        if (!trace_path.empty()) trace.write(trace_path);
        if (json_out) {
          json j = evaluation_to_json(problem, plan, e, profile);
          j["cores"] = cores_result_to_json(r, options.timing);
          std::cout << j.dump(2) << "\n";
        } else {
          print_breakdown(problem, plan, e);
          std::cout << "all cores: " << r.cores << " (" << r.empty_cores << " with an empty block), "
                    << r.steps << " compute steps, " << r.transfers << " transfers, " << r.bytes_moved
                    << " bytes moved; SRAM peak " << r.peak_sram_bytes << " B on core ("
                    << r.peak_sram_core[0] << ", " << r.peak_sram_core[1] << ", " << r.peak_sram_core[2]
                    << ") (rule book hot " << r.rule_book_hot_bytes << " B)\n";
          std::cout << "grader timing: total " << format_number(r.total) << " cycles\n";
          if (options.timing == CoreTiming::Exchange)
            std::cout << "exchange timing: total " << format_number(r.exchange_total) << " cycles (compute "
                      << format_number(r.exchange_compute) << ", exchange "
                      << format_number(r.exchange_exchange) << ", sync " << format_number(r.exchange_sync)
                      << "), " << format_display(100 * (r.exchange_total / r.total - 1))
                      << " % against the grader\n";
          if (r.functional_checked && !r.violation) std::cout << "functional: C = A·B exactly\n";
        }
        if (r.violation) {
          const CoreViolation& v = *r.violation;
          std::cerr << "error: data consistency (T35 on every core): "
                    << (v.step >= 0 ? "step " + std::to_string(v.step) + ", " : "") << "core (" << v.core[0]
                    << ", " << v.core[1] << ", " << v.core[2] << "), tensor " << v.tensor << ": " << v.message
                    << (r.misaligned ? " (misaligned plan: its operands are never moved)" : "") << "\n";
          return 1;
        }
        for (const auto& v : e.violations) std::cerr << "error: [" << v.code << "] " << v.message << "\n";
        return e.accepted ? 0 : 1;
      }
      PerfettoTrace trace("t10 replay: " + plan_path);
      const ReplaySummary s = replay_plan(problem, plan, trace_path.empty() ? nullptr : &trace);
      if (!trace_path.empty()) trace.write(trace_path);
      if (json_out) {
        json j = evaluation_to_json(problem, plan, e, profile);
        j["replay"] = {{"total_cycles", s.total},          {"makespan", s.makespan},
                       {"compute_steps", s.compute_steps}, {"shift_events", s.shift_events},
                       {"peak_bytes", s.peak_bytes},       {"consistent", s.consistent},
                       {"misaligned", s.misaligned}};
        std::cout << j.dump(2) << "\n";
      } else {
        print_breakdown(problem, plan, e);
        std::cout << "replay: total " << format_number(s.total) << " cycles (makespan "
                  << format_number(s.makespan) << "), " << s.compute_steps << " compute steps, "
                  << s.shift_events << " shift events, SRAM peak " << s.peak_bytes << " B on each of "
                  << e.derived.cores << " identical cores"
                  << (s.misaligned ? "; misaligned: operands not moved, shift charged 0" : "") << "\n";
      }
      if (!s.consistent) std::cerr << "error: data consistency (T35): " << s.consistency_error << "\n";
    }
    for (const auto& v : e.violations) std::cerr << "error: [" << v.code << "] " << v.message << "\n";
    return e.accepted ? 0 : 1;
  } catch (const std::invalid_argument& refused) {  // beyond what the search or the engine takes on
    std::cerr << "error: " << refused.what() << "\n";
    return 2;
  } catch (const Malformed& m) {
    std::cerr << "error: " << m.message << "\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
