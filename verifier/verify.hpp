// The analytic evaluator: validates a schedule against every rule and sums the step model's latencies.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

struct LowerBound {
  double compute_full_k = 0, compute_native_k = 0, io = 0;  // rule book section 8
  double certified = 0;  // certified_bound(...).bound (verifier/bound.hpp) when a caller computed it, else 0
  double bound(MatmulCompute m) const {
    return std::max(m == MatmulCompute::FullK ? compute_full_k : compute_native_k, io);
  }
};
LowerBound lower_bound(const Problem& problem, const Graph& graph);

struct SubgraphReport {
  int index = 0;
  std::vector<int> ops;
  Granularity granularity;
  int64_t grid_rows = 0, grid_cols = 0, k_steps = 0, steps = 0;
  double latency = 0, compute_time = 0, memory_time = 0;
  double compute_bound_latency = 0;  // latency of the steps whose compute >= memory time
  std::optional<double> reported;
  int64_t peak_working_set = 0;
};

struct ScheduleReport {
  bool valid = false;
  double total_latency = 0;
  double capacity = 0;
  std::vector<SubgraphReport> subgraphs;  // those that were evaluated
  std::optional<RuleViolation> error;     // the first violated rule
  std::vector<RuleViolation> warnings;    // M27 mismatches (errors under --strict)
  // Set when a subgraph could only be evaluated by a walk longer than VerifyOptions::max_walk_steps: nothing
  // is claimed about it (the programs exit 2 with this message).
  std::optional<std::string> refused;
};

using StepObserver = std::function<void(const SubgraphModel&, const StepDetail&)>;

// Programs that materialise steps (--steps, --replay, simulate, traces) walk them one by one; above this many
// steps they refuse (exit 2) unless --max-steps raises it. The analytic total does not walk: evaluate_fast
// counts tile classes, and walks only where numeric checks need it, under the same budget.
constexpr int64_t kDefaultMaxSteps = 10'000'000;

struct VerifyOptions {
  ModelOptions model;
  bool strict = false;   // M27 mismatch is an error
  StepObserver on_step;  // if set, called for every step with its full detail
  int64_t max_walk_steps = kDefaultMaxSteps;
};

// Steps of the whole schedule (sum over subgraphs of tiles x k-steps, saturated at INT64_MAX), from the
// compiled subgraphs, without walking; stops at the first subgraph that breaks a static rule.
int64_t count_steps(const Problem& problem, const Graph& graph, const Schedule& schedule,
                    const ModelOptions& model);
// Throws InputError (exit 2) naming the count, the budget and --max-steps when the schedule has more steps
// than `max_steps` and `what` (e.g. "--replay") would walk them.
void check_step_budget(const Problem& problem, const Graph& graph, const Schedule& schedule,
                       const ModelOptions& model, int64_t max_steps, const std::string& what,
                       const std::string& file);

// Check order of M28: M5, then per subgraph M6-M15 and its steps (M17, M20), then M26, then M27.
ScheduleReport verify_schedule(const Problem& problem, const Graph& graph, const Schedule& schedule,
                               const VerifyOptions& options);

}  // namespace mlsys
