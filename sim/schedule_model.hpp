// Schedule-level rules around the step model: coverage (M5), availability (M15) and the bookkeeping after
// each subgraph and at the end (M26). Drivers (analytic evaluator, SystemC replay, solver) walk a schedule
// through this class so that these rules, too, exist once.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

class ScheduleWalk {
 public:
  ScheduleWalk(const Problem& problem, const Graph& graph, const Schedule& schedule, const ModelOptions& options);

  std::optional<RuleViolation> check_coverage() const;  // M5
  int size() const { return static_cast<int>(schedule_.subgraphs.size()); }
  // Compiles the next subgraph (M6-M14) and checks that its external inputs are available (M15).
  std::variant<SubgraphModel, RuleViolation> next();
  // After the subgraph's steps ran: evicted tensors reach slow memory, R_i becomes the next retained-in (M26).
  void finish(const SubgraphModel& model);
  std::optional<RuleViolation> check_outputs() const;  // M26, after the last subgraph

 private:
  const Problem& problem_;
  const Graph& graph_;
  const Schedule& schedule_;
  ModelOptions options_;
  int next_ = 0;
  std::vector<int> retained_in_;
  std::vector<int> written_by_;      // per tensor: subgraph that stored it to slow memory, or -1 (the set S)
  std::vector<int> ephemeral_in_;    // per tensor: last subgraph where it was produced and consumed internally
  std::vector<int> retained_by_;     // per tensor: last subgraph that retained it
};

}  // namespace mlsys
