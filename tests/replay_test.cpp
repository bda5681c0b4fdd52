// The SystemC replay against the analytic model: same totals (1e-9 relative), OOM at the same step with the
// same terms, peak occupancy equal to the peak working set; traces that read back to the same numbers.
#include "sim/systemc/replay.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <systemc>

#include "support.hpp"
#include "traces/html_report.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/replay_files.hpp"
#include "traces/vcd_trace.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;

// Every replay runs on a fresh kernel: replay_schedule tears its modules down and resets the simulation
// context. The fixture checks that promise before each test and resets again after it.
class SystemCTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sc_core::SC_ZERO_TIME, sc_core::sc_time_stamp()); }
  void TearDown() override { sc_core::sc_get_curr_simcontext()->reset(); }
};

struct Subject {
  std::string name, problem, solution;
  VerifyOptions options;
};

std::vector<Subject> subjects() {
  std::vector<Subject> all;
  std::ifstream in(source_path("tests/golden/cases.json"));
  const json doc = json::parse(in);  // named: a range-for over parse(...).at(...) would outlive the temporary
  for (const auto& c : doc.at("cases")) {
    Subject s{c.at("id"),
              "tests/golden/" + c.at("problem").get<std::string>(),
              "tests/golden/" + c.at("solution").get<std::string>(),
              {}};
    for (const auto& a : c.at("options")) {
      if (a == "--allow-supernative-k") s.options.model.allow_supernative_k = true;
      if (a == "native-k") s.options.model.matmul_compute = MatmulCompute::NativeK;
    }
    all.push_back(s);
  }
  // tests/data/mlsys: our own solver's schedules that use the 2026-11-23 rules (chains through Pointwise
  // ops on 5, the in-place split-K accumulator on 3 and 8).
  for (const std::string set : {"vinci", "a5", "mlsys"})
    for (int i = 1; i <= 24; ++i) {
      const std::string solution = "tests/data/" + set + "/mlsys-2026-" + std::to_string(i) + ".json";
      if (std::filesystem::exists(source_path(solution)))
        all.push_back({set + "_" + std::to_string(i),
                       "benchmarks/mlsys-2026-" + std::to_string(i) + ".json",
                       solution,
                       {}});
    }
  return all;
}

class ReplayEqualsModel : public SystemCTest, public ::testing::WithParamInterface<Subject> {};

TEST_P(ReplayEqualsModel, TotalsOomAndPeak) {
  const Subject& s = GetParam();
  const Loaded l = load(source_path(s.problem), source_path(s.solution));
  const ScheduleReport analytic = verify_schedule(l.problem, l.graph, l.schedule, s.options);
  ReplayOptions ro;
  ro.model = s.options.model;
  const ReplayResult replay = replay_schedule(l.problem, l.graph, l.schedule, ro);
  ASSERT_EQ(analytic.valid, replay.completed) << (replay.error ? replay.error->describe() : "");
  if (analytic.valid) {
    EXPECT_LE(std::fabs(replay.total_latency - analytic.total_latency), 1e-9 * analytic.total_latency);
    ASSERT_EQ(analytic.subgraphs.size(), replay.subgraph_latencies.size());
    for (size_t i = 0; i < analytic.subgraphs.size(); ++i)
      EXPECT_LE(std::fabs(replay.subgraph_latencies[i] - analytic.subgraphs[i].latency),
                1e-9 * analytic.subgraphs[i].latency + 1e-9);
    int64_t peak = 0;
    for (const auto& sg : analytic.subgraphs) peak = std::max(peak, sg.peak_working_set);
    EXPECT_EQ(peak, replay.peak_occupancy);
    return;
  }
  ASSERT_TRUE(replay.error.has_value());
  EXPECT_EQ(analytic.error->rule, replay.error->rule);
  EXPECT_EQ(analytic.error->subgraph, replay.error->subgraph);
  if (analytic.error->rule == "M20") {
    ASSERT_TRUE(replay.error->step && replay.error->working_set);
    EXPECT_EQ(analytic.error->step->position, replay.error->step->position);
    EXPECT_EQ(analytic.error->step->tile, replay.error->step->tile);
    EXPECT_EQ(analytic.error->step->k_step, replay.error->step->k_step);
    EXPECT_EQ(analytic.error->working_set->total(), replay.error->working_set->total());
    ASSERT_EQ(analytic.error->working_set->terms.size(), replay.error->working_set->terms.size());
    for (size_t i = 0; i < analytic.error->working_set->terms.size(); ++i) {
      EXPECT_EQ(analytic.error->working_set->terms[i].tensor, replay.error->working_set->terms[i].tensor);
      EXPECT_EQ(analytic.error->working_set->terms[i].elements, replay.error->working_set->terms[i].elements);
    }
    // The fast memory found it at the moment of the allocation, i.e. when the step started.
    double before = 0;
    for (const auto& sg : analytic.subgraphs)
      if (sg.index < analytic.error->subgraph) before += sg.latency;
    EXPECT_GE(replay.error_time + 1e-6, before);
  }
}

