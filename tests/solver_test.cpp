// The mlsys binary end to end: optimal on the worked examples, `{}` and exit 1 when nothing fits, a valid file
// after SIGTERM, and a first schedule written early. Every output is checked with the verifier library.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/json_io.hpp"
#include "solver/search.hpp"
#include "verifier/certified_rounding.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

// Verifies `solution` strictly (reported latencies must be the model's exact values) and returns its total.
double verified_total(const std::string& problem_path, const std::string& solution_path) {
  const Loaded l = load(problem_path, solution_path);
  VerifyOptions o;
  o.strict = true;
  const ScheduleReport r = verify_schedule(l.problem, l.graph, l.schedule, o);
  EXPECT_TRUE(r.valid) << (r.error ? r.error->describe() : "");
  return r.valid ? r.total_latency : INFINITY;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// How many subgraphs of a solution run `op` (more than one: it is recomputed).
int runs_of(const nlohmann::json& solution, int op) {
  int runs = 0;
  for (const auto& subgraph : solution.at("subgraphs"))
    for (const auto& o : subgraph) runs += o.get<int>() == op;
  return runs;
}

struct Example {
  const char* problem;
  double at_most;  // the rule book's best worked-example number for that problem
};

class SolverExamples : public ::testing::TestWithParam<Example> {};

TEST_P(SolverExamples, AtLeastAsGoodAsTheRuleBook) {
  const std::string problem = source_path(std::string("tests/golden/") + GetParam().problem);
  const std::string out = temp_dir("solve") + "/solution.json";
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, problem + " " + out + " --timeout 1");
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_LE(verified_total(problem, out), GetParam().at_most * (1 + 1e-12));
}

// Example 1: 1B 3276.8; 2: 2B 13107.2; 3: 3C 4638.4; 4: 4B 6548; 5: 5B 6915.2 (section 7).
INSTANTIATE_TEST_SUITE_P(RuleBook, SolverExamples,
                         ::testing::Values(Example{"ex1_problem.json", 3276.8}, Example{"ex2_problem.json", 13107.2},
                                           Example{"ex3_problem.json", 4638.4}, Example{"ex4_problem.json", 6548},
                                           Example{"ex5_problem.json", 6915.2}),
                         [](const auto& info) { return std::string(info.param.problem).substr(0, 3); });

// An imported network cut into row blocks (the zoo): 24 blocks X_b -> P_b (Pointwise) -> P_b @ W, one weight
// W for all. Hand derivation (every tensor 128 x 128 = 16,384 elements, B = 100, bases 1, capacity
// 2,000,000): every X_b is loaded and every output stored at least once, and W at least once: the rule book's
// I/O bound, 49 x 16,384 / 100 = 8,028.16, far above the compute (48 native tiles at base 1). It is met only
// when all 24 MatMuls share the subgraph that loads W (or W is loaded again), which segments of 16 ops cannot
// hold and which the MatMuls' intermediate LHS keeps out of siblings-first orders; the batched-level order
// puts each layer's 24 copies side by side and segments whole levels.
TEST(SolverQuality, RowBlocksOfOneLayerLoadTheirWeightOnce) {
  ProblemBuilder b;
  const int w = b.tensor(128, 128);
  for (int block = 0; block < 24; ++block) {
    const int x = b.tensor(128, 128), y = b.tensor(128, 128), z = b.tensor(128, 128);
    b.op("Pointwise", {x}, y, 1);
    b.op("MatMul", {y, w}, z, 1);
  }
  const Problem p = parse_problem(b.problem(2000000, 100, 128, 128), "blocks");
  const Graph g = analyze_graph(p, "blocks");
  SolveOptions options;
  options.threads = 1;
  options.timeout_seconds = 20;  // the batched order ends it in milliseconds; without it, the clock
  std::atomic<bool> stop{false};
  SolveStats stats;
  const std::optional<Schedule> best = solve(p, g, options, stop, nullptr, &stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 49 * 16384 / 100.0, 1e-6);
  EXPECT_NE(stats.best_strategy.find("batched-level"), std::string::npos) << stats.best_strategy;
  EXPECT_EQ(stats.stopped_by, "certified bound");
}

// Solves a built problem on one thread, `configure` setting the other options.
std::optional<Schedule> solve_on_one_thread(const nlohmann::json& problem,
                                            const std::function<void(SolveOptions&)>& configure, SolveStats& stats,
                                            const ImprovementCallback& on_improvement = nullptr) {
  const Problem p = parse_problem(problem, "built");
  const Graph g = analyze_graph(p, "built");
  SolveOptions options;
  options.threads = 1;
  configure(options);
  std::atomic<bool> stop{false};
  return solve(p, g, options, stop, on_improvement, &stats);
}

// Capacity 10^6, bandwidth 1024, native [128, 128]; one thread and an order budget of one job (the index
// order cut into one-op segments): what the merge pass between jobs adds is then all that changes.
std::optional<Schedule> solve_with_one_job(const ProblemBuilder& b, SolveStats& stats) {
  return solve_on_one_thread(b.problem(1000000, 1024, 128, 128), [](SolveOptions& o) { o.max_orders = 1; },
                             stats);
}

