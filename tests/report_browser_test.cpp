// The HTML reports in a real browser (issue 21): headless Chromium opens the report of benchmark 17, of an
// out-of-memory case and of the T10 seed plan, runs their scripts, and the DOM it dumps must show the
// page's structure: one DAG node per op, one timeline bar per subgraph, the capacity line; the scripts must
// have run (data-ready) with no error recorded and nothing printed on the console.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "sim/json_io.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The DOM after the page's scripts ran, and what the browser printed (console messages among it).
CommandResult open_in_chromium(const std::string& html_path) {
  const std::string profile = temp_dir("chromium-profile");
  return run_command(MLSYS_CHROMIUM_BIN,
                     "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                     "--disable-background-networking --disable-component-update --disable-sync "
                     "--user-data-dir=" +
                         profile + " --enable-logging=stderr --v=0 --dump-dom file://" + html_path);
}

void expect_clean_page(const CommandResult& r) {
  ASSERT_EQ(0, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.out.find("data-ready=\"1\"")) << "the page's script did not finish";
  EXPECT_EQ(std::string::npos, r.out.find("data-script-errors=\"")) << "a script error was recorded";
  EXPECT_EQ(std::string::npos, r.err.find(":CONSOLE")) << r.err;  // console.log/error or an uncaught error
  for (const char* fetch : {"src=\"http", "href=\"http", "url(http", "<link "})  // a report loads nothing
    EXPECT_EQ(std::string::npos, r.out.find(fetch)) << fetch;
}

