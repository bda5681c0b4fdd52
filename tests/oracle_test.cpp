// The search's oracle on subgraphs of benchmark 8 (capacity 25,000, bandwidth 12, native 128x128) whose best
// configuration is derived by hand, and its cheap rejections. X (T0) is 128x256; every other tensor here is
// 128x128 = 16,384 elements, 1365.33 to move.
#include <gtest/gtest.h>

#include "sim/json_io.hpp"
#include "solver/oracle.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

class Benchmark8Oracle : public ::testing::Test {
 protected:
  Benchmark8Oracle()
      : path_(source_path("benchmarks/mlsys-2026-8.json")),
        problem_(load_problem(path_)),
        graph_(analyze_graph(problem_, path_)),
        oracle_(problem_, graph_, ModelOptions{}) {}

  std::string path_;
  Problem problem_;
  Graph graph_;
  SubgraphOracle oracle_;
};

TEST_F(Benchmark8Oracle, ThreeMatMulsThatShareXLoadItTwice) {
  // Ops 2, 8, 14 compute X @ W (K = 256) for three branches. At w = 64, k = 1 the step holds X's 128x1 slice,
  // three 1x64 weight slices and three 128x64 output tiles: 128 + 192 + 24,576 = 24,896 <= 25,000. Two
  // column tiles load X twice (2 x 32,768), each weight once (3 x 32,768), and store three outputs
  // (3 x 16,384): 212,992 / 12 = 17,749.33, memory-bound at every step (compute 3 x 1000/256 per step
  // against 320/12). Apart, the three cost 3 x (65,536 + 16,384) / 12 = 20,480.
  std::string reason;
  const auto best = oracle_.best({2, 8, 14}, {}, {}, &reason);
  ASSERT_TRUE(best) << reason;
  EXPECT_NEAR(212992.0 / 12, best->latency, 1e-9 * best->latency);
  EXPECT_EQ(64, best->granularity.w);
}

TEST_F(Benchmark8Oracle, TwoMatMulChainWithItsLhsRetainedIn) {
  // S = Q @ K' (op 4) then O = S @ V (op 5) as one LHS chain, receiving Q (T4) retained. At [64, 128, 2]:
  // Q 16,384 (A) + K' slice 128x2 + V slice 2x64 + O tile 128x64 = 24,960. Each of the two column tiles
  // streams all of K' (2 x 16,384); V is read once (16,384) and O stored once (16,384): 65,536 / 12 = 5461.33.
  // Per step the two MatMuls compute 800 x 2/128 each = 25 against (256 + 128) / 12 = 32 of traffic.
  std::string reason;
  const auto best = oracle_.best({4, 5}, {4}, {}, &reason);
  ASSERT_TRUE(best) << reason;
  EXPECT_NEAR(65536.0 / 12, best->latency, 1e-9 * best->latency);
}

TEST_F(Benchmark8Oracle, RetainedTensorsOverCapacityAreRejectedBeforeAnyGranularity) {
  // Receiving T5 and retaining T7 needs 2 x 16,384 = 32,768 > 25,000 at the last step, whatever the tiles.
  std::string reason;
  EXPECT_FALSE(oracle_.best({3}, {5}, {7}, &reason));
  EXPECT_NE(std::string::npos, reason.find("M20")) << reason;
  EXPECT_NE(std::string::npos, reason.find("32768")) << reason;
  EXPECT_EQ(0, oracle_.evaluations());
}

TEST_F(Benchmark8Oracle, ABrokenSplitKStructureIsSettledByTwoProbes) {
  // Ops 0 -> 4 -> 5 make op 4 a middle MatMul: M13 forbids it at nk > 1, and at nk = 1 needs k = K for every
  // MatMul, impossible with op 0's K = 256 > 128. The probe at the smallest k finds the first; then only
  // k = 128 is tried, once per tile shape, instead of every k for every tile shape: one structure compilation,
  // one probe and 16 tile shapes (heights and widths 128, 64, 43, 32), against 114 without the probe.
  std::string reason;
  EXPECT_FALSE(oracle_.best({0, 4, 5}, {}, {}, &reason));
  EXPECT_NE(std::string::npos, reason.find("M13")) << reason;
  EXPECT_LE(oracle_.evaluations(), 1 + 1 + 16);
}

