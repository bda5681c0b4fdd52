// Theorem 11 (verifier/inner_k_step_bound): never above the exact optimum of random tiny problems (the brute
// force of tests/brute_force over every schedule the rule book accepts), equal to a hand derivation on a
// chain of two MatMuls, and above benchmark 15's published value.
#include "verifier/inner_k_step_bound.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <variant>

#include "sim/json_io.hpp"
#include "sim/step_model.hpp"
#include "support.hpp"
#include "tests/brute_force.hpp"
#include "verifier/bound.hpp"

namespace mlsys {
namespace {

TEST(InnerKStepBound, NeverAboveTheExactOptimumOfRandomDeepChains) {
  // MLSYS_INNER_TRIALS and MLSYS_INNER_SEED run longer campaigns (docs/bounds.md#soundness).
  auto [trials, rng] = test::campaign("MLSYS_INNER_TRIALS", 300, "MLSYS_INNER_SEED", 20261126u);
  int checked = 0, applied = 0, above_compute = 0, chain_binding = 0, tight = 0;
  while (checked < trials) {
    const int kind = checked % 3;
    const Problem p = kind == 0   ? testing::random_deep_chain(rng)
                      : kind == 1 ? testing::random_retention_chain(rng, 4)
                                  : testing::random_matmul_chain(rng, 4);
    const Graph g = analyze_graph(p, "tiny");
    const ModelOptions options;
    const InnerKStepBound bound = inner_k_step_bound(p, g, options);
    const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, options);
    ASSERT_TRUE(exact.exhaustive);
    if (!exact.feasible) continue;
    ++checked;
    ASSERT_LE(bound.bound, exact.optimum * (1 + 1e-9))
        << "bound " << bound.bound << " above the optimum " << exact.optimum << " of problem "
        << problem_to_json(p).dump();
    applied += bound.applies;
    if (bound.bound > bound.compute_floor * (1 + 1e-9)) ++above_compute;
    if (bound.applies && bound.chain_case > 0 && bound.chain_case < bound.mixed_case) ++chain_binding;
    if (bound.bound >= exact.optimum * (1 - 1e-9)) ++tight;
  }
  // The theorem must bite on a fair share, or this test proves nothing about it.
  test::expect_share(above_compute, checked, 10, "above_compute");
  test::expect_share(chain_binding, checked, 20, "chain_binding");
  std::cout << "[ inner    ] " << checked << " tiny problems: Theorem 11 applied to " << applied
            << ", rose above the compute floor on " << above_compute << " (the chain case deciding on "
            << chain_binding << "), equalled the optimum on " << tight << "\n";
}

TEST(InnerKStepBound, AnIntermediateKeptBesideAReceivedOneCostsTheLinkNothing) {
  // Found by the campaign (seed 5, 3,000 problems) with a link priced whatever the first MatMul received:
  // op 0 reads two graph inputs, so it receives nothing and its subgraph can keep the 6-element tensor 3
  // whole in a fast memory of 9 for op 2. The link is then free; charging op 1's load put the bound at
  // 215.97, above this optimum.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
      "base_costs": [26.0, 4.0, 35.0], "fast_memory_capacity": 9.0, "heights": [2, 2, 3, 2, 2, 3],
      "inputs": [[0, 2], [1], [3, 5]], "native_granularity": [1, 2], "op_types": ["MatMul", "Pointwise", "MatMul"],
      "outputs": [[1], [3], [4]], "slow_memory_bandwidth": 0.2518094161930733, "widths": [3, 3, 3, 3, 3, 3]})"),
                                  "regression");
  const Graph g = analyze_graph(p, "regression");
  const InnerKStepBound bound = inner_k_step_bound(p, g, ModelOptions{});
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  EXPECT_NEAR(exact.optimum, 215.22394900156524, 1e-9);
  ASSERT_TRUE(bound.applies) << bound.status;
  EXPECT_LE(bound.bound, exact.optimum * (1 + 1e-9));
}

TEST(InnerKStepBound, AnEpilogueReadingTheOperandCanHoldItsFirstKStepSlice) {
  // Why a tile's first k-step counts only when the MatMul alone reads its operand (Theorem 11): Z = f(X @ W,
  // X) at [w, h, k] = [2, 2, 2] over a 2 x 4 grid. The epilogue reads X's tile at the last k-step of tile 0,
  // X[0:2, 0:2], which is the MatMul's slice at the first k-step of tile 1: M21 reuses it.
  Problem p;
  p.widths = {4, 4, 4, 4};  // X 2 x 4, W 4 x 4, Y 2 x 4, Z 2 x 4
  p.heights = {2, 4, 2, 2};
  p.inputs = {{0, 1}, {2, 0}};
  p.outputs = {{2}, {3}};
  p.op_types = {OpType::MatMul, OpType::Pointwise};
  p.base_costs = {10, 1};
  p.fast_memory_capacity = 100;
  p.slow_memory_bandwidth = 1;
  p.native_w = p.native_h = 2;
  const Graph g = analyze_graph(p, "epilogue");
  auto compiled =
      SubgraphModel::compile(p, g, SubgraphSpec{{0, 1}, {2, 2, 2}, {}, std::nullopt}, 0, {}, ModelOptions{});
  ASSERT_TRUE(std::holds_alternative<SubgraphModel>(compiled));
  bool checked = false;
  std::get<SubgraphModel>(compiled).simulate([&](const StepDetail& step) {
    if (step.ref.position != 1 || step.ref.k_step != 0) return;
    for (const SliceUse& slice : step.slices)
      if (slice.tensor == 0) {
        EXPECT_EQ(slice.region, (Region{0, 2, 0, 2}));
        EXPECT_FALSE(slice.loaded);
        checked = true;
      }
  });
  EXPECT_TRUE(checked);
}

