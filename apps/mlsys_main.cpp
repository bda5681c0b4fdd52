// `mlsys`: the contest solver. `mlsys PROBLEM.json OUTPUT.json` writes the best schedule found (atomically,
// first every op alone, then again on every improvement); `mlsys PROBLEM.json TIMEOUT_SECONDS` prints it.
// The deadline is the process's: --timeout counts from its start, reading the problem included, and a
// watchdog ends the process just before it with whatever schedule is written (docs/solver.md#deadline).
#include <CLI/CLI.hpp>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "apps/cli_inputs.hpp"
#include "sim/json_io.hpp"
#include "solver/search.hpp"
#include "traces/atomic_file.hpp"
#include "traces/report.hpp"
#include "verifier/bound.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;
using Clock = std::chrono::steady_clock;

namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop.store(true);
}

// When the kernel started this process, on the steady clock: its start time in /proc/self/stat (clock ticks
// since boot) against CLOCK_BOOTTIME. Loading the program counts against the deadline too. Without /proc,
// now.
Clock::time_point process_start_time() {
  const Clock::time_point now = Clock::now();
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const auto paren = text.rfind(')');  // the command name may hold spaces and parentheses
  timespec boot{};
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (paren == std::string::npos || ticks_per_second <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return now;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)  // field 22 is starttime
    if (i == 22) {
      const double started = std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks_per_second);
      const double since = boot.tv_sec + boot.tv_nsec * 1e-9 - started;
      if (since >= 0 && since < 60)
        return now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(since));
    }
  return now;
}

// What the program knows of the search as it runs: enough for --json-stats if the watchdog must end it.
struct Outcome {
  std::timed_mutex io;  // one writer of the output and stats files at a time
  bool written = false;
  double cost = 0, time_to_first = 0, time_to_best = 0;
  int64_t improvements = 0;
  std::string strategy;
  std::atomic<double> certified_bound{0};  // 0 until the search has computed it
  std::string printed_form;                // the best schedule's text, when it goes to stdout
};

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Rounded to the millisecond, for progress lines.
std::string seconds_text(double s) {
  return format_number(std::round(s * 1000) / 1000);
}

// The watchdog ends the process this long before the deadline, after waiting at most kWriteWait for a
// write in progress: that, exiting (unmapping a large heap) and a busy machine's scheduling delay fit in the
// 0.25 s the promise allows after the deadline.
constexpr double kExitMargin = 0.02, kWriteWait = 0.1;
}  // namespace