INSTANTIATE_TEST_SUITE_P(All, ReplayEqualsModel, ::testing::ValuesIn(subjects()), [](const auto& info) {
  std::string n = info.param.name;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

class Traces : public SystemCTest {};

// Replays a golden case with a Perfetto trace, writes the trace to a file and reads it back.
json traced_replay(const std::string& problem, const std::string& solution, const std::string& dir,
                   ReplayResult& result, TraceDetail detail = TraceDetail::Step) {
  const Loaded l = load(source_path("tests/golden/" + problem), source_path("tests/golden/" + solution));
  PerfettoTrace trace("test");
  ReplayOptions ro;
  ro.trace = &trace;
  ro.trace_detail = detail;
  result = replay_schedule(l.problem, l.graph, l.schedule, ro);
  const std::string path = temp_dir(dir) + "/trace.json";
  trace.write(path);
  std::ifstream in(path);
  return json::parse(in);
}

TEST_F(Traces, PerfettoReadsBackToTheModelsNumbers) {
  // Example 4B (hand numbers in the rule book): steps 2048, 1500, 1500, 1500; peak WS 20480 at capacity
  // 25000; loads: t0 both strips (8192 + 8192), then one strip each step; stores 4 x 4096.
  ReplayResult r;
  const json doc = traced_replay("ex4_problem.json", "ex4B_solution.json", "trace", r);  // valid JSON
  ASSERT_TRUE(r.completed);
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  EXPECT_TRUE(doc.at("displayTimeUnit").is_string());
  std::map<int, std::string> tracks;
  std::vector<double> steps;
  double subgraph_total = 0, capacity = 0, compute_time = 0;
  int64_t loaded = 0, stored = 0, peak = 0, by_part_peak = 0;
  for (const json& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(ph == "M" || ph == "X" || ph == "C") << e.dump();
    ASSERT_TRUE(e.at("pid").is_number_integer());
    if (ph == "M") {
      if (e.at("name") == "thread_name") tracks[e.at("tid")] = e.at("args").at("name");
      continue;
    }
    ASSERT_TRUE(e.at("ts").is_number());
    EXPECT_GE(e.at("ts").get<double>(), 0);
    if (ph == "C") {
      const json& args = e.at("args");
      if (e.at("name") == "fast memory by part (elements)") {  // A + B + C + D (M20)
        int64_t sum = 0;
        for (const char* part : {"A retained-in", "B slices", "C outputs", "D accumulators"})
          sum += args.at(part).get<int64_t>();
        by_part_peak = std::max(by_part_peak, sum);
        continue;
      }
      peak = std::max(peak, args.at("occupancy").get<int64_t>());
      capacity = args.at("capacity");
      continue;
    }
    ASSERT_TRUE(e.at("dur").is_number());
    const std::string track = tracks.at(e.at("tid"));
    const double dur = e.at("dur");
    if (track == "steps") steps.push_back(dur);
    if (track == "subgraphs") subgraph_total += dur;
    if (track == "compute array") compute_time += dur;
    if (track == "DMA link")
      (e.at("args").at("direction") == "load" ? loaded : stored) +=
          e.at("args").at("elements").get<int64_t>();
  }
  ASSERT_EQ(4u, steps.size());
  const double expected[] = {2048, 1500, 1500, 1500};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(expected[i], steps[i], 1e-6);
  EXPECT_NEAR(6548, subgraph_total, 1e-6);
  EXPECT_NEAR(6000, compute_time, 1e-6);
  EXPECT_EQ(8192 * 5, loaded);
  EXPECT_EQ(4096 * 4, stored);
  EXPECT_EQ(20480, peak);
  EXPECT_EQ(20480, by_part_peak);
  EXPECT_DOUBLE_EQ(25000, capacity);
}

TEST_F(Traces, SubgraphDetailKeepsOneSpanPerSubgraphWithItsStepsAndPeak) {
  // Example 4B again (rule book): one subgraph of 4 steps, 6,548 in all, peak working set 20,480 of 25,000.
  ReplayResult r;
  const json doc =
      traced_replay("ex4_problem.json", "ex4B_solution.json", "trace-sub", r, TraceDetail::Subgraph);
  ASSERT_TRUE(r.completed);
  std::vector<std::string> tracks;
  int spans = 0, counters = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("name") == "thread_name") tracks.push_back(e.at("args").at("name"));
    if (e.at("ph") == "X") {
      ++spans;
      EXPECT_EQ("subgraph 0", e.at("name"));
      EXPECT_NEAR(6548, e.at("dur").get<double>(), 1e-6);
      EXPECT_EQ(4, e.at("args").at("steps").get<int>());
      EXPECT_EQ(20480, e.at("args").at("peak_occupancy").get<int64_t>());
    }
    if (e.at("ph") == "C") {
      ++counters;
      EXPECT_EQ(20480, e.at("args").at("peak").get<int64_t>());
      EXPECT_DOUBLE_EQ(25000, e.at("args").at("capacity").get<double>());
    }
  }
  EXPECT_EQ(std::vector<std::string>{"subgraphs"}, tracks);  // no step, link or compute tracks
  EXPECT_EQ(1, spans);
  EXPECT_EQ(1, counters);
}

