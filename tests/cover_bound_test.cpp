// The cover bound (verifier/cover_bound, docs/bounds.md#theorem-6): its traffic floor is below what every
// traversal order loads, it is never above the exact optimum of random tiny problems, and its certificate
// holds: no connected set's prices exceed the floor the step model gives it.
#include "verifier/cover_bound.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <numeric>

#include "sim/json_io.hpp"
#include "solver/search.hpp"
#include "support.hpp"
#include "tests/brute_force.hpp"
#include "verifier/bound.hpp"

namespace mlsys {
namespace {

// Limits without a clock: the number of connected sets alone decides whether the bound is attempted, so a
// busy machine gets the answer a quiet one does (a clock that struck made "time limit" the result).
CoverLimits unclocked(int64_t max_subgraphs = CoverLimits{}.max_subgraphs) {
  CoverLimits limits;
  limits.seconds = 1e6;
  limits.max_subgraphs = max_subgraphs;
  return limits;
}

// Loads of the subgraph at one order, summed over its steps (the step model's own walk); -1 if a step breaks
// a rule (the walk stops there).
int64_t loads_at(const SubgraphModel& model) {
  int64_t loads = 0;
  const SubgraphResult r = model.simulate([&](const StepDetail& step) { loads += step.load_elements; });
  return r.violation ? -1 : loads;
}

// The cost of the solver's schedule within `seconds` on one thread, the cover bound switched off (a schedule
// nobody tuned for the bound); infinity if it found none.
double solver_cost(const Problem& p, const Graph& g, double seconds) {
  SolveOptions options;
  options.timeout_seconds = seconds;
  options.threads = 1;
  options.cover_bound_sets = 0;
  std::atomic<bool> stop{false};
  SolveStats stats;
  if (!solve(p, g, options, stop, nullptr, &stats)) return std::numeric_limits<double>::infinity();
  return stats.best_cost;
}

// Every granularity of a compiled structure that the rules accept and that has at most 6 tiles (so that
// every traversal permutation can be tried): `at(w, h, k)` with the model set to it.
template <typename At>
void for_each_small_granularity(const Problem& p, SubgraphModel& model, At&& at) {
  for (int64_t w = 1; w <= p.native_w; ++w)
    for (int64_t h = 1; h <= p.native_h; ++h)
      for (int64_t k = 1; k <= p.native_w; ++k)
        if (!model.set_granularity({w, h, k}) && model.tiles() <= 6) at(w, h, k);
}

// Every connected prefix (in topological order) of a tiny problem's ops, compiled with nothing retained, at
// every granularity of at most 6 tiles: `on_prefix(ops)` once per prefix, then `at(model, n, w, h, k)`.
template <typename OnPrefix, typename At>
void for_each_prefix_granularity(const Problem& p, const Graph& g, OnPrefix&& on_prefix, At&& at) {
  for (size_t n = 1; n <= g.topological_order.size(); ++n) {
    const std::vector<int> ops(g.topological_order.begin(), g.topological_order.begin() + n);
    on_prefix(ops);
    auto structure = SubgraphModel::compile_structure(p, g, ops, {}, 0, {}, ModelOptions{});
    if (std::holds_alternative<RuleViolation>(structure)) continue;
    SubgraphModel& model = std::get<SubgraphModel>(structure);
    for_each_small_granularity(p, model, [&](int64_t w, int64_t h, int64_t k) { at(model, ops, w, h, k); });
  }
}

// Every permutation of the model's tiles as its traversal order (raster again afterwards).
template <typename F>
void for_each_order(SubgraphModel& model, F&& f) {
  std::vector<int64_t> order(model.tiles());
  std::iota(order.begin(), order.end(), 0);
  do
    if (!model.set_traversal(order)) f();
  while (std::next_permutation(order.begin(), order.end()));
  model.set_traversal(std::nullopt);
}

TEST(CoverBound, DeclinesAGraphTooLargeForItsAncestryBitSets) {
  // 20,000 independent Pointwise ops: 20,000 connected sets, within the set limit, but every op's ancestors
  // and descendants as bit sets would take 100 MB (2.5 GB at 100,000 ops). It must decline at once.
  Problem p;
  p.native_w = p.native_h = 128;
  p.fast_memory_capacity = 1e6;
  p.slow_memory_bandwidth = 10;
  for (int i = 0; i < kCoverMaxOps + 1; ++i) {
    p.widths.insert(p.widths.end(), {64, 64});
    p.heights.insert(p.heights.end(), {64, 64});
    p.inputs.push_back({2 * i});
    p.outputs.push_back({2 * i + 1});
    p.op_types.push_back(OpType::Pointwise);
    p.base_costs.push_back(1);
  }
  const Graph g = analyze_graph(p, "wide");
  const auto start = std::chrono::steady_clock::now();
  const CoverBound cover = cover_bound(p, g, ModelOptions{}, unclocked());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            test::kHangGuardSeconds);
  EXPECT_FALSE(cover.attempted);
  EXPECT_NE(cover.status.find("more than 16384 ops"), std::string::npos) << cover.status;
}

TEST(CoverBound, UnavoidableLoadsAreBelowEveryTraversalOrder) {
  // Random tiny problems, every connected prefix of their ops, every granularity, every permutation of a
  // grid of up to 6 tiles: the loads the model says every order pays never exceed an order's loads.
  std::mt19937 rng(20261125u);
  int checked = 0, above_footprint = 0, several_forms = 0;
  for (int trial = 0; trial < 450; ++trial) {
    // Diamonds read one tensor in two forms (a MatMul's LHS and a Pointwise op's tile).
    const Problem p = trial % 3 == 2 ? testing::random_diamond(rng)
                      : trial % 3    ? testing::random_matmul_chain(rng, 4)
                                     : testing::random_tiny_problem(rng, 4);
    const Graph g = analyze_graph(p, "tiny");
    for_each_prefix_granularity(
        p, g, [](const std::vector<int>&) {},
        [&](SubgraphModel& model, const std::vector<int>& ops, int64_t w, int64_t h, int64_t k) {
          int64_t floor = 0, footprint = 0;
          bool reloaded_in_several_forms = false;
          for (const auto& t : model.loads_every_order_pays()) {
            floor += t.elements;
            footprint += p.size(t.tensor);
            const auto readers = std::count_if(ops.begin(), ops.end(), [&](int o) {
              return std::find(p.inputs[o].begin(), p.inputs[o].end(), t.tensor) != p.inputs[o].end();
            });
            reloaded_in_several_forms =
                reloaded_in_several_forms || (readers >= 2 && t.elements > p.size(t.tensor));
          }
          several_forms += reloaded_in_several_forms;
          for_each_order(model, [&] {
            const int64_t loads = loads_at(model);
            if (loads < 0) return;
            EXPECT_LE(floor, loads) << "ops " << ops.size() << " of " << problem_to_json(p).dump() << " at ["
                                    << w << ", " << h << ", " << k << "]";
            ++checked;
          });
          if (floor > footprint) ++above_footprint;
        });
  }
  // The split-reduction argument must fire, or this only tested footprints.
  if (!test::seeds_moved()) {  // coverage, calibrated on the campaign's own seed
    EXPECT_GT(checked, 10000);
    EXPECT_GT(above_footprint, 100);
    EXPECT_GT(several_forms, 10);  // and the one for a tensor read in several forms
  }
  std::cout << "[ cover    ] " << checked << " orders checked; the floor exceeded the footprint at "
            << above_footprint << " granularities, " << several_forms
            << " of them for a tensor read in several forms\n";
}

TEST(CoverBound, FloorsAreBelowEveryRunOfTheirSet) {
  // Random tiny problems, every connected prefix of their ops (it receives nothing retained), every
  // granularity, every permutation of a grid of up to 6 tiles: no run costs less than the set's floor, with
  // Theorem 8's last k-steps where it lifts the floor.
  // MLSYS_FLOOR_TRIALS and MLSYS_FLOOR_SEED run longer campaigns (docs/bounds.md#soundness).
  auto [trials, rng] = test::campaign("MLSYS_FLOOR_TRIALS", 600, "MLSYS_FLOOR_SEED", 20261126u);
  int checked = 0, lifted = 0;
  for (int trial = 0; trial < trials; ++trial) {
    // Retention chains put Pointwise epilogues after MatMuls with a split reduction: Theorem 8's case.
    const Problem p = trial % 4 == 3   ? testing::random_retention_chain(rng, 4)
                      : trial % 4 == 2 ? testing::random_diamond(rng)
                      : trial % 4      ? testing::random_matmul_chain(rng, 4)
                                       : testing::random_tiny_problem(rng, 4);
    const Graph g = analyze_graph(p, "tiny");
    double least = 0;
    for_each_prefix_granularity(
        p, g,
        [&](const std::vector<int>& ops) {
          least = std::numeric_limits<double>::infinity();
          for (const RetentionFloor& c : subgraph_floors(p, g, ModelOptions{}, ops)) {
            if (c.retained_in.empty()) least = std::min(least, c.floor.value);
            lifted += c.floor.value > std::max(c.floor.compute, c.floor.memory) * (1 + 1e-9);
          }
        },
        [&](SubgraphModel& model, const std::vector<int>& ops, int64_t w, int64_t h, int64_t k) {
          for_each_order(model, [&] {
            const SubgraphResult run = model.simulate();
            if (run.violation) return;
            EXPECT_GE(run.latency, least * (1 - 1e-9))
                << "ops " << ops.size() << " of " << problem_to_json(p).dump() << " at [" << w << ", " << h
                << ", " << k << "]";
            ++checked;
          });
        });
  }
  if (!test::seeds_moved()) {  // coverage, calibrated on the campaign's own seed
    EXPECT_GT(checked, 10000);
    EXPECT_GT(lifted, 20);  // Theorem 8 must fire
  }
  std::cout << "[ cover    ] " << checked << " runs checked against their set's floor; Theorem 8 lifted "
            << lifted << " floors\n";
}

TEST(CoverBound, FloorsOfContextsThatKeepOutputsAreBelowEveryRunThatKeepsThem) {
  // Theorem 9 (docs/bounds.md#theorem-9) drops the tile counts at which kept outputs cannot sit whole beside
  // the other outputs' tiles. Every connected prefix of random retention chains (a fast memory that holds
  // one intermediate whole but not two) keeps each subset of its outputs read outside it, at every
  // granularity of at most 6 tiles and every traversal order: no run that fits costs less than the least
  // floor of the contexts that keep at least those outputs. Fan-outs keep one output beside the others'
  // tiles.
  auto [trials, rng] = test::campaign("MLSYS_FLOOR_TRIALS", 400, "MLSYS_FLOOR_SEED", 20261127u);
  int checked = 0, kept_runs = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const Problem p = trial % 4 == 3   ? testing::random_fan_out(rng)
                      : trial % 4 == 2 ? testing::random_diamond(rng)
                      : trial % 4      ? testing::random_retention_chain(rng, 4)
                                       : testing::random_tiny_problem(rng, 4);
    const Graph g = analyze_graph(p, "tiny");
    for (size_t n = 1; n <= g.topological_order.size(); ++n) {
      const std::vector<int> ops(g.topological_order.begin(), g.topological_order.begin() + n);
      const std::vector<RetentionFloor> contexts = subgraph_floors(p, g, ModelOptions{}, ops);
      std::vector<int> read_outside;
      for (int t : retainable_outputs(p, g, ops))
        if (std::any_of(g.consumers[t].begin(), g.consumers[t].end(), [&](const Consumer& c) {
              return std::find(ops.begin(), ops.end(), c.op) == ops.end();
            }))
          read_outside.push_back(t);
      for (uint32_t mask = 0; mask < 1u << read_outside.size(); ++mask) {
        std::vector<int> kept;
        for (size_t i = 0; i < read_outside.size(); ++i)
          if (mask >> i & 1) kept.push_back(read_outside[i]);
        double least = std::numeric_limits<double>::infinity();
        for (const RetentionFloor& c : contexts)
          if (c.retained_in.empty() && std::all_of(kept.begin(), kept.end(), [&](int t) {
                return std::find(c.retained_out.begin(), c.retained_out.end(), t) != c.retained_out.end();
              }))
            least = std::min(least, c.floor.value);
        auto structure = SubgraphModel::compile_structure(p, g, ops, kept, 0, {}, ModelOptions{});
        if (std::holds_alternative<RuleViolation>(structure)) continue;
        SubgraphModel& model = std::get<SubgraphModel>(structure);
        for_each_small_granularity(p, model, [&](int64_t w, int64_t h, int64_t k) {
          for_each_order(model, [&] {
            const SubgraphResult run = model.simulate();
            if (run.violation) return;
            EXPECT_GE(run.latency, least * (1 - 1e-9))
                << "ops " << ops.size() << " keeping " << kept.size() << " of " << problem_to_json(p).dump()
                << " at [" << w << ", " << h << ", " << k << "]";
            ++checked;
            kept_runs += !kept.empty();
          });
        });
      }
    }
  }
  if (!test::seeds_moved()) {
    EXPECT_GT(kept_runs, 1000);  // coverage, calibrated on the own seed
  }
  std::cout << "[ cover    ] " << checked << " runs checked, " << kept_runs
            << " of them keeping outputs, against their contexts' floors\n";
}

