// A compiled whole-model program run on the all-cores engine (docs/t10-programs.md#simulation): operator
// after operator, each MatMul's plan on every core of its group with the calibrated timing (the engine's
// makespan must equal the option's priced total, and every core passes the single-operator checks), each
// vector operator on the vector engine over its cores' blocks (t10_vector_cores.hpp), warm-ups and shuffles
// between them; the program's time is the sum.
// Identical operators with the same plan are simulated once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_program.hpp"
#include "sim/t10/t10_program_functional.hpp"

namespace mlsys {
class TraceObserver;
}

namespace mlsys::t10 {

// One edge of the data flow: a producer's output changed into the layout this operator reads it in.
struct EdgeRun {
  int producer = -1;
  std::string operand;  // "A" or "B" of a MatMul, "input" of a vector operator, "view" when not replayed
  bool replayed = false;
  int64_t transfers = 0, bytes = 0, max_core_bytes = 0;
  std::string problem;  // replayed: where the new layout is not covered exactly once by the old
  std::string view;     // through views: the shapes they map between and the views, or why not replayed
};

struct OperatorRun {
  std::string name;
  double start = 0, warm_up = 0, run = 0, shuffle = 0;  // cycles; run = the engine's makespan less shuffle
  int64_t cores = 0, transfers = 0, bytes_moved = 0;
  bool simulated = false;  // run on the all-cores engine (t10_cores.hpp, t10_vector_cores.hpp)
  int64_t unpriced_bytes = 0;  // moved but not charged by the model (a row-wise statistic returned)
  std::optional<CoreViolation> violation;
  // The layout changes into this operator, one per producer it reads (data_flow; t10_layouts.hpp), and their
  // sums. An edge whose shapes differ goes through a view (a reshape into heads, a transpose) and is not
  // replayed.
  std::vector<EdgeRun> edges;
  bool layout_replayed = false;  // some edge was
  int64_t layout_transfers = 0, layout_bytes = 0, layout_max_core_bytes = 0;
  std::string layout_problem;
};

struct ProgramRun {
  std::vector<OperatorRun> ops;
  double makespan = 0;              // cycles, all operators in order
  double model_total = 0;           // the compiled program's total, which the makespan must equal
  int64_t engine_runs = 0;          // distinct (shape, plan) pairs simulated
  int64_t layout_changes = 0;       // edges replayed as transfers between cores
  int64_t edges = 0;                // edges of the data flow (producer to consumer)
  std::vector<int64_t> sram_after;  // resident bytes per core while each operator runs (cold sum + its extra)
  // Functional mode: the network's output compared with a reference computed without the engine.
  bool functional_checked = false;
  std::optional<std::string> functional_mismatch;
  std::string functional_reference;   // what the output was compared with
  std::vector<int64_t> output;        // functional mode: the last operator's output, row-major,
  int output_scale = 0;               // as integers x 2^-output_scale (t10_program_functional.hpp)
  std::vector<DrawnValues> drawn;     // functional mode: every operand drawn, in drawing order
  std::string first_failure() const;  // empty when every operator passed
};

// The data of a functional run: integer operands drawn per (operator, operand slot) from a seed, so that a
// reference computed separately can draw the same ones. Values are in [-3, 3].
std::vector<int64_t> program_operand(uint64_t seed, size_t op, int slot, int64_t rows, int64_t cols);
// `size` integers in [-3, 3] from one seed (functional mode's every drawn value).
std::vector<int64_t> drawn_integers(uint64_t seed, int64_t size);

struct ProgramSimOptions {
  bool functional = false;  // multiply real integers through the network (small programs: exact check)
  uint64_t seed = 1;
};

// Throws std::invalid_argument when an operator's plan is beyond the engine (its limits) or functional mode
// is asked of a network that is not a chain of operators without a batch or a reduction.
ProgramRun simulate_program(const TensorProgram& program, const CompiledProgram& compiled,
                            const ProgramSimOptions& options, TraceObserver* trace = nullptr);

// The network's output computed directly (no engine, no plan), for the functional check: each MatMul reads
// its predecessor's output (or operand slot 0) and operand slot 1; an elementwise operator adds its
// predecessor's output and operand slots 1.. ; a ReLU clamps at 0; a row-wise operator subtracts each row's
// maximum (t10_vector_cores.hpp's stand-ins).
std::vector<int64_t> reference_output(const TensorProgram& program, uint64_t seed);

}  // namespace mlsys::t10
