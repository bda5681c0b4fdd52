// What an imported vector operator computes, evaluated in binary64 for functional mode
// (docs/t10-programs.md#simulation): the ONNX nodes of its fused group in order, over N-D tensors with
// NumPy broadcasting. The operators a network's elementwise and row-wise groups use are supported: Add, Sub,
// Mul, Div, Pow, Max, Min, Sum, Where, comparisons, the unary functions (Relu, Erf, Tanh, Exp, Log, Sqrt,
// Sigmoid, Neg, Abs, Reciprocal, Identity, Cast, LeakyRelu, Elu, Selu, HardSigmoid, HardSwish, Softplus,
// Clip), BatchNormalization (inference), Softmax, LogSoftmax, LayerNormalization and the Reduce operators over
// the last axes. Anything else is refused naming the node and its operator.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/t10/t10_program.hpp"

namespace mlsys::t10 {

// A node's result is refused beyond this many elements (a hostile broadcast must not exhaust memory).
constexpr int64_t kMaxComputeElements = int64_t{1} << 26;

struct RealTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major
};

// `reads[j]` is the operator's j-th activation read (its values in its shape); `param(name, shape)` gives a
// learned parameter's values. Throws std::invalid_argument naming the node, its operator and the problem.
RealTensor evaluate_compute(const VectorCompute& compute, const std::vector<RealTensor>& reads,
                            const std::function<RealTensor(const std::string&, const std::vector<int64_t>&)>& param);

}  // namespace mlsys::t10
