// The optional "names" section of imported problems (mlsys-import): read when it matches the problem, ignored
// otherwise (it never makes a problem invalid), and shown by the report's DAG.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/graph.hpp"
#include "sim/json_io.hpp"
#include "traces/dag_layout.hpp"

namespace mlsys {
namespace {

nlohmann::json two_op_problem() {
  return nlohmann::json::parse(R"({
    "widths": [64, 64, 64], "heights": [64, 64, 64], "inputs": [[0, 0], [1]], "outputs": [[1], [2]],
    "base_costs": [100, 10], "op_types": ["MatMul", "Pointwise"], "fast_memory_capacity": 50000,
    "slow_memory_bandwidth": 10, "native_granularity": [64, 64],
    "names": {"model": "tiny.onnx", "hardware": "gpu-sm-like", "ops": ["/fc/MatMul", "/act/Relu"],
              "op_kinds": ["MatMul", "Relu"], "tensors": ["x", "fc_out", "y"]}})");
}

TEST(Names, ReadWhenTheyMatchTheProblem) {
  const Problem p = parse_problem(two_op_problem(), "tiny.json");
  EXPECT_EQ(p.names.model, "tiny.onnx");
  EXPECT_EQ(p.names.hardware, "gpu-sm-like");
  EXPECT_EQ(p.names.ops, (std::vector<std::string>{"/fc/MatMul", "/act/Relu"}));
  EXPECT_EQ(p.names.op_kinds, (std::vector<std::string>{"MatMul", "Relu"}));
  EXPECT_EQ(p.names.tensors, (std::vector<std::string>{"x", "fc_out", "y"}));
}

TEST(Names, IgnoredWhenTheyDoNotMatch) {
  nlohmann::json doc = two_op_problem();
  doc["names"]["ops"] = {"only one"};       // wrong length
  doc["names"]["tensors"] = {"x", 7, "y"};  // not all strings
  doc["names"]["op_kinds"] = "MatMul";      // not a list
  const Problem p = parse_problem(doc, "tiny.json");
  EXPECT_TRUE(p.names.ops.empty());
  EXPECT_TRUE(p.names.tensors.empty());
  EXPECT_TRUE(p.names.op_kinds.empty());
  EXPECT_EQ(p.names.model, "tiny.onnx");
  doc["names"] = 42;  // not an object: still a valid problem
  EXPECT_NO_THROW(parse_problem(doc, "tiny.json"));
}

TEST(Names, TheDagLabelsOpsByKindAndNamesTheirTensors) {
  const Problem p = parse_problem(two_op_problem(), "tiny.json");
  const Graph g = analyze_graph(p, "tiny.json");
  Schedule s;
  s.subgraphs.push_back({{0, 1}, {64, 64, 64}, {}, std::nullopt});
  const std::string svg = dag_svg(p, g, s);
  EXPECT_NE(svg.find("1 Relu"), std::string::npos);
  EXPECT_NE(svg.find("/fc/MatMul"), std::string::npos);
  EXPECT_NE(svg.find("fc_out"), std::string::npos);
}

}  // namespace
}  // namespace mlsys
