// Rules the golden set does not pin, each with numbers derived by hand in the comment beside it.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/json_io.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

struct Case {
  Problem problem;
  Graph graph;
  Schedule schedule;
};

Case make(const std::string& problem_json, const std::string& solution_json) {
  Case c;
  c.problem = parse_problem(nlohmann::json::parse(problem_json), "problem");
  c.graph = analyze_graph(c.problem, "problem");
  c.schedule = parse_schedule(nlohmann::json::parse(solution_json), "solution", c.problem);
  return c;
}

ScheduleReport run(const Case& c, bool strict = false) {
  VerifyOptions o;
  o.strict = strict;
  return verify_schedule(c.problem, c.graph, c.schedule, o);
}

// Five 128x128 tensors, B = 10, base 2000, capacity 45000 (as Example 5).
const char* kRhsChain = R"({"widths":[128,128,128,128,128],"heights":[128,128,128,128,128],
  "inputs":[[0,1],[3,2]],"outputs":[[2],[4]],"base_costs":[2000,2000],"op_types":["MatMul","MatMul"],
  "fast_memory_capacity":45000,"slow_memory_bandwidth":10,"native_granularity":[128,128]})";

TEST(ScheduleText, TheOneLineFormOfALargeScheduleIsTheDocument) {
  // Above kIndentedSubgraphs subgraphs the text is written directly: it must parse to what schedule_to_json
  // builds (keys, null traversals, latencies at full precision, empty retain lists), and below it the text
  // is the indented document itself.
  Schedule s;
  std::vector<double> latencies;
  for (int i = 0; i < static_cast<int>(kIndentedSubgraphs) + 2; ++i) {
    SubgraphSpec sg{{i, i + 1}, {128, 64, i % 3 + 1}, {}, std::nullopt};
    if (i % 2) sg.retain = {i + 7};
    if (i % 5 == 0) sg.traversal = std::vector<int64_t>{1, 0, 3, 2};
    s.subgraphs.push_back(sg);
    latencies.push_back(1.0 / (i + 3) + 1e6 * (i % 4));
  }
  s.reported_latencies = latencies;
  EXPECT_EQ(nlohmann::json::parse(schedule_text(s)), schedule_to_json(s));
  s.subgraphs.resize(3);
  s.reported_latencies->resize(3);
  EXPECT_EQ(schedule_text(s), schedule_to_json(s).dump(1) + "\n");
}

TEST(Rules, RhsChainSplitK) {
  // X = T0 @ T1 (head), Y = T3 @ X (tail reads X as RHS). [128,128,32]: K_s = 128, nk = 4, one tile.
  // Slices: T3 (B_L) R x Kr = 4096 new each step; T0 (A_L) Kr x [0,128) = 4096 new each step;
  // T1 (A_R) [0,128) x C = 16384, the same at every step. Compute: tail 2000*32/128 = 500, head
  // 2000 * (32/128 streamed rows) * 1 * 1 = 500. ks0: (4096+4096+16384)/10 = 2457.6; ks1, ks2: 819.2 < 1000;
  // ks3: 819.2 + store Y 1638.4 = 2457.6. Total 2457.6 + 1000 + 1000 + 2457.6 = 6915.2.
  // WS = 4096 + 4096 + 16384 + Y tile 16384 = 40960.
  const Case c = make(kRhsChain, R"({"subgraphs":[[0,1]],"granularities":[[128,128,32]]})");
  const ScheduleReport r = run(c);
  ASSERT_TRUE(r.valid) << r.error->describe();
  EXPECT_NEAR(6915.2, r.total_latency, 1e-9 * 6915.2);
  EXPECT_EQ(40960, r.subgraphs[0].peak_working_set);
}

TEST(Rules, UnlinkedSplitKShareOneSlice) {
  // Y1 = A @ B1, Y2 = A @ B2 with A 128x256, K = 256, k = 128: nk = 2. A's slice R x Kr is the same for both
  // MatMuls and counts once. ks0 loads A 16384 + B1 16384 + B2 16384 = 49152 -> 4915.2 against compute
  // 2 * 1000*128/256 = 1000. ks1 loads 49152 + stores 2*16384 -> 8192. Total 13107.2.
  // WS = 49152 + 2 * 16384 = 81920.
  const Case c = make(R"({"widths":[256,128,128,128,128],"heights":[128,256,256,128,128],
    "inputs":[[0,1],[0,2]],"outputs":[[3],[4]],"base_costs":[1000,1000],"op_types":["MatMul","MatMul"],
    "fast_memory_capacity":100000,"slow_memory_bandwidth":10,"native_granularity":[128,128]})",
                      R"({"subgraphs":[[0,1]],"granularities":[[128,128,128]]})");
  const ScheduleReport r = run(c);
  ASSERT_TRUE(r.valid) << r.error->describe();
  EXPECT_NEAR(13107.2, r.total_latency, 1e-9 * 13107.2);
  EXPECT_EQ(81920, r.subgraphs[0].peak_working_set);
}

