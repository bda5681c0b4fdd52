// Malformed problems and solutions through the real `verify` binary: each gives exit code 2 (unreadable, M1-M4)
// or 1 (a rule broken), a message that names the field, index or rule, and never a crash (CI runs this suite
// under ASan+UBSan too).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

namespace mlsys::test {
namespace {

// Example 1: T0 -> op0 -> T1 -> op1 -> T2, all 128x128.
const std::string kPw = R"({"widths":[128,128,128],"heights":[128,128,128],"inputs":[[0],[1]],"outputs":[[1],[2]],
"base_costs":[1000,100],"op_types":["Pointwise","Pointwise"],"fast_memory_capacity":35000,
"slow_memory_bandwidth":10,"native_granularity":[128,128]})";
const std::string kPwSolution = R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]]})";
// Example 4: T2 = T0 @ T1.
const std::string kMm = R"({"widths":[128,128,128],"heights":[128,128,128],"inputs":[[0,1]],"outputs":[[2]],
"base_costs":[1500],"op_types":["MatMul"],"fast_memory_capacity":25000,"slow_memory_bandwidth":10,
"native_granularity":[128,128]})";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("test fixture: no '" + from + "'");
  return text.replace(at, from.size(), to);
}

struct BadInput {
  const char* name;
  std::string problem, solution;
  int exit_code;
  std::string needle;  // must appear in stderr
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.name; }

std::vector<BadInput> cases() {
  const std::string& p = kPw;
  const std::string& s = kPwSolution;
  return {
      {"TruncatedProblem", p.substr(0, 60), s, 2, "line 1, column"},
      {"ProblemNotObject", "[1,2,3]", s, 2, "JSON object"},
      {"MissingWidths", replace(p, "\"widths\"", "\"widthz\""), s, 2, "widths: missing"},
      {"WidthsNotArray", replace(p, "[128,128,128],\"heights\"", "128,\"heights\""), s, 2,
       "widths: expected an array"},
      {"WidthString", replace(p, "\"widths\":[128,128", "\"widths\":[128,\"x\""), s, 2, "widths[1]"},
      {"NegativeWidth", replace(p, "\"widths\":[128", "\"widths\":[-128"), s, 2, "widths[0]: must be >= 1"},
      {"FractionalWidth", replace(p, "\"widths\":[128", "\"widths\":[12.5"), s, 2,
       "widths[0]: expected an integer"},
      {"HeightsLength", replace(p, "\"heights\":[128,128,128]", "\"heights\":[128,128]"), s, 2,
       "heights: length"},
      {"InputIndexOutOfRange", replace(p, "\"inputs\":[[0]", "\"inputs\":[[7]"), s, 2, "inputs[0][0]"},
      {"NegativeOutputIndex", replace(p, "\"outputs\":[[1],[2]]", "\"outputs\":[[1],[-2]]"), s, 2,
       "outputs[1][0]"},
      {"BaseCostsLength", replace(p, "[1000,100]", "[1000]"), s, 2, "base_costs: length"},
      {"ZeroBaseCost", replace(p, "[1000,100]", "[0,100]"), s, 2, "base_costs[0]: must be in (0, 1e15]"},
      {"UnknownOpType", replace(p, "\"Pointwise\"]", "\"Conv\"]"), s, 2, "op_types[1]"},
      {"OpTypeNotString", replace(p, "[\"Pointwise\",", "[7,"), s, 2, "op_types[0]"},
      {"NegativeCapacity", replace(p, "35000", "-1"), s, 2, "fast_memory_capacity"},
      {"BandwidthString", replace(p, "\"slow_memory_bandwidth\":10", "\"slow_memory_bandwidth\":\"10\""), s,
       2, "slow_memory_bandwidth"},
      {"NativeThreeValues", replace(p, "[128,128]}", "[128,128,128]}"), s, 2, "native_granularity"},
      {"Cycle", replace(p, "\"inputs\":[[0],[1]]", "\"inputs\":[[2],[1]]"), s, 2, "cycle"},
      {"MatMulShapeMismatch", replace(kMm, "\"widths\":[128,128,128]", "\"widths\":[64,128,128]"),
       R"({"subgraphs":[[0]],"granularities":[[64,64,64]]})", 2, "MatMul shape mismatch"},
      {"MatMulOneInput", replace(kMm, "[[0,1]]", "[[0]]"), s, 2, "op 0"},
      {"PointwiseShapeMismatch", replace(p, "\"heights\":[128,128,128]", "\"heights\":[128,64,128]"), s, 2,
       "Pointwise shape mismatch"},
      {"ProducedTwice", replace(p, "\"outputs\":[[1],[2]]", "\"outputs\":[[1],[1]]"), s, 2,
       "already produced"},
      {"NoOps",
       replace(replace(replace(replace(p, "[[0],[1]]", "[]"), "[[1],[2]]", "[]"), "[1000,100]", "[]"),
               "[\"Pointwise\",\"Pointwise\"]", "[]"),
       s, 2, "inputs: needs at least one op"},
      {"TruncatedSolution", p, s.substr(0, 20), 2, "JSON syntax error"},
      {"MissingSubgraphs", p, R"({"granularities":[[128,128,1]]})", 2, "subgraphs: missing"},
      {"GranularitiesLength", p, R"({"subgraphs":[[0,1]],"granularities":[[128,128,1],[1,1,1]]})", 2,
       "granularities: length"},
      {"GranularityTwoValues", p, R"({"subgraphs":[[0,1]],"granularities":[[128,128]]})", 2,
       "granularities[0]"},
      {"GranularityFraction", p, R"({"subgraphs":[[0,1]],"granularities":[[128,128,1.5]]})", 2,
       "granularities[0][2]"},
      {"OpIndexOutOfRange", p, R"({"subgraphs":[[0,5]],"granularities":[[128,128,1]]})", 2,
       "subgraphs[0][1]"},
      {"RetainIndexOutOfRange", p,
       R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]],"tensors_to_retain":[[9]]})", 2,
       "tensors_to_retain[0][0]"},
      {"TraversalNotArray", p,
       R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]],"traversal_orders":["x"]})", 2,
       "traversal_orders[0]"},
      {"LatencyString", p,
       R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]],"subgraph_latencies":["1"]})", 2,
       "subgraph_latencies[0]"},
      {"SolutionNotObject", p, "42", 2, "JSON object"},
      {"OpMissingFromEverySubgraph", p, R"({"subgraphs":[[0]],"granularities":[[128,128,1]]})", 1,
       "[M5] op 1"},
      {"TraversalNotPermutation", p,
       R"({"subgraphs":[[0,1]],"granularities":[[64,64,1]],"traversal_orders":[[0,0,1,2]]})", 1, "[M11]"},
      {"KAboveNative", kMm, R"({"subgraphs":[[0]],"granularities":[[64,64,256]]})", 1, "[M6]"},
      {"KAboveReductionDepth",
       replace(replace(kMm, "\"widths\":[128,128,128]", "\"widths\":[64,128,128]"),
               "\"heights\":[128,128,128]", "\"heights\":[128,64,128]"),
       R"({"subgraphs":[[0]],"granularities":[[64,64,128]]})", 1, "exceeds K = 64"},
      {"RetainedGraphInput", p,
       R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]],"tensors_to_retain":[[0]]})", 1,
       "graph inputs cannot be retained"},
      {"HugeIntegerTraversal", p,
       R"({"subgraphs":[[0,1]],"granularities":[[128,128,1]],"traversal_orders":[[99999999999999]]})", 1,
       "[M11]"},
  };
}

