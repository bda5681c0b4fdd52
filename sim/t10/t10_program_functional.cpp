// Functional mode for whole programs (t10_program_functional.hpp).
#include "sim/t10/t10_program_functional.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/t10/t10_functional.hpp"
#include "sim/t10/t10_layouts.hpp"
#include "sim/t10/t10_program_sim.hpp"
#include "sim/t10/t10_vector_compute.hpp"
#include "sim/t10/t10_vector_cores.hpp"

namespace mlsys::t10 {
namespace {

using Matrix = std::vector<int64_t>;
constexpr int kVectorBits = 30;  // a vector operator's real output, rounded to this many significant bits

int bit_length(int64_t most) {
  int bits = 0;
  while (bits < 63 && (int64_t{1} << bits) <= most) ++bits;
  return bits;
}

// A MatMul's operands' significant bits: the engine's 64-bit sums of k products stay below 2^62.
int operand_bits(int64_t k) {
  return std::min(30, (62 - bit_length(k)) / 2);
}

// Integers in [-3, 3] drawn from the seed and a name (FNV-1a), so that every reader sees the same tensor.
Matrix draw_named(uint64_t seed, const std::string& name, int64_t size) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return drawn_integers(seed ^ h, size);
}

std::string listed(const std::vector<std::string>& ops) {
  std::string list;
  for (const std::string& o : ops) list += (list.empty() ? "" : ", ") + o;
  return list;
}

// The vector engine's forms: an Add group with a ReLU after it, a MaxPool, a row sum (ReduceSum), a row mean
// (ReduceMean, GlobalAveragePool: the engine's sum, then divided), and the operators that place or select
// their reads (Concat, a Gather of one index: the views do it, the engine adds the placed parts); for a file
// without functions, the stand-ins of its type.
struct IntegerForm {
  bool ok = true, clamp = false, max = false, mean = false;
};
IntegerForm integer_form(const TensorOperator& op) {
  IntegerForm f;
  const std::vector<std::string>& ops = op.function;
  if (ops.empty()) return f;
  const auto only = [&](const char* type) { return ops == std::vector<std::string>{type}; };
  if (only("MaxPool") && !op.reduces) {
    f.max = true;
    return f;
  }
  if ((only("ReduceMean") || only("GlobalAveragePool")) && op.reduces) {
    f.mean = true;
    return f;
  }
  bool sums = !op.reduces;
  for (size_t j = 0; j < ops.size() && sums; ++j)
    sums = ops[j] == "Add" || ops[j] == "Sum" || (ops[j] == "Relu" && j + 1 == ops.size());
  f.ok = sums || (only("ReduceSum") && op.reduces) || ((only("Concat") || only("Gather")) && !op.reduces);
  f.clamp = ops.back() == "Relu" && op.type != OperatorType::Relu;
  return f;
}

// Whether the vector engine computes the operator on integers: no imported nodes, or integer ones reading
// only activations (a residual Add, a ReLU).
bool on_vector_engine(const TensorOperator& op) {
  if (!integer_form(op).ok) return false;
  if (!op.compute) return true;
  for (const ComputeNode& node : op.compute->nodes)
    for (const ComputeArg& a : node.in)
      if (a.kind != ComputeArg::Kind::Node && a.kind != ComputeArg::Kind::Read) return false;
  return true;
}

int64_t rounded_shift(int64_t x, int bits) {  // x / 2^bits, rounded to nearest (ties away from zero)
  if (bits <= 0) return x;
  if (x == std::numeric_limits<int64_t>::min()) return x;  // the padding marker stays one
  const int64_t half = int64_t{1} << (bits - 1);
  return x >= 0 ? (x + half) >> bits : -((-x + half) >> bits);
}

// At most `bits` significant bits: shifted right as needed, the scale lowered by as much.
ScaledTensor narrowed(ScaledTensor t, int bits) {
  int64_t most = 0;
  for (int64_t v : t.ints)
    if (v != std::numeric_limits<int64_t>::min()) most = std::max(most, v < 0 ? -v : v);
  const int excess = bit_length(most) - bits;
  if (excess <= 0) return t;
  for (int64_t& v : t.ints) v = rounded_shift(v, excess);
  t.scale -= excess;
  return t;
}

// The same values at a higher scale (exact), or at a lower one (rounded).
ScaledTensor at_scale(ScaledTensor t, int scale) {
  if (scale < t.scale) {
    for (int64_t& v : t.ints) v = rounded_shift(v, t.scale - scale);
  } else if (scale > t.scale) {
    const int up = scale - t.scale;
    for (int64_t& v : t.ints) {
      if (v == std::numeric_limits<int64_t>::min()) continue;
      if (up >= 62 || (v < 0 ? -v : v) > (int64_t{1} << (62 - up)))
        throw std::invalid_argument("functional mode's fixed point: aligning scales would overflow");
      v *= int64_t{1} << up;
    }
  }
  t.scale = scale;
  return t;
}

double real(const ScaledTensor& t, size_t e) {
  return std::ldexp(static_cast<double>(t.ints[e]), -t.scale);
}

// Real values as fixed point with kVectorBits significant bits (integers that fit stay exact).
ScaledTensor from_real(const std::vector<double>& values, const std::string& op) {
  double most = 0;
  bool integral = true;
  for (double v : values) {
    if (!std::isfinite(v))
      throw std::invalid_argument("functional mode: '" + op + "' computes a non-finite value (" +
                                  std::to_string(v) + ")");
    most = std::max(most, std::fabs(v));
    integral = integral && v == std::round(v);
  }
  int scale = most > 0 ? kVectorBits - std::ilogb(most) - 1 : 0;
  if (integral && most < std::ldexp(1.0, kVectorBits)) scale = 0;  // exact as it is
  scale = std::min(scale, 60);
  ScaledTensor t;
  t.scale = scale;
  for (double v : values) t.ints.push_back(static_cast<int64_t>(std::llround(std::ldexp(v, scale))));
  return t;
}

}  // namespace

