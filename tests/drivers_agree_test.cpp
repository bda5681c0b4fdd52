// The three drivers of the step model agree on random small problems and random, mostly invalid schedules
// (issue 20): the analytic evaluator (evaluate_fast, tile classes counted), the step-by-step walk (every step
// with its detail) and the SystemC replay give the same verdict, the same first rule (with its subgraph, and
// for an OOM its step and working set) and the same total, under both compute models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <systemc>

#include "sim/json_io.hpp"
#include "sim/systemc/replay.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;

// A random DAG of 2-7 ops over 2-D tensors: MatMuls read an existing tensor as LHS (sometimes as RHS) with a
// new weight, Pointwise ops read one or two existing tensors of one shape.
Problem random_problem(std::mt19937& rng) {
  const int64_t sides[] = {32, 48, 64, 96, 100, 128, 160};
  auto side = [&] { return sides[rng() % 7]; };
  ProblemBuilder b;
  std::vector<int> made{b.tensor(side(), side())};
  const int ops = 2 + static_cast<int>(rng() % 6);
  for (int o = 0; o < ops; ++o) {
    const int x = made[rng() % made.size()];
    const int64_t rows = b.rows(x), cols = b.cols(x);
    std::vector<int> in;
    const char* type = "Pointwise";
    int y;
    if (rng() % 2) {
      const bool as_rhs = rng() % 4 == 0;
      const int other = as_rhs ? b.tensor(side(), rows) : b.tensor(cols, side());
      y = as_rhs ? b.tensor(b.rows(other), cols) : b.tensor(rows, b.cols(other));
      in = as_rhs ? std::vector<int>{other, x} : std::vector<int>{x, other};
      type = "MatMul";
    } else {
      in = {x};
      for (int t : made)
        if (t != x && b.rows(t) == rows && b.cols(t) == cols && rng() % 2) {
          in.push_back(t);
          break;
        }
      y = b.tensor(rows, cols);
    }
    made.push_back(y);
    b.op(type, in, y, 1 + static_cast<int>(rng() % 3000));
  }
  const double capacity = rng() % 3 ? 4000 + static_cast<int>(rng() % 60000) : 1e9;
  const double bandwidth = 1 + static_cast<int>(rng() % 30);
  const int64_t natives[] = {64, 128};
  const int64_t native_w = natives[rng() % 2], native_h = natives[rng() % 2];
  return parse_problem(b.problem(capacity, bandwidth, native_w, native_h), "random.json");
}