TEST(SolverQuality, TheMergePassFusesAttentionHeadsThatNoOrderLinesUp) {
  // Two heads, numbered by level: S_h = Q_h @ K_h, P_h = f(S_h), A_h = P_h @ V_h, all 128 x 128, base 5,
  // bandwidth 1024 (a tensor moves in 16), native [128, 128]. The index order interleaves the heads, so its
  // one-op segments (the only job an order budget of 1 runs) cost 48 + 32 + 48 = 128 per head: 256. Fused
  // as S_h -> P_h -> A_h (one LHS link, in-chain P_h), a head loads Q, K, V and stores A: 64 against 15 of
  // compute. 2 x 64 = 128 is also the I/O bound (six inputs, two outputs), so the search stops there.
  ProblemBuilder b;
  std::vector<int> q, k, v, s, pw, a;
  for (int h = 0; h < 2; ++h)
    for (auto* t : {&q, &k, &v, &s, &pw, &a}) t->push_back(b.tensor(128, 128));
  for (int h = 0; h < 2; ++h) b.op("MatMul", {q[h], k[h]}, s[h], 5);
  for (int h = 0; h < 2; ++h) b.op("Pointwise", {s[h]}, pw[h], 5);
  for (int h = 0; h < 2; ++h) b.op("MatMul", {pw[h], v[h]}, a[h], 5);
  SolveStats stats;
  const std::optional<Schedule> best = solve_with_one_job(b, stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 128, 1e-9);
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  EXPECT_EQ(stats.stopped_by, "certified bound");
  ASSERT_EQ(best->subgraphs.size(), 2u);
  for (const SubgraphSpec& sg : best->subgraphs) EXPECT_EQ(sg.ops.size(), 3u);
}

TEST(SolverQuality, TheMergePassFusesNeighboursThroughWhatTheFirstRetains) {
  // X -> P1 -> Y -> P2 -> Z, 128 x 128, P1 base 24, P2 base 8, bandwidth 1024 (a tensor moves in 16). One-op
  // segments (the one job an order budget of 1 runs) keep Y in fast memory: max(24, 16) + max(8, 16) = 40.
  // As one subgraph Y is internal: max(24 + 8, 16 + 16) = 32, which meets the certified bound (compute 32,
  // I/O 32). The merge turns what P1 retained for P2 into an internal tensor.
  ProblemBuilder b;
  const int x = b.tensor(128, 128), y = b.tensor(128, 128), z = b.tensor(128, 128);
  b.op("Pointwise", {x}, y, 24);
  b.op("Pointwise", {y}, z, 8);
  SolveStats stats;
  const std::optional<Schedule> best = solve_with_one_job(b, stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 32, 1e-9);
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  ASSERT_EQ(best->subgraphs.size(), 1u);
  EXPECT_TRUE(best->subgraphs[0].retain.empty());
}

TEST(SolverQuality, TheMergePassFusesARunOfSubgraphsWhereNoPairGains) {
  // h: X[128x64] @ W[64x32] -> Y, then P: Y -> Y2, Q: Y2 -> Y3 (Pointwise, 128 x 32), then t: Y3 @ V[32x128]
  // -> Z; bandwidth 1024 (a 128 x 32 tensor moves in 4). Bases h, P, Q 40 and t 32: every subgraph below is
  // compute-bound. One-op segments (the one job an order budget of 1 runs) cost 40 + 40 + 40 + 32 = 152, and
  // each pair or three in a row costs the same as apart: without a tail P and Q pay their padded tile, and as
  // t's prologue too (M23, M14). All four are one chain: h streams a quarter tile (32 of n_k = 128 columns,
  // M24), P and Q are in-chain at a quarter (M23): 10 + 10 + 10 + 32 = 62 in one step against 30 of traffic
  // (X 8, W 2, V 4, Z 16), the compute floor, so the search stops there.
  ProblemBuilder b;
  const int x = b.tensor(128, 64), w = b.tensor(64, 32), y = b.tensor(128, 32), y2 = b.tensor(128, 32),
            y3 = b.tensor(128, 32), v = b.tensor(32, 128), z = b.tensor(128, 128);
  b.op("MatMul", {x, w}, y, 40);
  b.op("Pointwise", {y}, y2, 40);
  b.op("Pointwise", {y2}, y3, 40);
  b.op("MatMul", {y3, v}, z, 32);
  SolveStats stats;
  const std::optional<Schedule> best = solve_with_one_job(b, stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 62, 1e-9);
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  ASSERT_EQ(best->subgraphs.size(), 1u);
}

TEST(SolverQuality, TheMergePassStreamsAHeadIntoEachOfItsReaders) {
  // h: X[128x64] @ W[64x32] -> Y, P: Y -> Y2 (Pointwise, 128 x 32), read by b1, b2: Y2 @ V_i[32x32] -> Z_i.
  // Bases h, P 40, b_i 32; bandwidth 256 (a 128 x 32 tensor moves in 16). Made once, h and P cost 80 together
  // (P padded, M23; X and W load in 40), and b1, b2 then cost 64 (compute; Y2, the V_i and the Z_i move in
  // 40): 144 at best, and no merge of those gains. As a chain into each reader, h streams a quarter tile (32
  // of n_k = 128 columns, M24) and P is in-chain at a quarter: 10 + 10 + 32 = 52 of compute against 60 of
  // traffic (X 32, W 8, V_i 4, Z_i 16), twice: 120. P's output feeds a MatMul, so no run can keep or store it
  // (M9, M8), and one run cannot hold both readers (three MatMuls of depths 64 and 32, M13).
  ProblemBuilder b;
  const int x = b.tensor(128, 64), w = b.tensor(64, 32), y = b.tensor(128, 32), y2 = b.tensor(128, 32);
  b.op("MatMul", {x, w}, y, 40);
  b.op("Pointwise", {y}, y2, 40);
  for (int i = 0; i < 2; ++i) b.op("MatMul", {y2, b.tensor(32, 32)}, b.tensor(128, 32), 32);
  SolveStats stats;
  const std::optional<Schedule> best = solve_on_one_thread(
      b.problem(1000000, 256, 128, 128), [](SolveOptions& o) { o.max_orders = 1; }, stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 120, 1e-9);
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  ASSERT_EQ(best->subgraphs.size(), 2u);
  for (const SubgraphSpec& sg : best->subgraphs) EXPECT_EQ(sg.ops.size(), 3u);
}