ProgramValues::ProgramValues(const TensorProgram& program, uint64_t seed, std::vector<DrawnValues>& drawn)
    : program_(program), seed_(seed), drawn_(drawn), outputs_(program.ops.size()) {
  for (size_t i = 0; i < program.ops.size(); ++i) index_.emplace(program.ops[i].name, i);
  chain_ = is_chain(program);
  int64_t held = 0;  // every operator's output is kept for its readers
  for (const TensorOperator& op : program.ops) {
    const auto [out_rows, out_cols] = output_shape(op);
    held += out_rows * out_cols;
    const auto [rows, cols] = input_shape(op, 0);
    if (op.type != OperatorType::MatMul && static_cast<double>(op.inputs) * static_cast<double>(rows * cols) >
                                               static_cast<double>(kMaxFunctionalOperandElements))
      throw std::invalid_argument("functional mode holds every operand: '" + op.name + "' reads " +
                                  std::to_string(op.inputs) + " of " + std::to_string(rows * cols) +
                                  " elements, above " + std::to_string(kMaxFunctionalOperandElements) +
                                  " in all");
    if (!chain_ && op.reads.empty())
      throw std::invalid_argument("functional mode follows the data flow: '" + op.name +
                                  "' does not say what it reads (re-import with mlsys-import --t10)");
    for (int operand = 0; operand < 2; ++operand) {
      const auto [rows, cols] = input_shape(op, operand);
      if (rows * cols > kMaxExactElements)
        throw std::invalid_argument("functional mode holds every operand: '" + op.name + "' has " +
                                    std::to_string(rows * cols) + " elements in one, above " +
                                    std::to_string(kMaxExactElements));
    }
    if (held > kMaxFunctionalHeldElements)
      throw std::invalid_argument("functional mode keeps every operator's output: " + std::to_string(held) +
                                  " elements by '" + op.name + "', above " +
                                  std::to_string(kMaxFunctionalHeldElements));
    if (op.type != OperatorType::MatMul && !op.compute && !integer_form(op).ok)
      throw std::invalid_argument("functional mode: '" + op.name + "' computes " + listed(op.function) +
                                  " and the file does not give its nodes (`compute`, written by mlsys-import "
                                  "--t10); without them it runs sums, ReLU, MaxPool, ReduceSum, ReduceMean, "
                                  "GlobalAveragePool, Concat and a Gather of one index");
  }
}