TEST(CoverBound, AReceivedAndAKeptTensorThatFillTheMemoryLeaveNoRoomForASlice) {
  // x -> Pointwise -> a; a @ W -> b; b -> Pointwise -> c, all 2 x 2, in a fast memory of 8 elements. A
  // subgraph of the MatMul alone that receives `a` and keeps `b` would hold both whole at its last step
  // (M20 A and C), 8 elements, beside a slice of W of at least one element (M19, M20 B): it never fits
  // (Theorem 9). Receiving `a` alone, or keeping `b` alone, fits.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
    "base_costs": [1.0, 4.0, 1.0], "fast_memory_capacity": 8.0,
    "heights": [2, 2, 2, 2, 2], "widths": [2, 2, 2, 2, 2],
    "inputs": [[0], [1, 2], [3]], "outputs": [[1], [3], [4]],
    "native_granularity": [2, 2], "op_types": ["Pointwise", "MatMul", "Pointwise"],
    "slow_memory_bandwidth": 0.5})"),
                                  "filled");
  const Graph g = analyze_graph(p, "filled");
  bool receives = false, keeps = false, both = false;
  for (const RetentionFloor& c : subgraph_floors(p, g, ModelOptions{}, {1})) {
    const bool in = c.retained_in == std::vector<int>{1};
    const bool out = std::find(c.retained_out.begin(), c.retained_out.end(), 3) != c.retained_out.end();
    receives = receives || (in && !out);
    keeps = keeps || (!in && out);
    both = both || (in && out);
  }
  EXPECT_TRUE(receives);
  EXPECT_TRUE(keeps);
  EXPECT_FALSE(both);
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  EXPECT_LE(cover_bound(p, g, ModelOptions{}, unclocked()).bound, exact.optimum * (1 + 1e-9));
}

