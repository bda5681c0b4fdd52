// Hostile and huge inputs (issue 20): answers whose cost does not grow with the step count, refusals that
// name the count and the budget, a solver that meets its deadline, and the numeric ranges the readers accept.
// Expected numbers are derived by hand in the comments.
#include <gtest/gtest.h>

#include <filesystem>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "sim/json_io.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One Pointwise op on a 2^20 x 2^20 tensor, capacity 10^6, bandwidth 10, native [128, 128]; the schedule
// [[0]] at [1, 1, 1] has 2^40 steps. Each step loads and stores one element (0.2) and computes base 1 on a
// padded native tile (1): total 2^40 = 1,099,511,627,776; WS = 1 + 1 = 2.
const char* kHugeProblem = R"({"widths":[1048576,1048576],"heights":[1048576,1048576],"inputs":[[0]],
  "outputs":[[1]],"base_costs":[1],"op_types":["Pointwise"],"fast_memory_capacity":1000000,
  "slow_memory_bandwidth":10,"native_granularity":[128,128]})";
const char* kHugeSchedule = R"({"subgraphs":[[0]],"granularities":[[1,1,1]]})";

class HugeProblem : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("huge");
    problem_ = dir_ + "/problem.json";
    schedule_ = dir_ + "/schedule.json";
    write_text(problem_, kHugeProblem);
    write_text(schedule_, kHugeSchedule);
  }
  std::string dir_, problem_, schedule_;
};

TEST_F(HugeProblem, VerifyAnswersFromTheClosedForm) {
  const auto start = Clock::now();
  const CommandResult r = run_command(MLSYS_VERIFY_BIN, problem_ + " " + schedule_ + " --json");
  EXPECT_LT(seconds_since(start), kHangGuardSeconds);  // walking its 2^40 steps would take days
  ASSERT_EQ(0, r.exit_code) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(1099511627776.0, report.at("total_latency").get<double>());
}

TEST_F(HugeProblem, StepListingAndReplayRefuseAboveTheBudget) {
  for (const std::string option : {"--steps", "--replay"}) {
    const auto start = Clock::now();
    const CommandResult r = run_command(MLSYS_VERIFY_BIN, problem_ + " " + schedule_ + " " + option);
    EXPECT_LT(seconds_since(start), kHangGuardSeconds) << option;
    EXPECT_EQ(2, r.exit_code) << option << ": " << r.err;
    EXPECT_NE(std::string::npos, r.err.find("1099511627776 steps")) << r.err;
    EXPECT_NE(std::string::npos, r.err.find("10000000")) << r.err;
    EXPECT_NE(std::string::npos, r.err.find("--max-steps")) << r.err;
    EXPECT_NE(std::string::npos, r.err.find(option)) << r.err;
  }
  const CommandResult simulate = run_command(MLSYS_SIMULATE_BIN, problem_ + " " + schedule_);
  EXPECT_EQ(2, simulate.exit_code) << simulate.err;
  EXPECT_NE(std::string::npos, simulate.err.find("--max-steps")) << simulate.err;
}

TEST_F(HugeProblem, SolverMeetsItsDefaultDeadline) {
  // One op: the contest's default timeout is 2 s; on a busy machine too, the schedule must be valid and
  // written, and the process gone, within it and the promised quarter second.
  const CpuLoad load(8);
  for (const std::string form : {"out", "2"}) {
    const std::string out = dir_ + "/out.json";
    std::filesystem::remove(out);
    const CommandResult r =
        run_command(MLSYS_SOLVER_BIN, problem_ + " " + (form == "out" ? out : std::string("2")));
    // One op's first schedule needs milliseconds of CPU: a tenth of a second is ample.
    if (!expect_deadline_promise(r, 2, out, 0.1)) continue;
    if (form == "2") write_text(out, r.out);
    const CommandResult check = run_command(MLSYS_VERIFY_BIN, problem_ + " " + out + " --strict");
    EXPECT_EQ(0, check.exit_code) << check.err;
  }
}