ScaledTensor ProgramValues::draw(const TensorOperator& op, size_t i, int slot, int64_t rows, int64_t cols) {
  ScaledTensor t{program_operand(seed_, i, slot, rows, cols), 0};
  drawn_.push_back({op.name, slot, "", "", {rows, cols}, t.ints});
  return t;
}

const Matrix& ProgramValues::param(const std::string& name, const std::vector<int64_t>& shape) {
  auto it = params_.find(name);
  if (it == params_.end()) {
    if (shape_elements(shape) > kMaxExactElements)
      throw std::invalid_argument("functional mode: the parameter '" + name + "' has more than 2^24 values");
    it = params_.emplace(name, draw_named(seed_, "param:" + name, shape_elements(shape))).first;
    drawn_.push_back({"", -1, "", name, shape, it->second});
  } else if (static_cast<int64_t>(it->second.size()) != shape_elements(shape)) {
    throw std::invalid_argument("functional mode: the parameter '" + name + "' is read with two shapes");
  }
  return it->second;
}

// A MatMul's B from its learned parameter, per the file's layout (t10_program.hpp's WeightSource).
ScaledTensor ProgramValues::weight(const TensorOperator& op) {
  const WeightSource& w = *op.weight;
  const Matrix& v = param(w.name, w.shape);
  const int64_t k = op.k, n = op.n, groups = op.batch;
  const bool fits = w.layout == "conv" ? w.shape.size() == 4 && w.shape[0] == groups * n &&
                                             w.shape[1] * w.shape[2] * w.shape[3] == k
                                       : groups == 1 && shape_elements(w.shape) == k * n &&
                                             w.shape.size() == 2 && w.shape[w.layout == "nk" ? 1 : 0] == k;
  if (!fits)
    throw std::invalid_argument("functional mode: '" + op.name + "''s weight '" + w.name +
                                "' does not have the product's shape");
  ScaledTensor b{Matrix(static_cast<size_t>(groups * k * n)), 0};
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t c = 0; c < n; ++c) {
        // conv: row q = (channel, i, j) of group g, column c = output channel g*n + c: weight[g*n + c][q].
        const int64_t from = w.layout == "conv" ? (g * n + c) * k + q
                             : w.layout == "nk" ? c * k + q
                                                : q * n + c;
        b.ints[static_cast<size_t>((g * k + q) * n + c)] = v[static_cast<size_t>(from)];
      }
  return b;
}