TEST(CoverBound, TwoFormsThatCoincideAtALargerTileFitWhereASmallerTileDoesNot) {
  // Found by the run-by-run campaign (seed 43): T1 @ T1 -> T2 heads an RHS link into T1 @ T2 -> T3, in a fast
  // memory of 8. At [1, 1, 2] the head's LHS T1[0:2, 0:2] and RHS T1[0:2, 0:1] are two slices (6), the
  // tail's LHS T1[r, 0:2] another 2 and the output tile 1: 9, out of memory. At [2, 1, 2] the head's two
  // slices are one region (4), so 4 + 2 + 2 = 8 fits. The floors once took out of memory at the smaller tile
  // for out of memory at every larger one and gave 188 against this run's 94.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
    "base_costs": [25.0, 22.0, 19.0], "fast_memory_capacity": 8.0,
    "heights": [2, 2, 2, 2, 2], "widths": [2, 2, 2, 2, 2],
    "inputs": [[1, 1], [1, 2], [3]], "outputs": [[2], [3], [4]],
    "native_granularity": [2, 1], "op_types": ["MatMul", "MatMul", "Pointwise"],
    "slow_memory_bandwidth": 1.0168175836640772})"),
                                  "aliasing");
  const Graph g = analyze_graph(p, "aliasing");
  auto structure = SubgraphModel::compile_structure(p, g, {0, 1}, {}, 0, {}, ModelOptions{});
  ASSERT_TRUE(std::holds_alternative<SubgraphModel>(structure));
  SubgraphModel& model = std::get<SubgraphModel>(structure);
  ASSERT_FALSE(model.set_granularity({1, 1, 2}));
  const SubgraphResult smaller = model.simulate();
  ASSERT_TRUE(smaller.violation.has_value());
  EXPECT_EQ(smaller.violation->rule, "M20");
  ASSERT_FALSE(model.set_granularity({2, 1, 2}));
  const SubgraphResult larger = model.simulate();
  ASSERT_FALSE(larger.violation.has_value());
  double least = std::numeric_limits<double>::infinity();
  for (const RetentionFloor& c : subgraph_floors(p, g, ModelOptions{}, {0, 1}))
    if (c.retained_in.empty()) least = std::min(least, c.floor.value);
  EXPECT_LE(least, larger.latency * (1 + 1e-9));
}

