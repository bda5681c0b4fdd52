// T10 for whole models: a network as a sequence of operators that run one after another on all cores of the
// chip, each with its own compute-shift plan, and the layout every operator keeps its inputs in while others
// run (its "cold" layout). docs/t10-programs.md states the model: per core, the cold bytes of every operator
// plus the running operator's extra (hot minus cold) must fit the SRAM; each operator pays the change from
// its cold layout to its hot one before it runs (warm-up) and the shuffle of its output after it.
//
// This header is plain data: the network (TensorProgram), one priced choice per operator (OperatorOption),
// and a compiled program (the choices, their sum and the memory they need). The compiler that chooses is in
// solver/t10_compile; the readers and writers are in t10_program_io.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys {
struct Problem;
}

namespace mlsys::t10 {

enum class OperatorType { MatMul, Elementwise, Relu, RowWise };
const char* to_string(OperatorType type);  // "matmul", "elementwise", "relu", "rowwise"
std::optional<OperatorType> operator_type_from(const std::string& name);

// One view between a producer's output and an operand (mlsys-import --t10 writes them): its output shape and
// what it does to the indices. Reshape-like views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Cast) keep
// the row-major order; a Transpose permutes the axes (output axis i is input axis perm[i]); a Slice or a
// Split keeps [start, end) of an axis; an Im2col is a convolution's read of its N x C x H x W input as the
// matrix [groups, N*Ho*Wo, C/groups*kh*kw] (the padding read as zeros); a Window is a pooling's read of it as
// [kh*kw, N, C, Ho, Wo], one operand per window position (the padding skipped); a Concat places its input as
// the part [start, end) of its output along one axis (`slices`, one). `unmapped` says why a view cannot be
// replayed as an index map.
struct ViewStep {
  std::string op;
  std::vector<int64_t> shape;
  std::vector<int64_t> perm;
  std::vector<std::array<int64_t, 3>> slices;                  // axis, start, end
  std::vector<int64_t> kernel, strides, pads, dilations, out;  // Im2col, Window: kh kw, sh sw, top left, dh dw, Ho Wo
  std::string unmapped;
};

// What a vector operator computes, as mlsys-import --t10 writes it (`compute`): its group's ONNX nodes in
// order. An input is another node's output, the operator's j-th activation read, a learned parameter drawn by
// name, a constant's values, or unknown (functional mode refuses it). t10_vector_compute.hpp evaluates it.
struct ComputeArg {
  enum class Kind { None, Node, Read, Param, Value, Unknown };
  Kind kind = Kind::None;
  int64_t index = -1;          // Node, Read
  std::string name;            // Param, Unknown
  std::vector<int64_t> shape;  // Read, Param, Value
  std::vector<double> values;  // Value
};
struct ComputeNode {
  std::string op;
  std::vector<ComputeArg> in;
  nlohmann::json attrs = nlohmann::json::object();
};
struct VectorCompute {
  std::vector<ComputeNode> nodes;
  std::vector<int64_t> shape;  // the last node's output
};

// A product's B operand when it is a learned parameter: its name and shape, and how B reads it ("kn" as it
// is, "nk" transposed, "conv" a convolution's weight [o, c, kh, kw] per group).
struct WeightSource {
  std::string name;
  std::vector<int64_t> shape;
  std::string layout = "kn";
};

struct TensorOperator {
  std::string name;
  OperatorType type = OperatorType::MatMul;
  // MatMul: C[batch, m, n] = A[batch, m, k] · B[batch, k, n]. Vector operators: the output has m rows of n
  // columns and reads `inputs` operands of that shape (k unused).
  int64_t batch = 1, m = 1, k = 1, n = 1;
  int64_t inputs = 2;
  bool reduces = false;  // a row-wise operator whose output is one value per row (a pooling, a mean)
  // What a vector operator computes, when the file says (mlsys-import --t10): the ONNX operator types of its
  // group in order ("Add", "Relu", "ReduceSum", "Softmax", ...), for functional mode.
  std::vector<std::string> function;
  std::optional<VectorCompute> compute;  // what it computes, node by node (imported vector operators)
  std::optional<WeightSource> weight;    // a MatMul's B when it is a learned parameter
  std::vector<std::string> after;  // the operators whose outputs it reads (earlier ones, by name)
  // Operand by operand (a MatMul's A then B; a vector operator's inputs), when the file says: the operator
  // that wrote it ("" for a graph input), the views it passed through, and the producer's tensor's shape
  // before them.
  struct Read {
    std::string from;
    std::string input;  // a graph input's name, when `from` is empty and the file says
    std::vector<ViewStep> through;
    std::vector<int64_t> from_shape;
    bool from_channels_last = false;  // the producer's matrix is N*H*W x C of an N x C x H x W tensor
  };
  std::vector<Read> reads;
};

struct TensorProgram {
  std::string name;
  Chip chip;
  int64_t dtype_bytes = 2;
  std::vector<TensorOperator> ops;  // in execution order
};

// The data flow: per operator, an edge per operand read from another operator. From `reads` when given (the
// operand slot and the views known); else from `after`, each producer once (the slot unknown: -1); a program
// in which no operator names either is a chain, each operator reading the one before it into slot 0.
struct DataEdge {
  int producer = -1;
  int operand = -1;                 // 0: a MatMul's A or a vector operator's input; 1: B; -1: unknown
  std::vector<ViewStep> through;    // the views between the producer's output and the operand
  std::vector<int64_t> from_shape;  // the producer's tensor before them (when the file says)
  bool from_channels_last = false;  // its matrix is N*H*W x C, not the tensor's row-major order
};
std::vector<std::vector<DataEdge>> data_flow(const TensorProgram& program);
// No operator names what it reads (neither `reads` nor `after`): each reads the one before it.
bool is_chain(const TensorProgram& program);
// Elements of a shape, saturated at 2^62 (a file's shape may multiply beyond 64 bits).
int64_t shape_elements(const std::vector<int64_t>& shape);

// The file limits: a network beyond them is refused with a message, not compiled for hours.
constexpr size_t kMaxProgramOperators = 100000;
constexpr int64_t kMaxOperatorDimension = int64_t{1} << 24;

// One way to run an operator: its hot plan, the cold layout it waits in, and what both cost.
struct OperatorOption {
  Plan plan;                // MatMul: the compute-shift plan; vector operators: f_op[0] = cores used
  int64_t cold = 0;         // bytes per core while other operators run
  int64_t hot = 0;          // bytes per core while it runs
  double warm_up = 0;       // cold layout to hot, before it runs
  CalibratedCost cost;      // the hot plan's terms (compute, sync_shift, shuffle, total)
  bool cold_is_hot = true;  // the cold layout is the hot plan's own (no warm-up)
  double time() const { return cost.total + warm_up; }
  int64_t extra() const { return hot - cold; }
  // What input `operand` (0: A, 1: B) occupies per core in the cold layout (MatMuls; 0 for vector ops).
  int64_t cold_input(int operand) const {
    return cold_is_hot ? cost.cold_input_bytes[operand] : cost.no_copy_input_bytes[operand];
  }
};

// A problem for one operator of the program (MatMul: the T10 problem it is priced as).
Problem operator_problem(const TensorProgram& program, const TensorOperator& op);
VectorOp vector_op(const TensorOperator& op);
// Prices `plan` for `op`, with the cold layout its own (`no_copy = false`) or without copies (the inputs'
// rings extended along k over their copies, t10_calibrated.hpp).
OperatorOption price_option(const TensorProgram& program, const TensorOperator& op, const Plan& plan,
                            bool no_copy);
// The same for a MatMul plan already priced (a search visits each once and keeps both layouts).
OperatorOption matmul_option(const Plan& plan, const CalibratedCost& cost, bool no_copy);

struct CompiledProgram {
  std::vector<OperatorOption> chosen;  // one per operator
  double total_cycles = 0;             // sum of the chosen options' times
  int64_t cold_bytes = 0;              // sum of cold
  int64_t peak_extra_bytes = 0;        // max of hot - cold
  int64_t peak_sram_bytes() const { return cold_bytes + peak_extra_bytes; }
  std::string reconciliation;  // "exact", "heuristic"
  double lower_bound = 0;      // proven: no choice from the same option sets is faster
  bool fits(const Chip& chip) const { return peak_sram_bytes() <= chip.sram_bytes_per_core; }
};
// Sums the choices (total, cold, peak extra).
void summarize(CompiledProgram& compiled);

// Readers: a T10 model file ({"t10_program": {...}}, docs/t10-programs.md#format) or a graph problem (each
// MatMul an operator, each Pointwise op an elementwise one). Both throw InputError naming the file and field.
TensorProgram parse_program(const nlohmann::json& doc, const std::string& file = "");
TensorProgram program_from_graph(const mlsys::Problem& problem, const Chip& chip, const std::string& name);
// Either of the two: a document with "widths" is a graph problem, anything else a T10 model file.
TensorProgram program_from_document(const nlohmann::json& doc, const std::string& file,
                                    const std::string& name);
nlohmann::json program_to_json(const TensorProgram& program, const CompiledProgram& compiled);

}  // namespace mlsys::t10
