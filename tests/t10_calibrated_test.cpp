// The calibrated timing (sim/t10/t10_calibrated, docs/t10-model.md#calibrated): the T10 authors' IPU-fitted
// cost model for one MatMul plan, and the all-cores engine priced by it.
// - Six plans, one per problem, derived by hand below from the published formulas (not from our code).
// - Vectors the published model itself produced (tests/golden/t10/calibrated.json: platformxlab/elk's
//   TensorExpression run on each plan): our model equals every total and term, and accepts exactly the plans
//   it accepts; the engine's makespan equals the total on a sample of them.
// - Random plans: the engine's phases sum to the model's three terms, the warm-up stays beside them.
#include "sim/t10/t10_calibrated.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <systemc>

#include "sim/t10/t10_cores.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;
using namespace mlsys::t10;

class T10Calibrated : public ::testing::Test {
 protected:
  void TearDown() override { sc_core::sc_get_curr_simcontext()->reset(); }
};

t10::Problem problem_of(int64_t m, int64_t k, int64_t n) {
  t10::Problem p;
  p.m = m, p.k = k, p.n = n;
  return p;
}

Plan plan_of(std::array<int64_t, 3> f_op, int64_t am = 1, int64_t ak = 1, int64_t bk = 1, int64_t bn = 1,
             int64_t cm = 1, int64_t cn = 1) {
  Plan p;
  p.f_op = f_op;
  p.am = am, p.ak = ak, p.bk = bk, p.bn = bn, p.cm = cm, p.cn = cn;
  return p;
}

void expect_near(double want, double got, const char* what) {
  EXPECT_NEAR(want, got, 1e-9 * std::max(1.0, std::abs(want))) << what;
}

struct HandCase {
  const char* name;
  t10::Problem problem;
  Plan plan;
  double compute, sync_shift, shuffle, total, warm_up;
  int64_t hot, cold;
};