TEST(CoverBound, NeverAboveTheExactOptimumOfRandomTinyProblems) {
  // MLSYS_COVER_TRIALS and MLSYS_COVER_SEED run longer campaigns (docs/bounds.md#soundness).
  auto [trials, rng] = test::campaign("MLSYS_COVER_TRIALS", 1000, "MLSYS_COVER_SEED", 20261125u);
  // MLSYS_COVER_OPS raises the ops per problem (default 4; 5 gives more sets that read back their own
  // ops' results through an op outside them, at several times the brute force's time).
  const char* ops_env = std::getenv("MLSYS_COVER_OPS");
  const int max_ops = ops_env ? std::atoi(ops_env) : 4;
  int checked = 0, above_lambda = 0, tight = 0, incomplete = 0, reentrant = 0, credited = 0;
  while (checked < trials) {
    const int kind = checked % 6;
    const Problem p = kind == 0   ? testing::random_matmul_chain(rng, max_ops)
                      : kind == 1 ? testing::random_tiny_problem(rng, max_ops)
                      : kind == 4 ? testing::random_diamond(rng)
                      : kind == 5 ? testing::random_retention_chain(rng, max_ops)
                                  : testing::random_link_pair(rng, kind == 3);
    const Graph g = analyze_graph(p, "tiny");
    const ModelOptions options;
    const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, options);
    ASSERT_TRUE(exact.exhaustive);
    if (!exact.feasible) continue;
    const CoverBound cover = cover_bound(p, g, options, unclocked());
    ASSERT_TRUE(cover.attempted) << cover.status << " on " << problem_to_json(p).dump();
    if (!cover.complete) ++incomplete;
    if (cover.reentrant > 0) ++reentrant;
    if (std::any_of(cover.tensor_credits.begin(), cover.tensor_credits.end(), [](double c) { return c > 0; }))
      ++credited;
    ASSERT_LE(cover.bound, exact.optimum * (1 + 1e-9))
        << "cover bound " << cover.bound << " above the optimum " << exact.optimum << " of problem "
        << problem_to_json(p).dump();
    // With fewer inputs and outputs tried both ways, the rest are bounded together: sound too.
    CoverLimits fewer = unclocked();
    fewer.retention_choices = checked % 2;
    const CoverBound coarse = cover_bound(p, g, options, fewer);
    ASSERT_LE(coarse.bound, exact.optimum * (1 + 1e-9))
        << "cover bound with " << fewer.retention_choices << " choices " << coarse.bound
        << " above the optimum " << exact.optimum << " of problem " << problem_to_json(p).dump();
    const double lambda = certified_bound(p, g, options).bound;
    if (cover.bound > lambda * (1 + 1e-9)) ++above_lambda;
    if (cover.bound >= exact.optimum * (1 - 1e-9)) ++tight;
    ++checked;
  }
  test::expect_share(above_lambda, checked, 20, "above_lambda");
  test::expect_share(reentrant, checked, 10, "reentrant");  // the first-computation rule must be exercised
  test::expect_share(credited, checked, 100, "credited");  // and the retention rows of Theorem 7
  EXPECT_EQ(incomplete, 0);
  std::cout << "[ cover    ] " << checked << " tiny problems: the cover bound beat the lambda bound on "
            << above_lambda << " and equalled the optimum on " << tight << "; " << reentrant
            << " had sets that read back through an op outside them; " << credited
            << " priced a retained tensor (Theorem 7)\n";
}