// Benchmark 13 (capacity 600,000, bandwidth 50): ops 1 -> 2 are a two-MatMul chain, T34 (128x4096) @ W (T1,
// 4096x4096) @ T18 (4096x128). The chain keeps the head's whole LHS strip, 524,288 elements, so only k = 8
// fits: 524,288 + a 4096x8 weight slice + an 8x128 slice of T18 + the small tiles. Each of the 512 steps
// loads 32,768 + 1,024 elements (675.84) against a compute of 322.27: everything is loaded once and the
// output stored once, (524,288 + 512 x 33,792 + 16,384) / 50 = 356,843.52.
TEST(Benchmark13Oracle, LiftingTheKLimitKeepsTheChainThatFitsOnlyAtASmallK) {
  const std::string path = source_path("benchmarks/mlsys-2026-13.json");
  const Problem problem = load_problem(path);
  const Graph graph = analyze_graph(problem, path);
  for (bool supernative : {false, true}) {
    ModelOptions options;
    options.allow_supernative_k = supernative;
    SubgraphOracle oracle(problem, graph, options);
    std::string reason;
    const auto best = oracle.best({1, 2}, {}, {}, &reason);
    ASSERT_TRUE(best) << "supernative " << supernative << ": " << reason;
    EXPECT_NEAR(17842176.0 / 50, best->latency, 1e-9 * best->latency) << "supernative " << supernative;
    EXPECT_EQ(8, best->granularity.k) << "supernative " << supernative;
  }
}

// A two-MatMul chain X (8x4096) @ W1 (4096x128) @ W2 (128x8) on one 8x8 tile keeps the head's LHS strip
// (32,768) and per step a 4096 x k slice of W1, a k x 8 slice of W2 and the 8x8 output: 32,832 + 4,104 k.
// Under the capacity 43,000 only k <= 2 fits, below every k candidate (the smallest is 128 / 32 = 4), so the
// probes must not judge by the smallest candidate. Each element is moved once at bandwidth 1 and the compute
// (base 1) is negligible: 32,768 + 524,288 + 1,024 loaded, 64 stored = 558,144.
TEST(ChainOracle, ASubgraphThatFitsOnlyBelowTheSmallestKCandidateIsFound) {
  const nlohmann::json doc = {{"widths", {4096, 128, 128, 8, 8}},
                              {"heights", {8, 4096, 8, 128, 8}},
                              {"inputs", {{0, 1}, {2, 3}}},
                              {"outputs", {{2}, {4}}},
                              {"base_costs", {1, 1}},
                              {"op_types", {"MatMul", "MatMul"}},
                              {"fast_memory_capacity", 43000},
                              {"slow_memory_bandwidth", 1},
                              {"native_granularity", {128, 128}}};
  const Problem problem = parse_problem(doc, "chain.json");
  const Graph graph = analyze_graph(problem, "chain.json");
  SubgraphOracle oracle(problem, graph, ModelOptions{});
  std::string reason;
  const auto best = oracle.best({0, 1}, {}, {}, &reason);
  ASSERT_TRUE(best) << reason;
  EXPECT_NEAR(558144.0, best->latency, 1e-9 * best->latency);
  EXPECT_LE(best->granularity.k, 2);
  EXPECT_LE(best->peak_working_set, 43000);
}

// Benchmark 5 (capacity 30,000, bandwidth 15): ops 0 -> 1 -> 2 are x (T0, 1024x128) @ W (T1, 128x512), a
// Pointwise op, and @ T2 (512x128): a chain through an in-chain op (M12 since 2026-11-23), K_s = 512, so
// split-K. The grid is T12, 1024x128. A tile holds x's h x 128 strip and h x 128 output besides the k-wide
// slices of T1 and T2 (128 k each): 256 h + 256 k <= 30,000 gives h <= 116, so at least 9 row tiles at
// w = 128 (narrower tiles only reload x's strips). Each row tile streams all of T1 (65,536) and T2 (65,536);
// x is loaded once and T12 stored once: (131,072 + 9 x 131,072 + 131,072) / 15 = 96,119.47, and every step is
// memory-bound (per step 512 / 15 = 34.1 against 1000 x 2/128 + 200 x 2/128 + 1000 x 2/512 = 22.7 at k = 2).
TEST(Benchmark5Oracle, AChainThroughAPointwiseOpUnderSplitK) {
  const std::string path = source_path("benchmarks/mlsys-2026-5.json");
  const Problem problem = load_problem(path);
  const Graph graph = analyze_graph(problem, path);
  SubgraphOracle oracle(problem, graph, ModelOptions{});
  std::string reason;
  const auto best = oracle.best({0, 1, 2}, {}, {}, &reason);
  ASSERT_TRUE(best) << reason;
  EXPECT_NEAR(1441792.0 / 15, best->latency, 1e-9 * best->latency);
  EXPECT_EQ(9, best->grid_rows);
  EXPECT_LE(best->peak_working_set, 30000);
}

}  // namespace
}  // namespace mlsys::test
