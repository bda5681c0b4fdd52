// The design-space sweep (issue 22) on benchmark 3 (4 ops), with a one-thread order budget per point so that
// every run gives the same schedules: the curve never rises with more capacity or bandwidth, every schedule
// is valid at its point with the total the CSV gives, shards merged equal one unsharded run, and the HTML
// draws one curve per bandwidth and one marker per feasible point.
#include "solver/sweep.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/json_io.hpp"
#include "support.hpp"
#include "verifier/bound.hpp"

namespace mlsys::test {
namespace {

struct Row {
  double capacity, bandwidth;
  std::string status, total, schedule;
  double lower_bound = 0, certified_bound = 0;
};

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(0u,
            line.find("capacity,bandwidth,status,total,lower_bound,compute_bound_share,peak_working_set"));
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string x; std::getline(s, x, ',');) f.push_back(x);
    if (f.size() < 11) f.resize(11, "0");
    rows.push_back({std::stod(f[0]), std::stod(f[1]), f[2], f[3], f[8], std::stod(f[4]), std::stod(f[10])});
  }
  return rows;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

const std::string kGrid = " --capacity 10000:80000:4 --bandwidth 5,20 --threads 1 --orders 6 --timeout 60";

TEST(Sweep, CurveNeverRisesAndEverySchedulePricesAtItsPoint) {
  const std::string dir = temp_dir("sweep");
  const std::string problem_path = source_path("benchmarks/mlsys-2026-3.json");
  const CommandResult r = run_command(MLSYS_SWEEP_BIN, problem_path + kGrid + " -o " + dir + "/all");
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.err.find("point 8/8")) << r.err;  // progress on stderr
  const std::vector<Row> rows = read_csv(dir + "/all/sweep.csv");
  ASSERT_EQ(8u, rows.size());
  const Problem problem = load_problem(problem_path);
  const Graph graph = analyze_graph(problem, problem_path);
  std::map<std::pair<double, double>, double> total;
  for (const Row& row : rows) {
    // 10,000 is enough for a schedule of benchmark 3 at small tiles; every point must have one.
    ASSERT_EQ("ok", row.status) << row.capacity << " " << row.bandwidth;
    const Problem at = problem_at(problem, row.capacity, row.bandwidth);
    const Schedule schedule = load_schedule(dir + "/all/" + row.schedule, at);
    VerifyOptions strict;
    strict.strict = true;
    const ScheduleReport report = verify_schedule(at, graph, schedule, strict);
    ASSERT_TRUE(report.valid) << row.schedule << ": " << (report.error ? report.error->describe() : "");
    EXPECT_EQ(std::stod(row.total), report.total_latency) << row.schedule;
    total[{row.capacity, row.bandwidth}] = report.total_latency;
    // The second curve: the certified bound of the point (with the cover bound, as verify reports it), never
    // above its schedule, never below section 8's.
    EXPECT_DOUBLE_EQ(certified_bound_with_cover(at, graph, ModelOptions{}, kReportCoverSeconds).bound,
                     row.certified_bound);
    EXPECT_LE(row.certified_bound, report.total_latency * (1 + 1e-12));
    EXPECT_GE(row.certified_bound, row.lower_bound);
  }
  for (const auto& [a, ta] : total)
    for (const auto& [b, tb] : total)
      if (b.first >= a.first && b.second >= a.second) {
        EXPECT_LE(tb, ta * (1 + 1e-12));
      }
  const std::string html = [&] {
    std::ifstream in(dir + "/all/sweep.html");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_EQ(2u, count(html, "class=\"curve\""));
  EXPECT_EQ(2u, count(html, "class=\"lower-bound\""));
  EXPECT_EQ(8u, count(html, "<circle class=\"point"));
  EXPECT_GE(count(html, "class=\"point pareto\""), 2u);  // the smallest capacity of each bandwidth at least
  for (const Row& row : rows) EXPECT_NE(std::string::npos, html.find("href=\"" + row.schedule + "\""));
}

