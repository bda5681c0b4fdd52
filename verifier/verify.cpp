#include "verifier/verify.hpp"

#include <cmath>
#include <sstream>

#include "sim/schedule_model.hpp"

namespace mlsys {

LowerBound lower_bound(const Problem& p, const Graph& g) {
  LowerBound lb;
  for (int o = 0; o < p.num_ops(); ++o) {
    lb.compute_full_k += compute_floor(p, g, o, MatmulCompute::FullK);
    lb.compute_native_k += compute_floor(p, g, o, MatmulCompute::NativeK);
  }
  double io = 0;
  for (int t = 0; t < p.num_tensors(); ++t)
    if (g.is_graph_input[t] || g.is_graph_output[t]) io += static_cast<double>(p.size(t));
  lb.io = io / p.slow_memory_bandwidth;
  return lb;
}

namespace {

std::string step_budget_message(int64_t steps, int64_t budget, const std::string& what) {
  return (steps == INT64_MAX ? std::string("more than 9.2e18") : std::to_string(steps)) +
         " steps, above the budget of " + std::to_string(budget) + " steps for " + what +
         " (--max-steps raises it)";
}

}  // namespace

int64_t count_steps(const Problem& problem, const Graph& graph, const Schedule& schedule,
                    const ModelOptions& model) {
  ScheduleWalk walk(problem, graph, schedule, model);
  int64_t total = 0;
  for (int i = 0; i < walk.size(); ++i) {
    auto next = walk.next();
    if (std::holds_alternative<RuleViolation>(next)) break;
    const SubgraphModel& m = std::get<SubgraphModel>(next);
    if (__builtin_add_overflow(total, m.num_steps(), &total)) return INT64_MAX;
    walk.finish(m);
  }
  return total;
}

void check_step_budget(const Problem& problem, const Graph& graph, const Schedule& schedule,
                       const ModelOptions& model, int64_t max_steps, const std::string& what,
                       const std::string& file) {
  const int64_t steps = count_steps(problem, graph, schedule, model);
  if (steps > max_steps)
    throw InputError(file, "--max-steps", "limits",
                     "the schedule has " + step_budget_message(steps, max_steps, what));
}

ScheduleReport verify_schedule(const Problem& problem, const Graph& graph, const Schedule& schedule,
                               const VerifyOptions& options) {
  ScheduleReport report;
  report.capacity = problem.fast_memory_capacity;
  ScheduleWalk walk(problem, graph, schedule, options.model);
  if ((report.error = walk.check_coverage())) return report;
  for (int i = 0; i < walk.size(); ++i) {
    auto next = walk.next();
    if (auto* v = std::get_if<RuleViolation>(&next)) {
      report.error = *v;
      return report;
    }
    const SubgraphModel& model = std::get<SubgraphModel>(next);
    SubgraphResult result;
    if (options.on_step) {
      if (model.num_steps() > options.max_walk_steps) {
        report.refused = step_budget_message(model.num_steps(), options.max_walk_steps, "listing every step");
        return report;
      }
      result = model.simulate([&](const StepDetail& step) { options.on_step(model, step); });
    } else {
      result = model.evaluate_fast(SubgraphModel::Violations::Locate, options.max_walk_steps);
      if (result.walk_refused) {
        report.refused =
            "subgraph " + std::to_string(i) +
            " can only be evaluated step by step (its regions need numeric M17 checks, or one tensor "
            "is read in two forms that may coincide): " +
            step_budget_message(result.steps, options.max_walk_steps, "the walk");
        return report;
      }
    }
    SubgraphReport sg;
    sg.index = i;
    sg.ops = model.ops();
    sg.granularity = schedule.subgraphs[i].granularity;
    sg.grid_rows = model.grid_rows();
    sg.grid_cols = model.grid_cols();
    sg.k_steps = model.k_steps();
    sg.steps = result.steps;
    sg.latency = result.latency;
    sg.compute_time = result.compute_time;
    sg.memory_time = result.memory_time;
    sg.compute_bound_latency = result.compute_bound_latency;
    sg.peak_working_set = result.peak_working_set;
    if (schedule.reported_latencies) sg.reported = (*schedule.reported_latencies)[i];
    report.subgraphs.push_back(sg);
    if (result.violation) {
      report.error = result.violation;
      return report;
    }
    report.total_latency += result.latency;
    walk.finish(model);
  }
  if ((report.error = walk.check_outputs())) return report;
  // M27: reported latencies are compared last, and only for a schedule that passed every other rule.
  for (const SubgraphReport& sg : report.subgraphs) {
    if (!sg.reported || std::fabs(*sg.reported - sg.latency) <= 1e-6 * sg.latency) continue;
    std::ostringstream msg;
    msg.precision(17);
    msg << "reported " << *sg.reported << ", computed " << sg.latency;
    RuleViolation v{"M27", sg.index, {}, -1, -1, msg.str(), {}, 0};
    if (options.strict) {
      report.error = v;
      return report;
    }
    report.warnings.push_back(v);
  }
  report.valid = true;
  return report;
}

}  // namespace mlsys