TEST(SolverQuality, TheMergePassStreamsAnActivationIntoEachOfItsReadersSubgraphs) {
  // Squeeze-and-excite in miniature, native [128, 128], bandwidth 100,000 (every subgraph compute-bound):
  // h: A[64x32] @ Wh[32x32] -> Y, base 8; u: Y -> Y2, base 64; P: Y2 -> S, base 32 (both [64x32]);
  // m: L[1x64] @ S -> G[1x32] (S its RHS, 64 deep), base 8; g1: G @ W1[32x32] -> G1, base 4; g2: B[64x1] @ G1
  // -> G2[64x32], base 4; q: (S, G2) -> Z, base 32; t: Z @ Wt[32x128] -> O[64x128], base 16. Made once, h, u
  // and P cost 8 + 64 + 32 (padded, M23), and the one-op schedule the test starts from ends at 135 after the
  // merges. Run twice instead, in-chain: towards m (its RHS, 64 of n_k = 128 rows, M24) h, u, P cost 4, 32, 16
  // beside m's 8: 60; towards t (32 columns) 2, 16, 8 beside q's 8 and t's 16: 50, with G2 made apart by g1
  // heading g2 (1/128 of 4, then 4). 60 + 4.03125 + 50 = 114.03125.
  ProblemBuilder b;
  const int a = b.tensor(64, 32), y = b.tensor(64, 32), y2 = b.tensor(64, 32), s = b.tensor(64, 32);
  const int g = b.tensor(1, 32), g1 = b.tensor(1, 32), g2 = b.tensor(64, 32), z = b.tensor(64, 32);
  b.op("MatMul", {a, b.tensor(32, 32)}, y, 8);
  b.op("Pointwise", {y}, y2, 64);
  b.op("Pointwise", {y2}, s, 32);
  b.op("MatMul", {b.tensor(1, 64), s}, g, 8);
  b.op("MatMul", {g, b.tensor(32, 32)}, g1, 4);
  b.op("MatMul", {b.tensor(64, 1), g1}, g2, 4);
  b.op("Pointwise", {s, g2}, z, 32);
  b.op("MatMul", {z, b.tensor(32, 128)}, b.tensor(64, 128), 16);
  SolveStats stats;
  const std::optional<Schedule> best = solve_on_one_thread(
      b.problem(1000000, 100000, 128, 128), [](SolveOptions& o) { o.max_orders = 1; }, stats);
  ASSERT_TRUE(best);
  EXPECT_NEAR(stats.best_cost, 114.03125, 1e-9);
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  ASSERT_EQ(best->subgraphs.size(), 3u);
  EXPECT_EQ(best->subgraphs[0].ops, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(best->subgraphs[2].ops, (std::vector<int>{0, 1, 2, 6, 7}));
}

TEST(SolverQuality, AMergePassCutByTheDeadlineOffersWhatItMerged) {
  // A chain of 4,000 MatMuls (256 x 256, each with its own weight) and 4,000 Pointwise ops between them: the
  // merge pass from the first schedule (every op alone) takes about 6 s here, so a 3 s budget cuts it. It stops
  // in time to verify what it merged and offers that; it used to drop it all at the deadline (DenseNet-169's
  // 34,338 ops at --timeout 10 kept every op alone).
  ProblemBuilder b;
  int x = b.tensor(256, 256);
  for (int i = 0; i < 4000; ++i) {
    const int y = b.tensor(256, 256), z = b.tensor(256, 256);
    b.op("MatMul", {x, b.tensor(256, 256)}, y, 40);
    b.op("Pointwise", {y}, z, 8);
    x = z;
  }
  std::vector<std::pair<std::string, double>> improvements;
  SolveStats stats;
  const std::optional<Schedule> best = solve_on_one_thread(
      b.problem(300000, 100, 128, 128), [](SolveOptions& o) { o.timeout_seconds = 3; }, stats,
      [&](const Schedule&, double cost, const std::string& strategy, int64_t) {
        improvements.emplace_back(strategy, cost);
      });
  ASSERT_TRUE(best);
  ASSERT_GE(improvements.size(), 2u);
  EXPECT_EQ(improvements.front().first, "first (every op alone)");
  EXPECT_NE(stats.best_strategy.find("merge"), std::string::npos) << stats.best_strategy;
  EXPECT_LT(stats.best_cost, improvements.front().second);
}

TEST(Solver, NoFeasibleScheduleWritesEmptyObjectAndExits1) {
  // One 128x128 Pointwise op: its smallest working set (1x1 tile: one input and one output element = 2) does
  // not fit in a capacity of 1.
  const std::string dir = temp_dir("infeasible");
  write_text(dir + "/p.json", R"({"widths":[128,128],"heights":[128,128],"inputs":[[0]],"outputs":[[1]],
    "base_costs":[10],"op_types":["Pointwise"],"fast_memory_capacity":1,"slow_memory_bandwidth":1,
    "native_granularity":[128,128]})");
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, dir + "/p.json " + dir + "/out.json --timeout 0.5");
  EXPECT_EQ(1, r.exit_code);
  EXPECT_NE(std::string::npos, r.err.find("[M20]")) << r.err;
  EXPECT_EQ(nlohmann::json::object(), read_json(dir + "/out.json"));
}

