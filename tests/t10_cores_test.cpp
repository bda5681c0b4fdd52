// T10 on every core (sim/t10/t10_cores): every core of a plan, real pieces moved between real cores.
// - Grader timing equals the analytic model exactly on every vector of the rule book (tests/golden/t10) and
// on
//   random plans, and every aligned plan is consistent on every core.
// - Functional mode multiplies real integer matrices and gathers exactly A·B on random plans of small
// problems;
//   misaligned plans (whose operands the grader never moves) and a ring with a dropped transfer are caught,
//   naming the step, the core and the piece.
// - Exchange timing matches hand-derived cases.
#include "sim/t10/t10_cores.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <systemc>

#include "sim/t10/t10_functional.hpp"
#include "sim/t10/t10_model.hpp"
#include "sim/violation.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"
#include "support.hpp"
#include "traces/perfetto_trace.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;
using namespace mlsys::t10;

class T10Cores : public ::testing::Test {
 protected:
  void TearDown() override { sc_core::sc_get_curr_simcontext()->reset(); }
};

t10::Problem problem_of(int64_t m, int64_t k, int64_t n, const json& chip = json::object()) {
  return t10::parse_problem(json{{"op", "matmul"}, {"m", m}, {"k", k}, {"n", n}, {"chip", chip}});
}

void expect_grader_totals(const Cost& cost, const CoresResult& r, const std::string& where) {
  EXPECT_EQ(cost.total, r.total) << where;
  EXPECT_EQ(cost.comp, r.compute + r.stall) << where;
  EXPECT_EQ(cost.shift, r.shift) << where;
  EXPECT_EQ(cost.bcast, r.bcast) << where;
  EXPECT_EQ(cost.reduce, r.reduce) << where;
}

TEST_F(T10Cores, GraderTimingEqualsTheAnalyticModelOnEveryVector) {
  std::ifstream in(source_path("tests/golden/t10/cases.json"));
  const json doc = json::parse(in);
  int simulated = 0, aligned = 0, misaligned = 0;
  for (const json& c : doc.at("cases")) {
    if (c.at("cost").is_null()) continue;  // E4/E6: no defined cost, no rings
    const t10::Problem problem = t10::parse_problem(doc.at("problems").at(c.at("problem")));
    Plan plan;
    try {
      plan = t10::parse_plan(c.at("plan"));
    } catch (const InputError&) {
      continue;  // not a plan (E_FORMAT)
    }
    const Derived d = derive(problem, plan);
    const CoresResult r = simulate_cores(problem, plan, {});
    const json& cost = c.at("cost");
    EXPECT_EQ(cost.at("total").get<double>(), r.total) << c.at("id");
    EXPECT_EQ(cost.at("shift").get<int64_t>(), r.shift) << c.at("id");
    EXPECT_EQ(cost.at("bcast").get<int64_t>(), r.bcast) << c.at("id");
    EXPECT_EQ(cost.at("reduce").get<int64_t>(), r.reduce) << c.at("id");
    EXPECT_EQ(d.cores, r.cores);
    ++simulated;
    if (d.misaligned) {
      ++misaligned;
      EXPECT_TRUE(r.violation) << c.at("id") << ": a misaligned plan's operands never move";
    } else {
      ++aligned;
      EXPECT_FALSE(r.violation) << c.at("id") << ": " << r.violation->message;
    }
  }
  EXPECT_EQ(53, simulated);  // every vector with a defined cost
  EXPECT_GE(misaligned, 1);
  EXPECT_GE(aligned, 30);
}