TEST(RetainedOutput, OutOfMemoryIsLocatedWithoutWalkingTheGrid) {
  // T0 (2^20 x 2^20) -> op 0 -> T1, retained for op 1. At [128,128,1] subgraph 0 has 8192 x 8192 tiles; at
  // traversal position t the working set is T0's tile 16,384 (B) + T1's tile and the t finished tiles of T1
  // (C): 16,384 (t + 2). Over 10^12 first at t = 61,035,155: 16,384 x 61,035,157 = 1,000,000,012,288 (t - 1
  // gives 999,999,995,904). Walking the 61 million steps before it takes seconds; the closed form does not.
  const Problem problem = parse_problem(json::parse(R"({"widths":[1048576,1048576,1048576],
    "heights":[1048576,1048576,1048576],"inputs":[[0],[1]],"outputs":[[1],[2]],"base_costs":[1,1],
    "op_types":["Pointwise","Pointwise"],"fast_memory_capacity":1e12,"slow_memory_bandwidth":10,
    "native_granularity":[128,128]})"),
                                        "problem.json");
  const Graph graph = analyze_graph(problem, "problem.json");
  const Schedule schedule = parse_schedule(json::parse(R"({"subgraphs":[[0],[1]],
    "granularities":[[128,128,1],[128,128,1]],"tensors_to_retain":[[1],[]]})"),
                                           "solution.json", problem);
  const auto start = Clock::now();
  const ScheduleReport r = verify_schedule(problem, graph, schedule, {});
  EXPECT_LT(seconds_since(start), kHangGuardSeconds);
  ASSERT_FALSE(r.valid);
  ASSERT_TRUE(r.error && r.error->step);
  EXPECT_EQ("M20", r.error->rule);
  EXPECT_EQ(0, r.error->subgraph);
  EXPECT_EQ(61035155, r.error->step->position);
  EXPECT_EQ(61035155, r.error->step->tile);
  EXPECT_EQ(0, r.error->step->k_step);
  ASSERT_TRUE(r.error->working_set);
  EXPECT_EQ(1000000012288, r.error->working_set->total());
  EXPECT_EQ(16384, r.error->working_set->slices);
  EXPECT_EQ(999999995904, r.error->working_set->outputs);
}

// One Pointwise op T0 -> T1 with the given fields replaced, verified at [128,128,1] (README: accepted
// ranges).
CommandResult verify_variant(const json& changes) {
  json problem = {{"widths", {536870912, 536870912}},
                  {"heights", {1073741824, 1073741824}},
                  {"inputs", {{0}}},
                  {"outputs", {{1}}},
                  {"base_costs", {1}},
                  {"op_types", {"Pointwise"}},
                  {"fast_memory_capacity", 4611686018427387904.0},
                  {"slow_memory_bandwidth", 1},
                  {"native_granularity", {128, 128}}};
  problem.update(changes);
  const std::string dir = temp_dir("limits");
  write_text(dir + "/p.json", problem.dump());
  write_text(dir + "/s.json", R"({"subgraphs":[[0]],"granularities":[[128,128,1]]})");
  return run_command(MLSYS_VERIFY_BIN, dir + "/p.json " + dir + "/s.json --json");
}

TEST(NumericLimits, LargestAcceptedValuesGiveExactTotals) {
  // Two tensors of 2^30 x 2^29 = 2^59 elements (2^60 together, the most accepted), capacity 2^62: 2^45 tiles
  // of 128 x 128, each loading and storing 2^14 elements at bandwidth 1 (2^15) against compute 1: 2^60.
  CommandResult r = verify_variant(json::object());
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_EQ(1152921504606846976.0, json::parse(r.out).at("total_latency").get<double>());
  // Bandwidth 1e18 and base 1e15: every step is compute-bound at 1e15, 2^45 x 1e15.
  r = verify_variant({{"slow_memory_bandwidth", 1e18}, {"base_costs", {1e15}}});
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_DOUBLE_EQ(35184372088832.0 * 1e15, json::parse(r.out).at("total_latency").get<double>());
  // Bandwidth 1e-9: 2^15 / 1e-9 per step, finite.
  r = verify_variant({{"slow_memory_bandwidth", 1e-9}});
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_DOUBLE_EQ(1152921504606846976.0 / 1e-9, json::parse(r.out).at("total_latency").get<double>());
}