TEST(CoverBound, ATensorReadInTwoFormsMayFitOnlyWhenReceivedRetained) {
  // The campaign's find (seed 97, no retention choices): T1 is read by op 1 (a MatMul's LHS) and op 2 (a
  // Pointwise tile), so its slices can outgrow its 4 elements and {1, 2, 3} fits at native tiles only when
  // T1 arrives retained. The floors once assumed the opposite and gave 59.27 against an optimum of 57.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
    "base_costs": [18.0, 28.0, 8.0, 3.0], "fast_memory_capacity": 12.0,
    "heights": [2, 2, 2, 2, 2, 2, 2, 2], "widths": [2, 2, 2, 2, 2, 2, 2, 2],
    "inputs": [[0, 2], [1, 4], [1, 3], [5, 7]], "outputs": [[1], [3], [5], [6]],
    "native_granularity": [2, 2], "op_types": ["MatMul", "MatMul", "Pointwise", "MatMul"],
    "slow_memory_bandwidth": 1.518930002864262})"),
                                  "regression");
  const Graph g = analyze_graph(p, "regression");
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  for (size_t choices : {0, 1, 4}) {
    CoverLimits limits = unclocked();
    limits.retention_choices = choices;
    EXPECT_LE(cover_bound(p, g, ModelOptions{}, limits).bound, exact.optimum * (1 + 1e-9)) << choices;
  }
}

