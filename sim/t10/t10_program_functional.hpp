// Functional mode for whole programs (docs/t10-programs.md#simulation): real numbers through the network
// along its data flow. Each operator's operands are read from their producers' outputs or the graph inputs
// through the views as index maps; weights, biases and other learned parameters are drawn integers (by name
// when the file names them, so that an independent reference can use the same ones). MatMuls multiply on the
// all-cores engine, product by product, each checked against A·B exactly. Vector operators compute their
// imported nodes in binary64 (t10_vector_compute.hpp), or the integer stand-ins of t10_vector_cores.hpp on
// the vector engine when the file gives no nodes (or only integer ones: sums, ReLU, max pooling, row sums).
//
// Values are fixed point: integers with a power-of-two scale per tensor (value = integer x 2^-scale). Integer
// networks stay exact. A vector operator's real output is rounded to 30 significant bits, and a MatMul's
// operands to at most (62 - log2 k) / 2 each, so that the engine's 64-bit sums of k products cannot overflow.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_program.hpp"

namespace mlsys::t10 {

// An operand functional mode drew: a weight or bias (`op`, `slot`), a learned parameter (`param`), or a graph
// input (`input`), with its shape and values, so that an independent reference can compute with the same.
struct DrawnValues {
  std::string op;
  int slot = -1;
  std::string input, param;
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};

struct ScaledTensor {
  std::vector<int64_t> ints;
  int scale = 0;  // value = integer x 2^-scale
};

// What functional mode holds, refused beyond (a file its reader accepts must not exhaust memory): one
// operator's operands together, and every operator's output kept for its readers.
constexpr int64_t kMaxFunctionalOperandElements = int64_t{1} << 26;
constexpr int64_t kMaxFunctionalHeldElements = int64_t{1} << 28;

class ProgramValues {
 public:
  // Throws std::invalid_argument when functional mode cannot run the program: an operand above
  // kMaxExactElements, an operator that does not say what it reads, or a function without a form here.
  ProgramValues(const TensorProgram& program, uint64_t seed, std::vector<DrawnValues>& drawn);
  // Computes operator i from its operands (earlier operators must have run); the first engine violation.
  std::optional<CoreViolation> run(size_t i, const OperatorOption& option);
  const ScaledTensor& output(size_t i) const { return outputs_[i]; }

 private:
  std::vector<ScaledTensor> operands(size_t i);
  ScaledTensor read(const TensorOperator& op, const TensorOperator::Read& r, int64_t size, bool skip_padding);
  ScaledTensor draw(const TensorOperator& op, size_t i, int slot, int64_t rows, int64_t cols);
  ScaledTensor weight(const TensorOperator& op);
  const std::vector<int64_t>& param(const std::string& name, const std::vector<int64_t>& shape);
  std::optional<CoreViolation> run_matmul(size_t i, const OperatorOption& option, std::vector<ScaledTensor> ab);
  std::optional<CoreViolation> run_vector(size_t i, const OperatorOption& option, std::vector<ScaledTensor> in);

  const TensorProgram& program_;
  const uint64_t seed_;
  std::vector<DrawnValues>& drawn_;
  std::vector<ScaledTensor> outputs_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::vector<int64_t>> inputs_, params_;
  bool chain_ = false;
};

}  // namespace mlsys::t10
