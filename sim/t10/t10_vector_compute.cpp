// Evaluating an imported vector operator's nodes in binary64 (t10_vector_compute.hpp).
#include "sim/t10/t10_vector_compute.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

namespace mlsys::t10 {
namespace {

// NumPy broadcasting of two shapes (aligned on the right), or why not.
std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) throw std::invalid_argument("shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The element of `t` that element `flat` of an `out`-shaped result reads under broadcasting.
double at(const RealTensor& t, const std::vector<int64_t>& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    const int64_t coord = flat % out[i];
    flat /= out[i];
    const size_t from_end = out.size() - 1 - i;
    if (from_end < t.shape.size()) {
      const int64_t d = t.shape[t.shape.size() - 1 - from_end];
      if (d != 1) index += coord * stride;
      stride *= d;
    }
  }
  return t.values[static_cast<size_t>(index)];
}

template <class F>
RealTensor elementwise(const std::vector<const RealTensor*>& in, F f) {
  std::vector<int64_t> shape = in[0]->shape;
  for (const RealTensor* t : in) shape = broadcast(shape, t->shape);
  const int64_t elements = shape_elements(shape);
  if (elements > kMaxComputeElements)
    throw std::invalid_argument("broadcasts to " + std::to_string(elements) + " elements, above " +
                                std::to_string(kMaxComputeElements));
  RealTensor out{shape, std::vector<double>(static_cast<size_t>(elements))};
  std::vector<double> args(in.size());
  for (int64_t e = 0; e < elements; ++e) {
    for (size_t i = 0; i < in.size(); ++i) args[i] = at(*in[i], shape, e);
    out.values[static_cast<size_t>(e)] = f(args);
  }
  return out;
}

int64_t axis_of(const nlohmann::json& attrs, const char* key, int64_t fallback, size_t rank) {
  int64_t axis = attrs.contains(key) && attrs[key].is_number_integer() ? attrs[key].get<int64_t>() : fallback;
  if (axis < 0) axis += static_cast<int64_t>(rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) throw std::invalid_argument("axis out of range");
  return axis;
}

// Over the trailing axes from `axis` on, as `inner`-sized rows: f(row values) -> row result values.
template <class F>
RealTensor per_row(const RealTensor& x, int64_t axis, bool keep_row, F f) {
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis); i < x.shape.size(); ++i) inner *= x.shape[i];
  RealTensor out;
  out.shape = x.shape;
  if (!keep_row)
    for (size_t i = static_cast<size_t>(axis); i < out.shape.size(); ++i) out.shape[i] = 1;
  const int64_t total = shape_elements(x.shape);
  for (int64_t r = 0; inner > 0 && r < total / inner; ++r) {
    const auto first = x.values.begin() + r * inner;
    const std::vector<double> row(first, first + inner);
    const std::vector<double> result = f(row);
    out.values.insert(out.values.end(), result.begin(), result.end());
  }
  return out;
}

double reduce(const std::string& op, const std::vector<double>& row) {
  double acc = op == "ReduceMax" ? -HUGE_VAL : op == "ReduceMin" ? HUGE_VAL : 0;
  for (double v : row)
    acc = op == "ReduceMax" ? std::max(acc, v) : op == "ReduceMin" ? std::min(acc, v) : acc + v;
  return op == "ReduceMean" ? acc / static_cast<double>(row.size()) : acc;
}