std::vector<ScaledTensor> ProgramValues::operands(size_t i) {
  const TensorOperator& op = program_.ops[i];
  const bool matmul = op.type == OperatorType::MatMul;
  const int slots = matmul ? 2 : static_cast<int>(op.inputs);
  std::vector<ScaledTensor> out;
  size_t next_read = 0;
  for (int slot = 0; slot < slots; ++slot) {
    const auto [rows, cols] = input_shape(op, matmul ? slot : 0);
    const TensorOperator::Read* r = next_read < op.reads.size() ? &op.reads[next_read] : nullptr;
    if (r && !r->through.empty() && r->through.back().op == "Window") {  // every window position at once
      ++next_read;
      const ScaledTensor all = read(op, *r, op.inputs * rows * cols, integer_form(op).max);
      for (int64_t at = 0; at < op.inputs; ++at)
        out.push_back({Matrix(all.ints.begin() + at * rows * cols, all.ints.begin() + (at + 1) * rows * cols),
                       all.scale});
      slot += static_cast<int>(op.inputs) - 1;
    } else if (chain_ && slot == 0 && i > 0) {
      out.push_back(outputs_[i - 1]);
      if (out.back().ints.size() != static_cast<size_t>(rows * cols))
        throw std::invalid_argument("functional mode follows a chain: '" + op.name + "' reads " +
                                    std::to_string(rows) + "x" + std::to_string(cols) +
                                    " but its predecessor wrote " + std::to_string(out.back().ints.size()) +
                                    " elements");
    } else if (r) {
      ++next_read;
      out.push_back(read(op, *r, rows * cols, false));
    } else if (matmul && slot == 1 && op.weight) {
      out.push_back(weight(op));
    } else if (matmul || (chain_ && slot == 0)) {  // a weight, or a chain's first input
      out.push_back(draw(op, i, slot, rows, cols));
    } else if (!op.compute) {  // a row of constants repeated over the rows (a bias)
      const ScaledTensor row = draw(op, i, slot, 1, cols);
      ScaledTensor& full = out.emplace_back();
      for (int64_t e = 0; e < rows * cols; ++e) full.ints.push_back(row.ints[static_cast<size_t>(e % cols)]);
    }
  }
  return out;
}

ScaledTensor ProgramValues::read(const TensorOperator& op, const TensorOperator::Read& r, int64_t size,
                                 bool skip_padding) {
  const ScaledTensor* source = nullptr;
  ScaledTensor input;
  if (!r.from.empty()) {
    source = &outputs_[index_.at(r.from)];
  } else {
    const std::string name = r.input.empty() ? op.name + ".input" : r.input;
    auto it = inputs_.find(name);
    if (it == inputs_.end()) {
      const std::vector<int64_t> shape = r.from_shape.empty() ? std::vector<int64_t>{size} : r.from_shape;
      it = inputs_.emplace(name, draw_named(seed_, name, shape_elements(shape))).first;
      drawn_.push_back({"", -1, name, "", shape, it->second});
    }
    input.ints = it->second;
    source = &input;
  }
  const int64_t produced = static_cast<int64_t>(source->ints.size());
  if (r.through.empty() && !r.from_channels_last && produced == size) return *source;  // the same row-major
  if (const std::string why = views_unmappable(r.from_shape, produced, r.through, size); !why.empty())
    throw std::invalid_argument("functional mode reads '" + op.name + "''s operand from " +
                                (r.from.empty() ? "a graph input" : "'" + r.from + "'") + ": " + why);
  ViewMap view(r.from_shape, r.through, r.from_channels_last);
  ScaledTensor m{Matrix(static_cast<size_t>(size), skip_padding ? std::numeric_limits<int64_t>::min() : 0),
                 source->scale};
  for (int64_t e = 0; e < size; ++e)
    if (const int64_t at = view.source(e); at >= 0)
      m.ints[static_cast<size_t>(e)] = source->ints[static_cast<size_t>(at)];
  return m;
}

std::optional<CoreViolation> ProgramValues::run(size_t i, const OperatorOption& option) {
  const TensorOperator& op = program_.ops[i];
  if (op.type == OperatorType::MatMul) return run_matmul(i, option, operands(i));
  return run_vector(i, option, operands(i));
}