TEST(ReportBrowser, OutOfMemoryFromAPartialSumDrawsItsDTerm) {
  // x14-two-accumulators-oom (rule book): B 3 x 8,192 + C 16,384 + D 16,384 = 57,344 > 50,000.
  const std::string dir = temp_dir("report-oom-d");
  const CommandResult made = run_command(
      MLSYS_REPORT_BIN, source_path("tests/golden/x14_tight_problem.json") + " " +
                            source_path("tests/golden/x14_solution.json") + " -o " + dir + "/r.html");
  EXPECT_EQ(1, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/r.html");
  expect_clean_page(page);
  EXPECT_EQ(5u, count(page.out, "class=\"ws-term\""));
  EXPECT_NE(std::string::npos, page.out.find("data-tip=\"D T4 rows [0,128) x cols [0,128): 16,384\""));
  EXPECT_NE(std::string::npos,
            page.out.find("B slices 24,576 + C outputs 16,384 + D accumulators 16,384 = 57,344"));
}

TEST(ReportBrowser, Benchmark17) {
  const std::string dir = temp_dir("report17");
  const std::string problem = source_path("benchmarks/mlsys-2026-17.json");
  ASSERT_EQ(0,
            run_command(MLSYS_SOLVER_BIN, problem + " " + dir + "/s.json --threads 1 --orders 3").exit_code);
  const CommandResult made =
      run_command(MLSYS_REPORT_BIN, problem + " " + dir + "/s.json -o " + dir + "/r.html");
  ASSERT_EQ(0, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/r.html");
  expect_clean_page(page);
  const nlohmann::json schedule = read_json_file(dir + "/s.json");
  EXPECT_EQ(103u, count(page.out, "id=\"op-"));  // benchmark 17 has 103 ops
  EXPECT_EQ(schedule.at("subgraphs").size(), count(page.out, "class=\"timeline-bar\""));
  EXPECT_EQ(1u, count(page.out, "class=\"capacity-line\""));
  EXPECT_EQ(1u, count(page.out, "class=\"peak\""));
  EXPECT_NE(std::string::npos, page.out.find("id=\"verdict\">valid"));
}

TEST(ReportBrowser, OutOfMemoryCaseDrawsItsWorkingSet) {
  // x7 at capacity 45,000 (rule book case x7-epilogue-oom-last-step): B = 8,192 + 8,192 + 16,384, C = 16,384.
  const std::string dir = temp_dir("report-oom");
  const CommandResult made = run_command(
      MLSYS_REPORT_BIN, source_path("tests/golden/x7_tight_problem.json") + " " +
                            source_path("tests/golden/x7_solution.json") + " -o " + dir + "/r.html");
  EXPECT_EQ(1, made.exit_code) << made.err;  // the schedule breaks M20; the report is still written
  const CommandResult page = open_in_chromium(dir + "/r.html");
  expect_clean_page(page);
  // The rule id links to its heading in the model's documentation, and the link resolves.
  const std::string link = "class=\"rule\" href=\"";
  const size_t at = page.out.find(link);
  ASSERT_NE(std::string::npos, at) << page.out;
  const std::string href =
      page.out.substr(at + link.size(), page.out.find('"', at + link.size()) - at - link.size());
  ASSERT_GT(href.size(), std::string("model.md#m20").size());
  EXPECT_EQ("model.md#m20", href.substr(href.size() - 12)) << href;
  const std::filesystem::path target = std::filesystem::path(dir) / href.substr(0, href.size() - 4);
  std::ifstream doc(target);
  ASSERT_TRUE(doc.good()) << target;
  EXPECT_NE(std::string::npos,
            std::string(std::istreambuf_iterator<char>(doc), {}).find("<a id=\"m20\"></a>"));
  EXPECT_NE(std::string::npos, page.out.find(">M20</a>]"));
  EXPECT_EQ(4u, count(page.out, "class=\"ws-term\""));
  EXPECT_NE(std::string::npos,
            page.out.find("B slices 32,768 + C outputs 16,384 + D accumulators 0 = 49,152"));
  EXPECT_EQ(2u, count(page.out, "id=\"op-"));
  EXPECT_GE(count(page.out, "class=\"capacity-line\""), 1u);
}

TEST(ReportBrowser, T10SeedPlan) {
  const std::string dir = temp_dir("report-t10");
  write_text(dir + "/plan.json",
             R"({"F_op":[1,32,40],"f_t_A_m":1,"f_t_A_k":1,"f_t_B_k":1,"f_t_B_n":1,"f_t_C_m":1,"f_t_C_n":1})");
  auto report = [&](const std::string& timing) {
    const CommandResult made =
        run_command(MLSYS_T10_BIN, "report " + source_path("tests/golden/t10/seed_problem.json") + " " + dir +
                                       "/plan.json -o " + dir + "/r-" + timing + ".html" +
                                       (timing.empty() ? "" : " --timing " + timing));
    EXPECT_EQ(0, made.exit_code) << made.err;
    const CommandResult page = open_in_chromium(dir + "/r-" + timing + ".html");
    expect_clean_page(page);
    return page.out;
  };
  // The default is the calibrated timing, named at the top; its headline is the calibrated section's total,
  // its breakdown that model's three terms, its ranking that model's.
  const std::string calibrated = report("");
  EXPECT_NE(std::string::npos, calibrated.find("id=\"timing\">calibrated"));
  EXPECT_EQ(3u, count(calibrated, "class=\"cycle-part\""));
  EXPECT_NE(std::string::npos, calibrated.find("data-timing=\"calibrated\""));
  const std::string marker = "id=\"headline-total\"><b>";
  const size_t head = calibrated.find(marker);
  ASSERT_NE(std::string::npos, head);
  const size_t from = head + marker.size();
  const std::string total = calibrated.substr(from, calibrated.find(" cycles", from) - from);
  EXPECT_NE(std::string::npos, calibrated.find("<b>total (makespan on every core)</b></td><td><b>" + total))
      << total;
  // Under the grader: the seed plan's 15,360 cycles (tests/golden/t10/cases.json, seed-rv01), six terms.
  const std::string grader = report("grader");
  EXPECT_NE(std::string::npos, grader.find("id=\"headline-total\"><b>15,360 cycles"));
  EXPECT_EQ(6u, count(grader, "class=\"cycle-part\""));
  EXPECT_NE(std::string::npos, grader.find("data-timing=\"grader\""));
  const std::string exchange = report("exchange");
  EXPECT_NE(std::string::npos, exchange.find("data-timing=\"exchange\""));
  EXPECT_EQ(3u, count(exchange, "class=\"cycle-part\""));
  for (const std::string* page : {&calibrated, &grader}) {
    EXPECT_EQ(5u, count(*page, "class=\"phase\""));
    EXPECT_EQ(1u, count(*page, "class=\"capacity-line\""));
    EXPECT_EQ(2u, count(*page, "class=\"axis-tick\""));
    // Every core: [1, 32, 40] has 1,280 cores, each a cell of both heat maps, each map with its colour scale
    // (five ticks, the last with the unit); nothing rotates, so no ring.
    EXPECT_EQ(2u * 1280u, count(*page, "class=\"core-cell\""));
    EXPECT_EQ(2u, count(*page, "class=\"colour-scale\""));
    EXPECT_EQ(10u, count(*page, "class=\"scale-tick\""));
    EXPECT_NE(std::string::npos, page->find(" B</text></svg>"));
    EXPECT_NE(std::string::npos, page->find(" cycles</text></svg>"));
    EXPECT_NE(std::string::npos, page->find("no shift levels: nothing rotates"));
  }
}

TEST(ReportBrowser, T10WholeProgram) {
  // A block with a residual two operators back and a view: 5 operators, 4 replayed edges and 1 through a
  // view.
  const std::string dir = temp_dir("report-t10-program");
  write_text(dir + "/model.json", R"({"t10_program": {"name": "block", "ops": [
    {"name": "norm", "type": "rowwise", "m": 256, "n": 512, "reads": [{"from": null}]},
    {"name": "up", "type": "matmul", "m": 256, "k": 512, "n": 2048, "reads": [{"from": "norm"}]},
    {"name": "act", "type": "relu", "m": 256, "n": 2048, "reads": [{"from": "up"}]},
    {"name": "down", "type": "matmul", "m": 256, "k": 2048, "n": 512, "reads": [{"from": "act"}]},
    {"name": "residual", "type": "elementwise", "m": 256, "n": 512, "inputs": 2,
     "reads": [{"from": "down"}, {"from": "norm", "through": ["Reshape"]}]}]}})");
  const CommandResult made =
      run_command(MLSYS_T10_BIN, "compile " + dir + "/model.json --html " + dir + "/p.html");
  ASSERT_EQ(0, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/p.html");
  expect_clean_page(page);
  // The timeline: six ticks, each in cycles and microseconds; the legend of its three phases.
  EXPECT_EQ(6u + 5u, count(page.out, "class=\"axis-tick\""));  // and five on the SRAM chart's axis
  EXPECT_NE(std::string::npos, page.out.find("cycles ("));
  EXPECT_EQ(3u + 2u, count(page.out, "class=\"legend-entry\""));
  EXPECT_GE(count(page.out, "class=\"op-label\""), 1u);
  EXPECT_NE(std::string::npos, page.out.find("up, run: "));  // tooltips name the phase
  // SRAM: each operator's cold base and running extra; the capacity drawn or named with the peak's share.
  EXPECT_EQ(5u, count(page.out, "class=\"cold-base\""));
  EXPECT_EQ(5u, count(page.out, "class=\"running-extra\""));
  EXPECT_EQ(1u, count(page.out, "class=\"capacity-note\"") + count(page.out, "class=\"cap capacity-line\""));
  // The transitions: one row per edge.
  EXPECT_EQ(5u, count(page.out, "class=\"transition\""));
  EXPECT_NE(std::string::npos, page.out.find("4 of 5 edges replayed"));
  EXPECT_NE(std::string::npos, page.out.find("no: a view, 256 x 512 to 256 x 512 through Reshape"));
}

