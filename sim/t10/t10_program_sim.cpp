// The whole-model program on the all-cores engine (t10_program_sim.hpp).
#include "sim/t10/t10_program_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>

#include "sim/t10/t10_functional.hpp"
#include "sim/t10/t10_layouts.hpp"
#include "sim/t10/t10_vector_cores.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys::t10 {
namespace {

constexpr double kNsPerCycle = 1e-3;  // trace times are microseconds; one T10 cycle is one nanosecond

using Matrix = std::vector<int64_t>;

auto plan_key(const TensorOperator& op, const Plan& p) {
  return std::make_tuple(op.batch, op.m, op.k, op.n, p.pb, p.f_op, p.am, p.ak, p.bk, p.bn, p.cm, p.cn);
}

// What a vector operator computes in functional mode: the stand-in of its type (a file without functions),
// or its ONNX group's integer operators: sums (Add), a ReLU after them, a row sum (ReduceSum).
struct VectorFunction {
  bool clamp = false;  // an Add group ending in a Relu
  bool max = false;    // a MaxPool: the largest of its window's operands
};
VectorFunction vector_function(const TensorOperator& op) {
  VectorFunction f;
  const std::vector<std::string>& ops = op.function;
  if (ops.empty()) return f;
  if (ops == std::vector<std::string>{"MaxPool"} && !op.reduces) {
    f.max = true;
    return f;
  }
  const bool reduce_sum = ops == std::vector<std::string>{"ReduceSum"} && op.reduces;
  bool sums = !op.reduces;
  for (size_t j = 0; j < ops.size() && sums; ++j)
    sums = ops[j] == "Add" || ops[j] == "Sum" || (ops[j] == "Relu" && j + 1 == ops.size());
  if (!reduce_sum && !sums) {
    std::string list;
    for (const std::string& o : ops) list += (list.empty() ? "" : ", ") + o;
    throw std::invalid_argument("functional mode computes on integers: '" + op.name + "' computes " + list +
                                "; it runs groups of Add with a Relu after them, MaxPool, ReduceSum, and files "
                                "without functions (with stand-ins)");
  }
  f.clamp = ops.back() == "Relu" && op.type != OperatorType::Relu;
  return f;
}

// A graph input's integers, drawn from the seed and its name (FNV-1a), so every reader sees the same tensor.
Matrix graph_input(uint64_t seed, const std::string& name, int64_t size) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  std::mt19937_64 rng(seed ^ h);
  Matrix m(static_cast<size_t>(size));
  for (int64_t& v : m) v = static_cast<int64_t>(rng() % 7) - 3;
  return m;
}

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Functional mode's values: each operator's operands read along the data flow (docs/t10-programs.md#simulation)
// from its producers' outputs or the graph inputs, through the views as index maps; drawn integers where the
// file names no producer (weights, biases, a chain's first input).
class FunctionalData {
 public:
  FunctionalData(const TensorProgram& program, uint64_t seed, std::vector<DrawnValues>& drawn)
      : program_(program), seed_(seed), drawn_(drawn), outputs_(program.ops.size()) {
    for (size_t i = 0; i < program.ops.size(); ++i) index_.emplace(program.ops[i].name, i);
    chain_ = std::all_of(program.ops.begin(), program.ops.end(),
                         [](const TensorOperator& op) { return op.reads.empty() && op.after.empty(); });
    for (const TensorOperator& op : program.ops) {
      if (!chain_ && op.reads.empty())
        throw std::invalid_argument("functional mode follows the data flow: '" + op.name +
                                    "' does not say what it reads (re-import with mlsys-import --t10)");
      if (op.type == OperatorType::MatMul && op.batch != 1)
        throw std::invalid_argument("functional mode runs MatMuls without a batch; '" + op.name + "' has " +
                                    std::to_string(op.batch));
      for (int operand = 0; operand < 2; ++operand) {
        const auto [rows, cols] = input_shape(op, operand);
        if (rows * cols > kMaxExactElements)
          throw std::invalid_argument("functional mode holds every operand: '" + op.name + "' has " +
                                      std::to_string(rows * cols) + " elements in one, above " +
                                      std::to_string(kMaxExactElements));
      }
      if (op.type != OperatorType::MatMul) vector_function(op);
    }
  }

  // A MatMul's A and B, or a vector operator's inputs (each rows x cols; a pooling's window read gives one
  // per window position).
  std::vector<Matrix> operands(size_t i) {
    const TensorOperator& op = program_.ops[i];
    const bool matmul = op.type == OperatorType::MatMul;
    const int slots = matmul ? 2 : static_cast<int>(op.inputs);
    std::vector<Matrix> out;
    size_t next_read = 0;
    for (int slot = 0; slot < slots; ++slot) {
      const auto [rows, cols] = input_shape(op, matmul ? slot : 0);
      const TensorOperator::Read* r = next_read < op.reads.size() ? &op.reads[next_read] : nullptr;
      if (r && !r->through.empty() && r->through.back().op == "Window") {  // all positions at once
        ++next_read;
        const Matrix all = read(op, *r, op.inputs * rows * cols, vector_function(op).max);
        for (int64_t at = 0; at < op.inputs; ++at)
          out.emplace_back(all.begin() + at * rows * cols, all.begin() + (at + 1) * rows * cols);
        slot += static_cast<int>(op.inputs) - 1;
        continue;
      }
      if (chain_ && slot == 0 && i > 0) {
        out.push_back(outputs_[i - 1]);
        if (out.back().size() != static_cast<size_t>(rows * cols))
          throw std::invalid_argument("functional mode follows a chain: '" + op.name + "' reads " +
                                      std::to_string(rows) + "x" + std::to_string(cols) +
                                      " but its predecessor wrote " + std::to_string(out.back().size()) +
                                      " elements");
      } else if (r) {
        ++next_read;
        out.push_back(read(op, *r, rows * cols, false));
      } else if (matmul || (chain_ && slot == 0)) {  // a weight, or a chain's first input
        out.push_back(draw(op, i, slot, rows, cols));
      } else {  // a row of constants repeated over the rows (a bias)
        const Matrix row = draw(op, i, slot, 1, cols);
        Matrix& full = out.emplace_back(static_cast<size_t>(rows * cols));
        for (size_t e = 0; e < full.size(); ++e) full[e] = row[e % static_cast<size_t>(cols)];
      }
    }
    return out;
  }

  Matrix& output(size_t i) { return outputs_[i]; }

 private:
  Matrix draw(const TensorOperator& op, size_t i, int slot, int64_t rows, int64_t cols) {
    Matrix m = program_operand(seed_, i, slot, rows, cols);
    drawn_.push_back({op.name, slot, "", {rows, cols}, m});
    return m;
  }

  // One operand read from its producer's output or a graph input, through its views; `skip_padding`: a
  // padding element is the least integer (a max pooling never picks it), not 0.
  Matrix read(const TensorOperator& op, const TensorOperator::Read& r, int64_t size, bool skip_padding) {
    const Matrix* source = nullptr;
    if (!r.from.empty()) {
      source = &outputs_[index_.at(r.from)];
    } else {
      const std::string name = r.input.empty() ? op.name + ".input" : r.input;
      auto it = inputs_.find(name);
      if (it == inputs_.end()) {
        const std::vector<int64_t> shape = r.from_shape.empty() ? std::vector<int64_t>{size} : r.from_shape;
        it = inputs_.emplace(name, graph_input(seed_, name, elements_of(shape))).first;
        drawn_.push_back({"", -1, name, shape, it->second});
      }
      source = &it->second;
    }
    const int64_t produced = static_cast<int64_t>(source->size());
    if (r.through.empty() && !r.from_channels_last && produced == size) return *source;  // the same row-major
    if (const std::string why = views_unmappable(r.from_shape, produced, r.through, size); !why.empty())
      throw std::invalid_argument("functional mode reads '" + op.name + "''s operand from " +
                                  (r.from.empty() ? "a graph input" : "'" + r.from + "'") + ": " + why);
    ViewMap view(r.from_shape, r.through, r.from_channels_last);
    Matrix m(static_cast<size_t>(size), skip_padding ? std::numeric_limits<int64_t>::min() : 0);
    for (int64_t e = 0; e < size; ++e)
      if (const int64_t at = view.source(e); at >= 0) m[static_cast<size_t>(e)] = (*source)[static_cast<size_t>(at)];
    return m;
  }

  const TensorProgram& program_;
  const uint64_t seed_;
  std::vector<DrawnValues>& drawn_;
  std::vector<Matrix> outputs_;
  std::map<std::string, size_t> index_;
  std::map<std::string, Matrix> inputs_;
  bool chain_ = false;
};

}  // namespace