const std::map<std::string, double (*)(double)>& unary() {
  static const std::map<std::string, double (*)(double)> ops = {
      {"Relu", [](double x) { return std::max(x, 0.0); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Neg", [](double x) { return -x; }},
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Reciprocal", [](double x) { return 1 / x; }},
      {"Identity", [](double x) { return x; }},
      {"Cast", [](double x) { return x; }},
  };
  return ops;
}

// The first n inputs are given (not omitted).
void require_inputs(const std::vector<const RealTensor*>& in, size_t n) {
  if (in.size() < n || std::any_of(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n),
                                   [](const RealTensor* t) { return t == nullptr; }))
    throw std::invalid_argument("needs " + std::to_string(n) + " inputs");
}

double number_attr(const ComputeNode& node, const char* key, double fallback) {
  return node.attrs.contains(key) && node.attrs[key].is_number() ? node.attrs[key].get<double>() : fallback;
}

// The activations with parameters and the inference batch normalization, or nothing for other operators.
std::optional<RealTensor> evaluate_activation(const ComputeNode& node,
                                              const std::vector<const RealTensor*>& in) {
  const std::string& op = node.op;
  const auto attr = [&](const char* key, double fallback) { return number_attr(node, key, fallback); };
  const auto need = [&](size_t n) { require_inputs(in, n); };
  if (op == "LeakyRelu" || op == "Elu" || op == "Selu" || op == "HardSigmoid" || op == "HardSwish" ||
      op == "Softplus") {
    need(1);
    const double alpha = attr("alpha", op == "LeakyRelu"     ? 0.01
                                       : op == "HardSigmoid" ? 0.2
                                       : op == "Selu"        ? 1.67326319217681884765625
                                                             : 1.0);
    const double beta = attr("beta", 0.5), gamma = attr("gamma", 1.05070102214813232421875);
    return elementwise({in[0]}, [&](const std::vector<double>& a) {
      const double x = a[0];
      if (op == "LeakyRelu") return x >= 0 ? x : alpha * x;
      if (op == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
      if (op == "Selu") return gamma * (x > 0 ? x : alpha * (std::exp(x) - 1));
      if (op == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
      if (op == "HardSwish") return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
      return std::log1p(std::exp(x));  // Softplus
    });
  }
  if (op == "Clip") {
    need(1);
    const double lo = in.size() > 1 && in[1] ? in[1]->values.at(0) : attr("min", -HUGE_VAL);
    const double hi = in.size() > 2 && in[2] ? in[2]->values.at(0) : attr("max", HUGE_VAL);
    return elementwise({in[0]}, [&](const std::vector<double>& a) { return std::clamp(a[0], lo, hi); });
  }
  if (op == "BatchNormalization") {  // inference: per channel (axis 1) statistics and affine parameters
    need(5);
    const RealTensor& x = *in[0];
    if (x.shape.size() < 2) throw std::invalid_argument("needs a channel axis");
    std::vector<int64_t> channel(x.shape.size(), 1);
    channel[1] = x.shape[1];
    std::vector<RealTensor> per_channel;
    for (size_t i = 1; i < 5; ++i) {
      if (shape_elements(in[i]->shape) != x.shape[1])
        throw std::invalid_argument("parameters are not per channel");
      per_channel.push_back({channel, in[i]->values});
    }
    const double eps = attr("epsilon", 1e-5);
    return elementwise(
        {&x, &per_channel[0], &per_channel[1], &per_channel[2], &per_channel[3]},
        [&](const std::vector<double>& a) { return (a[0] - a[3]) / std::sqrt(a[4] + eps) * a[1] + a[2]; });
  }
  return std::nullopt;
}

RealTensor evaluate_node(const ComputeNode& node, const std::vector<const RealTensor*>& in) {
  const std::string& op = node.op;
  const auto need = [&](size_t n) { require_inputs(in, n); };
  if (auto u = unary().find(op); u != unary().end()) {
    need(1);
    return elementwise({in[0]}, [f = u->second](const std::vector<double>& a) { return f(a[0]); });
  }
  static const std::map<std::string, double (*)(double, double)> binary = {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sum", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Div", [](double a, double b) { return a / b; }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }},
      {"Max", [](double a, double b) { return std::max(a, b); }},
      {"Min", [](double a, double b) { return std::min(a, b); }},
      {"Equal", [](double a, double b) { return a == b ? 1.0 : 0.0; }},
      {"Less", [](double a, double b) { return a < b ? 1.0 : 0.0; }},
      {"Greater", [](double a, double b) { return a > b ? 1.0 : 0.0; }},
  };
  if (auto b = binary.find(op); b != binary.end()) {
    need(2);
    std::vector<const RealTensor*> args;
    for (const RealTensor* t : in)
      if (t) args.push_back(t);
    return elementwise(args, [f = b->second](const std::vector<double>& a) {
      double acc = a[0];
      for (size_t i = 1; i < a.size(); ++i) acc = f(acc, a[i]);
      return acc;
    });
  }
  if (auto activation = evaluate_activation(node, in)) return *activation;
  if (op == "Where") {
    need(3);
    return elementwise({in[0], in[1], in[2]},
                       [](const std::vector<double>& a) { return a[0] != 0 ? a[1] : a[2]; });
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    need(1);
    const int64_t axis = axis_of(node.attrs, "axis", -1, in[0]->shape.size());
    if (axis != static_cast<int64_t>(in[0]->shape.size()) - 1)
      throw std::invalid_argument("only over the last axis");
    return per_row(*in[0], axis, true, [&](const std::vector<double>& row) {
      const double most = *std::max_element(row.begin(), row.end());
      double sum = 0;
      for (double v : row) sum += std::exp(v - most);
      std::vector<double> out;
      for (double v : row)
        out.push_back(op == "Softmax" ? std::exp(v - most) / sum : v - most - std::log(sum));
      return out;
    });
  }
  if (op == "LayerNormalization") {
    need(2);
    const int64_t axis = axis_of(node.attrs, "axis", -1, in[0]->shape.size());
    const double eps = number_attr(node, "epsilon", 1e-5);
    RealTensor normal = per_row(*in[0], axis, true, [&](const std::vector<double>& row) {
      const double mean = reduce("ReduceMean", row);
      double var = 0;
      for (double v : row) var += (v - mean) * (v - mean);
      var /= static_cast<double>(row.size());
      std::vector<double> out;
      for (double v : row) out.push_back((v - mean) / std::sqrt(var + eps));
      return out;
    });
    normal = elementwise({&normal, in[1]}, [](const std::vector<double>& a) { return a[0] * a[1]; });
    if (in.size() > 2 && in[2])
      normal = elementwise({&normal, in[2]}, [](const std::vector<double>& a) { return a[0] + a[1]; });
    return normal;
  }
  if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    need(1);
    const size_t rank = in[0]->shape.size();
    std::vector<int64_t> axes;
    if (node.attrs.contains("axes") && node.attrs["axes"].is_array())
      axes = node.attrs["axes"].get<std::vector<int64_t>>();
    else if (in.size() > 1 && in[1])
      for (double a : in[1]->values) axes.push_back(static_cast<int64_t>(a));
    for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(rank) : a;
    std::sort(axes.begin(), axes.end());
    // The trailing axes only (a row's statistic), which is what the lowering groups as row-wise.
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] != static_cast<int64_t>(rank - axes.size() + i))
        throw std::invalid_argument("reduces inner axes");
    if (axes.empty()) throw std::invalid_argument("reduces all axes");
    const bool keep = !node.attrs.contains("keepdims") || node.attrs["keepdims"].get<int64_t>() != 0;
    RealTensor out = per_row(*in[0], axes.front(), false, [&](const std::vector<double>& row) {
      return std::vector<double>{reduce(op, row)};
    });
    if (!keep) out.shape.resize(static_cast<size_t>(axes.front()));
    return out;
  }
  throw std::invalid_argument("no binary64 form here");
}

}  // namespace