TEST(Rules, RetainedInCountsFullSizeAndIsNeverLoaded) {
  // Example 3C, subgraph 1: A = T1 retained-in 16384, T2 ephemeral, C = T3 tile 16384 -> peak 32768.
  const Loaded l = load(source_path("tests/golden/ex3_problem.json"), source_path("tests/golden/ex3C_solution.json"));
  const ScheduleReport r = verify_schedule(l.problem, l.graph, l.schedule, {});
  ASSERT_TRUE(r.valid);
  EXPECT_EQ(32768, r.subgraphs[1].peak_working_set);
  EXPECT_EQ(32768, r.subgraphs[0].peak_working_set);  // T0 slice + T1 output tile
}

TEST(Rules, OomNamesEveryTerm) {
  // Example 4 at [128,128,128]: T0 16384 + T1 16384 (B) + T2 tile 16384 (C) = 49152 > 25000.
  const Loaded l = load(source_path("tests/golden/ex4_problem.json"), source_path("tests/golden/ex4A_solution.json"));
  Schedule s = l.schedule;
  s.subgraphs[0].granularity = {128, 128, 128};
  s.subgraphs[0].traversal.reset();
  const ScheduleReport r = verify_schedule(l.problem, l.graph, s, {});
  ASSERT_FALSE(r.valid);
  ASSERT_EQ("M20", r.error->rule);
  const WorkingSet& ws = *r.error->working_set;
  EXPECT_EQ(49152, ws.total());
  EXPECT_EQ(32768, ws.slices);
  EXPECT_EQ(16384, ws.outputs);
  ASSERT_EQ(3u, ws.terms.size());
  EXPECT_EQ('B', ws.terms[0].part);
  EXPECT_EQ(0, ws.terms[0].tensor);
  EXPECT_EQ((Region{0, 128, 0, 128}), ws.terms[0].region);
  EXPECT_EQ('C', ws.terms[2].part);
  EXPECT_EQ(2, ws.terms[2].tensor);
  EXPECT_DOUBLE_EQ(25000, r.error->capacity);
}

struct Violation {
  const char* name;
  const char* problem;
  const char* solution;
  const char* rule;
  int subgraph;
};

const char* kChain3 = R"({"widths":[128,128,128,128],"heights":[128,128,128,128],
  "inputs":[[0],[1],[2]],"outputs":[[1],[2],[3]],"base_costs":[10,10,10],
  "op_types":["Pointwise","Pointwise","Pointwise"],"fast_memory_capacity":1e9,"slow_memory_bandwidth":1,
  "native_granularity":[128,128]})";
// Example 3's graph: op0 T0->T1, op1 T1->T2, op2 (T1,T2)->T3.
const char* kExample3 = R"({"widths":[128,128,128,128],"heights":[128,128,128,128],
  "inputs":[[0],[1],[1,2]],"outputs":[[1],[2],[3]],"base_costs":[1500,1500,1500],
  "op_types":["Pointwise","Pointwise","Pointwise"],"fast_memory_capacity":50000,"slow_memory_bandwidth":10,
  "native_granularity":[128,128]})";
const char* kMatMul3 = R"({"widths":[128,128,128,128,128,128,128],"heights":[128,128,128,128,128,128,128],
  "inputs":[[0,1],[2,3],[4,5]],"outputs":[[2],[4],[6]],"base_costs":[10,10,10],
  "op_types":["MatMul","MatMul","MatMul"],"fast_memory_capacity":1e9,"slow_memory_bandwidth":1,
  "native_granularity":[128,128]})";
const char* kMmPwMm = R"({"widths":[256,128,128,128,128,128],"heights":[128,256,128,128,128,128],
  "inputs":[[0,1],[2],[3,4]],"outputs":[[2],[3],[5]],"base_costs":[10,10,10],
  "op_types":["MatMul","Pointwise","MatMul"],"fast_memory_capacity":1e9,"slow_memory_bandwidth":1,
  "native_granularity":[128,128]})";