TEST(NumericLimits, ValuesOutsideTheRangesAreM1Errors) {
  struct Bad {
    json changes;
    std::string field;
  };
  const Bad cases[] = {
      {{{"widths", {2147483647, 2147483647}}}, "widths[0]"},
      {{{"widths", {1073741824, 1073741824}}, {"heights", {1073741824, 1073741824}}},
       "widths[1]"},                                         // 2 x 2^60
      {{{"widths", {536870912, 1073741824}}}, "widths[1]"},  // 2^59 + 2^60 elements together
      {{{"fast_memory_capacity", 9223372036854775808.0}}, "fast_memory_capacity"},
      {{{"slow_memory_bandwidth", 1e-300}}, "slow_memory_bandwidth"},
      {{{"slow_memory_bandwidth", 1e300}}, "slow_memory_bandwidth"},
      {{{"base_costs", {0}}}, "base_costs[0]"},
      {{{"base_costs", {1e300}}}, "base_costs[0]"},
      {{{"native_granularity", {2147483647, 128}}}, "native_granularity[0]"},
  };
  for (const Bad& bad : cases) {
    const CommandResult r = verify_variant(bad.changes);
    EXPECT_EQ(2, r.exit_code) << bad.changes.dump() << ": " << r.err;
    EXPECT_NE(std::string::npos, r.err.find("[M1]")) << r.err;
    EXPECT_NE(std::string::npos, r.err.find(bad.field)) << r.err;
  }
}

TEST(NumericLimits, NumberTooLargeForADoubleIsAnM1Error) {
  // Found by fuzzing: nlohmann/json throws out_of_range, not parse_error, for 128e1128.
  const std::string dir = temp_dir("overflow");
  write_text(dir + "/p.json", R"({"widths":[128e1128]})");
  const CommandResult r = run_command(MLSYS_VERIFY_BIN, dir + "/p.json " + dir + "/p.json");
  EXPECT_EQ(2, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.err.find("[M1]")) << r.err;
  EXPECT_NE(std::string::npos, r.err.find("p.json")) << r.err;
}

// A problem built op by op on native [128, 128], for the deadline tests.
struct ProblemBuilder {
  json widths = json::array(), heights = json::array(), inputs = json::array(), outputs = json::array(),
       bases = json::array(), types = json::array();
  int tensor(int width, int height) {
    widths.push_back(width);
    heights.push_back(height);
    return static_cast<int>(widths.size()) - 1;
  }
  void op(const char* type, json ins, int out, double base) {
    inputs.push_back(std::move(ins));
    outputs.push_back({out});
    bases.push_back(base);
    types.push_back(type);
  }
  json problem(double capacity, double bandwidth) const {
    return {{"widths", widths},       {"heights", heights},
            {"inputs", inputs},       {"outputs", outputs},
            {"base_costs", bases},    {"op_types", types},
            {"fast_memory_capacity", capacity}, {"slow_memory_bandwidth", bandwidth},
            {"native_granularity", {128, 128}}};
  }
};

// Runs `mlsys --timeout` on `problem` beside `stress-ng --cpu 8` and checks the promise
// (expect_deadline_promise): gone by the timeout plus the margin, with a schedule `verify --strict` accepts
// or, when the load left the process less CPU than `first_schedule_cpu`, exit 1 and no file. Returns
// verify's report, or an empty object.
json solve_within(const json& problem, const std::string& name, double timeout, double first_schedule_cpu) {
  const std::string dir = temp_dir(name);
  write_text(dir + "/problem.json", problem.dump());
  CommandResult r;
  {
    const CpuLoad load(8);
    r = run_command(MLSYS_SOLVER_BIN,
                    dir + "/problem.json " + dir + "/out.json --timeout " + std::to_string(timeout));
  }
  if (!expect_deadline_promise(r, timeout, dir + "/out.json", first_schedule_cpu)) return json::object();
  const CommandResult check =
      run_command(MLSYS_VERIFY_BIN, dir + "/problem.json " + dir + "/out.json --strict --json");
  EXPECT_EQ(0, check.exit_code) << check.err;
  return check.exit_code == 0 ? json::parse(check.out) : json::object();
}