TEST(CoverBound, ALoadedTensorWasStoredBefore) {
  // Benchmark 8: nine projections of one input feed three attention heads in a fast memory of 25,000
  // elements, which holds one 128 x 128 result beside a step's tiles. Without Theorem 10 the LP lets a
  // projection keep its result (no store) while the op that reads it loads it, though nothing ever wrote
  // it. With the rows, the bound must rise, and stay below a schedule the rule book accepts.
  const Problem p = load_problem(test::source_path("benchmarks/mlsys-2026-8.json"));
  const Graph g = analyze_graph(p, "benchmark 8");
  CoverLimits without = unclocked();
  without.store_rows = false;
  const CoverBound before = cover_bound(p, g, ModelOptions{}, without);
  const CoverBound after = cover_bound(p, g, ModelOptions{}, unclocked());
  ASSERT_TRUE(before.complete && after.complete) << before.status << " / " << after.status;
  EXPECT_GT(after.bound, before.bound + 1000);
  EXPECT_FALSE(after.store_terms.empty());
  double terms = 0;
  for (const auto& s : after.store_terms) terms += s.price;
  EXPECT_NEAR(std::accumulate(after.op_prices.begin(), after.op_prices.end(), 0.0) + terms, after.bound,
              1e-6 * after.bound);
  EXPECT_LE(after.bound, solver_cost(p, g, 1) * (1 + 1e-9));
}

TEST(CoverBound, EveryStoreRowStartsWithAColumnThatReceivesNothing) {
  // Found by the first campaign with Theorem 10's rows: the only column that met the row of tensor 4 (read
  // by op 3) received tensor 4, which no column in the LP kept, so the LP had no solution and the bound was
  // not attempted. A row must first be met by a column that receives nothing.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
    "base_costs": [1.0, 32.0, 10.0, 23.0], "fast_memory_capacity": 13.0,
    "heights": [3, 2, 2, 2, 2, 2, 2], "widths": [2, 3, 3, 3, 2, 3, 3],
    "inputs": [[1, 2], [1, 0], [4, 1], [4, 3]], "outputs": [[3], [4], [5], [6]],
    "native_granularity": [1, 2], "op_types": ["Pointwise", "MatMul", "MatMul", "MatMul"],
    "slow_memory_bandwidth": 0.5916599313000549})"),
                                  "regression");
  const Graph g = analyze_graph(p, "regression");
  const CoverBound cover = cover_bound(p, g, ModelOptions{}, unclocked());
  ASSERT_TRUE(cover.attempted && cover.complete) << cover.status;
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  EXPECT_LE(cover.bound, exact.optimum * (1 + 1e-9));
  EXPECT_GE(cover.bound, certified_bound(p, g, ModelOptions{}).bound * (1 - 1e-9));
}

TEST(CoverBound, CertificatePricesNoSetAboveItsFloor) {
  // Benchmark 7 (15 ops, 345 connected sets): re-derive every tight set's floors and check the printed
  // prices.
  const std::string path = test::source_path("benchmarks/mlsys-2026-7.json");
  const Problem p = load_problem(path);
  const Graph g = analyze_graph(p, path);
  const CoverBound cover = cover_bound(p, g, ModelOptions{}, unclocked());
  ASSERT_TRUE(cover.complete) << cover.status;
  EXPECT_NEAR(std::accumulate(cover.op_prices.begin(), cover.op_prices.end(), 0.0), cover.bound,
              1e-9 * cover.bound);
  ASSERT_EQ(cover.tensor_credits.size(), static_cast<size_t>(p.num_tensors()));
  for (const CoverBound::Binding& s : cover.binding) {
    if (!s.exact) continue;
    const auto contexts = subgraph_floors(p, g, ModelOptions{}, s.ops);
    const auto same = std::find_if(contexts.begin(), contexts.end(), [&](const RetentionFloor& c) {
      return c.retained_in == s.retained_in && c.retained_out == s.retained_out;
    });
    ASSERT_NE(same, contexts.end());
    double charged = 0;
    for (int o : s.charged) charged += cover.op_prices[o];
    for (int t : s.retained_out) charged += cover.tensor_credits[t];
    for (int t : s.retained_in) charged -= cover.tensor_credits[t];
    EXPECT_LE(charged, same->floor.value * (1 + 1e-9));
    // Theorem 8 may lift a split reduction's floor above the larger of its sums, never below.
    EXPECT_GE(same->floor.value, std::max(same->floor.compute, same->floor.memory) * (1 - 1e-9));
    // No context of the set is cheaper once its own credits are counted.
    for (const RetentionFloor& c : contexts) {
      double other = 0;
      for (int o : s.charged) other += cover.op_prices[o];
      for (int t : c.retained_out) other += cover.tensor_credits[t];
      for (int t : c.retained_in) other -= cover.tensor_credits[t];
      EXPECT_LE(other, c.floor.value * (1 + 1e-9));
    }
  }
}