TEST(TraceDetail, AutoKeepsStepsUpToTheLimit) {
  EXPECT_EQ(TraceDetail::Step, trace_detail_for("auto", kStepTraceLimit));
  EXPECT_EQ(TraceDetail::Subgraph, trace_detail_for("auto", kStepTraceLimit + 1));
  EXPECT_EQ(TraceDetail::Step, trace_detail_for("step", kStepTraceLimit * 100));
  EXPECT_EQ(TraceDetail::Subgraph, trace_detail_for("subgraph", 1));
}

TEST(TraceDetail, ALongThirdPartyScheduleGetsASmallTrace) {
  // Benchmark 16's schedule from the a5 solver has 493,344 steps: every step would be 512 MB of trace.
  const std::string trace = temp_dir("trace-16") + "/trace.json";
  const CommandResult r = run_command(
      MLSYS_VERIFY_BIN, "--replay --trace " + trace + " " + source_path("benchmarks/mlsys-2026-16.json") +
                            " " + source_path("tests/data/a5/mlsys-2026-16.json"));
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.err.find("one span per subgraph")) << r.err;
  std::ifstream in(trace);
  const json doc = json::parse(in);
  int64_t steps = 0;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") steps += e.at("args").at("steps").get<int64_t>();
  EXPECT_EQ(493344, steps);
  EXPECT_LT(std::filesystem::file_size(trace), 50u << 20);
}

TEST_F(Traces, PerfettoCountsThePartialSumWithoutAHost) {
  // x14-two-accumulators-one-output (rule book): at every step B 24,576 + C 16,384 + D 16,384 = 57,344; the
  // fast memory holds the second partial sum (T4, the MatMul op 1's output) as its own buffer.
  ReplayResult r;
  const json doc = traced_replay("x14_problem.json", "x14_solution.json", "trace-d", r);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(57344, r.peak_occupancy);
  int64_t d_peak = 0, c_peak = 0, b_peak = 0;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "C" && e.at("name") == "fast memory by part (elements)") {
      d_peak = std::max(d_peak, e.at("args").at("D accumulators").get<int64_t>());
      c_peak = std::max(c_peak, e.at("args").at("C outputs").get<int64_t>());
      b_peak = std::max(b_peak, e.at("args").at("B slices").get<int64_t>());
    }
  EXPECT_EQ(16384, d_peak);
  EXPECT_EQ(16384, c_peak);
  EXPECT_EQ(24576, b_peak);
}

