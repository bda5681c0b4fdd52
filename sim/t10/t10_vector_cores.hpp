// A vector operator of a whole-model program on every core (docs/t10-programs.md#simulation): the cores of
// its partition each hold their own block (a run of elements; a row-wise operator's rows, and a part of their
// columns when the rows are split over column parts), compute it at the calibrated per-element cost, and a
// row-wise operator split over column parts gathers each row's partial statistics from its column parts onto
// the first one as real transfers, reduces them there and returns the statistic before the pass over the
// elements. Checks: the blocks tile the output exactly once, and every row's statistic receives each of its
// column parts' partials exactly once. The phases are charged what the calibrated model charges (the busiest
// core's block, the gather and reduce terms, the shuffle), so the makespan equals the operator's priced total.
//
// The calibrated model does not charge returning the reduced statistic to the column parts; the engine makes
// those transfers and reports them apart (`unpriced_*`), at no time.
//
// Functional mode computes integer stand-ins of the operator on each core's block, with the same transfers:
// an elementwise operator sums its inputs (a ReLU clamps that sum at 0); a row-wise one sums its inputs and
// subtracts each row's maximum (a softmax's shift: a statistic that needs every column); a reducing row-wise
// one writes each row's sum (a pooling's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_cores.hpp"

namespace mlsys::t10 {

struct VectorCoresOptions {
  bool reduces = false;  // a row-wise operator writing one value per row
  // Functional mode: the operator's inputs, each rows x cols row-major, and where its output goes (rows x
  // cols, or rows x 1 when it reduces).
  const std::vector<std::vector<int64_t>>* inputs = nullptr;
  std::vector<int64_t>* output = nullptr;
  bool clamp = false;  // an elementwise sum clamped at 0 (an Add group ending in a ReLU)
  bool max = false;    // an elementwise operator's largest input instead of their sum (a max pooling)
  // Test hook: the n-th partial statistic sent (0-based) is lost on the way. -1: none.
  int64_t drop_partial = -1;
};

struct VectorCoresResult {
  int64_t cores = 0, empty_cores = 0;
  // Partial statistics gathered onto each row's first column part (priced), and the reduced statistic
  // returned to the others (not priced by the model).
  int64_t transfers = 0, bytes_moved = 0;
  int64_t unpriced_transfers = 0, unpriced_bytes = 0;
  std::vector<PhaseCost> phases;
  double makespan = 0, model_total = 0;
  std::optional<CoreViolation> violation;  // a block or a partial statistic not covered exactly once
};

// `parts` row (or element) parts and `col_parts` column parts, as the option's plan gives them (f_op[0],
// f_op[2]). Throws std::invalid_argument for a partition the model rejects, one beyond the engine's limits, or
// functional mode on more than kMaxExactElements elements.
VectorCoresResult simulate_vector_cores(const VectorOp& op, int64_t parts, int64_t col_parts, int64_t dtype_bytes,
                                        const Chip& chip, const VectorCoresOptions& options);

}  // namespace mlsys::t10