struct Interrupted {
  int exit_code = -1;  // -1: killed by a signal
  std::chrono::duration<double> after_signal{};
};

// Runs mlsys on `problem` with `options`, waits for its first written schedule plus `wait`, sends SIGTERM and
// reports how it ended and how long it took to exit.
Interrupted interrupt_solve(const std::string& problem, const std::string& out,
                            std::vector<std::string> options, std::chrono::milliseconds wait) {
  std::vector<std::string> args{MLSYS_SOLVER_BIN, problem, out};
  args.insert(args.end(), options.begin(), options.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    execv(MLSYS_SOLVER_BIN, argv.data());
    _exit(127);
  }
  Interrupted result;
  if (child < 0) return result;
  const auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(out) && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(wait);
  const auto signalled = std::chrono::steady_clock::now();
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  result.after_signal = std::chrono::steady_clock::now() - signalled;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

TEST(Solver, SigtermLeavesAValidScheduleAndExits0) {
  // Benchmark 13: far from its lower bound, so the search is still running when the signal comes.
  const std::string problem = source_path("benchmarks/mlsys-2026-13.json");
  const std::string out = temp_dir("sigterm") + "/solution.json";
  const Interrupted r = interrupt_solve(problem, out, {"--timeout", "60"}, std::chrono::milliseconds(300));
  EXPECT_EQ(0, r.exit_code);
  EXPECT_LT(r.after_signal, std::chrono::seconds(30));  // it stopped, not timed out at 60 s
  verified_total(problem, out);
}

TEST(SolverDeadline, FirstScheduleIsWrittenBeforeTheTimeoutOnABusyMachine) {
  // The promise (docs/solver.md#deadline), beside stress-ng --cpu 8: at --timeout 1 the process is gone
  // within the second and its margin, and the schedule it leaves is the one the statistics describe,
  // written within the second counted from the process's start. A load that leaves the process less CPU
  // than the first schedule needs (measured: tens of milliseconds; 0.25 s allowed) may leave exit 1 and no
  // file instead. How early it comes on a quiet machine is measured in bench/deadline, not asserted here.
  const std::string dir = temp_dir("first");
  const std::string problem = source_path("benchmarks/mlsys-2026-17.json");
  CommandResult r;
  {
    const CpuLoad load(8);
    r = run_command(MLSYS_SOLVER_BIN,
                    problem + " " + dir + "/s.json --timeout 1 --json-stats " + dir + "/stats.json");
  }
  if (!expect_deadline_promise(r, 1, dir + "/s.json", 0.25)) return;
  const auto stats = read_json(dir + "/stats.json");
  EXPECT_LT(stats.at("time_to_first").get<double>(), 1.0);
  EXPECT_LE(stats.at("time_to_first").get<double>(), stats.at("elapsed").get<double>());
  EXPECT_LT(stats.at("elapsed").get<double>(), 1.0);
  EXPECT_NEAR(stats.at("cost").get<double>(), verified_total(problem, dir + "/s.json"), 1e-9 * stats.at("cost").get<double>());
}

TEST(Solver, StopsOnceTheLowerBoundIsMet) {
  // Benchmark 18 can be scheduled at its compute bound, 1,417,600 (rule book section 8); nothing can beat it,
  // so the solver must not spend its 60 s.
  const std::string dir = temp_dir("at-bound");
  const std::string problem = source_path("benchmarks/mlsys-2026-18.json");
  const CommandResult r =
      run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json --timeout 60 --json-stats " + dir + "/stats.json");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const auto stats = read_json(dir + "/stats.json");
  EXPECT_DOUBLE_EQ(1417600, verified_total(problem, dir + "/s.json"));
  EXPECT_EQ("certified bound", stats.at("stopped_by").get<std::string>());  // not the clock
  test::expect_certified(stats.at("certified_bound").get<double>(), 1417600,
                         certified_rounding_ulps(load_problem(problem)));
  EXPECT_NEAR(0, stats.at("proven_gap_percent").get<double>(), 1e-9);  // within the rounding step
}

TEST(Solver, OrderBudgetOnOneThreadIsReproducible) {
  // Benchmark 8 within 80 orders runs its local search (moved incumbents, threshold accepting), whose
  // choices depend on every earlier improvement: a budget instead of the clock must make two runs agree byte
  // for byte. The timeout is far beyond what 80 orders take, so the budget ends both runs.
  const std::string dir = temp_dir("budget");
  const std::string problem = source_path("benchmarks/mlsys-2026-8.json");
  std::string outputs[2];
  for (int run = 0; run < 2; ++run) {
    const std::string out = dir + "/s" + std::to_string(run) + ".json", stats = dir + "/stats.json";
    const CommandResult r =
        run_command(MLSYS_SOLVER_BIN, problem + " " + out + " --threads 1 --orders 80 --seed 5 " +
                                          "--timeout 600 --json-stats " + stats);
    ASSERT_EQ(0, r.exit_code) << r.err;
    const auto j = read_json(stats);
    EXPECT_EQ(80, j.at("orders").get<int64_t>());
    EXPECT_EQ("order budget", j.at("stopped_by").get<std::string>());
    std::ifstream schedule(out);
    outputs[run].assign(std::istreambuf_iterator<char>(schedule), {});
    verified_total(problem, out);
  }
  EXPECT_FALSE(outputs[0].empty());
  EXPECT_EQ(outputs[0], outputs[1]);
  // A budget of nothing is bad usage, not an empty search.
  const CommandResult bad = run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/bad.json --orders 0");
  EXPECT_EQ(2, bad.exit_code);
  EXPECT_NE(std::string::npos, bad.err.find("--orders")) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/bad.json"));
}

TEST(Solver, ExhaustiveSearchFinishesAndSaysSo) {
  // Benchmark 4 (5 ops): every op in one subgraph at k = 1, 14,093.31875 (derived by hand in
  // SolverQuality.Benchmark4FusesEveryOpWithTwoPartialSumsOfItsOwn), above the I/O bound 13,926.4: the
  // search over every grouping must finish, say that it did, and reach that cost.
  const std::string dir = temp_dir("exhaustive");
  const std::string problem = source_path("benchmarks/mlsys-2026-4.json");
  const CommandResult r =
      run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json --exhaustive --progress " +
                                        "--json-stats " + dir + "/stats.json");
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_NEAR(14093.31875, verified_total(problem, dir + "/s.json"), 1e-9 * 14093.31875);
  const auto stats = read_json(dir + "/stats.json");
  EXPECT_TRUE(stats.at("exhaustive_complete").get<bool>());
  EXPECT_EQ("exhaustive search done", stats.at("stopped_by").get<std::string>());
  EXPECT_NE(std::string::npos, r.err.find("exhaustive search: expanded")) << r.err;
  // Sixteen independent branches (benchmark 13) have too many sets of done ops: bad usage, nothing written.
  const std::string wide = source_path("benchmarks/mlsys-2026-13.json");
  const CommandResult refused = run_command(MLSYS_SOLVER_BIN, wide + " " + dir + "/wide.json --exhaustive");
  EXPECT_EQ(2, refused.exit_code);
  EXPECT_NE(std::string::npos, refused.err.find("--exhaustive")) << refused.err;
  EXPECT_NE(std::string::npos, refused.err.find("sets of done ops")) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/wide.json"));
}