std::vector<int64_t> program_operand(uint64_t seed, size_t op, int slot, int64_t rows, int64_t cols) {
  std::mt19937_64 rng(seed * 1000003 + op * 131 + static_cast<uint64_t>(slot));
  Matrix m(static_cast<size_t>(rows * cols));
  for (int64_t& v : m) v = static_cast<int64_t>(rng() % 7) - 3;
  return m;
}

std::string ProgramRun::first_failure() const {
  for (const OperatorRun& r : ops) {
    if (r.violation) return "operator '" + r.name + "': " + r.violation->message;
    if (!r.layout_problem.empty()) return "the layout change into '" + r.name + "': " + r.layout_problem;
  }
  if (functional_mismatch) return *functional_mismatch;
  if (std::fabs(makespan - model_total) > 1e-6 * std::max(1.0, model_total))
    return "the engine's makespan " + std::to_string(makespan) + " differs from the model's total " +
           std::to_string(model_total);
  return "";
}

std::vector<int64_t> reference_output(const TensorProgram& program, uint64_t seed) {
  Matrix x;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorOperator& op = program.ops[i];
    if (i == 0) x = program_operand(seed, 0, 0, op.m, op.type == OperatorType::MatMul ? op.k : op.n);
    if (op.type == OperatorType::MatMul) {
      const Matrix w = program_operand(seed, i, 1, op.k, op.n);
      Matrix y(static_cast<size_t>(op.m * op.n), 0);
      for (int64_t r = 0; r < op.m; ++r)
        for (int64_t q = 0; q < op.k; ++q)
          for (int64_t c = 0; c < op.n; ++c)
            y[static_cast<size_t>(r * op.n + c)] +=
                x[static_cast<size_t>(r * op.k + q)] * w[static_cast<size_t>(q * op.n + c)];
      x = std::move(y);
      continue;
    }
    for (int slot = 1; slot < op.inputs; ++slot) {
      const Matrix b = program_operand(seed, i, slot, 1, op.n);
      for (size_t e = 0; e < x.size(); ++e) x[e] += b[e % static_cast<size_t>(op.n)];
    }
    if (op.type == OperatorType::Relu)
      for (int64_t& v : x) v = std::max<int64_t>(v, 0);
    if (op.reduces) {  // each row's sum
      Matrix sums(x.size() / static_cast<size_t>(op.n), 0);
      for (size_t e = 0; e < x.size(); ++e) sums[e / static_cast<size_t>(op.n)] += x[e];
      x = std::move(sums);
    } else if (op.type == OperatorType::RowWise)  // each element less its row's maximum
      for (size_t row = 0; row < x.size() / static_cast<size_t>(op.n); ++row) {
        const auto first = x.begin() + static_cast<std::ptrdiff_t>(row * static_cast<size_t>(op.n));
        const int64_t most = *std::max_element(first, first + op.n);
        std::for_each(first, first + op.n, [&](int64_t& v) { v -= most; });
      }
  }
  return x;
}