// Derivations (e = 2 bytes; shift time x*e/2*0.56; 118-cycle syncs; MatMul step 2*12*ceil(m/6)*ceil(k/16)*
// ceil(n/16) + 514*ceil(k/16)*ceil(n/16) + 113*ceil(n/16) + 173 with m the larger of the sub-task's output
// sides unless it is at most 16; shuffle = (S_C*0.56 + 236) + 472 + gather + reduce over rho_C copies):
//
// seed (32, 5120, 15360), [1, 366, 4], A_m = 2: blocks (32, 14, 3840), t_m = 2, sub-task (16, 14, 3840).
//   step: m = 3840, n = 16: 24*640*1*1 + 514 + 113 + 173 = 16,160; x 2 steps = 32,320.
//   shift: one level (m, A, g = 2), S_A = 16*14 = 224: 224*0.56 = 125.44 + 236 = 361.44.
//   shuffle: rho_C = 366, output 16*3840 = 61,440: gather 366*118 + 61,440*0.56 = 77,594.4; reduced 167.87
//   aligns to 192, 192*366 = 70,272 > 480: 70,272/4 + 175 = 17,743; S_C = 122,880: 68,812.8 + 236.
//   shuffle = 69,048.8 + 472 + 77,594.4 + 17,743 = 164,858.2; total 197,539.64.
//   hot 2*(122,880 + 2*224 + 53,760) = 354,176; cold 2*(224 + 53,760) = 107,968.
//   warm-up: A's 4 copies over a ring of 2: cold k factor 2, S_A 16*7 = 112, x2 = 224 elements: 125.44 +
//   2*118 = 361.44.
// edge4 (4, 4096, 4096), [1, 32, 46]: blocks (4, 128, 90), one step.
//   step: m = 90, n = 4: 24*15*8*1 + 514*8 + 113 + 173 = 7,278.  No shift.
//   shuffle: rho_C = 32, output 360: gather 3,776 + 201.6; reduced 11.25 aligns to 12, 12*32 = 384 <= 480:
//   min(295.25, 751) = 295.25; 201.6 + 236 + 472 + 3,977.6 + 295.25 = 5,182.45; total 12,460.45.
//   hot 2*(360 + 512 + 11,520) = 24,784; cold 24,064; warm-up: A's 46 copies: cold S_A = 4*ceil(128/46) = 12,
//   46*12 = 552 elements: 309.12 + 46*118 = 5,737.12.
// m16 (16, 5120, 15360), [1, 23, 64]: blocks (16, 223, 240). step: m = 240, n = 16: 24*40*14 + 514*14 + 286
//   = 20,922. shuffle: rho_C = 23, output 3,840: gather 2,714 + 2,150.4; reduced 166.96 aligns to 192,
//   4,416 > 480: 1,279; 2,386.4 + 472 + 4,864.4 + 1,279 = 9,001.8; total 29,923.8. hot 2*(3,840 + 3,568 +
//   53,520) = 121,856; cold 114,176. warm-up: A's 64 copies: cold S_A = 16*ceil(223/64) = 64, 64*64 = 4,096
//   elements: 2,293.76 + 64*118 = 9,845.76.
// m128 (128, 5120, 15360), [4, 16, 23], C_m = 2: blocks (32, 320, 668), t_m = 2, sub-task (16, 320, 668).
//   step: m = 668, n = 16: 24*112*20 + 514*20 + 286 = 64,326; x 2 = 128,652. shift: (m, C, g = 2), S_C =
//   16*668 = 10,688: 5,985.28 + 236 = 6,221.28. shuffle: rho_C = 8, output 10,688: gather 944 + 5,985.28;
//   reduced 1,336 aligns to 1,344, x8 = 10,752: 2,863; 6,221.28 + 472 + 6,929.28 + 2,863 = 16,485.56;
//   total 151,358.84. hot 2*(2*10,688 + 10,240 + 213,760) = 490,752; cold 448,000.
// sq4096 (128, 4096, 4096), [8, 13, 14]: blocks (16, 316, 293). step: m = 293, n = 16: 24*49*20 + 514*20 +
//   286 = 34,086. shuffle: rho_C = 13, output 4,688: gather 1,534 + 2,625.28; reduced 360.6 aligns to 384,
//   4,992: 1,423; 2,861.28 + 472 + 4,159.28 + 1,423 = 8,915.56; total 43,001.56.
// cube2048 (2048, 2048, 2048), [2, 11, 64], B_n = 2: blocks (1024, 187, 32), t_n = 2, sub-task
//   (1024, 187, 16). step: 24*171*12 + 514*12 + 286 = 55,702; x 2 = 111,404. shift: (n, B, g = 2), S_B =
//   187*16 = 2,992: 1,675.52 + 236 = 1,911.52. shuffle: rho_C = 11, output 16,384: gather 1,298 + 9,175.04;
//   reduced 1,489.45 aligns to 1,536, x11 = 16,896: 4,399; S_C = 32,768: 18,350.08 + 236; 18,586.08 + 472 +
//   10,473.04 + 4,399 = 33,930.12; total 147,245.64.
const HandCase kHandCases[] = {
    {"seed", problem_of(32, 5120, 15360), plan_of({1, 366, 4}, 2), 32320, 361.44, 164858.2, 197539.64, 361.44,
     354176, 107968},
    {"edge4", problem_of(4, 4096, 4096), plan_of({1, 32, 46}), 7278, 0, 5182.45, 12460.45, 5737.12, 24784,
     24064},
    {"m16", problem_of(16, 5120, 15360), plan_of({1, 23, 64}), 20922, 0, 9001.8, 29923.8, 9845.76, 121856,
     114176},
    {"m128", problem_of(128, 5120, 15360), plan_of({4, 16, 23}, 1, 1, 1, 1, 2), 128652, 6221.28, 16485.56,
     151358.84, -1, 490752, 448000},
    {"sq4096", problem_of(128, 4096, 4096), plan_of({8, 13, 14}), 34086, 0, 8915.56, 43001.56, -1, -1, -1},
    {"cube2048", problem_of(2048, 2048, 2048), plan_of({2, 11, 64}, 1, 1, 1, 2), 111404, 1911.52, 33930.12,
     147245.64, -1, -1, -1},
};

TEST_F(T10Calibrated, SixHandDerivedPlansOnTheModelAndOnEveryCore) {
  for (const HandCase& hc : kHandCases) {
    SCOPED_TRACE(hc.name);
    const CalibratedCost c = calibrated_cost(hc.problem, hc.plan);
    EXPECT_TRUE(c.accepted()) << (c.rejections.empty() ? "" : c.rejections.front());
    expect_near(hc.compute, c.compute, "compute");
    expect_near(hc.sync_shift, c.sync_shift, "sync_shift");
    expect_near(hc.shuffle, c.shuffle, "shuffle");
    expect_near(hc.total, c.total, "total");
    if (hc.warm_up >= 0) expect_near(hc.warm_up, c.warm_up, "warm_up");
    if (hc.hot >= 0) {
      EXPECT_EQ(hc.hot, c.hot_bytes);
    }
    if (hc.cold >= 0) {
      EXPECT_EQ(hc.cold, c.cold_bytes);
    }
    CoreSimOptions options;
    options.timing = CoreTiming::Calibrated;
    const CoresResult r = simulate_cores(hc.problem, hc.plan, options);
    EXPECT_FALSE(r.violation.has_value());
    expect_near(hc.total, r.makespan, "engine makespan");
    expect_near(c.warm_up, r.warm_up, "engine warm-up (reported, not added)");
    // The engine's own SRAM peak sits beside the model's hot bytes; with whole pieces they agree.
    EXPECT_LE(r.peak_sram_bytes, c.hot_bytes);
  }
}