// mlsys --progress --json-stats on `problem` for `timeout` seconds, writing DIR/NAME.json: the process, and the
// statistics it wrote.
struct ProgressRun {
  CommandResult process;
  nlohmann::json stats;
};
ProgressRun solve_with_progress(const std::string& problem, const std::string& dir, const std::string& name,
                                int timeout) {
  ProgressRun run;
  run.process = run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/" + name + ".json --timeout " +
                                                  std::to_string(timeout) + " --progress --json-stats " + dir + "/" +
                                                  name + ".stats.json");
  if (run.process.exit_code == 0) run.stats = read_json(dir + "/" + name + ".stats.json");
  return run;
}

TEST(Solver, SmallGraphsWithNothingToRecomputeEndByTheExhaustiveProof) {
  // Benchmark 4 (11 sets of done ops, no Pointwise output read twice): the default search runs the exhaustive
  // DP within the deadline and ends when it completes, not at the clock, with the hand-derived optimum of
  // ExhaustiveSearchFinishesAndSaysSo. Benchmark 6 has Pointwise outputs read twice, which the timed
  // search may recompute and the DP does not: the DP completes (nothing without recomputation is cheaper,
  // and it says so), but only the clock ends the search.
  const std::string dir = temp_dir("proof");
  const std::string small = source_path("benchmarks/mlsys-2026-4.json");
  const ProgressRun r = solve_with_progress(small, dir, "s4", 30);
  ASSERT_EQ(0, r.process.exit_code) << r.process.err;
  EXPECT_NEAR(14093.31875, verified_total(small, dir + "/s4.json"), 1e-9 * 14093.31875);
  EXPECT_EQ("exhaustive search done", r.stats.at("stopped_by").get<std::string>());
  EXPECT_TRUE(r.stats.at("exhaustive_complete").get<bool>());
  EXPECT_NE(std::string::npos, r.process.err.find("ended by exhaustive search done (a proof)")) << r.process.err;
  const ProgressRun t = solve_with_progress(source_path("benchmarks/mlsys-2026-6.json"), dir, "s6", 3);
  ASSERT_EQ(0, t.process.exit_code) << t.process.err;
  EXPECT_NE(std::string::npos, t.process.err.find("ended by timeout (the clock)")) << t.process.err;
  EXPECT_EQ("timeout", t.stats.at("stopped_by").get<std::string>());
  // Complete in 0.1 s of a release build; under the sanitizers the clock may cut it, and then what it proved
  // lies below the cost.
  ASSERT_FALSE(t.stats.at("exact_space_bound").is_null()) << "the exact search did not run";
  const double cost = t.stats.at("cost").get<double>(), space = t.stats.at("exact_space_bound").get<double>();
  if (t.stats.at("exhaustive_complete").get<bool>()) {
    EXPECT_NEAR(cost, space, 1e-6);
    EXPECT_NE(std::string::npos, t.process.err.find("exhaustive search complete: no schedule without recomputation"))
        << t.process.err;
  } else {
    EXPECT_LE(space, cost);
    EXPECT_NE(std::string::npos, t.process.err.find("exhaustive search cut short")) << t.process.err;
  }
}

