// Theorem 15 (verifier/exposed_epilogue_bound): never above the exact optimum of random tiny problems (the
// brute force of tests/brute_force over every schedule the rule book accepts), and equal to a hand derivation
// on a chain of two MatMuls.
#include "verifier/exposed_epilogue_bound.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "sim/json_io.hpp"
#include "support.hpp"
#include "tests/brute_force.hpp"
#include "verifier/bound.hpp"

namespace mlsys {
namespace {

TEST(ExposedEpilogueBound, NeverAboveTheExactOptimumOfRandomDeepChains) {
  // MLSYS_EPILOGUE_TRIALS and MLSYS_EPILOGUE_SEED run longer campaigns (docs/bounds.md#soundness).
  auto [trials, rng] = test::campaign("MLSYS_EPILOGUE_TRIALS", 200, "MLSYS_EPILOGUE_SEED", 20261126u);
  int checked = 0, applied = 0, above_traffic = 0, largest = 0, tight = 0;
  while (checked < trials) {
    const Problem p =
        checked % 2 == 0 ? testing::random_epilogue_chain(rng) : testing::random_deep_chain(rng);
    const Graph g = analyze_graph(p, "tiny");
    const ModelOptions options;
    const CertifiedBound certified = certified_bound(p, g, options);
    const ExposedEpilogueBound& bound = certified.exposed_epilogues;
    const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, options);
    ASSERT_TRUE(exact.exhaustive);
    if (!exact.feasible) continue;
    ++checked;
    ASSERT_LE(bound.bound, exact.optimum * (1 + 1e-9))
        << "bound " << bound.bound << " above the optimum " << exact.optimum << " of problem "
        << problem_to_json(p).dump();
    applied += bound.applies;
    if (bound.bound > bound.graph_traffic * (1 + 1e-9)) ++above_traffic;
    if (largest_bound_name(certified) == "exposed epilogues") ++largest;
    if (bound.bound >= exact.optimum * (1 - 1e-9)) ++tight;
  }
  // The theorem must bite on a fair share, or this test proves nothing about it.
  test::expect_share(above_traffic, checked, 5, "above_traffic");
  test::expect_share(largest, checked, 50, "largest");
  std::cout << "[ epilogue ] " << checked << " tiny problems: Theorem 15 applied to " << applied
            << ", the largest bound on " << largest << ", equalled the optimum on " << tight << "\n";
}

TEST(ExposedEpilogueBound, ChargesAnEpilogueBetweenTwoDeepMatMulsWhatItsLastKStepsCannotHide) {
  // x (1 x 2) @ w1 (2 x 2) -> y; p(y) -> z; z @ w2 (2 x 2) -> out, native 1 x 1, bandwidth 1. Both K = 2 are
  // deeper than native. Graph traffic: x 2 + w1 4 + w2 4 + out 2 = 12.
  // p alone: 2 native tiles of base 10 = 20, with no graph traffic to hide it.
  // p as op 0's epilogue: 2 tiles of 1 x 1; at k = 1 each last step computes 10 + 4 * 1/2 = 12 and loads
  // one element each of x and w1 for the first time: 2 x (12 - 2) = 20.
  // p in-chain with op 2: per tile of out (2 tiles) p and op 0 run K/n_k = 2 strips: (10 + 4) * 2 * 2 = 56,
  // op 2 computes 4 * 2 = 8; minus first-time traffic of ops 0 and 2, 6 + 6: 52. No MatMul can head a link
  // into op 0. Exposed: 20, so the bound is 32.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
      "widths": [2, 2, 2, 2, 2, 2], "heights": [1, 2, 1, 1, 2, 1],
      "inputs": [[0, 1], [2], [3, 4]], "outputs": [[2], [3], [5]],
      "base_costs": [4, 10, 4], "op_types": ["MatMul", "Pointwise", "MatMul"],
      "fast_memory_capacity": 100, "slow_memory_bandwidth": 1, "native_granularity": [1, 1]})"),
                                  "hand");
  const Graph g = analyze_graph(p, "hand");
  const ExposedEpilogueBound bound = exposed_epilogue_bound(p, g, ModelOptions{});
  ASSERT_TRUE(bound.applies) << bound.status;
  EXPECT_DOUBLE_EQ(bound.graph_traffic, 12.0);
  ASSERT_EQ(bound.epilogues.size(), 1u);
  const ExposedEpilogueBound::Epilogue& e = bound.epilogues[0];
  EXPECT_EQ(e.op, 1);
  EXPECT_DOUBLE_EQ(e.alone, 20.0);
  EXPECT_DOUBLE_EQ(e.epilogue, 20.0);
  EXPECT_DOUBLE_EQ(e.in_chain, 52.0);
  EXPECT_EQ(e.cheapest_head, -1);
  EXPECT_DOUBLE_EQ(bound.bound, 32.0);
  const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
  ASSERT_TRUE(exact.feasible && exact.exhaustive);
  EXPECT_LE(bound.bound, exact.optimum * (1 + 1e-9));
  std::cout << "[ epilogue ] hand case: bound 32, optimum " << exact.optimum << "\n";

  ModelOptions supernative;
  supernative.allow_supernative_k = true;
  EXPECT_FALSE(exposed_epilogue_bound(p, g, supernative).applies);
}

}  // namespace
}  // namespace mlsys
