// Every case of the rule book's examples/cases.json (copied to tests/golden): the official worked examples and
// the extra cases. Expected numbers are the rule book's hand derivations.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

namespace mlsys::test {
namespace {

using nlohmann::json;

const json& cases() {
  static const json doc = [] {
    std::ifstream in(source_path("tests/golden/cases.json"));
    return json::parse(in);
  }();
  return doc.at("cases");
}

std::vector<std::string> case_ids() {
  std::vector<std::string> ids;
  for (const auto& c : cases()) ids.push_back(c.at("id").get<std::string>());
  return ids;
}

const json& find_case(const std::string& id) {
  for (const auto& c : cases())
    if (c.at("id") == id) return c;
  throw std::runtime_error("no case " + id);
}

VerifyOptions options_of(const json& c) {
  VerifyOptions o;
  const auto& args = c.at("options");
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--allow-supernative-k") o.model.allow_supernative_k = true;
    if (args[i] == "--matmul-compute" && args.at(i + 1) == "native-k") o.model.matmul_compute = MatmulCompute::NativeK;
    if (args[i] == "--strict") o.strict = true;
  }
  return o;
}

void expect_close(double expected, double actual, const std::string& what) {
  EXPECT_LE(std::fabs(expected - actual), 1e-9 * std::fabs(expected)) << what << ": expected " << expected << ", got "
                                                                      << actual;
}

class GoldenCase : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenCase, MatchesRuleBook) {
  const json& c = find_case(GetParam());
  const std::string dir = source_path("tests/golden/");
  const Loaded l = load(dir + c.at("problem").get<std::string>(), dir + c.at("solution").get<std::string>());
  const ScheduleReport r = verify_schedule(l.problem, l.graph, l.schedule, options_of(c));
  const std::string expect = c.at("expect");
  if (expect == "valid") {
    ASSERT_TRUE(r.valid) << (r.error ? r.error->describe() : "");
    expect_close(c.at("expected_total").get<double>(), r.total_latency, "total");
    const auto& per = c.at("expected_subgraph_latencies");
    ASSERT_EQ(per.size(), r.subgraphs.size());
    for (size_t i = 0; i < per.size(); ++i)
      expect_close(per[i].get<double>(), r.subgraphs[i].latency, "subgraph " + std::to_string(i));
  } else {
    ASSERT_FALSE(r.valid);
    ASSERT_TRUE(r.error.has_value());
    EXPECT_EQ(c.at("rule").get<std::string>(), r.error->rule) << r.error->describe();
    const json& at = c.at("error_at");
    if (at.contains("subgraph")) {
      EXPECT_EQ(at["subgraph"].get<int>(), r.error->subgraph);
    }
    if (at.contains("tensor")) {
      EXPECT_EQ(at["tensor"].get<int>(), r.error->tensor);
    }
    if (expect == "oom") {
      ASSERT_TRUE(r.error->step.has_value());
      EXPECT_EQ(at.at("tile").get<int64_t>(), r.error->step->tile);
      EXPECT_EQ(at.at("k_step").get<int64_t>(), r.error->step->k_step);
      ASSERT_TRUE(r.error->working_set.has_value());
      EXPECT_EQ(at.at("working_set").get<int64_t>(), r.error->working_set->total());
      int64_t sum = 0;  // the terms add up to the total
      for (const auto& t : r.error->working_set->terms) sum += t.elements;
      EXPECT_EQ(r.error->working_set->total(), sum);
    }
  }
}

// The lower bound of section 8 is a floor for every valid case, under the case's compute model (in-chain ops
// and heads on clipped strips pay less than a padded native tile, so the floor must not assume one).
TEST(GoldenCases, LowerBoundIsAFloorOfEveryValidCase) {
  const std::string dir = source_path("tests/golden/");
  int checked = 0;
  for (const json& c : cases()) {
    if (c.at("expect") != "valid") continue;
    const Loaded l =
        load(dir + c.at("problem").get<std::string>(), dir + c.at("solution").get<std::string>());
    const bool full_k = options_of(c).model.matmul_compute == MatmulCompute::FullK;
    const LowerBound lb = lower_bound(l.problem, l.graph);
    const double total = c.at("expected_total").get<double>();
    EXPECT_LE(full_k ? lb.compute_full_k : lb.compute_native_k, total * (1 + 1e-12)) << c.at("id");
    EXPECT_LE(lb.io, total * (1 + 1e-12)) << c.at("id");
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST(GoldenCases, RevisionOf20261124HasFortyThreeCases) {
  EXPECT_EQ(43u, cases().size());
  for (const char* id : {"x14-two-accumulators-one-output", "x14-two-accumulators-oom", "x14-two-epilogues"})
    EXPECT_NO_THROW(find_case(id)) << id;
}

// The CLI gives the exit code of M28 and tags every error with its rule.
TEST_P(GoldenCase, CommandLineExitCode) {
  const json& c = find_case(GetParam());
  const std::string dir = source_path("tests/golden/");
  std::string args = dir + c.at("problem").get<std::string>() + " " + dir + c.at("solution").get<std::string>();
  for (const auto& a : c.at("options")) args += " " + a.get<std::string>();
  const CommandResult r = run_command(MLSYS_VERIFY_BIN, args);
  if (c.at("expect") == "valid") {
    EXPECT_EQ(0, r.exit_code) << r.err;
    EXPECT_NE(std::string::npos, r.out.find("total: ")) << r.out;
  } else {
    EXPECT_EQ(1, r.exit_code) << r.err;
    EXPECT_NE(std::string::npos, r.err.find("[" + c.at("rule").get<std::string>() + "]")) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(RuleBook, GoldenCase, ::testing::ValuesIn(case_ids()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace mlsys::test