RealTensor evaluate_compute(
    const VectorCompute& compute, const std::vector<RealTensor>& reads,
    const std::function<RealTensor(const std::string&, const std::vector<int64_t>&)>& param) {
  std::vector<RealTensor> values;
  std::vector<RealTensor> held;  // the parameters and constants of the current node
  for (size_t n = 0; n < compute.nodes.size(); ++n) {
    const ComputeNode& node = compute.nodes[n];
    const std::string where = "node " + std::to_string(n) + " (" + node.op + ")";
    held.clear();
    held.reserve(node.in.size());
    std::vector<const RealTensor*> in;
    for (const ComputeArg& a : node.in) {
      switch (a.kind) {
        case ComputeArg::Kind::None:
          in.push_back(nullptr);
          break;
        case ComputeArg::Kind::Node:
          in.push_back(&values[static_cast<size_t>(a.index)]);
          break;
        case ComputeArg::Kind::Read:
          if (a.index >= static_cast<int64_t>(reads.size()))
            throw std::invalid_argument(where + ": reads operand " + std::to_string(a.index) + " of " +
                                        std::to_string(reads.size()));
          held.push_back(reads[static_cast<size_t>(a.index)]);
          if (!a.shape.empty() && shape_elements(a.shape) == static_cast<int64_t>(held.back().values.size()))
            held.back().shape = a.shape;  // the operand in its ONNX shape
          in.push_back(&held.back());
          break;
        case ComputeArg::Kind::Param:
          held.push_back(param(a.name, a.shape));
          in.push_back(&held.back());
          break;
        case ComputeArg::Kind::Value:
          if (shape_elements(a.shape) != static_cast<int64_t>(a.values.size()))
            throw std::invalid_argument(where + ": a constant of " + std::to_string(a.values.size()) +
                                        " values for its shape");
          held.push_back({a.shape, a.values});
          in.push_back(&held.back());
          break;
        case ComputeArg::Kind::Unknown:
          throw std::invalid_argument(where + ": its input '" + a.name + "' has no known value");
      }
    }
    try {
      values.push_back(evaluate_node(node, in));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(where + ": an attribute of the wrong type (" + e.what() + ")");
    }
  }
  return values.back();
}

}  // namespace mlsys::t10