// CPU seconds each graph's first schedule needs: measured alone (docs/solver.md#deadline: 0.23 s of wall time
// to the first schedule, one thread of two busy) and allowed twice over for both threads. Below these a
// missing schedule is the machine's doing, at or above them the program's.
constexpr double kSixHundredOpsFirstCpu = 0.5;
constexpr double kFiftyThousandOpsFirstCpu = 1.0;
constexpr double kTwentyThousandMatMulsFirstCpu = 1.0;

TEST(SolverDeadline, SixHundredOpGraphWithinItsTimeout) {
  // A generated chain of 600 ops on 256 x 256 tensors: every third a MatMul with its own weight, the others
  // Pointwise, a third of those also reading one of the six tensors before. With --timeout 5 the schedule
  // must be written and the program gone within the promise, and the schedule must pass verify --strict.
  std::mt19937 rng(600);
  ProblemBuilder b;
  std::vector<int> live{b.tensor(256, 256)};
  for (int i = 0; i < 600; ++i) {
    std::vector<int> in{live.back()};
    if (i % 3 == 0)
      in.push_back(b.tensor(256, 256));
    else if (rng() % 3 == 0)
      in.push_back(live[live.size() - 1 - rng() % std::min<size_t>(6, live.size())]);
    const int y = b.tensor(256, 256);
    b.op(i % 3 == 0 ? "MatMul" : "Pointwise", in, y, i % 3 == 0 ? 2000 : 300);
    live.push_back(y);
  }
  solve_within(b.problem(300000, 20), "g600", 5, kSixHundredOpsFirstCpu);
}

TEST(SolverDeadline, FiftyThousandIndependentOpsWithinTheDefaultTimeout) {
  // 50,000 Pointwise ops, each reading its own 128 x 128 graph input and writing a graph output; base 10,
  // bandwidth 100, native [128, 128]. No two ops share a tensor, so each is its own subgraph (M7) and costs
  // max(10, (16,384 + 16,384) / 100) = 327.68: the optimum is 50,000 x 327.68 = 16,384,000. A question about
  // one op must cost what the op has, not what the graph has: compiling each subgraph over arrays sized to
  // the problem once took 8.5 s here and found no schedule. The first schedule (every op alone) is this
  // optimum; beside stress-ng --cpu 8 it may come after the 2 s, so the optimum is asserted only when the
  // process received the CPU it needs (docs/solver.md#deadline).
  ProblemBuilder b;
  for (int i = 0; i < 50000; ++i) {
    const int x = b.tensor(128, 128);
    b.op("Pointwise", {x}, b.tensor(128, 128), 10);
  }
  const json report = solve_within(b.problem(1000000, 100), "wide", 2, kFiftyThousandOpsFirstCpu);
  if (report.empty()) return;  // no schedule, and the load is why (solve_within checked)
  EXPECT_NEAR(16384000.0, report.at("total_latency").get<double>(), 1e-3);
}

TEST(SolverDeadline, TwentyThousandMatMulsSummedByAChainWithinTheTimeout) {
  // 20,000 MatMuls X_i[64 x 256] @ W_i[256 x 64] of graph inputs, summed by a chain of 19,999 Pointwise adds
  // into one last MatMul. Counting MatMuls that share an operand compared every pair (5 s here), and the
  // deep heads' pools (Theorem 13) walk the chain once per head: `mlsys --timeout 2` found no schedule in
  // 5.8 s. Now its first schedule (every op alone) comes before any of that.
  ProblemBuilder b;
  int sum = -1;
  for (int i = 0; i < 20000; ++i) {
    const int x = b.tensor(256, 64), w = b.tensor(64, 256), y = b.tensor(64, 64);
    b.op("MatMul", {x, w}, y, 10);
    if (sum >= 0) {
      const int next = b.tensor(64, 64);
      b.op("Pointwise", {sum, y}, next, 1);
      sum = next;
    } else {
      sum = y;
    }
  }
  b.op("MatMul", {sum, b.tensor(64, 64)}, b.tensor(64, 64), 5);
  solve_within(b.problem(1e9, 100), "summed", 2, kTwentyThousandMatMulsFirstCpu);
}

}  // namespace
}  // namespace mlsys::test