namespace {

// `copies` of a layout of `rows` rows, one under the other (the operands of a pooling's window positions).
Layout stacked_layout(const Layout& layout, int64_t copies, int64_t rows) {
  Layout out;
  for (int64_t c = 0; c < copies; ++c)
    for (Placement p : layout) {
      p.rect.r0 += c * rows, p.rect.r1 += c * rows;
      out.push_back(p);
    }
  return out;
}

// The layout changes into operator i, one per edge of the data flow (docs/t10-programs.md#simulation). An
// edge that passes no view and whose producer's output has its operand's shape is replayed into that
// operand's cold layout; when the file does not say the operand, a MatMul's A is the first producer of A's
// shape and B the next of B's. Any other edge goes through a view and is reported, not replayed.
void replay_edges(const TensorProgram& program, const CompiledProgram& compiled, size_t i,
                  const std::vector<DataEdge>& edges, OperatorRun& r, ProgramRun& run) {
  const TensorOperator& op = program.ops[i];
  const OperatorOption& o = compiled.chosen[i];
  bool a_taken = false;
  for (const DataEdge& edge : edges) {
    const int producer = edge.producer;
    EdgeRun e;
    e.producer = producer;
    const TensorOperator& from = program.ops[producer];
    const auto shape = output_shape(from);
    int operand = edge.operand;
    if (operand < 0) {
      if (op.type != OperatorType::MatMul) {
        if (shape == input_shape(op)) operand = 0;
      } else if (!a_taken && shape == input_shape(op, 0)) {
        operand = 0, a_taken = true;
      } else if (shape == input_shape(op, 1)) {
        operand = 1;
      }
    }
    // A convolution's pixels x channels matrix read as its tensor's rows is a view even with equal shapes.
    const bool plain = operand >= 0 && edge.through.empty() && !edge.from_channels_last &&
                       shape == input_shape(op, operand);
    // A pooling's window read is one operand per window position, stacked: each in the operator's partition.
    const bool window = !edge.through.empty() && edge.through.back().op == "Window";
    const int64_t stacked = window ? op.inputs : 1;
    auto wanted = input_shape(op, std::max(operand, 0));
    wanted.first *= stacked;
    e.operand = op.type != OperatorType::MatMul ? "input" : operand == 1 ? "B" : "A";
    LayoutChange change;
    if (!plain) {
      e.view = std::to_string(shape.first) + " x " + std::to_string(shape.second) + " to " +
               std::to_string(wanted.first) + " x " + std::to_string(wanted.second);
      for (const ViewStep& v : edge.through)
        e.view += (&v == &edge.through.front() ? " through " : ", ") + v.op;
      // A read the file gives with no view and no tensor shape: both operators read one tensor row-major, cut
      // into different matrices (a pooling's rows of a map): a reshape, when the element counts agree. (Not
      // for files without reads, whose edges may hide any view.)
      std::vector<int64_t> from_shape = edge.from_shape;
      std::vector<ViewStep> through = edge.through;
      const bool recut = !op.reads.empty() && edge.through.empty() && edge.from_shape.empty() &&
                         operand >= 0 && shape.first * shape.second == wanted.first * wanted.second;
      if (recut) {
        ViewStep reshape;
        reshape.op = "Reshape", reshape.shape = {wanted.first, wanted.second};
        from_shape = {shape.first, shape.second};
        through = {reshape};
        e.view += " (the same tensor cut into other rows)";
      }
      const std::string why = (through.empty() && from_shape.empty()) || operand < 0
                                  ? "no view in the file maps the shapes"
                                  : views_unmappable(from_shape, shape.first * shape.second, through,
                                                     wanted.first * wanted.second);
      if (!why.empty()) {  // reported, not replayed
        e.view += " (not replayed: " + why + ")";
        ++run.edges;
        r.edges.push_back(std::move(e));
        continue;
      }
      change =
          change_layout_through(output_layout(from, compiled.chosen[producer]), shape.first, shape.second,
                                from_shape, through, stacked_layout(input_layout(op, o, operand), stacked,
                                                                    wanted.first / stacked),
                                wanted.first,
                                wanted.second, program.dtype_bytes, edge.from_channels_last);
    } else {
      change = change_layout(output_layout(from, compiled.chosen[producer]), input_layout(op, o, operand),
                             wanted.first, wanted.second, program.dtype_bytes);
    }
    e.replayed = true;
    e.transfers = change.transfers, e.bytes = change.bytes, e.max_core_bytes = change.max_core_bytes;
    e.problem = change.problem;
    r.layout_replayed = true;
    r.layout_transfers += change.transfers, r.layout_bytes += change.bytes;
    r.layout_max_core_bytes = std::max(r.layout_max_core_bytes, change.max_core_bytes);
    if (r.layout_problem.empty() && !change.problem.empty())
      r.layout_problem = from.name + " -> " + op.name + ": " + change.problem;
    ++run.layout_changes;
    ++run.edges;
    r.edges.push_back(std::move(e));
  }
}

// The functional run's output: a chain's against a reference computed here; a data flow's is left for an
// independent one (the model run by onnx or PyTorch on the drawn values: tests/python/test_t10_functional.py),
// each product having been checked against A·B and each vector operator's blocks against its partition.
void check_output(const TensorProgram& program, uint64_t seed, const Matrix& output, ProgramRun& run) {
  run.functional_checked = true;
  run.output = output;
  const bool chain = std::all_of(program.ops.begin(), program.ops.end(), [](const TensorOperator& op) {
    return op.reads.empty() && op.after.empty();
  });
  if (!chain) {
    run.functional_reference = "every product against A·B; the output is for an independent reference";
    return;
  }
  const Matrix want = reference_output(program, seed);
  run.functional_reference = "a reference computed directly";
  if (run.output != want) {
    size_t at = 0;
    while (at < want.size() && at < run.output.size() && run.output[at] == want[at]) ++at;
    run.functional_mismatch = "the network's output differs from the reference at element " +
                              std::to_string(at) + " (of " + std::to_string(want.size()) + ")";
  }
}

}  // namespace

