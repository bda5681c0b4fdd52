// Section 8 of the rule book: compute bounds (full-k, native-k) and the I/O bound of the 24 benchmarks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/json_io.hpp"
#include "sim/step_model.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

struct Bounds {
  int benchmark;
  double full_k, native_k, io;  // io rounded to 2 decimals in the rule book
};

// clang-format off
const Bounds kTable[] = {
    {1, 112000, 400000, 65536},           {2, 26000, 26000, 8738.13},         {3, 28000, 52000, 26214.4},
    {4, 7000, 25000, 13926.4},            {5, 160000, 232000, 46967.47},      {6, 56000, 136000, 78643.2},
    {7, 51200, 81200, 30583.47},          {8, 14700, 23700, 28672},           {9, 13465600, 164505600, 2768240.64},
    {10, 3808000, 28896000, 838860.8},    {11, 998400, 2750400, 124518.4},    {12, 1753600, 12953600, 461373.44},
    {13, 5201500, 166401500, 1006960.64}, {14, 2755200, 9739200, 152371.2},   {15, 1307200, 4763200, 194735.54},
    {16, 4134400, 15894400, 768955.73},   {17, 4966400, 46326400, 760217.6},  {18, 1417600, 4009600, 81920},
    {19, 1993600, 7177600, 166024.53},    {20, 5228800, 16228800, 202225.37}, {21, 2102400, 6326400, 96993.28},
    {22, 3120000, 7920000, 93206.76},     {23, 3435200, 9163200, 88064},      {24, 2526400, 7326400, 89128.96},
};
// clang-format on

TEST(LowerBound, RuleBookTable) {
  for (const Bounds& b : kTable) {
    const Problem p =
        load_problem(source_path("benchmarks/mlsys-2026-" + std::to_string(b.benchmark) + ".json"));
    const LowerBound lb = lower_bound(p, analyze_graph(p, "benchmark"));
    EXPECT_DOUBLE_EQ(b.full_k, lb.compute_full_k) << b.benchmark;
    EXPECT_DOUBLE_EQ(b.native_k, lb.compute_native_k) << b.benchmark;
    EXPECT_NEAR(b.io, lb.io, 0.005 + 1e-9) << b.benchmark;
  }
}

// Section 8's caveat: an op may pay a fraction of a native tile only as a chain head or in-chain op, on the
// tail's reduction axis (M23, M24). Here X (64 x 128) -> P -> Y -> A = Y @ W1 -> T (64 x 128), and
// B = W2 (128 x 64) @ T. P has no MatMul above it, so it is never in-chain: one padded tile, 100 (the floor
// used to take half). A feeds B's RHS, so it may head an RHS link and stream its 64 rows: 200 x 64/128 = 100.
// B's output is a graph output, so B is never a head: one tile, 300.
TEST(LowerBound, OnlyAPossibleHeadOrInChainOpPaysAFractionOfATile) {
  const Problem p = parse_problem(nlohmann::json::parse(R"({
      "widths": [128, 128, 128, 128, 64, 128], "heights": [64, 64, 128, 64, 128, 128],
      "inputs": [[0], [1, 2], [4, 3]], "outputs": [[1], [3], [5]], "base_costs": [100, 200, 300],
      "op_types": ["Pointwise", "MatMul", "MatMul"], "fast_memory_capacity": 1000000,
      "slow_memory_bandwidth": 1000, "native_granularity": [128, 128]})"),
                                  "hand");
  const Graph g = analyze_graph(p, "hand");
  EXPECT_EQ(g.streamable_axes[0], 0);
  EXPECT_EQ(g.streamable_axes[1], kStreamsRows);
  EXPECT_EQ(g.streamable_axes[2], 0);
  EXPECT_DOUBLE_EQ(compute_floor(p, g, 0, MatmulCompute::FullK), 100.0);
  EXPECT_DOUBLE_EQ(compute_floor(p, g, 1, MatmulCompute::FullK), 100.0);
  EXPECT_DOUBLE_EQ(compute_floor(p, g, 2, MatmulCompute::FullK), 300.0);
  EXPECT_DOUBLE_EQ(lower_bound(p, g).compute_full_k, 500.0);
  // The fraction is real: A heading B at k = 64 (one k-step) computes 64 of its rows per step at 100, B 300.
  Schedule s;
  s.subgraphs.push_back({{0}, {128, 128, 1}, {}, std::nullopt});
  s.subgraphs.push_back({{1, 2}, {128, 128, 64}, {}, std::nullopt});
  const ScheduleReport report = verify_schedule(p, g, s, VerifyOptions{});
  ASSERT_TRUE(report.valid) << (report.error ? report.error->sentence() : "");
  EXPECT_DOUBLE_EQ(report.subgraphs[1].compute_time, 400.0);
}

// In-chain Pointwise ops stream like their head; an LHS link streams columns. A = X @ W (128 x 64), then
// P (Pointwise) and B = P's output @ V (64 x 128): A and P may stream their 64 columns, B may not.
TEST(LowerBound, InChainOpsOfAnLhsLinkStreamColumns) {
  const Problem p = parse_problem(nlohmann::json::parse(R"({
      "widths": [128, 64, 64, 64, 128, 128], "heights": [128, 128, 128, 128, 64, 128],
      "inputs": [[0, 1], [2], [3, 4]], "outputs": [[2], [3], [5]], "base_costs": [200, 40, 300],
      "op_types": ["MatMul", "Pointwise", "MatMul"], "fast_memory_capacity": 1000000,
      "slow_memory_bandwidth": 1000, "native_granularity": [128, 128]})"),
                                  "hand");
  const Graph g = analyze_graph(p, "hand");
  EXPECT_EQ(g.streamable_axes[0], kStreamsColumns);
  EXPECT_EQ(g.streamable_axes[1], kStreamsColumns);
  EXPECT_EQ(g.streamable_axes[2], 0);
  EXPECT_DOUBLE_EQ(lower_bound(p, g).compute_full_k, 100.0 + 20.0 + 300.0);
  Schedule s;
  s.subgraphs.push_back({{0, 1, 2}, {128, 128, 64}, {}, std::nullopt});
  const ScheduleReport report = verify_schedule(p, g, s, VerifyOptions{});
  ASSERT_TRUE(report.valid) << (report.error ? report.error->sentence() : "");
  EXPECT_DOUBLE_EQ(report.subgraphs[0].compute_time, 420.0);
}

}  // namespace
}  // namespace mlsys::test