// Product by product (a batch's products on the plan's group of cores, one after another), each gathered C
// checked against A·B by the engine.
std::optional<CoreViolation> ProgramValues::run_matmul(size_t i, const OperatorOption& option,
                                                       std::vector<ScaledTensor> ab) {
  const TensorOperator& op = program_.ops[i];
  const ScaledTensor a = narrowed(std::move(ab[0]), operand_bits(op.k));
  const ScaledTensor b = narrowed(std::move(ab[1]), operand_bits(op.k));
  Problem problem = operator_problem(program_, op);
  problem.batch = 1;
  Plan plan = option.plan;
  plan.pb = 1;
  ScaledTensor& c = outputs_[i];
  c.scale = a.scale + b.scale;
  c.ints.clear();
  for (int64_t g = 0; g < op.batch; ++g) {
    const Matrix a_g(a.ints.begin() + g * op.m * op.k, a.ints.begin() + (g + 1) * op.m * op.k);
    const Matrix b_g(b.ints.begin() + g * op.k * op.n, b.ints.begin() + (g + 1) * op.k * op.n);
    Matrix c_g;
    CoreSimOptions engine;
    engine.timing = CoreTiming::Calibrated;
    engine.functional = true;
    engine.functional_check = FunctionalCheck::Exact;
    engine.operand_a = &a_g, engine.operand_b = &b_g, engine.gathered_c = &c_g;
    const CoresResult result = simulate_cores(problem, plan, engine);
    if (result.violation) return result.violation;
    c.ints.insert(c.ints.end(), c_g.begin(), c_g.end());
  }
  return std::nullopt;
}

// On the vector engine core by core (integer forms), or the imported nodes in binary64.
std::optional<CoreViolation> ProgramValues::run_vector(size_t i, const OperatorOption& option,
                                                       std::vector<ScaledTensor> in) {
  const TensorOperator& op = program_.ops[i];
  if (on_vector_engine(op)) {
    // One scale for all inputs: the finest, unless a coarse large input would then overflow (the sum of
    // `in.size()` of them must stay below 2^62).
    int scale = 0;
    for (const ScaledTensor& t : in) scale = std::max(scale, t.scale);
    for (const ScaledTensor& t : in) {
      int64_t most = 0;
      for (int64_t v : t.ints)
        if (v != std::numeric_limits<int64_t>::min()) most = std::max(most, v < 0 ? -v : v);
      scale = std::min(scale, t.scale + 61 - bit_length(most) - bit_length(static_cast<int64_t>(in.size())));
    }
    std::vector<Matrix> inputs;
    for (ScaledTensor& t : in) inputs.push_back(at_scale(std::move(t), scale).ints);
    VectorCoresOptions engine;
    engine.reduces = op.reduces;
    engine.inputs = &inputs, engine.output = &outputs_[i].ints;
    const IntegerForm form = integer_form(op);
    engine.clamp = form.clamp, engine.max = form.max;
    outputs_[i].scale = scale;
    const VectorCoresResult cores =
        simulate_vector_cores(vector_op(op), option.plan.f_op[0], std::max<int64_t>(option.plan.f_op[2], 1),
                              program_.dtype_bytes, program_.chip, engine);
    if (form.mean) {  // the row sums the cores reduced, over the row's length
      std::vector<double> means;
      for (size_t r = 0; r < outputs_[i].ints.size(); ++r)
        means.push_back(real(outputs_[i], r) / static_cast<double>(op.n));
      outputs_[i] = from_real(means, op.name);
    }
    return cores.violation;
  }
  std::vector<RealTensor> reads;
  for (const ScaledTensor& t : in) {
    RealTensor& r = reads.emplace_back();
    r.shape = {static_cast<int64_t>(t.ints.size())};
    for (size_t e = 0; e < t.ints.size(); ++e) r.values.push_back(real(t, e));
  }
  const RealTensor out =
      evaluate_compute(*op.compute, reads, [&](const std::string& name, const std::vector<int64_t>& shape) {
        const Matrix& v = param(name, shape);
        return RealTensor{shape, std::vector<double>(v.begin(), v.end())};
      });
  const auto [rows, cols] = output_shape(op);
  if (static_cast<int64_t>(out.values.size()) != rows * cols)
    throw std::invalid_argument("functional mode: '" + op.name + "' computes " +
                                std::to_string(out.values.size()) + " values for its " +
                                std::to_string(rows) + " x " + std::to_string(cols) + " output");
  outputs_[i] = from_real(out.values, op.name);
  return std::nullopt;
}

}  // namespace mlsys::t10