TEST(Solver, TheCoverBoundProvesBenchmark3OptimalWithinItsDeadline) {
  // Benchmark 3: the cover bound prices ops 0 and 2 at 32,768 each (every set holding either is memory-bound
  // at that much or more, and the four ops together never fit), so 65,536, the cost of the schedule the search
  // finds, is optimal; the lambda bound stops at 64,387.0. The cover bound runs beside the search: the search
  // ends by the certified bound, and says which bound it was.
  const std::string dir = temp_dir("cover");
  const std::string problem = source_path("benchmarks/mlsys-2026-3.json");
  const ProgressRun r = solve_with_progress(problem, dir, "s3", 2);
  ASSERT_EQ(0, r.process.exit_code) << r.process.err;
  EXPECT_NEAR(65536.0, verified_total(problem, dir + "/s3.json"), 1e-9 * 65536.0);
  EXPECT_EQ("certified bound", r.stats.at("stopped_by").get<std::string>());
  EXPECT_EQ("cover", r.stats.at("certified_by").get<std::string>());
  EXPECT_NEAR(65536.0, r.stats.at("certified_bound").get<double>(), 1e-6);
  EXPECT_NE(std::string::npos, r.process.err.find("raised to 65536 by the cover bound")) << r.process.err;
  EXPECT_NE(std::string::npos, r.process.err.find("proven gap 0 % to the certified bound 65536 (cover)"))
      << r.process.err;
}

// Search quality on benchmarks with a reference value (release pass only: slow under the sanitizers). Where
// a test gives a work budget (one thread, --orders) instead of the contest's deadline, its outcome does not
// depend on how loaded the CI machine is; docs/results.md tracks the costs within the contest timeouts.
double solve_benchmark(int number, const char* options) {
  const std::string dir = temp_dir("quality");
  const std::string problem = source_path("benchmarks/mlsys-2026-" + std::to_string(number) + ".json");
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json " + options);
  EXPECT_EQ(0, r.exit_code) << r.err;
  return verified_total(problem, dir + "/s.json");
}

TEST(SolverQuality, SigtermDuringAnExhaustiveSearchKeepsTheOtherThreadsSchedule) {
  // Benchmark 15's exhaustive search takes minutes. While it runs, the second thread runs the usual jobs, so
  // a signal leaves their schedule, below the first-place contest schedule's 1,765,433.6
  // (tests/data/peer-results.md; every op alone costs more), and is answered at once, not after the
  // DP's current state.
  const std::string problem = source_path("benchmarks/mlsys-2026-15.json");
  const std::string out = temp_dir("exhaustive-sigterm") + "/solution.json";
  const Interrupted r =
      interrupt_solve(problem, out, {"--exhaustive", "--threads", "2"}, std::chrono::milliseconds(5000));
  EXPECT_EQ(0, r.exit_code);
  // Not after the DP's current state (minutes): a guard, not a speed (a busy machine answers in seconds).
  EXPECT_LT(r.after_signal, std::chrono::seconds(20));
  EXPECT_LT(verified_total(problem, out), 1765433.6);
}

TEST(SolverQuality, Benchmark4FusesEveryOpWithTwoPartialSumsOfItsOwn) {
  // Hand derivation (capacity 50,000, B = 20): all five ops as one subgraph, one 128x128 tile. The three
  // K = 512 MatMuls reach the one output T8 through the two Pointwise ops: T8's tile hosts one partial sum
  // and the other two are D (M20, revision of 2026-11-24): C 16,384 + D 32,768 = 49,152, which leaves 848
  // for the slices: X's 128 x k and three k x 128 weight slices, 512 k, so k = 1 (nk = 512). Each k-step loads
  // 512 / 20 = 25.6 against a compute of 3 x 2000 / 512 = 11.72; the last step adds the two Pointwise ops
  // (1000) and stores T8 (819.2 + 25.6 < 1011.72): 511 x 25.6 + 1011.71875 = 14,093.31875, above the I/O
  // bound 13,926.4 by the epilogue's compute. Before the revision three partial sums shared T8's tile
  // (13,926.4 at k = 64); the last value valid under it was 15,926.4.
  const double expected = 511 * 512 / 20.0 + 3 * 2000 / 512.0 + 2 * 500;
  EXPECT_NEAR(14093.31875, expected, 1e-9);
  EXPECT_LE(solve_benchmark(4, "--timeout 2"), expected * (1 + 1e-12));
}