TEST(Sweep, ShardsMergedEqualOneRun) {
  const std::string dir = temp_dir("shards");
  const std::string problem = source_path("benchmarks/mlsys-2026-3.json");
  ASSERT_EQ(0, run_command(MLSYS_SWEEP_BIN, problem + kGrid + " -o " + dir + "/all").exit_code);
  for (int i = 0; i < 3; ++i) {
    const CommandResult r = run_command(MLSYS_SWEEP_BIN, problem + kGrid + " --shard " + std::to_string(i) +
                                                             "/3 -o " + dir + "/s" + std::to_string(i));
    ASSERT_EQ(0, r.exit_code) << r.err;
    EXPECT_LE(read_csv(dir + "/s" + std::to_string(i) + "/sweep.csv").size(), 3u);
  }
  const CommandResult merged = run_command(
      MLSYS_SWEEP_BIN, "merge " + dir + "/s0 " + dir + "/s1 " + dir + "/s2 -o " + dir + "/merged");
  ASSERT_EQ(0, merged.exit_code) << merged.err;
  const std::vector<Row> a = read_csv(dir + "/all/sweep.csv"), b = read_csv(dir + "/merged/sweep.csv");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].capacity, b[i].capacity);
    EXPECT_EQ(a[i].bandwidth, b[i].bandwidth);
    EXPECT_EQ(a[i].status, b[i].status);
    EXPECT_EQ(a[i].total, b[i].total) << a[i].capacity << " " << a[i].bandwidth;
  }
  // A point in two shards is not one sweep.
  EXPECT_EQ(2,
            run_command(MLSYS_SWEEP_BIN, "merge " + dir + "/s0 " + dir + "/s0 -o " + dir + "/bad").exit_code);
}

TEST(Sweep, RepricingKeepsTheCurveFromRising) {
  // A schedule found with little memory is valid with more: give the larger point a worse schedule of its
  // own (every op alone, whose subgraph 1 loads a 256x256 tensor in strips) and let re-pricing replace it.
  const std::string path = source_path("benchmarks/mlsys-2026-3.json");
  const Problem problem = load_problem(path);
  const Graph graph = analyze_graph(problem, path);
  const Schedule fused = parse_schedule(
      nlohmann::json::parse(R"({"subgraphs":[[0,1],[2,3]],"granularities":[[128,128,32],[128,128,32]]})"),
      "f", problem);
  const Schedule apart = parse_schedule(
      nlohmann::json::parse(
          R"({"subgraphs":[[0],[1],[2],[3]],"granularities":[[128,128,32],[128,128,1],[128,128,32],[128,128,1]]})"),
      "a", problem);
  std::vector<SweepPoint> points(2);
  points[0].capacity = 30000, points[0].bandwidth = 10;
  points[1].capacity = 60000, points[1].bandwidth = 10;
  ASSERT_TRUE(price_at_point(problem, graph, {}, fused, points[0]));
  ASSERT_TRUE(price_at_point(problem, graph, {}, apart, points[1]));
  points[0].found_at = points[1].found_at = "here";
  ASSERT_GT(points[1].total, points[0].total);
  EXPECT_EQ(1, reprice_dominated(problem, graph, {}, points));
  EXPECT_EQ(points[0].total, points[1].total);  // 65,536 at both (docs/solver.md, benchmark 3)
  EXPECT_DOUBLE_EQ(65536, points[1].total);
  EXPECT_EQ("capacity=30000;bandwidth=10", points[1].found_at);
}

TEST(Sweep, BadRangesAreUsageErrors) {
  const std::string problem = source_path("benchmarks/mlsys-2026-3.json");
  const std::string dir = temp_dir("badsweep");
  for (const std::string args :
       {" --capacity 8:2:3 --bandwidth 10", " --capacity x --bandwidth 10", " --capacity 100 --bandwidth 0",
        " --capacity 100 --bandwidth 10 --shard 3/3"}) {
    const CommandResult r = run_command(MLSYS_SWEEP_BIN, problem + args + " -o " + dir);
    EXPECT_EQ(2, r.exit_code) << args;
    EXPECT_NE(std::string::npos, r.err.find("--")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/sweep.csv"));
  }
}

}  // namespace
}  // namespace mlsys::test
