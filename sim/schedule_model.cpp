#include "sim/schedule_model.hpp"

#include <algorithm>

namespace mlsys {

ScheduleWalk::ScheduleWalk(const Problem& problem, const Graph& graph, const Schedule& schedule,
                           const ModelOptions& options)
    : problem_(problem),
      graph_(graph),
      schedule_(schedule),
      options_(options),
      written_by_(problem.num_tensors(), -1),
      ephemeral_in_(problem.num_tensors(), -1),
      retained_by_(problem.num_tensors(), -1) {}

std::optional<RuleViolation> ScheduleWalk::check_coverage() const {
  std::vector<bool> covered(problem_.num_ops(), false);
  for (const SubgraphSpec& sg : schedule_.subgraphs)
    for (int o : sg.ops) covered[o] = true;
  if (schedule_.subgraphs.empty()) return RuleViolation{"M5", -1, {}, -1, -1, "the schedule has no subgraphs", {}, 0};
  for (int o = 0; o < problem_.num_ops(); ++o)
    if (!covered[o])
      return RuleViolation{"M5", -1, {}, o, -1, "op " + std::to_string(o) + " appears in no subgraph", {}, 0};
  return std::nullopt;
}

std::variant<SubgraphModel, RuleViolation> ScheduleWalk::next() {
  const int i = next_++;
  auto compiled = SubgraphModel::compile(problem_, graph_, schedule_.subgraphs[i], i, retained_in_, options_);
  if (auto* v = std::get_if<RuleViolation>(&compiled)) return *v;
  const SubgraphModel& model = std::get<SubgraphModel>(compiled);
  for (const auto& [t, op] : model.external_inputs()) {
    const bool available = graph_.is_graph_input[t] || written_by_[t] != -1 ||
                           std::find(retained_in_.begin(), retained_in_.end(), t) != retained_in_.end();
    if (available) continue;
    std::string why;
    if (retained_by_[t] != -1 && retained_by_[t] < i)
      why = "retained by subgraph " + std::to_string(retained_by_[t]) + ", which lasts only until subgraph " +
            std::to_string(retained_by_[t] + 1);
    else if (ephemeral_in_[t] != -1)
      why = "ephemeral in subgraph " + std::to_string(ephemeral_in_[t]) + " (consumed there, never stored)";
    else
      why = "never produced so far";
    return RuleViolation{"M15", i, {}, op, t,
                         "tensor " + std::to_string(t) + " needed by subgraph " + std::to_string(i) + " (op " +
                             std::to_string(op) + ") is not available: " + why,
                         {}, 0};
  }
  return compiled;
}

void ScheduleWalk::finish(const SubgraphModel& model) {
  const int i = model.index();
  for (int t : model.evicted()) written_by_[t] = i;
  for (int o : model.ops())
    for (int t : problem_.outputs[o]) {
      const bool kept = std::find(model.evicted().begin(), model.evicted().end(), t) != model.evicted().end() ||
                        std::find(model.retained().begin(), model.retained().end(), t) != model.retained().end();
      if (!kept) ephemeral_in_[t] = i;
    }
  for (int t : model.retained()) retained_by_[t] = i;
  retained_in_ = model.retained();
}

std::optional<RuleViolation> ScheduleWalk::check_outputs() const {
  for (int t = 0; t < problem_.num_tensors(); ++t)
    if (graph_.is_graph_output[t] && written_by_[t] == -1)
      return RuleViolation{"M26", -1, {}, graph_.producer[t], t,
                           "graph output tensor " + std::to_string(t) + " never reaches slow memory", {}, 0};
  return std::nullopt;
}

}  // namespace mlsys