TEST(ReportBrowser, T10ServeDecodeStep) {
  // The tiny decode step of tests/data/elk-tiny.json (four operators, three of them loading from HBM): a bar
  // per load and per operator, the SRAM line and its capacity.
  const std::string dir = temp_dir("t10-serve");
  const CommandResult made =
      run_command(MLSYS_T10_BIN, "serve " + source_path("tests/data/elk-tiny.json") +
                                     " --batch 4 --seq 16 --timeout 1 --html " + dir + "/s.html");
  ASSERT_EQ(0, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/s.html");
  expect_clean_page(page);
  EXPECT_EQ(4u + 1, count(page.out, "class=\"run\""));  // and the legend's
  EXPECT_EQ(3u + 2, count(page.out, "class=\"load\"") + count(page.out, "class=\"kv\""));
  EXPECT_NE(std::string::npos, page.out.find("638976 B"));
  EXPECT_NE(std::string::npos, page.out.find("time (ms)"));
}

TEST(ReportBrowser, T10ServeTraffic) {
  // Twelve requests of the tiny model: the page's six charts (two CDFs, batch, tokens, KV against the
  // capacity, queue), each with its one curve, and the summary table.
  const std::string dir = temp_dir("t10-traffic");
  const CommandResult made = run_command(
      MLSYS_T10_BIN, "serve " + source_path("tests/data/elk-tiny.json") +
                         " --arrivals poisson --rate 1000 --count 12 --prompt-mean 8 --output-mean 4 --slo-ttft-ms 1"
                         " --html " + dir + "/t.html");
  ASSERT_EQ(0, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/t.html");
  expect_clean_page(page);
  EXPECT_EQ(6u, count(page.out, "<figure>"));
  EXPECT_EQ(6u, count(page.out, "<polyline"));
  EXPECT_NE(std::string::npos, page.out.find("TTFT 1 ms"));
  EXPECT_NE(std::string::npos, page.out.find("TPOT (none given)"));
  EXPECT_NE(std::string::npos, page.out.find("12 requests, 12 completed"));
}

TEST(ReportBrowser, T10ChipSweep) {
  // Two bandwidths x two SRAM sizes of a small problem on a 16-core chip: a point per variant on the chart.
  const std::string dir = temp_dir("t10-sweep");
  write_text(dir + "/p.json", R"({"op":"matmul","m":32,"k":256,"n":128,"chip":{"cores":16}})");
  const CommandResult made = run_command(
      MLSYS_T10_BIN,
      "sweep " + dir + "/p.json --exchange-bytes-per-cycle 2,8 --sram 100000,638976 -o " + dir + "/s");
  ASSERT_EQ(0, made.exit_code) << made.err;
  const CommandResult page = open_in_chromium(dir + "/s/t10-sweep.html");
  expect_clean_page(page);
  EXPECT_EQ(4u, count(page.out, "class=\"chip-point\""));
  EXPECT_EQ(2u, count(page.out, "class=\"chip-curve\""));
  // More bandwidth never makes the best plan slower (the same plan is no slower with more bandwidth).
  std::ifstream csv(dir + "/s/t10-sweep.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<double> cycles;
  while (std::getline(csv, line)) cycles.push_back(std::stod(line.substr(line.find(",ok,") + 4)));
  ASSERT_EQ(4u, cycles.size());
  EXPECT_GE(cycles[0], cycles[1]);
  EXPECT_GE(cycles[2], cycles[3]);
}

}  // namespace
}  // namespace mlsys::test