TEST(CoverBound, RetentionReachesOnlyTheNextSubgraph) {
  // The first 9 ops of benchmark 15: a chain of MatMuls and Pointwise ops over 512 x 512 tensors in a fast
  // memory of 350,000 elements, which holds one of them whole beside a step's slices but not two. A MatMul
  // that loads its LHS rather than receiving it retained is memory-bound; one that receives it forces the
  // subgraph before it to keep it. Theorem 7's rows see that; each set alone does not.
  const Problem full = load_problem(test::source_path("benchmarks/mlsys-2026-15.json"));
  Problem p = full;
  p.inputs.resize(9);
  p.outputs.resize(9);
  p.base_costs.resize(9);
  p.op_types.resize(9);
  p.widths.resize(20);  // the 9 ops read and write tensors 0-19 only
  p.heights.resize(20);
  const Graph g = analyze_graph(p, "chain");
  const CertifiedBound lambda = certified_bound(p, g, ModelOptions{});
  const CoverBound cover = cover_bound(p, g, ModelOptions{}, unclocked());
  ASSERT_TRUE(cover.complete) << cover.status;
  EXPECT_GT(cover.bound, lambda.lambda_bound * 1.02);
  EXPECT_TRUE(
      std::any_of(cover.tensor_credits.begin(), cover.tensor_credits.end(), [](double c) { return c > 0; }));
  // Below a schedule the rule book accepts: the solver's. Theorem 11 is higher still here (233,808.5, which
  // `mlsys --exhaustive` meets: docs/bounds.md#theorem-11), and below it too.
  const double solver = solver_cost(p, g, 1);
  EXPECT_LE(cover.bound, solver * (1 + 1e-9));
  EXPECT_GT(lambda.inner_k_steps.bound, cover.bound);
  EXPECT_LE(lambda.bound, solver * (1 + 1e-9));
}

TEST(CoverBound, BelowTheSolversScheduleOnEveryBenchmarkItCovers) {
  // Real schedules nobody tuned for the bound: the solver's, found in half a second with the cover bound
  // switched off. The bound must be complete where docs/bounds.md says it is, and above the lambda bound on
  // the benchmarks where capacity splits the work.
  int above_lambda = 0, covered = 0;
  for (int i = 1; i <= 16; ++i) {
    const std::string path = test::source_path("benchmarks/mlsys-2026-" + std::to_string(i) + ".json");
    const Problem p = load_problem(path);
    const Graph g = analyze_graph(p, path);
    // Up to 400,000 sets: benchmark 10's 944,417 take 27 s (docs/bounds.md), too long for every test run.
    const CoverBound cover = cover_bound(p, g, ModelOptions{}, unclocked(400'000));
    if (!cover.attempted) continue;
    ++covered;
    EXPECT_TRUE(cover.complete) << "benchmark " << i << ": " << cover.status;
    EXPECT_LE(cover.bound, solver_cost(p, g, 0.5) * (1 + 1e-9)) << "benchmark " << i;
    if (cover.bound > certified_bound(p, g, ModelOptions{}).bound * (1 + 1e-9)) ++above_lambda;
  }
  EXPECT_EQ(covered, 12);      // 1-8, 11, 12, 14, 16 (docs/bounds.md#theorem-6)
  EXPECT_GE(above_lambda, 9);  // all but 2, 4 and 14 when this was written
}

}  // namespace
}  // namespace mlsys