// A random plan with defined cost: F_op, then for each tensor a pair of temporal factors whose product
// divides its replication (E4 by construction, T39).
Plan random_plan(const t10::Problem& p, std::mt19937& rng, int64_t max_cores) {
  Plan plan;
  auto pick = [&](int64_t limit) { return 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(limit)); };
  do {
    plan.f_op = {pick(std::min<int64_t>(p.m, 6)), pick(std::min<int64_t>(p.k, 6)),
                 pick(std::min<int64_t>(p.n, 6))};
  } while (plan.f_op[0] * plan.f_op[1] * plan.f_op[2] > max_cores);
  auto factors = [&](int64_t replication, int64_t& a, int64_t& b) {
    std::vector<int64_t> divisors;
    for (int64_t v = 1; v <= replication; ++v)
      if (replication % v == 0) divisors.push_back(v);
    const int64_t delta = divisors[rng() % divisors.size()];
    std::vector<int64_t> split;
    for (int64_t v = 1; v <= delta; ++v)
      if (delta % v == 0) split.push_back(v);
    a = split[rng() % split.size()];
    b = delta / a;
  };
  factors(plan.f_op[1], plan.cm, plan.cn);  // R_C = pk
  factors(plan.f_op[2], plan.am, plan.ak);  // R_A = pn
  factors(plan.f_op[0], plan.bk, plan.bn);  // R_B = pm
  return plan;
}

TEST_F(T10Cores, RandomPlansAreConsistentOnEveryCoreAndTimedLikeTheGrader) {
  std::mt19937 rng(20261124);
  int simulated = 0, aligned = 0, rotating_c = 0, edge = 0;
  for (int trial = 0; simulated < 1000 && trial < 5000; ++trial) {
    const t10::Problem problem = problem_of(1 + rng() % 200, 1 + rng() % 300, 1 + rng() % 300);
    const Plan plan = random_plan(problem, rng, 64);
    const Derived d = derive(problem, plan);
    if (d.levels.size() > 5) continue;  // E6
    const CoresResult r = simulate_cores(problem, plan, {});
    expect_grader_totals(cost_of(problem, plan, d), r, plan_to_json(plan).dump());
    ++simulated;
    if (!d.misaligned) {
      ++aligned;
      EXPECT_FALSE(r.violation) << plan_to_json(plan).dump() << " m,k,n " << problem.m << "," << problem.k
                                << "," << problem.n << ": " << r.violation->message;
    }
    rotating_c += d.rotates(C);
    edge += r.edge_idle_cycles > 0;
  }
  EXPECT_EQ(1000, simulated);
  EXPECT_GT(aligned, 500);
  EXPECT_GT(rotating_c, 200);
  EXPECT_GT(edge, 300);
}

TEST_F(T10Cores, FunctionalModeGathersExactlyAB) {
  std::mt19937 rng(7);
  int exact = 0, misaligned_caught = 0, with_reduction = 0;
  for (int trial = 0; exact < 200 && trial < 2000; ++trial) {
    const t10::Problem problem = problem_of(1 + rng() % 48, 1 + rng() % 64, 1 + rng() % 48);
    const Plan plan = random_plan(problem, rng, 48);
    const Derived d = derive(problem, plan);
    if (d.levels.size() > 5) continue;
    CoreSimOptions options;
    options.functional = true;
    options.seed = trial;
    const CoresResult r = simulate_cores(problem, plan, options);
    ASSERT_TRUE(r.functional_checked);
    if (d.misaligned) {
      misaligned_caught += r.violation.has_value();
      EXPECT_TRUE(r.violation) << plan_to_json(plan).dump();
      continue;
    }
    EXPECT_FALSE(r.violation) << plan_to_json(plan).dump() << " m,k,n " << problem.m << "," << problem.k
                              << "," << problem.n << ": " << r.violation->message;
    ++exact;
    with_reduction += plan.f_op[1] > 1;
  }
  EXPECT_EQ(200, exact);
  EXPECT_GT(misaligned_caught, 5);
  EXPECT_GT(with_reduction, 50);
}

