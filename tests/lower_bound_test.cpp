// Section 8 of the rule book: compute bounds (full-k, native-k) and the I/O bound of the 24 benchmarks.
#include <gtest/gtest.h>

#include "sim/json_io.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

struct Bounds {
  int benchmark;
  double full_k, native_k, io;  // io rounded to 2 decimals in the rule book
};

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

TEST(LowerBound, RuleBookTable) {
  for (const Bounds& b : kTable) {
    const Problem p = load_problem(source_path("benchmarks/mlsys-2026-" + std::to_string(b.benchmark) + ".json"));
    const LowerBound lb = lower_bound(p, analyze_graph(p, "benchmark"));
    EXPECT_DOUBLE_EQ(b.full_k, lb.compute_full_k) << b.benchmark;
    EXPECT_DOUBLE_EQ(b.native_k, lb.compute_native_k) << b.benchmark;
    EXPECT_NEAR(b.io, lb.io, 0.005 + 1e-9) << b.benchmark;
  }
}

}  // namespace
}  // namespace mlsys::test
