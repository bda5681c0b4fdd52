// Vector operators on the all-cores engine (t10_vector_cores.hpp, issue 57 item 3): the partition's transfers
// counted by hand, the functional stand-ins against plain loops, a lost partial statistic caught, and a
// program whose vector operators run on the engine with its makespan equal to the compiled total.
#include "sim/t10/t10_vector_cores.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sim/t10/t10_program_sim.hpp"
#include "sim/t10/t10_vector_compute.hpp"
#include "solver/t10_compile.hpp"

namespace mlsys::t10 {
namespace {

VectorOp row_wise(int64_t rows, int64_t cols) {
  VectorOp op;
  op.kind = VectorKind::RowWise;
  op.rows = rows, op.cols = cols, op.inputs = 1;
  return op;
}

std::vector<int64_t> random_matrix(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> m(size);
  for (int64_t& v : m) v = static_cast<int64_t>(rng() % 201) - 100;
  return m;
}

// 10 rows of 100 over 3 row parts (4, 4, 2 rows) and 4 column parts (25 columns each): 12 cores; every core
// but the first of its row part sends its rows' partial statistics: 3 x 3 transfers of 4, 4, 4, 4, 4, 4, 2,
// 2, 2 two-byte values = 60 bytes, and as many return the reduced statistic (not priced).
TEST(T10VectorCores, RowPartsGatherTheirPartialStatisticsAsTransfers) {
  const Chip chip;
  const VectorCoresResult r = simulate_vector_cores(row_wise(10, 100), 3, 4, 2, chip, {});
  EXPECT_FALSE(r.violation) << r.violation->message;
  EXPECT_EQ(r.cores, 12);
  EXPECT_EQ(r.empty_cores, 0);
  EXPECT_EQ(r.transfers, 9);
  EXPECT_EQ(r.bytes_moved, 60);
  EXPECT_EQ(r.unpriced_transfers, 9);
  EXPECT_EQ(r.unpriced_bytes, 60);
  // The model's total, to the last bit: the busiest core (4 rows x 25 columns) and the gather terms.
  EXPECT_EQ(r.makespan, calibrated_vector_cost(row_wise(10, 100), 3, 2, chip, 4).total);
  ASSERT_GE(r.phases.size(), 5u);
  EXPECT_EQ(r.phases[1].name, "gather partial statistics");
  EXPECT_EQ(r.phases[1].bytes, 60);
  // One column part: nothing to gather.
  const VectorCoresResult whole_rows = simulate_vector_cores(row_wise(10, 100), 5, 1, 2, chip, {});
  EXPECT_EQ(whole_rows.transfers, 0);
  EXPECT_EQ(whole_rows.cores, 5);
}

// 10 elements over 6 cores in runs of ceil(10/6) = 2: the sixth core's run is empty.
TEST(T10VectorCores, CeilingsLeaveTheLastCoresEmpty) {
  VectorOp op;
  op.rows = 2, op.cols = 5, op.inputs = 2;
  const VectorCoresResult r = simulate_vector_cores(op, 6, 1, 2, Chip{}, {});
  EXPECT_FALSE(r.violation);
  EXPECT_EQ(r.cores, 6);
  EXPECT_EQ(r.empty_cores, 1);
  EXPECT_EQ(r.transfers, 0);
}

// The stand-ins computed core by core equal plain loops: each element less its row's maximum (the maximum
// gathered over 3 column parts), a reducing operator's row sums, an elementwise sum and a ReLU.
TEST(T10VectorCores, FunctionalStandInsEqualPlainLoops) {
  const int64_t rows = 7, cols = 23;
  const std::vector<std::vector<int64_t>> inputs{random_matrix(rows * cols, 1), random_matrix(rows * cols, 2)};
  std::vector<int64_t> sum(rows * cols), shifted(rows * cols), row_sums(rows, 0);
  for (size_t e = 0; e < sum.size(); ++e) sum[e] = inputs[0][e] + inputs[1][e];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t most = *std::max_element(sum.begin() + r * cols, sum.begin() + (r + 1) * cols);
    for (int64_t c = 0; c < cols; ++c) shifted[r * cols + c] = sum[r * cols + c] - most;
    for (int64_t c = 0; c < cols; ++c) row_sums[r] += sum[r * cols + c];
  }
  VectorOp op = row_wise(rows, cols);
  op.inputs = 2;
  std::vector<int64_t> out;
  VectorCoresOptions o;
  o.inputs = &inputs, o.output = &out;
  EXPECT_FALSE(simulate_vector_cores(op, 3, 3, 2, Chip{}, o).violation);
  EXPECT_EQ(out, shifted);
  o.reduces = true;
  EXPECT_FALSE(simulate_vector_cores(op, 2, 3, 2, Chip{}, o).violation);
  EXPECT_EQ(out, row_sums);
  o.reduces = false;
  op.kind = VectorKind::Elementwise;
  EXPECT_FALSE(simulate_vector_cores(op, 4, 1, 2, Chip{}, o).violation);
  EXPECT_EQ(out, sum);
  op.kind = VectorKind::Relu;
  EXPECT_FALSE(simulate_vector_cores(op, 4, 1, 2, Chip{}, o).violation);
  for (int64_t& v : sum) v = std::max<int64_t>(v, 0);
  EXPECT_EQ(out, sum);
}

// A partial statistic lost on the way is caught, naming the rows and the core, and changes the output.
TEST(T10VectorCores, ALostPartialStatisticIsCaught) {
  const std::vector<std::vector<int64_t>> inputs{random_matrix(8 * 40, 3)};
  std::vector<int64_t> out;
  VectorCoresOptions o;
  o.inputs = &inputs, o.output = &out, o.drop_partial = 4;  // row part 1's third column part (4 = 1*3 + 1)
  const VectorCoresResult r = simulate_vector_cores(row_wise(8, 40), 2, 4, 2, Chip{}, o);
  ASSERT_TRUE(r.violation);
  EXPECT_NE(r.violation->message.find("rows 4..8: core 6's partial statistics arrived 0 times"), std::string::npos)
      << r.violation->message;
}

TEST(T10VectorCores, RefusesAPartitionTheModelRejects) {
  EXPECT_THROW(simulate_vector_cores(row_wise(4, 8), 5, 1, 2, Chip{}, {}), std::invalid_argument);
  EXPECT_THROW(simulate_vector_cores(row_wise(4, 8), 2, 9, 2, Chip{}, {}), std::invalid_argument);
}

// A layer whose LayerNorm rows are wider than a core takes: every vector operator runs on the engine, the row-wise
// ones' statistics travel between cores, and the makespan is the compiled total to the last bit.
TEST(T10VectorCores, EveryOperatorOfAProgramRunsOnTheEngine) {
  TensorProgram program;
  program.name = "layer";
  auto op = [](const std::string& name, OperatorType type, int64_t m, int64_t k, int64_t n, int64_t inputs) {
    TensorOperator o;
    o.name = name, o.type = type, o.m = m, o.k = k, o.n = n, o.inputs = inputs;
    return o;
  };
  program.ops = {op("fc1", OperatorType::MatMul, 16, 512, 4096, 2), op("norm", OperatorType::RowWise, 16, 1, 4096, 1),
                 op("act", OperatorType::Relu, 16, 1, 4096, 1), op("fc2", OperatorType::MatMul, 16, 4096, 512, 2),
                 op("res", OperatorType::Elementwise, 16, 1, 512, 2)};
  const CompileResult compiled = compile_program(program, {});
  ASSERT_TRUE(compiled.compiled);
  const ProgramRun run = simulate_program(program, *compiled.compiled, {});
  EXPECT_EQ(run.first_failure(), "");
  for (const OperatorRun& r : run.ops) EXPECT_TRUE(r.simulated) << r.name;
  EXPECT_EQ(run.makespan, compiled.compiled->total_cycles);
  const OperatorOption& norm = compiled.compiled->chosen[1];
  ASSERT_GT(norm.plan.f_op[2], 1);  // 16 rows cannot fill the chip: the rows are split over column parts
  EXPECT_EQ(run.ops[1].transfers, 2 * (norm.plan.f_op[2] - 1) * norm.plan.f_op[0]);  // gathered and returned
  // Functional: the same program on integers against the plain-loop reference (the stand-ins).
  ProgramSimOptions functional;
  functional.functional = true, functional.seed = 9;
  const ProgramRun checked = simulate_program(program, *compiled.compiled, functional);
  EXPECT_EQ(checked.first_failure(), "");
  EXPECT_TRUE(checked.functional_checked);
  EXPECT_EQ(checked.output, reference_output(program, 9));
}

ComputeArg read_arg(int64_t j, std::vector<int64_t> shape) {
  ComputeArg a;
  a.kind = ComputeArg::Kind::Read, a.index = j, a.shape = std::move(shape);
  return a;
}
ComputeArg value_arg(std::vector<double> values, std::vector<int64_t> shape) {
  ComputeArg a;
  a.kind = ComputeArg::Kind::Value, a.values = std::move(values), a.shape = std::move(shape);
  return a;
}
ComputeArg node_arg(int64_t j) {
  ComputeArg a;
  a.kind = ComputeArg::Kind::Node, a.index = j;
  return a;
}

// Imported nodes evaluated in binary64, against values worked by hand: a masked softmax (the causal mask's
// -inf), a LayerNorm, broadcasting over rows and columns, a row mean kept as a column.
TEST(T10VectorCompute, NodesComputeWhatOnnxDefines) {
  const auto none = [](const std::string&, const std::vector<int64_t>&) -> RealTensor {
    throw std::logic_error("no parameters here");
  };
  // softmax over rows of [[0, ln 3], [5, 7]] with the second row's last entry masked: [[1/4, 3/4], [1, 0]].
  VectorCompute softmax;
  softmax.nodes = {{"Where", {value_arg({1, 1, 1, 0}, {2, 2}), read_arg(0, {2, 2}), value_arg({-HUGE_VAL}, {})}, {}},
                   {"Softmax", {node_arg(0)}, {{"axis", -1}}}};
  const RealTensor p = evaluate_compute(softmax, {{{4}, {0, std::log(3.0), 5, 7}}}, none);
  ASSERT_EQ(p.values.size(), 4u);
  EXPECT_NEAR(p.values[0], 0.25, 1e-15);
  EXPECT_NEAR(p.values[1], 0.75, 1e-15);
  EXPECT_EQ(p.values[2], 1.0);
  EXPECT_EQ(p.values[3], 0.0);
  // LayerNorm of [1, 3] (mean 2, variance 1) with epsilon 0, scale [2, 2], bias [0, 1]: [-2, 3].
  VectorCompute norm;
  norm.nodes = {{"LayerNormalization", {read_arg(0, {1, 2}), value_arg({2, 2}, {2}), value_arg({0, 1}, {2})},
                 {{"axis", -1}, {"epsilon", 0.0}}}};
  EXPECT_EQ(evaluate_compute(norm, {{{2}, {1, 3}}}, none).values, (std::vector<double>{-2, 3}));
  // [[1], [2]] + [10, 20, 30] = [[11, 21, 31], [12, 22, 32]]; its row means [21, 22] as a column.
  VectorCompute outer;
  outer.nodes = {{"Add", {read_arg(0, {2, 1}), value_arg({10, 20, 30}, {3})}, {}},
                 {"ReduceMean", {node_arg(0)}, {{"axes", {-1}}, {"keepdims", 1}}}};
  const RealTensor means = evaluate_compute(outer, {{{2}, {1, 2}}}, none);
  EXPECT_EQ(means.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(means.values, (std::vector<double>{21, 22}));
  // Refusals name the node and its operator.
  VectorCompute odd;
  odd.nodes = {{"Mod", {read_arg(0, {2}), value_arg({3}, {})}, {}}};
  try {
    evaluate_compute(odd, {{{2}, {1, 2}}}, none);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 0 (Mod)"), std::string::npos) << e.what();
  }
  odd.nodes = {{"Add", {read_arg(0, {2}), value_arg({1, 2, 3}, {3})}, {}}};
  EXPECT_THROW(evaluate_compute(odd, {{{2}, {1, 2}}}, none), std::invalid_argument);  // shapes do not broadcast
}

}  // namespace
}  // namespace mlsys::t10