TEST_F(Traces, ReplayRunsOutOfMemoryAtThePartialSumsAllocation) {
  // x14-two-accumulators-oom: at capacity 50,000 the step's B and C (40,960) fit; the partial sum without a
  // host (D, 16,384) is the allocation that fails, at tile 0, k-step 0.
  const Loaded l =
      load(source_path("tests/golden/x14_tight_problem.json"), source_path("tests/golden/x14_solution.json"));
  const ReplayResult r = replay_schedule(l.problem, l.graph, l.schedule, {});
  ASSERT_FALSE(r.completed);
  ASSERT_TRUE(r.error && r.error->step && r.error->working_set);
  EXPECT_EQ("M20", r.error->rule);
  EXPECT_EQ(0, r.error->step->k_step);
  EXPECT_EQ(4, r.error->tensor);
  EXPECT_EQ(16384, r.error->working_set->accumulators);
  EXPECT_EQ(57344, r.error->working_set->total());
  EXPECT_NE(std::string::npos, r.error->message.find("allocating D T4")) << r.error->message;
}

TEST_F(Traces, VcdHasTheThreeSignals) {
  const Loaded l =
      load(source_path("tests/golden/ex4_problem.json"), source_path("tests/golden/ex4A_solution.json"));
  const std::string dir = temp_dir("vcd"), path = dir + "/run.vcd";
  {
    VcdTrace vcd(path);
    ReplayOptions ro;
    ro.waveform = &vcd;
    ASSERT_TRUE(replay_schedule(l.problem, l.graph, l.schedule, ro).completed);
  }
  // Written under a temporary name and renamed: only the file asked for is left.
  EXPECT_EQ(1,
            std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* name : {"fast_memory_occupancy", "link_busy", "compute_busy", "$enddefinitions"})
    EXPECT_NE(std::string::npos, text.find(name)) << name;
}

TEST_F(Traces, OverlappedLetsTheLinkRunOneStepAhead) {
  // Example 5B: link jobs per k-step 2457.6, 819.2, 819.2, 2457.6 (the last with the T4 store); compute 1000
  // per step. With capacity 50000 the next step's new slices (8192) fit beside the working set (40960), so
  // the link never waits: step 0 ends at 2457.6 (link); the link then runs jobs 1, 2, 3 back to back while
  // compute steps 1-3 take 1000 each, ending at 2457.6 + 819.2 + 819.2 + 2457.6 = 6553.6 (link-bound), below
  // the contest's 6915.2. At the problem's own capacity 45000 nothing can be prefetched: the contest total
  // again.
  Loaded l =
      load(source_path("tests/golden/ex5_problem.json"), source_path("tests/golden/ex5B_solution.json"));
  ReplayOptions ro;
  ro.timing = TimingMode::Overlapped;
  ReplayResult r = replay_schedule(l.problem, l.graph, l.schedule, ro);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(6915.2, r.total_latency, 1e-6);
  l.problem.fast_memory_capacity = 50000;
  r = replay_schedule(l.problem, l.graph, l.schedule, ro);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(6553.6, r.total_latency, 1e-6);
  ro.timing = TimingMode::Contest;
  r = replay_schedule(l.problem, l.graph, l.schedule, ro);
  EXPECT_NEAR(6915.2, r.total_latency, 1e-6);
}

}  // namespace
}  // namespace mlsys::test

TEST(OccupancyChart, DownsamplingEndsAndKeepsThePeak) {
  // A third party's schedule for benchmark 13 once made the report loop here until memory ran out: a bucket's
  // end computed in floating point fell on a sample's time. Samples all at one time (a zero bucket width)
  // did the same. Both now end, keep the highest sample and stay near the limit.
  std::vector<mlsys::OccupancySample> same_time(10'000, {5.0, 7});
  same_time[4321].elements = 99;
  const auto one = mlsys::downsample_occupancy(same_time, 4000);
  ASSERT_LE(one.size(), 2u);
  EXPECT_EQ(one.front().elements, 99);
  std::vector<mlsys::OccupancySample> ramp;
  for (int i = 0; i < 100'000; ++i) ramp.push_back({i * 0.1, i % 1000});
  ramp[54'321].elements = 5'000;
  const auto chart = mlsys::downsample_occupancy(ramp, 4000);
  EXPECT_LE(chart.size(), 4002u);
  EXPECT_TRUE(std::any_of(chart.begin(), chart.end(), [](const auto& s) { return s.elements == 5'000; }));
}