// Every op alone in topological order, then mutations: merge neighbours, another granularity, retention,
// traversal orders (valid or not), swapped subgraphs, a recomputed op, a dropped op.
Schedule random_schedule(const Problem& p, const Graph& g, std::mt19937& rng) {
  Schedule s;
  for (int o : g.topological_order) {
    SubgraphSpec sg;
    sg.ops = {o};
    sg.granularity = {p.native_w, p.native_h, std::min<int64_t>(p.native_w, 64)};
    s.subgraphs.push_back(sg);
  }
  auto pick = [&] { return rng() % s.subgraphs.size(); };
  const int mutations = static_cast<int>(rng() % 6);
  for (int m = 0; m < mutations && !s.subgraphs.empty(); ++m) {
    const int kind = static_cast<int>(rng() % 8);
    const size_t i = pick();
    SubgraphSpec& sg = s.subgraphs[i];
    if (kind <= 1 && i + 1 < s.subgraphs.size()) {  // grouping: merge with the next subgraph
      sg.ops.insert(sg.ops.end(), s.subgraphs[i + 1].ops.begin(), s.subgraphs[i + 1].ops.end());
      s.subgraphs.erase(s.subgraphs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    } else if (kind == 2) {  // granularity, sometimes out of range
      const int64_t w = 1 + static_cast<int64_t>(rng() % (p.native_w + (rng() % 8 == 0 ? 10 : 0)));
      const int64_t h = 1 + static_cast<int64_t>(rng() % p.native_h);
      sg.granularity = {w, h, 1 + static_cast<int64_t>(rng() % (p.native_w + 4))};
    } else if (kind == 3) {  // retain an output of the subgraph (or, rarely, any tensor)
      const int op = sg.ops[rng() % sg.ops.size()];
      sg.retain.push_back(rng() % 8 ? p.outputs[op][0] : static_cast<int>(rng() % p.num_tensors()));
    } else if (kind == 4) {  // a traversal order: a permutation of a guessed grid, or a wrong one
      const int64_t tiles = 1 + static_cast<int64_t>(rng() % 9);
      std::vector<int64_t> order(tiles);
      for (int64_t t = 0; t < tiles; ++t) order[t] = t;
      std::shuffle(order.begin(), order.end(), rng);
      sg.traversal = order;
    } else if (kind == 5 && s.subgraphs.size() > 1) {  // order: swap with the next subgraph
      std::swap(s.subgraphs[i], s.subgraphs[(i + 1) % s.subgraphs.size()]);
    } else if (kind == 6) {  // recomputation: an op of another subgraph runs here too, first
      const SubgraphSpec& other = s.subgraphs[pick()];
      const int op = other.ops[rng() % other.ops.size()];
      if (std::find(sg.ops.begin(), sg.ops.end(), op) == sg.ops.end()) sg.ops.insert(sg.ops.begin(), op);
    } else if (kind == 7 && sg.ops.size() > 1) {  // coverage: drop an op
      sg.ops.erase(sg.ops.begin() + static_cast<std::ptrdiff_t>(rng() % sg.ops.size()));
    }
  }
  return s;
}

class ThreeDrivers : public ::testing::Test {
 protected:
  void TearDown() override { sc_core::sc_get_curr_simcontext()->reset(); }
};

// The schedule through the three drivers under one compute model.
struct ThreeRuns {
  ScheduleReport analytic, walk;
  ReplayResult replay;
};
ThreeRuns run_three_drivers(const Problem& problem, const Graph& graph, const Schedule& schedule,
                            MatmulCompute compute) {
  ThreeRuns runs;
  VerifyOptions analytic_options;
  analytic_options.model.matmul_compute = compute;
  runs.analytic = verify_schedule(problem, graph, schedule, analytic_options);
  VerifyOptions walk_options = analytic_options;
  walk_options.on_step = [](const SubgraphModel&, const StepDetail&) {};  // forces the step-by-step walk
  runs.walk = verify_schedule(problem, graph, schedule, walk_options);
  ReplayOptions replay_options;
  replay_options.model.matmul_compute = compute;
  runs.replay = replay_schedule(problem, graph, schedule, replay_options);
  return runs;
}

// Same verdict; for a valid schedule the same total; else the same first rule (with its description from
// the evaluator and the walk), and for an OOM the same step and working set in the replay.
void expect_agreement(const ThreeRuns& r, const std::string& where) {
  ASSERT_FALSE(r.analytic.refused) << where;
  ASSERT_EQ(r.analytic.valid, r.walk.valid) << where;
  ASSERT_EQ(r.analytic.valid, r.replay.completed) << where << (r.replay.error ? r.replay.error->describe() : "");
  if (r.analytic.valid) {
    EXPECT_NEAR(r.analytic.total_latency, r.walk.total_latency, 1e-9 * r.analytic.total_latency) << where;
    EXPECT_NEAR(r.analytic.total_latency, r.replay.total_latency, 1e-9 * r.analytic.total_latency) << where;
    for (size_t i = 0; i < r.analytic.subgraphs.size(); ++i)  // counted classes against the walk
      EXPECT_NEAR(r.analytic.subgraphs[i].compute_bound_latency, r.walk.subgraphs[i].compute_bound_latency,
                  1e-9 * r.analytic.subgraphs[i].latency)
          << where;
    return;
  }
  ASSERT_TRUE(r.analytic.error && r.walk.error && r.replay.error) << where;
  EXPECT_EQ(r.analytic.error->describe(), r.walk.error->describe()) << where;
  EXPECT_EQ(r.analytic.error->rule, r.replay.error->rule) << where;
  EXPECT_EQ(r.analytic.error->subgraph, r.replay.error->subgraph) << where;
  if (r.analytic.error->rule != "M20") return;
  ASSERT_TRUE(r.replay.error->step && r.replay.error->working_set) << where;
  EXPECT_EQ(r.analytic.error->step->position, r.replay.error->step->position) << where;
  EXPECT_EQ(r.analytic.error->step->k_step, r.replay.error->step->k_step) << where;
  EXPECT_EQ(r.analytic.error->working_set->total(), r.replay.error->working_set->total()) << where;
  EXPECT_EQ(r.analytic.error->working_set->accumulators, r.replay.error->working_set->accumulators) << where;
}

TEST_F(ThreeDrivers, AgreeOnRandomSchedules) {
  std::mt19937 rng(20261123);
  int valid = 0, oom = 0, invalid = 0;
  std::set<std::string> rules;
  for (int trial = 0; trial < 1500; ++trial) {
    const Problem problem = random_problem(rng);
    const Graph graph = analyze_graph(problem, "random.json");
    const Schedule schedule = random_schedule(problem, graph, rng);
    for (MatmulCompute compute : {MatmulCompute::FullK, MatmulCompute::NativeK}) {
      const ThreeRuns runs = run_three_drivers(problem, graph, schedule, compute);
      expect_agreement(runs, "trial " + std::to_string(trial) + ": " + schedule_to_json(schedule).dump());
      if (HasFatalFailure()) return;
      const ScheduleReport& analytic = runs.analytic;
      if (analytic.valid) {
        ++valid;
        continue;
      }
      rules.insert(analytic.error->rule);
      ++(analytic.error->rule == "M20" ? oom : invalid);
    }
  }
  // The generator must reach every verdict and a spread of rules.
  EXPECT_GT(valid, 300);  // 648, 188 and 2,164 with this seed
  EXPECT_GT(oom, 100);
  EXPECT_GT(invalid, 1000);
  for (const char* rule : {"M5", "M6", "M7", "M9", "M11", "M15", "M20"})
    EXPECT_TRUE(rules.count(rule)) << rule << " never fired";
}

// The same agreement on subgraphs with 2 or 3 split-K MatMuls feeding one or several epilogues (M20 D): the
// SystemC fast memory allocates each partial sum without a host, so an OOM from D happens at its allocation.
TEST_F(ThreeDrivers, AgreeWithSeveralSplitKAccumulators) {
  std::mt19937 rng(20261124);
  int valid = 0, oom = 0, oom_with_d = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const RandomSplitK sk = random_split_k(rng);
    const Problem problem = parse_problem(sk.problem, "split-k.json");
    const Graph graph = analyze_graph(problem, "split-k.json");
    // The subgraph, then every op outside it (readers of retained outputs) on its own.
    Schedule schedule;
    SubgraphSpec group;
    group.ops = sk.ops;
    group.retain = sk.retain;
    const int64_t k_max = std::min(problem.native_w, sk.K);
    group.granularity = {problem.native_w / (1 + static_cast<int64_t>(rng() % 2)),
                         problem.native_h / (1 + static_cast<int64_t>(rng() % 2)),
                         rng() % 4 == 0 ? k_max : 1 + static_cast<int64_t>(rng() % k_max)};
    schedule.subgraphs.push_back(group);
    for (int o = 0; o < problem.num_ops(); ++o)
      if (std::find(sk.ops.begin(), sk.ops.end(), o) == sk.ops.end()) {
        SubgraphSpec alone;
        alone.ops = {o};
        alone.granularity = {problem.native_w, problem.native_h, problem.native_w};
        schedule.subgraphs.push_back(alone);
      }
    for (MatmulCompute compute : {MatmulCompute::FullK, MatmulCompute::NativeK}) {
      const ThreeRuns runs = run_three_drivers(problem, graph, schedule, compute);
      expect_agreement(runs, "trial " + std::to_string(trial) + ": " + sk.problem.dump() + " " +
                                 schedule_to_json(schedule).dump());
      if (HasFatalFailure()) return;
      const ScheduleReport& analytic = runs.analytic;
      if (analytic.valid) {
        ++valid;
        int64_t peak = 0;
        for (const SubgraphReport& sg : analytic.subgraphs) peak = std::max(peak, sg.peak_working_set);
        EXPECT_EQ(peak, runs.replay.peak_occupancy);
        continue;
      }
      if (analytic.error->rule != "M20") continue;
      ++oom;
      oom_with_d += analytic.error->working_set->accumulators > 0;
    }
  }
  EXPECT_GT(valid, 300);
  EXPECT_GT(oom, 100);
  EXPECT_GT(oom_with_d, 50);
}

}  // namespace
}  // namespace mlsys::test
