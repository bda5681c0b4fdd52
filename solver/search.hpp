// Schedule search. Strategies (one per thread) segment a topological order of the ops into fused, connected
// subgraphs by dynamic programming, asking the SubgraphOracle for each candidate's best configuration, then
// add retention across consecutive subgraphs where the step model says it pays. Every improvement is verified
// with the whole-schedule rules before it is published.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

struct SolveOptions {
  double timeout_seconds = 2;
  int threads = 2;
  uint64_t seed = 1;
  // Stop after this many orders have been segmented (0: no budget, only the timeout). With one thread a
  // budget makes the result depend only on the problem, the options and the seed, not on the machine's
  // speed, unless the timeout comes first.
  int64_t max_orders = 0;
  // Instead of the timed search: after a first quick schedule, one dynamic program over every grouping of the
  // ops into connected subgraphs (any size, no recomputation), every retention choice and every tile count
  // and k the oracle tries. It can take minutes; SolveStats::exhaustive_complete says whether it finished.
  bool exhaustive = false;
  // The exhaustive search prunes by rule-book floors (each set's, in its retention context, and the least sum
  // of them over what remains, docs/solver.md#exact-search), and the searches over sets of done ops by the
  // cover bound's certificate. Off only to measure what that saves and to test that it never changes the
  // result.
  bool prune_by_floors = true;
  // Called with one line of text as a long phase advances (the exhaustive search, after each op count).
  std::function<void(const std::string&)> on_progress;
  // The cover bound (docs/bounds.md#theorem-6) runs beside the search, for at most half its time, on graphs
  // of up to kCoverBoundMaxOps ops and this many connected sets of ops (0: never); when it beats the lambda
  // bound, the search stops there instead.
  int64_t cover_bound_sets = 100'000;
  // The certified bound (verifier/bound.hpp) for `model`, when the caller has it already (mlsys prints it);
  // otherwise the search computes it, with a twentieth of its deadline.
  std::optional<double> certified_bound;
  // Called once the certified bound is known (the search computes it after its first schedule) and again
  // whenever the cover bound raises it: a caller's progress lines can give the proven gap.
  std::function<void(double bound)> on_bound;
  ModelOptions model;
};

struct SolveStats {
  double best_cost = 0;
  double time_to_best = 0;   // seconds from start
  double time_to_first = 0;  // seconds from start to the first valid schedule
  int64_t evaluations = 0;   // subgraph candidates compiled or evaluated
  int64_t orders = 0;        // op orders segmented (one dynamic program each)
  int64_t improvements = 0;
  std::string best_strategy;
  std::string infeasible_reason;  // set when no schedule was found
  std::string stopped_by;  // "certified bound" (a proven optimum), "order budget", "signal", "timeout" or
                           // "exhaustive search done"
  bool exhaustive_complete = false;  // the exhaustive search finished: no schedule of its space is cheaper
  // What the exhaustive search (the branch and bound over every grouping) proved when it ended, complete or
  // cut short: no schedule of its space (no recomputation; the oracle's tile counts, k values and traversals;
  // docs/solver.md) costs less. Unlike certified_bound it is not a bound under the whole rule book. 0: it did
  // not run.
  double exact_space_bound = 0;
  double certified_bound = 0;  // the larger of the lambda and cover bounds known when the search ended
  // "cover", else the largest of the others (largest_bound_name); "lambda" when the caller gave the bound.
  std::string certified_by;
};

// Called (serialized) on every verified improvement; the schedule carries its exact subgraph latencies.
// `evaluations` counts subgraph candidates evaluated by all threads so far.
using ImprovementCallback =
    std::function<void(const Schedule&, double cost, const std::string& strategy, int64_t evaluations)>;

// Runs until the time budget is spent, `stop` is set, or every strategy finished. Returns the best schedule.
std::optional<Schedule> solve(const Problem& problem, const Graph& graph, const SolveOptions& options,
                              const std::atomic<bool>& stop, const ImprovementCallback& on_improvement,
                              SolveStats* stats);

// A first valid schedule in time linear in the graph: every op alone, in the graph's topological order, at
// the oracle's best configuration, nothing retained, checked by the verifier and carrying its latencies.
// solve() publishes it before anything else. nullopt, with `why`, when an op fits nowhere on its own or
// `expired` says yes first (asked between ops).
std::optional<Schedule> first_schedule(const Problem& problem, const Graph& graph, const ModelOptions& model,
                                       const std::function<bool()>& expired, std::string* why);

// Why SolveOptions::exhaustive cannot enumerate the graph, or nullopt if it can: it takes at most 64 ops and
// 10,000 sets of done ops (closed under producers). Sixteen independent branches, as in benchmark 13, have
// more than 65,536.
std::optional<std::string> exhaustive_search_impossible(const Problem& problem, const Graph& graph);

// The contest's time limit for a problem, by op count.
double default_timeout_seconds(int num_ops);
// The search's own deadline within a wall-clock limit: a margin for the last job to notice it, the final
// verification and write, and process exit.
inline double search_seconds_within(double limit) {
  return limit * 0.9 - 0.1 > 0.2 ? limit * 0.9 - 0.1 : 0.2;
}

}  // namespace mlsys