int main(int argc, char** argv) {
  const Clock::time_point process_start = process_start_time();
  CLI::App app{
      "Search a schedule for an MLSys 2026 problem.\n"
      "  mlsys PROBLEM.json OUTPUT.json        writes OUTPUT.json (contest form)\n"
      "  mlsys PROBLEM.json TIMEOUT_SECONDS    prints the schedule on stdout (older form)\n"
      "Exit codes: 0 a schedule was written, 1 no valid schedule exists, 2 bad input or usage."};
  std::string problem_path, target, stats_path;
  double timeout = 0;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t seed = 1;
  int64_t max_orders = 0;
  bool progress = false, exhaustive = false;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_option("output", target, "OUTPUT.json, or a timeout in seconds (then the schedule goes to stdout)")
      ->required();
  app.add_option(
      "--timeout", timeout,
      "seconds from the process's start, reading the problem included: the schedule is written and the "
      "process gone by then (default by op count as in the contest: <=5 ops 2, <=20 5, <=32 15, <=63 30, "
      "<=103 60, else 120)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "search threads (default: all cores)")->check(CLI::Range(1, 256));
  app.add_option("--seed", seed, "random seed");
  app.add_option("--orders", max_orders,
                 "stop after segmenting this many orders (a work budget; with --threads 1 the result is then "
                 "reproducible on any machine, unless the timeout comes first)")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max(), "a count of at least 1"));
  app.add_flag(
      "--exhaustive", exhaustive,
      "instead of the timed search, try every grouping of the ops into connected subgraphs (any size, "
      "no recomputation) with every retention choice, tile count and k, a branch and bound pruned by "
      "rule-book floors; no time limit unless --timeout is given, then --json-stats gives what it proved "
      "(exact_space_bound). Graphs of at most 64 ops and 10,000 sets of done ops only. The default search "
      "runs it too on graphs of at most 20 ops");
  ModelFlags model_flags;
  model_flags.add_model_to(app);
  app.add_flag("--progress", progress, "print each improvement (cost, time, evaluations/s) on stderr");
  app.add_option("--json-stats", stats_path, "write search statistics as JSON to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string output_path;
  if (char* end = nullptr; !target.empty() && (std::strtod(target.c_str(), &end), *end == '\0') &&
                           !std::filesystem::exists(target)) {
    if (timeout == 0) timeout = std::strtod(target.c_str(), nullptr);  // older form: PROBLEM TIMEOUT
  } else {
    output_path = target;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  Outcome outcome;
  auto write_output = [&](const std::string& text) {
    if (!output_path.empty())
      write_file_atomic(output_path, text);
    else
      std::cout << text << std::flush;
  };
  // The stats file's fields the watchdog knows too; the search's own account adds the rest.
  auto stats_json = [&](const std::string& stopped_by, Clock::time_point now) {
    const double bound = outcome.certified_bound.load();
    return nlohmann::json{
        {"valid", outcome.written},
        {"cost", outcome.written ? nlohmann::json(outcome.cost) : nlohmann::json(nullptr)},
        {"certified_bound", bound > 0 ? nlohmann::json(bound) : nlohmann::json(nullptr)},
        {"proven_gap_percent", outcome.written && bound > 0
                                   ? nlohmann::json(proven_gap_percent(outcome.cost, bound))
                                   : nlohmann::json(nullptr)},
        {"time_to_first", outcome.time_to_first},
        {"time_to_best", outcome.time_to_best},
        {"elapsed", seconds_between(process_start, now)},
        {"improvements", outcome.improvements},
        {"best_strategy", outcome.strategy},
        {"stopped_by", stopped_by},
        {"interrupted", g_stop.load()}};
  };

  // The deadline: --timeout, or until the problem is read the largest contest default.
  const bool default_timeout = timeout == 0;
  std::atomic<double> limit{timeout > 0 ? timeout : exhaustive ? 1e9 : default_timeout_seconds(1 << 30)};
  std::mutex watchdog_mutex;
  std::condition_variable watchdog_wake;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock lock(watchdog_mutex);
    auto exit_time = [&] {
      return process_start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(limit.load() - kExitMargin));
    };
    while (!finished && Clock::now() < exit_time())
      watchdog_wake.wait_until(lock, std::min(exit_time(), Clock::now() + std::chrono::milliseconds(50)));
    if (finished) return;
    // The deadline came first: whatever the search is doing, the written schedule is the answer. A write
    // in progress is let finish (it renames into place); past the margin the previous file stands.
    const bool locked = outcome.io.try_lock_for(std::chrono::duration<double>(kWriteWait));
    if (locked && outcome.written && output_path.empty()) std::cout << outcome.printed_form << std::flush;
    if (!outcome.written) {
      std::cerr << "error: no valid schedule: the deadline (" << format_number(limit.load())
                << " s from the process's start) came before a first schedule was complete\n";
      if (locked) write_output("{}\n");
    }
    if (locked && !stats_path.empty()) write_file_atomic(stats_path, stats_json("deadline", Clock::now()).dump(2) + "\n");
    if (progress && outcome.written)
      std::cerr << "ended by the deadline at " << seconds_text(seconds_between(process_start, Clock::now()))
                << " s; the schedule written costs " << format_number(outcome.cost) << "\n";
    std::_Exit(outcome.written ? 0 : 1);
  });
  auto finish = [&](int code) {
    {
      std::lock_guard lock(watchdog_mutex);
      finished = true;
    }
    watchdog_wake.notify_all();
    watchdog.join();
    return code;
  };

  try {
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    if (default_timeout && !exhaustive) limit = default_timeout_seconds(problem.num_ops());
    SolveOptions options;
    options.model = model_flags.model();
    options.threads = threads;
    options.seed = seed;
    options.max_orders = max_orders;
    options.exhaustive = exhaustive;
    if (const auto why = exhaustive ? exhaustive_search_impossible(problem, graph) : std::nullopt) {
      std::cerr << "error: --exhaustive: " << problem_path << ": " << *why
                << "; run the timed search instead\n";
      return finish(2);
    }
    // The search's share of the deadline, from the process's start; the rest is for writing and exiting.
    options.timeout_seconds =
        std::max(0.0, search_seconds_within(limit.load()) - seconds_between(process_start, Clock::now()));
    options.on_bound = [&](double bound) { outcome.certified_bound = bound; };
    auto on_improvement = [&](const Schedule& s, double cost, const std::string& strategy,
                              int64_t evaluations) {
      std::lock_guard lock(outcome.io);
      const std::string text = schedule_text(s);
      // To stdout only at the end (or at the deadline): one schedule, not every improvement.
      if (output_path.empty())
        outcome.printed_form = text;
      else
        write_file_atomic(output_path, text);
      const double t = seconds_between(process_start, Clock::now());
      if (!outcome.written) outcome.time_to_first = t;
      outcome.written = true;
      outcome.cost = cost;
      outcome.time_to_best = t;
      outcome.strategy = strategy;
      ++outcome.improvements;
      if (progress) {
        const double bound = outcome.certified_bound.load();
        std::cerr << "[" << seconds_text(t) << " s] cost " << format_number(cost);
        if (bound > 0)
          std::cerr << " (proven gap " << format_number(std::round(proven_gap_percent(cost, bound) * 100) / 100)
                    << " % to the certified bound " << format_certified(bound) << ", ";
        else
          std::cerr << " (";
        std::cerr << strategy << ", " << static_cast<int64_t>(evaluations / std::max(t, 1e-3))
                  << " evaluations/s)\n";
      }
    };
    if (progress)
      options.on_progress = [&](const std::string& line) {
        std::lock_guard lock(outcome.io);
        std::cerr << "[" << seconds_text(seconds_between(process_start, Clock::now())) << " s] " << line
                  << "\n";
      };
    SolveStats stats;
    const auto best = solve(problem, graph, options, g_stop, on_improvement, &stats);
    const double elapsed = seconds_between(process_start, Clock::now());
    const double bound = stats.certified_bound;
    std::unique_lock lock(outcome.io);
    if (best && output_path.empty()) std::cout << outcome.printed_form << std::flush;
    if (!stats_path.empty()) {
      nlohmann::json j = stats_json(stats.stopped_by, Clock::now());
      j["lower_bound"] = lower_bound(problem, graph).bound(options.model.matmul_compute);
      j["certified_bound"] = bound;
      j["certified_by"] = stats.certified_by;
      j["proven_gap_percent"] =
          best ? nlohmann::json(proven_gap_percent(stats.best_cost, bound)) : nlohmann::json(nullptr);
      j["evaluations"] = stats.evaluations;
      j["orders"] = stats.orders;
      j["evaluations_per_second"] = stats.evaluations / std::max(elapsed, 1e-9);
      j["exhaustive_complete"] = stats.exhaustive_complete;
      j["exact_space_bound"] =
          stats.exact_space_bound > 0 ? nlohmann::json(stats.exact_space_bound) : nlohmann::json(nullptr);
      j["exact_space_gap_percent"] =
          best && stats.exact_space_bound > 0
              ? nlohmann::json(proven_gap_percent(stats.best_cost, stats.exact_space_bound))
              : nlohmann::json(nullptr);
      write_file_atomic(stats_path, j.dump(2) + "\n");
    }
    if (progress) {
      // Which ended the search: a proof (the certified bound met, the exhaustive DP complete) or the clock.
      const bool proof =
          stats.stopped_by == "certified bound" || stats.stopped_by == "exhaustive search done";
      std::cerr << "done in " << seconds_text(elapsed) << " s, " << stats.evaluations << " evaluations, "
                << stats.orders << " orders; ended by " << stats.stopped_by
                << (proof                           ? " (a proof)"
                    : stats.stopped_by == "timeout" ? " (the clock)"
                                                    : "");
      if (best)
        std::cerr << "; proven gap "
                  << format_number(std::round(proven_gap_percent(stats.best_cost, bound) * 100) / 100)
                  << " % to the certified bound " << format_certified(bound) << " (" << stats.certified_by
                  << ")";
      std::cerr << "\n";
      // The exhaustive DP's own proof, within its space (no recomputation; the oracle's tiles, k and orders).
      if (best && stats.exact_space_bound > 0)
        std::cerr << "exhaustive search " << (stats.exhaustive_complete ? "complete" : "cut short")
                  << ": no schedule without recomputation in its space costs less than "
                  << format_number(stats.exact_space_bound) << " (gap "
                  << format_number(
                         std::round(proven_gap_percent(stats.best_cost, stats.exact_space_bound) * 100) / 100)
                  << " %)\n";
    }
    if (!best) {
      std::cerr << "error: no valid schedule: " << stats.infeasible_reason << "\n";
      write_output("{}\n");
      lock.unlock();  // finish() waits for the watchdog, which may want the lock
      return finish(1);
    }
    lock.unlock();
    return finish(0);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return finish(2);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return finish(2);
  }
}