ProgramRun simulate_program(const TensorProgram& program, const CompiledProgram& compiled,
                            const ProgramSimOptions& options, TraceObserver* trace) {
  ProgramRun run;
  run.model_total = compiled.total_cycles;
  std::map<decltype(plan_key(program.ops[0], Plan{})), CoresResult> simulated;
  std::map<std::tuple<int, int64_t, int64_t, int64_t, bool, int64_t, int64_t>, VectorCoresResult> vector_runs;
  std::optional<FunctionalData> data;
  if (options.functional) data.emplace(program, options.seed, run.drawn);
  int track_warm = -1, track_run = -1, track_shuffle = -1;
  if (trace) {
    track_warm = trace->track("warm-up (cold layout to hot)");
    track_run = trace->track("operator (compute and shifts)");
    track_shuffle = trace->track("shuffle (output to the next layout)");
  }
  const std::vector<std::vector<DataEdge>> flow = data_flow(program);
  double clock = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorOperator& op = program.ops[i];
    const OperatorOption& o = compiled.chosen[i];
    OperatorRun r;
    r.name = op.name;
    r.start = clock;
    r.warm_up = o.warm_up;
    r.shuffle = o.cost.shuffle;
    r.run = o.cost.total - o.cost.shuffle;
    if (op.type == OperatorType::MatMul) {
      const Problem problem = operator_problem(program, op);
      CoreSimOptions engine;
      engine.timing = CoreTiming::Calibrated;
      std::vector<Matrix> ab;
      if (data) {
        ab = data->operands(i);
        engine.functional = true;
        engine.functional_check = FunctionalCheck::Exact;
        engine.operand_a = &ab[0], engine.operand_b = &ab[1], engine.gathered_c = &data->output(i);
      }
      auto key = plan_key(op, o.plan);
      auto it = simulated.find(key);
      if (it == simulated.end() || options.functional) {
        it = simulated.insert_or_assign(key, simulate_cores(problem, o.plan, engine)).first;
        ++run.engine_runs;
      }
      const CoresResult& cores = it->second;
      r.simulated = true;
      r.cores = cores.cores * o.plan.pb;
      r.transfers = cores.transfers * o.plan.pb;
      r.bytes_moved = cores.bytes_moved * o.plan.pb;
      r.violation = cores.violation;
      r.run = cores.makespan - o.cost.shuffle;  // the engine's time, shuffle included in its makespan
    } else {
      const VectorOp v = vector_op(op);
      VectorCoresOptions engine;
      engine.reduces = op.reduces;
      std::vector<Matrix> inputs;
      if (data) {
        inputs = data->operands(i);
        engine.inputs = &inputs, engine.output = &data->output(i);
        engine.clamp = vector_function(op).clamp;
        engine.max = vector_function(op).max;
      }
      const auto key = std::make_tuple(static_cast<int>(v.kind), v.rows, v.cols, v.inputs, op.reduces,
                                       o.plan.f_op[0], o.plan.f_op[2]);
      auto it = vector_runs.find(key);
      if (it == vector_runs.end() || options.functional) {
        it = vector_runs
                 .insert_or_assign(key, simulate_vector_cores(v, o.plan.f_op[0], std::max<int64_t>(o.plan.f_op[2], 1),
                                                              program.dtype_bytes, program.chip, engine))
                 .first;
        ++run.engine_runs;
      }
      const VectorCoresResult& cores = it->second;
      r.simulated = true;
      r.cores = cores.cores;
      r.transfers = cores.transfers + cores.unpriced_transfers;
      r.bytes_moved = cores.bytes_moved + cores.unpriced_bytes;
      r.unpriced_bytes = cores.unpriced_bytes;
      r.violation = cores.violation;
      r.run = cores.makespan - o.cost.shuffle;
    }
    replay_edges(program, compiled, i, flow[i], r, run);
    if (trace) {
      const nlohmann::json args = {{"operator", op.name},
                                   {"type", to_string(op.type)},
                                   {"cores", r.cores},
                                   {"layout_transfers", r.layout_transfers},
                                   {"layout_bytes", r.layout_bytes}};
      if (r.warm_up > 0) trace->span(track_warm, op.name, clock * kNsPerCycle, r.warm_up * kNsPerCycle, args);
      trace->span(track_run, op.name, (clock + r.warm_up) * kNsPerCycle, r.run * kNsPerCycle, args);
      trace->span(track_shuffle, op.name, (clock + r.warm_up + r.run) * kNsPerCycle, r.shuffle * kNsPerCycle,
                  args);
      trace->counter("SRAM per core (bytes)", clock * kNsPerCycle,
                     {{"cold", compiled.cold_bytes}, {"extra", o.extra()}});
    }
    run.sram_after.push_back(compiled.cold_bytes + o.extra());
    clock += r.warm_up + r.run + r.shuffle;
    run.ops.push_back(std::move(r));
  }
  run.makespan = clock;
  if (data) check_output(program, options.seed, data->output(program.ops.size() - 1), run);
  return run;
}

}  // namespace mlsys::t10