TEST_F(T10Calibrated, EqualsThePublishedModelOnItsOwnVectors) {
  std::ifstream in(source_path("tests/golden/t10/calibrated.json"));
  ASSERT_TRUE(in) << "tests/golden/t10/calibrated.json";
  const json doc = json::parse(in);
  int accepted = 0, simulated = 0;
  for (const json& v : doc["cases"]) {
    const t10::Problem problem = problem_of(v["m"], v["k"], v["n"]);
    const Plan plan = parse_plan(v["plan"]);
    SCOPED_TRACE(v["problem"].get<std::string>() + " " + v["plan"].dump());
    const CalibratedCost c = calibrated_cost(problem, plan);
    ASSERT_EQ(v["accepted"].get<bool>(), c.accepted()) << (c.rejections.empty() ? "" : c.rejections.front());
    if (!c.accepted()) continue;
    ++accepted;
    expect_near(v["total"], c.total, "total");
    expect_near(v["compute"], c.compute, "compute");
    expect_near(v["sync_shift"], c.sync_shift, "sync_shift");
    expect_near(v["shuffle"], c.shuffle, "shuffle");
    EXPECT_EQ(v["hot"].get<int64_t>(), c.hot_bytes);
    EXPECT_EQ(v["cold"].get<int64_t>(), c.cold_bytes);
    if (accepted % 8 != 0) continue;  // every eighth on every core (each simulation moves real pieces)
    CoreSimOptions options;
    options.timing = CoreTiming::Calibrated;
    expect_near(v["total"], simulate_cores(problem, plan, options).makespan, "engine makespan");
    ++simulated;
  }
  EXPECT_GE(accepted, 200);
  EXPECT_GE(simulated, 25);
}

TEST_F(T10Calibrated, EngineEventsSumToTheModelsTermsOnRandomPlans) {
  std::mt19937_64 rng(36);
  const t10::Problem problems[] = {problem_of(32, 5120, 15360), problem_of(128, 4096, 4096),
                                   problem_of(2048, 2048, 2048), problem_of(4, 4096, 4096)};
  int checked = 0;
  for (int trial = 0; trial < 4000 && checked < 24; ++trial) {
    const t10::Problem& pr = problems[rng() % 4];
    Plan plan;
    auto factor = [&](int64_t of) {
      std::vector<int64_t> d;
      for (int64_t f = 1; f <= of; ++f)
        if (of % f == 0) d.push_back(f);
      return d[rng() % d.size()];
    };
    plan.f_op = {1 + static_cast<int64_t>(rng() % 16), 1 + static_cast<int64_t>(rng() % 128),
                 1 + static_cast<int64_t>(rng() % 96)};
    plan.cm = factor(plan.f_op[1]), plan.cn = factor(plan.f_op[1] / plan.cm);
    plan.am = factor(plan.f_op[2]), plan.ak = factor(plan.f_op[2] / plan.am);
    plan.bk = factor(plan.f_op[0]), plan.bn = factor(plan.f_op[0] / plan.bk);
    const CalibratedCost c = calibrated_cost(pr, plan);
    if (c.steps == 0 || c.steps > 32) continue;  // not a chain, or long to walk on every core
    if (!evaluate(pr, plan, Profile::EngDesign, false).cost) continue;  // the engine needs the walk defined
    ++checked;
    SCOPED_TRACE(plan_to_json(plan).dump());
    CoreSimOptions options;
    options.timing = CoreTiming::Calibrated;
    const CoresResult r = simulate_cores(pr, plan, options);
    EXPECT_FALSE(r.violation.has_value());
    double compute = 0, shifts = 0, shuffle = 0;
    for (const PhaseCost& phase : r.phases)
      (phase.name.rfind("compute", 0) == 0  ? compute
       : phase.name.rfind("shift ", 0) == 0 ? shifts
                                            : shuffle) += phase.cycles;
    expect_near(c.compute, compute, "compute phases");
    expect_near(c.sync_shift, shifts, "shift events");
    expect_near(c.shuffle, shuffle, "shuffle phases");
    expect_near(c.total, r.makespan, "makespan");
    EXPECT_EQ(c.steps, std::count_if(r.phases.begin(), r.phases.end(),
                                     [](const PhaseCost& p) { return p.name.rfind("compute", 0) == 0; }));
  }
  EXPECT_GE(checked, 24);
}

