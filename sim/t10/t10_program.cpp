// Pricing one operator of a whole-model program (docs/t10-programs.md): the calibrated model of its type.
#include "sim/t10/t10_program.hpp"

#include <algorithm>
#include <unordered_map>

namespace mlsys::t10 {

const char* to_string(OperatorType type) {
  switch (type) {
    case OperatorType::MatMul:
      return "matmul";
    case OperatorType::Elementwise:
      return "elementwise";
    case OperatorType::Relu:
      return "relu";
    case OperatorType::RowWise:
      return "rowwise";
  }
  return "?";
}

std::optional<OperatorType> operator_type_from(const std::string& name) {
  for (OperatorType t :
       {OperatorType::MatMul, OperatorType::Elementwise, OperatorType::Relu, OperatorType::RowWise})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

Problem operator_problem(const TensorProgram& program, const TensorOperator& op) {
  Problem p;
  p.m = op.m, p.k = op.k, p.n = op.n, p.batch = op.batch;
  p.dtype_bytes = program.dtype_bytes;
  p.chip = program.chip;
  p.name = op.name;
  return p;
}

VectorOp vector_op(const TensorOperator& op) {
  VectorOp v;
  v.kind = op.type == OperatorType::Relu      ? VectorKind::Relu
           : op.type == OperatorType::RowWise ? VectorKind::RowWise
                                              : VectorKind::Elementwise;
  v.rows = op.batch * op.m;
  v.cols = op.n;
  v.inputs = op.inputs;
  return v;
}

OperatorOption price_option(const TensorProgram& program, const TensorOperator& op, const Plan& plan,
                            bool no_copy) {
  if (op.type == OperatorType::MatMul)
    return matmul_option(plan, calibrated_cost(operator_problem(program, op), plan), no_copy);
  OperatorOption o;
  o.plan = plan;
  {
    o.cost =
        calibrated_vector_cost(vector_op(op), plan.f_op[0], program.dtype_bytes, program.chip, plan.f_op[2]);
    o.hot = o.cost.hot_bytes;
    o.cold = o.cost.cold_bytes;
  }
  return o;
}

OperatorOption matmul_option(const Plan& plan, const CalibratedCost& cost, bool no_copy) {
  OperatorOption o;
  o.plan = plan;
  o.cost = cost;
  o.hot = cost.hot_bytes;
  o.cold = no_copy ? cost.no_copy_cold_bytes : cost.cold_bytes;
  o.warm_up = no_copy ? cost.warm_up : 0;
  o.cold_is_hot = !no_copy;
  return o;
}

void summarize(CompiledProgram& compiled) {
  compiled.total_cycles = 0;
  compiled.cold_bytes = 0;
  compiled.peak_extra_bytes = 0;
  for (const OperatorOption& o : compiled.chosen) {
    compiled.total_cycles += o.time();
    compiled.cold_bytes += o.cold;
    compiled.peak_extra_bytes = std::max(compiled.peak_extra_bytes, o.extra());
  }
}

bool is_chain(const TensorProgram& program) {
  return std::all_of(program.ops.begin(), program.ops.end(),
                     [](const TensorOperator& op) { return op.after.empty() && op.reads.empty(); });
}

int64_t shape_elements(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n > 0x1p62 ? int64_t{1} << 62 : static_cast<int64_t>(n);
}

std::vector<std::vector<DataEdge>> data_flow(const TensorProgram& program) {
  std::vector<std::vector<DataEdge>> flow(program.ops.size());
  const bool chain = is_chain(program);
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorOperator& op = program.ops[i];
    std::vector<DataEdge>& edges = flow[i];
    if (chain && i > 0) edges.push_back({static_cast<int>(i) - 1, 0, {}, {}, false});
    if (!op.reads.empty()) {
      for (size_t slot = 0; slot < op.reads.size(); ++slot) {
        const auto it = index.find(op.reads[slot].from);
        const int operand = op.type == OperatorType::MatMul ? static_cast<int>(std::min<size_t>(slot, 1)) : 0;
        if (it != index.end())
          edges.push_back({it->second, operand, op.reads[slot].through, op.reads[slot].from_shape,
                           op.reads[slot].from_channels_last});
      }
    } else {
      for (const std::string& name : op.after) {
        const auto it = index.find(name);
        if (it != index.end() && std::none_of(edges.begin(), edges.end(),
                                              [&](const DataEdge& e) { return e.producer == it->second; }))
          edges.push_back({it->second, -1, {}, {}, false});
      }
    }
    index.emplace(op.name, static_cast<int>(i));
  }
  return flow;
}

}  // namespace mlsys::t10