class BadInputs : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputs, CleanErrorAndExitCode) {
  const BadInput& b = GetParam();
  const std::string dir = temp_dir(b.name);
  write_text(dir + "/problem.json", b.problem);
  write_text(dir + "/solution.json", b.solution);
  const CommandResult r = run_command(MLSYS_VERIFY_BIN, dir + "/problem.json " + dir + "/solution.json");
  EXPECT_EQ(b.exit_code, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.err.find(b.needle)) << "stderr: " << r.err;
  if (b.exit_code == 2) {
    EXPECT_NE(std::string::npos, r.err.find(dir)) << "the message names the file: " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, BadInputs, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BadInputsCli, MissingFileAndUsage) {
  CommandResult r = run_command(MLSYS_VERIFY_BIN, "/nonexistent/p.json /nonexistent/s.json");
  EXPECT_EQ(2, r.exit_code);
  EXPECT_NE(std::string::npos, r.err.find("cannot open file"));
  r = run_command(MLSYS_VERIFY_BIN, "");
  EXPECT_EQ(2, r.exit_code);
  r = run_command(MLSYS_VERIFY_BIN, "--help");
  EXPECT_EQ(0, r.exit_code);
  EXPECT_NE(std::string::npos, r.out.find("--matmul-compute"));
}

TEST(BadInputsCli, JsonReportOnMalformedInputKeepsStdoutJson) {
  const std::string dir = temp_dir("json");
  write_text(dir + "/p.json", kPw);
  write_text(dir + "/s.json", "{\"subgraphs\": [[0,1]], \"granularities\": [[128,128]]}");
  const CommandResult r = run_command(MLSYS_VERIFY_BIN, dir + "/p.json " + dir + "/s.json --json");
  EXPECT_EQ(2, r.exit_code);
  const auto doc = nlohmann::json::parse(r.out);  // throws (fails the test) if stdout is not pure JSON
  EXPECT_EQ(false, doc.at("valid"));
  EXPECT_EQ("granularities[0]", doc.at("errors").at(0).at("field"));
}

}  // namespace
}  // namespace mlsys::test