TEST_F(T10Cores, ProjectedFunctionalCheckAgreesWithTheExactOneAndCatchesAWrongElement) {
  // On small random plans both checks pass; on a hand-built C with one element off by one, both fail and the
  // projected one names the row (its false pass has probability at most 2^-61).
  std::mt19937 rng(8);
  int checked = 0;
  for (int trial = 0; trial < 200 && checked < 20; ++trial) {
    const t10::Problem problem = problem_of(20 + static_cast<int64_t>(rng() % 12), 36, 24);
    const Plan plan = random_plan(problem, rng, 24);
    if (!evaluate(problem, plan, Profile::EngDesign, false).cost || derive(problem, plan).misaligned)
      continue;
    for (FunctionalCheck check : {FunctionalCheck::Exact, FunctionalCheck::Projected}) {
      CoreSimOptions options;
      options.functional = true;
      options.functional_check = check;
      const CoresResult r = simulate_cores(problem, plan, options);
      EXPECT_TRUE(r.functional_checked);
      EXPECT_EQ(check == FunctionalCheck::Exact ? "exact" : "freivalds", r.functional_method);
      EXPECT_FALSE(r.violation) << plan_to_json(plan).dump() << ": " << r.violation->message;
    }
    ++checked;
  }
  EXPECT_EQ(20, checked);
  const t10::Problem small = problem_of(3, 4, 5);
  for (bool projected : {false, true}) {
    const FunctionalOperands operands(small, 11, projected);
    std::vector<int64_t> sums(operands.sums_size(3, 5), 0);
    BlockProduct whole;
    whole.rows = 3, whole.depth = 4, whole.cols = 5, whole.piece_rows = 3, whole.piece_cols = 5;
    operands.multiply_into(whole, sums);
    EXPECT_FALSE(operands.compare({{0, 3, 0, 5, &sums}}));
    sums[projected ? 1 : 1 * 5 + 2] += 1;  // row 1 (element [1][2] in the exact layout)
    const auto wrong = operands.compare({{0, 3, 0, 5, &sums}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(1, wrong->first);
  }
}

TEST_F(T10Cores, ADroppedShiftIsCaughtWithTheCoreAndPiece) {
  // 4 cores on one A ring of two levels (m and k), F_op [1, 1, 4], A_m = A_k = 2: the first shift event (the
  // Gray code moves the last level first: level 1, k) does not reach core (0, 0, 0), which keeps k piece 0
  // while its next block needs k piece 1.
  const t10::Problem problem = problem_of(32, 64, 64);
  Plan plan;
  plan.f_op = {1, 1, 4};
  plan.am = 2;
  plan.ak = 2;
  CoreSimOptions options;
  options.functional = true;
  const CoresResult clean = simulate_cores(problem, plan, options);
  ASSERT_FALSE(clean.violation) << clean.violation->message;
  options.drop_shift_event = 0;
  const CoresResult broken = simulate_cores(problem, plan, options);
  ASSERT_TRUE(broken.violation);
  EXPECT_EQ(1, broken.violation->step);
  EXPECT_EQ((std::array<int64_t, 3>{0, 0, 0}), broken.violation->core);
  EXPECT_EQ('A', broken.violation->tensor);
  EXPECT_NE(std::string::npos, broken.violation->message.find("holds piece 0")) << broken.violation->message;
  EXPECT_NE(std::string::npos, broken.violation->message.find("needs piece 1")) << broken.violation->message;
}

// F_op [1, 1, 2], A_m = 2: two cores on one A ring.
Plan two_core_ring() {
  Plan plan;
  plan.f_op = {1, 1, 2};
  plan.am = 2;
  return plan;
}
CoreSimOptions exchange_timing() {
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  return options;
}

TEST_F(T10Cores, ExchangeTimingOfATwoCoreRing) {
  // m, k, n = 32, 64, 32; F_op [1, 1, 2], A_m = 2: two cores on one A ring, two steps, one shift. Each step
  // computes a 16 x 64 x 16 block: 16,384 MACs / 64 = 256 cycles. The shift moves a 16 x 64 A piece, 2,048 B
  // at 4 B/cycle: 512 cycles, plus the latency. Three supersteps, three syncs of 118. No broadcast (one ring
  // copy), no reduction (pk = 1): 256 + 512 + 256 + 354 = 1,378; with a latency of 10 per transfer, 1,388.
  const Plan plan = two_core_ring();
  const CoreSimOptions options = exchange_timing();
  const CoresResult r = simulate_cores(problem_of(32, 64, 32), plan, options);
  ASSERT_FALSE(r.violation);
  EXPECT_DOUBLE_EQ(1378, r.exchange_total);
  EXPECT_DOUBLE_EQ(512, r.exchange_compute);
  EXPECT_DOUBLE_EQ(512, r.exchange_exchange);
  EXPECT_DOUBLE_EQ(354, r.exchange_sync);
  EXPECT_DOUBLE_EQ(1378, r.makespan);
  const CoresResult slow =
      simulate_cores(problem_of(32, 64, 32, {{"exchange_latency_cycles", 10}}), plan, options);
  EXPECT_DOUBLE_EQ(1388, slow.exchange_total);
}

TEST_F(T10Cores, BroadcastSendsEachCopyInTurnUnlessTheChipMulticasts) {
  // m, k, n = 32, 64, 32; F_op [1, 1, 3]: A has three copies and no ring, so copies 1 and 2 receive their
  // 32 x 64 A block (4,096 B, 1,024 cycles at 4 B/cycle) from copy 0. Sent copy by copy, the home is busy
  // 2 x 1,024 cycles; multicast, once: 1,024. Each phase ends with a sync of 118.
  // The chip field's type is checked first: an exception thrown after SystemC has switched stacks in this
  // process makes ASan report a false stack-use-after-scope (its own warning says so).
  EXPECT_THROW(t10::parse_problem(json{
                   {"op", "matmul"}, {"m", 4}, {"k", 4}, {"n", 4}, {"chip", {{"exchange_multicast", 1}}}}),
               InputError);
  Plan plan;
  plan.f_op = {1, 1, 3};
  const CoreSimOptions options = exchange_timing();
  auto broadcast_cycles = [&](const json& chip) {
    const CoresResult r = simulate_cores(problem_of(32, 64, 32, chip), plan, options);
    EXPECT_FALSE(r.violation);
    for (const PhaseCost& p : r.phases)
      if (p.name == "broadcast") return p.cycles;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(2 * 1024 + 118, broadcast_cycles(json::object()));
  EXPECT_DOUBLE_EQ(1024 + 118, broadcast_cycles({{"exchange_multicast", true}}));
}

TEST_F(T10Cores, ExchangeTimingOfAFourCoreRingWithTwoLevels) {
  // m, k, n = 32, 64, 64; F_op [1, 1, 4], A_m = A_k = 2: levels m (g 2) and k (g 2), both holding A; four
  // steps and three shifts (level 0 once, level 1 twice). A step: 16 x 32 x 16 = 8,192 MACs, 128 cycles. A
  // shift moves a 16 x 32 A piece, 1,024 B: 256 cycles. 4 x 128 + 3 x 256 + 7 x 118 = 512 + 768 + 826 =
  // 2,106.
  Plan plan;
  plan.f_op = {1, 1, 4};
  plan.am = 2;
  plan.ak = 2;
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  const CoresResult r = simulate_cores(problem_of(32, 64, 64), plan, options);
  ASSERT_FALSE(r.violation);
  ASSERT_EQ(2u, r.events_per_level.size());
  EXPECT_EQ(1, r.events_per_level[0]);
  EXPECT_EQ(2, r.events_per_level[1]);
  EXPECT_DOUBLE_EQ(2106, r.exchange_total);
}

TEST_F(T10Cores, ExchangeTimingOfAReductionOverThreeReplicas) {
  // m, k, n = 16, 48, 16; F_op [1, 3, 1]: three cores, each with a third of k, C does not rotate (the grader
  // charges no reduction, Q4). One step: 16 x 16 x 16 / 64 = 64 cycles. The three partial C (16 x 16, 512 B)
  // reduce-scatter: each core sends and receives 2/3 of 512 B, 85.33 cycles. Two syncs: 64 + 85.33 + 236.
  Plan plan;
  plan.f_op = {1, 3, 1};
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  options.functional = true;
  const CoresResult r = simulate_cores(problem_of(16, 48, 16), plan, options);
  ASSERT_FALSE(r.violation) << r.violation->message;
  EXPECT_TRUE(r.functional_checked);
  EXPECT_EQ(0, r.reduce);
  EXPECT_DOUBLE_EQ(64 + 512.0 * 2 / 3 / 4 + 2 * 118, r.exchange_total);
  EXPECT_EQ(3 * 2, r.transfers);
}

TEST_F(T10Cores, EdgeCoresHoldLessAndIdle) {
  // m = 10 over pm = 4: ms = 3, the last core holds 1 row. Its steps cost the padded sub-task in the grader's
  // model; the engine counts the cycles its smaller block leaves idle. (B is replicated over the 4 cores:
  // core (0, 0, 0) is its home and sends it to the other three, the broadcast's critical core.)
  Plan plan;
  plan.f_op = {4, 1, 1};
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  const CoresResult r = simulate_cores(problem_of(10, 64, 64), plan, options);
  ASSERT_FALSE(r.violation);
  // Sub-task 3 x 64 x 64 = 12,288 MACs (192 cycles); the last core computes 1 x 64 x 64 (64 cycles).
  EXPECT_DOUBLE_EQ(192 - 64, r.edge_idle_cycles);
  EXPECT_EQ((std::array<int64_t, 3>{0, 0, 0}), r.phases.at(0).critical_core);
}

TEST_F(T10Cores, RefusesPlansWithoutRingsAndOversizedFunctionalRuns) {
  Plan plan;
  plan.f_op = {1, 1, 3};
  plan.am = 2;  // Pi_A = 2 does not divide R_A = 3 (E4)
  EXPECT_THROW(simulate_cores(problem_of(32, 32, 32), plan, {}), std::invalid_argument);
  CoreSimOptions options;
  options.functional = true;
  options.functional_check = FunctionalCheck::Exact;  // B alone is 78.6 M elements: not held in memory
  EXPECT_THROW(simulate_cores(problem_of(32, 5120, 15360), Plan{}, options), std::invalid_argument);
  options.functional_check = FunctionalCheck::Auto;  // projected, but A·(B·r) alone: 2^33 multiply-adds
  EXPECT_THROW(simulate_cores(problem_of(65536, 65536, 65536), Plan{}, options), std::invalid_argument);
  // A chip file may declare 2^31 cores: a plan over 2^30 of them is refused, not allocated.
  Plan huge;
  huge.f_op = {1024, 1024, 1024};
  EXPECT_THROW(simulate_cores(problem_of(4096, 4096, 4096, {{"cores", int64_t{1} << 31}}), huge, {}),
               std::invalid_argument);
}

TEST_F(T10Cores, SearchesRefuseChipsTheyCannotEnumerate) {
  // A chip file may declare 2^31 cores; enumerating every F_op would take hours: refused at once, and the CLI
  // exits 2 naming the field.
  const t10::Problem huge = problem_of(64, 64, 64, {{"cores", int64_t{1} << 31}});
  EXPECT_THROW(search(huge, Profile::Strict), std::invalid_argument);
  EXPECT_THROW(search_exchange(huge, Profile::Strict), std::invalid_argument);
  const std::string dir = temp_dir("t10-huge");
  write_text(dir + "/p.json", R"({"op":"matmul","m":64,"k":64,"n":64,"chip":{"cores":2147483648}})");
  const CommandResult r = run_command(MLSYS_T10_BIN, "solve " + dir + "/p.json");
  EXPECT_EQ(2, r.exit_code);
  EXPECT_NE(std::string::npos, r.err.find("chip.cores")) << r.err;
}

TEST_F(T10Cores, SeedReferencePlanOnAllCores) {
  // The seed reference plan (T22) on its 1,464 cores: the grader's 7,018 cycles, every core consistent, and
  // SRAM per core equal to the rule book's hot (354,176 B) since the seed's sizes divide evenly.
  const t10::Problem problem =
      t10::parse_problem(json::parse(std::ifstream(source_path("tests/golden/t10/seed_problem.json"))));
  Plan plan;
  plan.f_op = {1, 366, 4};
  plan.am = 2;
  const CoresResult r = simulate_cores(problem, plan, {});
  ASSERT_FALSE(r.violation) << r.violation->message;
  EXPECT_EQ(1464, r.cores);
  EXPECT_EQ(7018, r.total);
  EXPECT_EQ(354176, r.peak_sram_bytes);
  EXPECT_EQ(354176, r.rule_book_hot_bytes);
}

TEST_F(T10Cores, ExchangeSearchFindsTheBestPlanOfABruteForce) {
  // A 12-core chip and a small MatMul: every accepted plan simulated on every core under the exchange timing;
  // the bound-ordered search must prove the same best time after simulating fewer plans.
  const t10::Problem problem = problem_of(24, 48, 36, {{"cores", 12}, {"sram_bytes_per_core", 1 << 20}});
  double best = INFINITY;
  int64_t accepted = 0;
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  for (int64_t pm = 1; pm <= 12; ++pm)
    for (int64_t pk = 1; pm * pk <= 12; ++pk)
      for (int64_t pn = 1; pm * pk * pn <= 12; ++pn) {
        Plan plan;
        plan.f_op = {pm, pk, pn};
        for (int64_t cm = 1; cm <= pk; ++cm)
          for (int64_t cn = 1; cm * cn <= pk; ++cn)
            for (int64_t am = 1; am <= pn; ++am)
              for (int64_t ak = 1; am * ak <= pn; ++ak)
                for (int64_t bk = 1; bk <= pm; ++bk)
                  for (int64_t bn = 1; bk * bn <= pm; ++bn) {
                    plan.cm = cm, plan.cn = cn, plan.am = am, plan.ak = ak, plan.bk = bk, plan.bn = bn;
                    if (!evaluate(problem, plan, Profile::Strict, false).accepted) continue;
                    ++accepted;
                    const CoresResult r = simulate_cores(problem, plan, options);
                    if (!r.violation) best = std::min(best, r.exchange_total);
                  }
      }
  const ExchangeSearchResult found = search_exchange(problem, Profile::Strict, 1);
  EXPECT_EQ(accepted, found.accepted);
  ASSERT_TRUE(found.proven);
  ASSERT_EQ(1u, found.top.size());
  EXPECT_DOUBLE_EQ(best, found.top[0].exchange_total);
  EXPECT_LT(found.simulated, accepted);
}

TEST_F(T10Cores, TraceHasTheCoreGroupAndPerCoreTracks) {
  // The two-core ring: a track for the group and, on request, one per core; the group track has the three
  // supersteps (compute, shift, compute), each core's track its own busy time of each.
  const Plan plan = two_core_ring();
  CoreSimOptions options = exchange_timing();
  options.core_tracks = 2;
  PerfettoTrace trace("test");
  const CoresResult r = simulate_cores(problem_of(32, 64, 32), plan, options, &trace);
  ASSERT_FALSE(r.violation);
  const json doc = trace.to_json();
  std::map<int, std::string> tracks;
  std::map<std::string, int> spans;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks[e.at("tid")] = e.at("args").at("name");
    if (e.at("ph") == "X") ++spans[tracks.at(e.at("tid"))];
  }
  EXPECT_EQ(3, spans["all 2 cores"]);
  EXPECT_EQ(3, spans["core (0, 0, 0)"]);
  EXPECT_EQ(3, spans["core (0, 0, 1)"]);
  ASSERT_EQ(2u, r.per_core.size());
  EXPECT_DOUBLE_EQ(256 + 512 + 256, r.per_core[1].busy_cycles);  // its compute and its send (syncs are idle)
  ASSERT_EQ(1u, r.rings.size());
  EXPECT_EQ((std::vector<std::array<int64_t, 3>>{{0, 0, 0}, {0, 0, 1}}), r.rings[0].cores);
}

}  // namespace
}  // namespace mlsys::test