TEST(SolverQuality, Benchmark5FusesEachBranchThroughItsPointwiseOp) {
  // Each of the three branches x @ W1 -> Pointwise -> @ W2 is one chain through an in-chain op (M12 since
  // 2026-11-23) at 96,119.47 (tests/oracle_test.cpp, Benchmark5Oracle), against about 167,000 when the
  // Pointwise output G (1024x512) goes through slow memory (docs/solver.md). The published best is 492,614.
  const std::string dir = temp_dir("chains5");
  const std::string problem = source_path("benchmarks/mlsys-2026-5.json");
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json --timeout 5");
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_LE(verified_total(problem, dir + "/s.json"), 492614.0);
  const auto s = read_json(dir + "/s.json");
  int chains = 0;
  for (const auto& ops : s.at("subgraphs"))
    for (const auto& branch : {nlohmann::json{0, 1, 2}, nlohmann::json{5, 6, 7}, nlohmann::json{10, 11, 12}})
      chains += ops == branch;
  EXPECT_EQ(3, chains) << s.at("subgraphs").dump();
}

TEST(SolverQuality, Benchmark8ReachesTheBestArrangementOfItsBlocks) {
  // Under the revision of 2026-11-24 (one partial sum per output tile, M20 D): 53 transfers of one 128x128
  // tensor (16,384 / 12 each) and the k-step stalls of one op: op 4 (S = Q K'^T, K' retained in) alone at
  // [64, 128, 4] streams 4-row strips of the other operand, 2 tiles x 31 k-steps of compute 25 against a
  // load of 256 / 12 (its last k-step is memory-bound). docs/solver.md has the whole arrangement. The
  // schedule of 70,314.0 (51 transfers) hosted two partial sums in one tile and is invalid now; the last
  // value valid under the revision was 74,783.3 and the published best is 74,470. The first-place
  // schedule costs 76,457.33.
  const double units = 53 * 16384.0 / 12;
  const double stalls = 2 * 31 * (25 - 256.0 / 12);
  EXPECT_NEAR(72590.0, units + stalls, 0.01);
  EXPECT_LE(solve_benchmark(8, "--threads 1 --orders 16 --seed 1 --timeout 120"),
            (units + stalls) * (1 + 1e-9));
}

TEST(SolverQuality, Benchmark10GroupsOneLayerOfItsSixBranchesPerSubgraph) {
  // Hand derivation (capacity 200,000, B = 20, every tensor 1024x1024, 64 tiles of 128x128):
  // - The six x @ W_i with their Pointwise epilogues in one subgraph: each tile loads x's 128x1024 strip once
  //   for all six and the six 1024x128 W_i strips, 7 x 131,072 / 20 = 45,875.2, and stores six tiles,
  //   6 x 16,384 / 20 = 4,915.2 (memory-bound: per k-step six MatMuls compute 6 x 4000 x k / 1024 against
  //   loads of 7 x 128 x k / 20). The six output tiles (each also its MatMul's split-K accumulator, M20)
  //   and the k-wide slices leave room for k <= 113; the cost does not depend on k.
  //   64 x 50,790.4 = 3,250,585.6.
  // - The six second MatMuls with the Pointwise sum tree (ops 18-22): twelve strips per tile, 78,643.2, one
  //   stored tile, 819.2: 64 x 79,462.4 = 5,085,593.6. The six partial sums reach one output, so five are
  //   D (M20, revision of 2026-11-24): 12 x 128 k + 16,384 + 5 x 16,384 <= 200,000 holds for k <= 66 (the
  //   solver takes 64); the cost does not depend on k.
  // - The two last MatMuls with their epilogues at [128,128,128]: two strips and one store per tile,
  //   64 x (13,107.2 + 819.2) = 891,289.6 each.
  // Total 10,118,758.4. The plan's level order (ops by their longest path from the graph inputs, 14th job)
  // puts each layer side by side; before it, only random orders found this, after 2.4 to 10 s.
  const double first = 64 * (7 * 131072 + 6 * 16384) / 20.0;
  const double second = 64 * (12 * 131072 + 16384) / 20.0;
  const double last = 64 * (2 * 131072 + 16384) / 20.0;
  EXPECT_NEAR(10118758.4, first + second + 2 * last, 1e-6);
  EXPECT_LE(solve_benchmark(10, "--threads 1 --orders 14 --seed 1 --timeout 120"),
            (first + second + 2 * last) * (1 + 1e-9));
}

TEST(SolverQuality, Benchmark13LoadsW0OnceForAllSixteenBranches) {
  // Hand derivation (capacity 600,000, B = 50; x_i 128x4096, W0 and W1 4096x4096, v_i 4096x128):
  // - The sixteen x_i @ W0 as one subgraph at [128,128,128]: 32 column tiles x 32 k-steps; each step loads
  //   W0's 128x128 slice and the sixteen x_i slices, 17 x 16,384 / 50 = 5,570.56 (compute 16 x 156.25 is
  //   less), and each tile's last step stores sixteen 128x128 tiles, 5,242.88: 32 x (32 x 5,570.56 +
  //   5,242.88) = 5,872,025.6. Working set 16,384 + 16 x 16,384 (slices) + 16 x 16,384 (outputs) = 540,672.
  // - Each chain A_i @ W1 @ v_i at [128,128,4] (one tile, 1024 k-steps): A_i's 128x4096 strip once
  //   (10,485.76), then per step W1's 4096x4 and v_i's 4x128, 16,896 / 50 = 337.92: 356,515.84 when the
  //   running sum is fused as its epilogue and retained (no store); the first chain stores its output
  //   (+327.68) and the last sum loads it and stores the result (655.36).
  // Total 5,872,025.6 + 356,843.52 + 15 x 356,515.84 + 655.36 = 11,577,262.08. The first-place schedule
  // costs 22,160,015 (tests/data/peer-results.md); groups of at most ten siblings gave about 12.3 M.
  // The siblings-first order is among the first 16 of the plan.
  EXPECT_LE(solve_benchmark(13, "--threads 1 --orders 16 --seed 1 --timeout 120"), 11577262.08 * (1 + 1e-9));
}