// X = T0 @ T1 reaches Y = f(X) @ g(X) twice, through in-chain ops: an LHS link and an RHS link (M12).
const char* kTwoLinksThroughPointwise =
    R"({"widths":[128,128,128,128,128,128],"heights":[128,128,128,128,128,128],
  "inputs":[[0,1],[2],[2],[3,4]],"outputs":[[2],[3],[4],[5]],"base_costs":[10,10,10,10],
  "op_types":["MatMul","Pointwise","Pointwise","MatMul"],"fast_memory_capacity":1e9,"slow_memory_bandwidth":1,
  "native_granularity":[128,128]})";
// X = T0 @ T1 feeds a MatMul (T3 = X @ T2) and a Pointwise (T4 = f(X)).
const char* kHeadTwoReaders = R"({"widths":[128,128,128,128,128,128],"heights":[128,128,128,128,128,128],
  "inputs":[[0,1],[5,2],[5]],"outputs":[[5],[3],[4]],"base_costs":[10,10,10],
  "op_types":["MatMul","MatMul","Pointwise"],"fast_memory_capacity":1e9,"slow_memory_bandwidth":1,
  "native_granularity":[128,128]})";

const Violation kViolations[] = {
    {"CoverageMissingOp", kChain3, R"({"subgraphs":[[0],[1]],"granularities":[[128,128,1],[128,128,1]]})",
     "M5", -1},
    {"EmptySchedule", kChain3, "{}", "M5", -1},
    {"WidthAboveNative", kChain3, R"({"subgraphs":[[0,1,2]],"granularities":[[256,128,1]]})", "M6", 0},
    {"ZeroHeight", kChain3, R"({"subgraphs":[[0,1,2]],"granularities":[[128,0,1]]})", "M6", 0},
    {"EmptyOpList", kChain3, R"({"subgraphs":[[0,1,2],[]],"granularities":[[128,128,1],[128,128,1]]})", "M7",
     1},
    {"OpListedTwice", kChain3, R"({"subgraphs":[[0,1,1,2]],"granularities":[[128,128,1]]})", "M7", 0},
    {"NotTopological", kChain3, R"({"subgraphs":[[1,0,2]],"granularities":[[128,128,1]]})", "M7", 0},
    {"Disconnected", kChain3,
     R"({"subgraphs":[[0],[0,2],[1]],"granularities":[[128,128,1],[128,128,1],[128,128,1]]})", "M7", 1},
    {"RetainNotProducedHere", kChain3,
     R"({"subgraphs":[[0],[1],[2]],"granularities":[[128,128,1],[128,128,1],[128,128,1]],
         "tensors_to_retain":[[1],[1],[]]})",
     "M9", 1},
    {"RetainGraphInput", kChain3,
     R"({"subgraphs":[[0,1,2]],"granularities":[[128,128,1]],"tensors_to_retain":[[0]]})", "M9", 0},
    {"TraversalTooShort", kChain3,
     R"({"subgraphs":[[0,1,2]],"granularities":[[64,64,1]],"traversal_orders":[[0,1,2]]})", "M11", 0},
    {"TraversalDuplicate", kChain3,
     R"({"subgraphs":[[0,1,2]],"granularities":[[64,64,1]],"traversal_orders":[[0,1,2,2]]})", "M11", 0},
    {"TraversalOutOfRange", kChain3,
     R"({"subgraphs":[[0,1,2]],"granularities":[[64,64,1]],"traversal_orders":[[0,1,2,4]]})", "M11", 0},
    {"MiddleMatMulNeedsWEqualsK", kMatMul3, R"({"subgraphs":[[0,1,2]],"granularities":[[64,128,128]]})",
     "M13", 0},
    {"ThreeMatMulsSplitK", kMatMul3, R"({"subgraphs":[[0,1,2]],"granularities":[[128,128,64]]})", "M13", 0},
    {"TwoLinksThroughPointwiseSplitK", kTwoLinksThroughPointwise,
     R"({"subgraphs":[[0,1,2,3]],"granularities":[[128,128,64]]})", "M13", 0},
    {"RetainedOnlyForNextSubgraph", kExample3,
     R"({"subgraphs":[[0],[1],[2]],"granularities":[[128,128,1],[128,128,1],[128,128,1]],
         "tensors_to_retain":[[1],[],[]]})",
     "M15", 2},
    {"DemandsDisagree", kHeadTwoReaders, R"({"subgraphs":[[0,1,2]],"granularities":[[64,128,128]]})", "M17",
     0},
    {"ReportedLatencyStrict", kChain3,
     R"({"subgraphs":[[0,1,2]],"granularities":[[128,128,1]],"subgraph_latencies":[1.0]})", "M27", 0},
};