TEST(InnerKStepBound, WithoutAPossibleLinkARecomputationStillCounts) {
  // One MatMul X @ W, K = 3 deeper than native 2: no link can exist (link_case infinite), so the mixed case
  // is one extra run (its floor) against the tree it disturbs, never "0 links x infinity".
  Problem p;
  p.widths = {3, 3, 3};  // X 2 x 3, W 3 x 3, Y 2 x 3
  p.heights = {2, 3, 2};
  p.inputs = {{0, 1}};
  p.outputs = {{2}};
  p.op_types = {OpType::MatMul};
  p.base_costs = {1};
  p.fast_memory_capacity = 100;
  p.slow_memory_bandwidth = 0.5;
  p.native_w = p.native_h = 2;
  const Graph g = analyze_graph(p, "one");
  const InnerKStepBound bound = inner_k_step_bound(p, g, ModelOptions{});
  ASSERT_TRUE(bound.applies) << bound.status;
  EXPECT_EQ(bound.link_case, InnerKStepBound::kNone);
  EXPECT_DOUBLE_EQ(bound.recompute_case, bound.compute_floor);
  EXPECT_GT(bound.chain_case, 0);
  EXPECT_DOUBLE_EQ(bound.mixed_case,
                   bound.recompute_case + std::max(0.0, bound.chain_case - 3 * bound.disturbed_loss));
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  EXPECT_LE(bound.bound, exact.optimum * (1 + 1e-9));
}

TEST(InnerKStepBound, RulesOutThePublishedValueOfBenchmark15) {
  // By hand (docs/bounds.md#theorem-11). Every tensor is 512 x 512 = 262,144 elements, a = 262,144 / 35 =
  // 7,489.83 to move; fast memory 350,000 holds one whole, not two. The 24 MatMuls (K = 512 > 128, base
  // 3,000, 16 tiles of 128 x 128) lie on one path.
  // * A MatMul that loads its LHS pays 3 inner k-steps per tile of 2 x 128 x 128 / 35 = 936.23 against 750
  //   of compute: 48 x 186.23 = 8,938.97 (5,959.31, 2 steps, when a side op also reads the LHS).
  // * Receiving the LHS costs nothing there; storing the output for a link then costs the last k-steps,
  //   RHS slice and output tile against 750: 16 x 186.23 = 2,979.66 (not claimed where a side op reads an
  //   operand: it could be an epilogue).
  // * A link whose far end receives its operand (two whole tensors do not fit) runs its Pointwise op alone on
  //   a loaded input: a - 16 x 300 = 2,689.83 (13 links), a - 16 x 200 = 4,289.83 (3 in the tail).
  // Each main-chain tree of three: 2 x 2,689.83 + 2,979.66 = 8,359.31 (less than 8,938.97 for loading the
  // middle one's LHS); {37, 39}: 2,689.83; the tail: 2,979.66 + 4,289.83 + 8,938.97 = 16,208.46.
  // Recomputing a MatMul costs 48,000 per extra run and disturbs at most 3 MatMuls worth 8,938.97 each to the
  // trees; a link costs its head 144,000.
  const std::string path = test::source_path("benchmarks/mlsys-2026-15.json");
  const Problem p = load_problem(path);
  const Graph g = analyze_graph(p, path);
  const InnerKStepBound bound = inner_k_step_bound(p, g, ModelOptions{});
  ASSERT_TRUE(bound.applies) << bound.status;
  const double a = 262144.0 / 35, inner = 48 * (32768.0 / 35 - 750), store = 16 * (32768.0 / 35 - 750);
  EXPECT_DOUBLE_EQ(bound.compute_floor, 1307200.0);
  EXPECT_DOUBLE_EQ(bound.recompute_case, 48000.0);
  EXPECT_DOUBLE_EQ(bound.link_case, 144000.0);
  EXPECT_NEAR(bound.disturbed_loss, inner, 1e-6);
  EXPECT_EQ(bound.trees.size(), 8u);
  const double tree = 2 * (a - 4800) + store, tail = store + (a - 3200) + inner;
  const double chain = 6 * tree + (a - 4800) + tail;
  EXPECT_NEAR(bound.chain_case, chain, 1e-6);
  EXPECT_NEAR(bound.mixed_case, 48000 + chain - 3 * inner, 1e-6);
  EXPECT_NEAR(bound.bound, 1307200 + chain, 1e-6);
  EXPECT_GT(bound.bound, 1314179.0);  // the published value (k above 128)
  const CertifiedBound certified = certified_bound(p, g, ModelOptions{});
  test::expect_certified(certified.bound, bound.bound, certified.rounding_ulps);
}

}  // namespace
}  // namespace mlsys
