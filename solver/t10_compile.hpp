// Compiling a whole model for T10 (docs/t10-programs.md): every operator's options (its Pareto set of time
// against cold and extra bytes per core, calibrated timing), then one option per operator chosen so that the
// cold bytes of all operators plus the largest extra fit each core's SRAM, at the least total time.
//
// Two reconciliations over the same option sets:
// - `heuristic`: the published planner's greedy (platformxlab/elk, DNNProgram.py,
//   search_optimal_global_config_heuristic), restated: every operator starts at its largest cold size, then
//   the one that loses least time per byte freed shrinks, until none can; the fastest fitting step wins.
// - `exact` (the default): a branch and bound over the bound H on the largest extra; for each H a
//   multiple-choice knapsack over cold bytes, bounded by its Lagrangian dual and solved exactly by a Pareto
//   frontier of (cold bytes, time) pruned by that bound and the incumbent (at first the better of the
//   heuristic's and the dual's own choices). It proves its optimum over the option sets, or, at its deadline
//   or work limit, returns the best found with the smallest open bound as a proven lower bound.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_program.hpp"

namespace mlsys::t10 {

enum class Reconciliation { Exact, Heuristic };

struct OperatorOptions {
  std::vector<OperatorOption> options;  // Pareto-minimal in (cold, extra, time), fastest first
  int64_t plans_priced = 0;
  TensorOperator op;  // the shape they are for (its name is the first operator's that asked)
};

// An operator's shape as text ("matmul:BxMxKxN/inputs"): operators with the same key have the same options.
std::string shape_key(const TensorOperator& op);

// All the options of one operator (throws std::invalid_argument when it has none, naming why).
OperatorOptions operator_options(const TensorProgram& program, const TensorOperator& op);

// The least bytes per core any choice needs (sum of cold plus the largest extra), for the refusal.
int64_t least_sram_bytes(const std::vector<const OperatorOptions*>& ops);

struct CompileStats {
  double options_seconds = 0, reconcile_seconds = 0;
  int64_t plans_priced = 0, options = 0, distinct_operators = 0;
  int64_t extra_bounds_tried = 0, frontier_peak = 0;
  double heuristic_cycles = 0;  // the heuristic's total on the same options (0 when it found none)
  bool proven = false;          // the exact reconciliation finished within its work limit
};

struct CompileOptions {
  Reconciliation reconciliation = Reconciliation::Exact;
  int64_t max_frontier = 1 << 15;  // work limit of the exact reconciliation (frontier entries per stage)
  double reconcile_seconds = 30;   // its deadline: then the best found and the smallest open bound
  std::function<void(const std::string&)> progress;  // stderr lines for long work
};

// Each distinct MatMul shape prices every plan of its search space (up to about a million, about a second):
// a model with more distinct shapes than this is refused (std::invalid_argument) rather than compiled for
// hours.
constexpr size_t kMaxMatMulShapes = 512;

// `compiled` is empty when no choice fits the SRAM: then least_sram_bytes says what the program needs.
struct CompileResult {
  std::optional<CompiledProgram> compiled;
  int64_t least_sram_bytes = 0;  // what the program needs at least, per core
  CompileStats stats;
};
CompileResult compile_program(const TensorProgram& program, const CompileOptions& options);

// The reconciliations on given option sets (for tests and the benchmark).
std::optional<CompiledProgram> reconcile_heuristic(const std::vector<const OperatorOptions*>& ops,
                                                   int64_t sram_bytes);
std::optional<CompiledProgram> reconcile_exact(const std::vector<const OperatorOptions*>& ops,
                                               int64_t sram_bytes,
                                               const std::optional<CompiledProgram>& incumbent,
                                               int64_t max_frontier, CompileStats& stats,
                                               double seconds = 30);

// A whole model compiled for chip variants (t10 sweep MODEL): the grid SRAM x exchange bandwidth in row-major
// order (SRAM outer); a shard I of N takes the points whose index is I modulo N.
struct ProgramVariantPoint {
  int64_t index = 0, sram_bytes = 0;
  double exchange_bytes_per_cycle = 0;
  bool fits = false;
  double total_cycles = 0, heuristic_cycles = 0, lower_bound = 0, seconds = 0;
  int64_t peak_sram_bytes = 0, least_sram_bytes = 0;
  bool proven = false;
};
std::vector<ProgramVariantPoint> sweep_program(
    const TensorProgram& program, const std::vector<int64_t>& srams,
    const std::vector<double>& exchange_bytes_per_cycle, int shard, int shards,
    const std::function<void(const ProgramVariantPoint&)>& on_point);

}  // namespace mlsys::t10
