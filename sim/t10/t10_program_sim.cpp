// The whole-model program on the all-cores engine (t10_program_sim.hpp).
#include "sim/t10/t10_program_sim.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <tuple>

#include "sim/t10/t10_layouts.hpp"
#include "sim/t10/t10_program_functional.hpp"
#include "sim/t10/t10_vector_cores.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys::t10 {
namespace {

constexpr double kNsPerCycle = 1e-3;  // trace times are microseconds; one T10 cycle is one nanosecond

using Matrix = std::vector<int64_t>;

auto plan_key(const TensorOperator& op, const Plan& p) {
  return std::make_tuple(op.batch, op.m, op.k, op.n, p.pb, p.f_op, p.am, p.ak, p.bk, p.bn, p.cm, p.cn);
}

}  // namespace

std::vector<int64_t> drawn_integers(uint64_t seed, int64_t size) {
  std::mt19937_64 rng(seed);
  Matrix m(static_cast<size_t>(size));
  for (int64_t& v : m) v = static_cast<int64_t>(rng() % 7) - 3;
  return m;
}

std::vector<int64_t> program_operand(uint64_t seed, size_t op, int slot, int64_t rows, int64_t cols) {
  return drawn_integers(seed * 1000003 + op * 131 + static_cast<uint64_t>(slot), rows * cols);
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
    const bool plain =
        operand >= 0 && edge.through.empty() && !edge.from_channels_last && shape == input_shape(op, operand);
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
      change = change_layout_through(
          output_layout(from, compiled.chosen[producer]), shape.first, shape.second, from_shape, through,
          stacked_layout(input_layout(op, o, operand), stacked, wanted.first / stacked), wanted.first,
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
// independent one (the model run by onnx or PyTorch on the drawn values:
// tests/python/test_t10_functional.py), each product having been checked against A·B and each vector
// operator's blocks against its partition.
void check_output(const TensorProgram& program, uint64_t seed, const ScaledTensor& output, ProgramRun& run) {
  run.functional_checked = true;
  run.output = output.ints;
  run.output_scale = output.scale;
  if (!is_chain(program)) {
    run.functional_reference = "every product against A·B; the output is for an independent reference";
    return;
  }
  const Matrix want = reference_output(program, seed);
  run.functional_reference = "a reference computed directly";
  if (run.output != want || run.output_scale != 0) {
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
  std::optional<ProgramValues> values;
  if (options.functional) values.emplace(program, options.seed, run.drawn);
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
      auto key = plan_key(op, o.plan);
      auto it = simulated.find(key);
      if (it == simulated.end()) {
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
      const auto key = std::make_tuple(static_cast<int>(v.kind), v.rows, v.cols, v.inputs, op.reduces,
                                       o.plan.f_op[0], o.plan.f_op[2]);
      auto it = vector_runs.find(key);
      if (it == vector_runs.end()) {
        it = vector_runs
                 .insert_or_assign(
                     key, simulate_vector_cores(v, o.plan.f_op[0], std::max<int64_t>(o.plan.f_op[2], 1),
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
    if (values)  // the values computed from the operands the data flow delivers
      if (auto wrong = values->run(i, o); wrong && !r.violation) r.violation = wrong;
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
  if (values) check_output(program, options.seed, values->output(program.ops.size() - 1), run);
  return run;
}

}  // namespace mlsys::t10