TEST(SolverQuality, Benchmark15RecomputesItsFirstPointwiseForTheSideReads) {
  // Op 0 (Pointwise, base 500) turns the graph input t0 into t1 (512x512 = 262,144 elements), which the first
  // MatMul reads and, much later, the 12-op side-read group (ops 41-52) reads again. Stored, t1 costs
  // 262,144 / 35 = 7,489.8 to write and as much to load back. Recomputed, the first copy retains t1 into the
  // MatMul and costs only its compute, 16 native tiles x 500 = 8,000 (loading t0, 7,489.8, hides under it),
  // against 14,979.7 when t1 must also be stored. The second copy sits inside the side-read group's
  // segment, longer than ten ops: the plan's recomputing orders must be segmented at up to 16.
  const std::string dir = temp_dir("recompute15");
  const std::string problem = source_path("benchmarks/mlsys-2026-15.json");
  const CommandResult r = run_command(
      MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json --threads 1 --orders 16 --seed 1 --timeout 120");
  ASSERT_EQ(0, r.exit_code) << r.err;
  verified_total(problem, dir + "/s.json");
  const auto s = read_json(dir + "/s.json");
  EXPECT_EQ(2, runs_of(s, 0));
  EXPECT_EQ(nlohmann::json::array({0}), s.at("subgraphs")[0]);
  EXPECT_EQ(nlohmann::json::array({1}), s.at("tensors_to_retain")[0]);
  EXPECT_NEAR(8000.0, s.at("subgraph_latencies")[0].get<double>(), 1e-9);
}

TEST(Solver, RecomputesACheapProducerForItsSecondReader) {
  // P: X -> T (Pointwise, 100); A: T @ W1 -> Y1 and B: T @ W2 -> Y2 (MatMul, 4000). All 128x128 (16,384
  // elements, 1638.4 to move at B = 10), capacity 60,000. With recomputation, [P, A] and [P, B] each load X
  // and a weight and store an output at [128,128,128] (WS 49,152): max(4100, 3 x 1638.4) = 4915.2, total
  // 9830.4. Without it (hand derivation): [P, A, B] needs w = 128 (M14) and, on one 128-row tile, k <= 42
  // (WS 16,384 + 256k + 32,768); its best is k = 32: 2457.6 + 2000 + 2000 + 4096 = 10,553.6. [P] retaining T,
  // then [A, B] at k = 32: 1638.4 + 10,096 = 11,734.4. All apart (T stored): 3276.8 + 2 x 4915.2 = 13,107.2.
  const std::string dir = temp_dir("recompute");
  write_text(dir + "/p.json", R"({"widths":[128,128,128,128,128,128],"heights":[128,128,128,128,128,128],
    "inputs":[[0],[1,2],[1,4]],"outputs":[[1],[3],[5]],"base_costs":[100,4000,4000],
    "op_types":["Pointwise","MatMul","MatMul"],"fast_memory_capacity":60000,"slow_memory_bandwidth":10,
    "native_granularity":[128,128]})");
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, dir + "/p.json " + dir + "/s.json --timeout 1");
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_NEAR(9830.4, verified_total(dir + "/p.json", dir + "/s.json"), 1e-9 * 9830.4);
  EXPECT_EQ(2, runs_of(read_json(dir + "/s.json"), 0));
}

TEST(Solver, OlderFormPrintsTheScheduleOnStdout) {
  const std::string problem = source_path("tests/golden/ex1_problem.json");
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, problem + " 0.5");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  for (const char* key : {"subgraphs", "granularities", "tensors_to_retain", "traversal_orders", "subgraph_latencies"})
    EXPECT_TRUE(doc.contains(key)) << key;
}

// Quick mode over the 24 benchmarks (1/10 of the contest timeouts): every output verifies strictly.
class SolverBenchmarks : public ::testing::TestWithParam<int> {};

TEST_P(SolverBenchmarks, QuickModeOutputIsValid) {
  const int n = GetParam();
  const std::string problem = source_path("benchmarks/mlsys-2026-" + std::to_string(n) + ".json");
  const int ops = mlsys::load_problem(problem).num_ops();
  const double contest = ops <= 5 ? 2 : ops <= 20 ? 5 : ops <= 32 ? 15 : ops <= 63 ? 30 : ops <= 103 ? 60 : 120;
  const std::string out = temp_dir("quick") + "/s.json";
  const CommandResult r = run_command(MLSYS_SOLVER_BIN, problem + " " + out + " --timeout " + std::to_string(contest / 10));
  ASSERT_EQ(0, r.exit_code) << r.err;
  verified_total(problem, out);
}

INSTANTIATE_TEST_SUITE_P(Quick, SolverBenchmarks, ::testing::Range(1, 25));

}  // namespace
}  // namespace mlsys::test