void PrintTo(const Violation& v, std::ostream* os) { *os << v.name; }

class RuleViolations : public ::testing::TestWithParam<Violation> {};

TEST_P(RuleViolations, FirstViolatedRule) {
  const Violation& v = GetParam();
  const Case c = make(v.problem, v.solution);
  const ScheduleReport r = run(c, /*strict=*/true);
  ASSERT_FALSE(r.valid);
  EXPECT_EQ(v.rule, r.error->rule) << r.error->describe();
  EXPECT_EQ(v.subgraph, r.error->subgraph) << r.error->describe();
}

INSTANTIATE_TEST_SUITE_P(Rules, RuleViolations, ::testing::ValuesIn(kViolations),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Rules, M17StepIsNamed) {
  // X demanded as R x [0,128) by the tail and as the 64-wide tile R x C by the Pointwise: differ at tile 0.
  const ScheduleReport r =
      run(make(kHeadTwoReaders, R"({"subgraphs":[[0,1,2]],"granularities":[[64,128,128]]})"));
  ASSERT_TRUE(r.error && r.error->step);
  EXPECT_EQ(0, r.error->step->tile);
  EXPECT_EQ(5, r.error->tensor);
}

TEST(Rules, MatMulPointwiseMatMulIsOneChain) {
  // T2 = T0 @ T1 (K = 256) -> T3 = f(T2) -> T5 = T3 @ T4 (K = 128): a link through an in-chain op (M12), so
  // K_s = 128 and [128,128,128] has nk = 1 (before the 2026-11-23 revision: K_s = 256, nk = 2, M13).
  // Head: T0 R x [0,256) 32768 + T1 [0,256) x Kr 32768, compute 10 * 1 * (128/128) = 10; in-chain op 10 * 1 *
  // (128/128) = 10; tail: T4 Kr x C 16384, compute 10. Loads 81920 + store T5 16384 over B = 1: 98304 > 30.
  // WS = 32768 + 32768 + 16384 (B) + 16384 (C) = 98304.
  const ScheduleReport r = run(make(kMmPwMm, R"({"subgraphs":[[0,1,2]],"granularities":[[128,128,128]]})"));
  ASSERT_TRUE(r.valid) << r.error->describe();
  EXPECT_DOUBLE_EQ(98304, r.total_latency);
  EXPECT_EQ(98304, r.subgraphs[0].peak_working_set);
  EXPECT_DOUBLE_EQ(30, r.subgraphs[0].compute_time);
}

TEST(Rules, SplitKOomWithOneHostedAccumulatorHasNoDTerm) {
  // x7 at capacity 45000, ks 3 (M20): B = T0[:,Kr] 8192 + T1[Kr,:] 8192 + T3 16384, C = T4 tile 16384 (also
  // the accumulator of ephemeral T2, its one guest): 49152 = A 0 + B 32768 + C 16384 + D 0.
  const Loaded l =
      load(source_path("tests/golden/x7_tight_problem.json"), source_path("tests/golden/x7_solution.json"));
  const ScheduleReport r = verify_schedule(l.problem, l.graph, l.schedule, {});
  ASSERT_FALSE(r.valid);
  ASSERT_EQ("M20", r.error->rule);
  const WorkingSet& ws = *r.error->working_set;
  EXPECT_EQ(32768, ws.slices);
  EXPECT_EQ(16384, ws.outputs);
  EXPECT_EQ(0, ws.retained_in);
  EXPECT_EQ(0, ws.accumulators);
  for (const WorkingSetTerm& t : ws.terms) EXPECT_NE(std::string::npos, std::string("ABC").find(t.part));
  const std::string text = r.error->describe();
  EXPECT_NE(std::string::npos, text.find("C outputs 16384 + D accumulators 0")) << text;
}