TEST_F(T10Calibrated, RejectionsNameTheRuleAndItsFigures) {
  // 64 cores of 1,472: below the model's 0.9 utilisation; 2 x 2 x 2 of a tiny MatMul pads heavily.
  const CalibratedCost few = calibrated_cost(problem_of(2048, 2048, 2048), plan_of({4, 4, 4}));
  ASSERT_FALSE(few.accepted());
  EXPECT_NE(std::string::npos, few.rejections.front().find("64 cores use less than the threshold"));
  // Hot bytes above the SRAM: a single core holds the whole 2048^3 operands.
  const CalibratedCost big = calibrated_cost(problem_of(2048, 2048, 2048), plan_of({1, 1, 1}));
  bool sram = false;
  for (const std::string& r : big.rejections) sram = sram || r.find("above the SRAM") != std::string::npos;
  EXPECT_TRUE(sram);
  // Rings that are no chain (2 and 3 on m) cannot be priced at all.
  const CalibratedCost misaligned =
      calibrated_cost(problem_of(32, 5120, 15360), plan_of({1, 366, 6}, 3, 1, 1, 1, 2));
  EXPECT_EQ(0, misaligned.steps);
  EXPECT_FALSE(misaligned.accepted());
}

TEST_F(T10Calibrated, TheSearchFindsTheBestAcceptedPlanByExhaustion) {
  const t10::Problem pr = problem_of(4, 4096, 4096);
  const CalibratedSearchResult r = search_calibrated(pr, 3);
  ASSERT_EQ(3u, r.top.size());
  EXPECT_GT(r.accepted, 100);
  // Never worse than the hand-derived plan of the same problem, and ranked.
  EXPECT_LE(r.top[0].total, 12460.45 + 1e-9);
  EXPECT_LE(r.top[0].total, r.top[1].total);
  EXPECT_LE(r.top[1].total, r.top[2].total);
  for (const CalibratedRankedPlan& p : r.top) {
    const CalibratedCost c = calibrated_cost(pr, p.plan);
    EXPECT_TRUE(c.accepted());
    EXPECT_DOUBLE_EQ(c.total, p.total);
  }
}

TEST_F(T10Calibrated, ChipSweepGivesEachSramSizeItsBestPlan) {
  // Less SRAM can only remove plans: the best total never falls, and each best plan's hot bytes fit.
  const t10::Problem pr = problem_of(32, 5120, 15360);
  const std::vector<ChipVariantPoint> points =
      sweep_chip(pr, Profile::Strict, {2, 8}, {200000, 638976}, 10, nullptr, CoreTiming::Calibrated);
  ASSERT_EQ(2u, points.size());  // no bandwidth in the fitted model: one point per SRAM size
  for (const ChipVariantPoint& p : points) {
    ASSERT_TRUE(p.best);
    t10::Problem variant = pr;
    variant.chip.sram_bytes_per_core = p.sram_bytes_per_core;
    const CalibratedCost c = calibrated_cost(variant, p.best->plan);
    EXPECT_TRUE(c.accepted());
    EXPECT_LE(c.hot_bytes, p.sram_bytes_per_core);
    EXPECT_DOUBLE_EQ(c.total, sweep_cycles(p));
    EXPECT_DOUBLE_EQ(search_calibrated(variant, 1).top.at(0).total, sweep_cycles(p));
  }
  EXPECT_GE(sweep_cycles(points[0]), sweep_cycles(points[1]));
}

TEST_F(T10Calibrated, SimulateJsonReportsMakespanAndWarmUpApart) {
  const std::string problem = temp_dir("t10-calibrated") + "/p.json",
                    plan = temp_dir("t10-calibrated") + "/plan.json";
  write_text(problem, R"({"op": "matmul", "m": 4, "k": 4096, "n": 4096})");
  write_text(plan, plan_to_json(plan_of({1, 32, 46})).dump());
  const CommandResult run =
      run_command(MLSYS_T10_BIN, "simulate " + problem + " " + plan + " --timing calibrated --json");
  ASSERT_EQ(0, run.exit_code) << run.err;
  const json out = json::parse(run.out);
  expect_near(12460.45, out["cores"]["makespan"], "cores.makespan");
  expect_near(5737.12, out["cores"]["warm_up"], "cores.warm_up");
  EXPECT_EQ("calibrated", out["cores"]["timing"]);
  EXPECT_EQ(24784, out["cores"]["calibrated"]["hot_bytes_per_core"]);
}

}  // namespace
}  // namespace mlsys::test