TEST(Rules, TwoPartialSumsInOneOutputTileAreAnOomWithTheirDTerm) {
  // x14-two-accumulators-oom (revision of 2026-11-24): T5 = P(T0 @ T1, T0 @ T3), [128, 128, 64], capacity
  // 50,000. ks 0: B = T0[:, 0:64] 8192 + T1[0:64, :] 8192 + T3[0:64, :] 8192, C = T5's tile 16384 (hosting
  // T2's partial sum), D = T4's partial sum 16384: 57,344.
  const Loaded l =
      load(source_path("tests/golden/x14_tight_problem.json"), source_path("tests/golden/x14_solution.json"));
  const ScheduleReport r = verify_schedule(l.problem, l.graph, l.schedule, {});
  ASSERT_FALSE(r.valid);
  ASSERT_EQ("M20", r.error->rule);
  const WorkingSet& ws = *r.error->working_set;
  EXPECT_EQ(24576, ws.slices);
  EXPECT_EQ(16384, ws.outputs);
  EXPECT_EQ(16384, ws.accumulators);
  int d_terms = 0;
  for (const WorkingSetTerm& t : ws.terms)
    if (t.part == 'D') {
      ++d_terms;
      EXPECT_EQ(4, t.tensor);
      EXPECT_EQ((Region{0, 128, 0, 128}), t.region);
    }
  EXPECT_EQ(1, d_terms);
  EXPECT_NE(std::string::npos, r.error->describe().find("D accumulators 16384")) << r.error->describe();
}

TEST(Rules, PartialSumsAreHostedByAMaximumMatching) {
  // T2 = T0 @ T1, T4 = T0 @ T3 (K = 256), T5 = P(T2, T4), T6 = Q(T2): T2 reaches T5 and T6, T4 only T5.
  // Hosting T2 in T5 first (the first it reaches) would leave T4 without a host; the maximum matching puts
  // T2 in T6 and T4 in T5, so D = 0 (M20: "as many as possible are hosted"). [128, 128, 64], nk = 4:
  // WS = B 3 x 8192 + C 2 x 16384 = 57,344 <= 60,000 (73,728 with a D tile). Latency: ks 0-2 compute
  // 2 x 10000 x 64/256 = 5000 > loads 24576/10; ks 3: compute 5000 + 300 + 300 = 5600 < loads 2457.6 +
  // stores 2 x 1638.4 = 5734.4. Total 3 x 5000 + 5734.4 = 20,734.4.
  const Problem p = parse_problem(nlohmann::json::parse(R"({
    "widths": [256, 128, 128, 128, 128, 128, 128], "heights": [128, 256, 128, 256, 128, 128, 128],
    "inputs": [[0, 1], [0, 3], [2, 4], [2]], "outputs": [[2], [4], [5], [6]],
    "base_costs": [10000, 10000, 300, 300], "op_types": ["MatMul", "MatMul", "Pointwise", "Pointwise"],
    "fast_memory_capacity": 60000, "slow_memory_bandwidth": 10, "native_granularity": [128, 128]})"),
                                  "matching.json");
  const Graph g = analyze_graph(p, "matching.json");
  Schedule s;
  SubgraphSpec sg;
  sg.ops = {0, 1, 2, 3};
  sg.granularity = {128, 128, 64};
  s.subgraphs.push_back(sg);
  const ScheduleReport r = verify_schedule(p, g, s, {});
  ASSERT_TRUE(r.valid) << r.error->describe();
  EXPECT_NEAR(20734.4, r.total_latency, 1e-9 * 20734.4);
  EXPECT_EQ(57344, r.subgraphs[0].peak_working_set);
}

TEST(Rules, ReportedLatencyWarnsByDefault) {
  // The chain fused at 128x128: one step, load T0 16384 + store T3 16384 over B = 1 -> 32768 > compute 30.
  const ScheduleReport r =
      run(make(kChain3, R"({"subgraphs":[[0,1,2]],"granularities":[[128,128,1]],"subgraph_latencies":[1.0]})"));
  ASSERT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(32768, r.total_latency);
  ASSERT_EQ(1u, r.warnings.size());
  EXPECT_EQ("M27", r.warnings[0].rule);
}

TEST(Rules, RecomputationPaysAgain) {
  // [[0],[0,1,2]] with retain nothing: subgraph 0 stores T1 (16384 / 1) after loading T0 -> 32768;
  // subgraph 1 recomputes op 0 (T1 ephemeral there), loads T0, stores T3 -> 32768. Total 65536.
  const ScheduleReport r =
      run(make(kChain3, R"({"subgraphs":[[0],[0,1,2]],"granularities":[[128,128,1],[128,128,1]]})"));
  ASSERT_TRUE(r.valid) << r.error->describe();
  EXPECT_DOUBLE_EQ(65536, r.total_latency);
}

}  // namespace
}  // namespace mlsys::test
