// T10's calibrated timing: the cost model the T10 authors fitted to an IPU Mk2 and publish with their
// follow-up planner (repository platformxlab/elk, TensorExpression.py), restated for one MatMul plan. Every
// constant and formula, with the function it comes from, is in docs/t10-model.md#calibrated. It is our own
// code: the published model is the reference it must equal (tests/t10_calibrated_test.cpp).
//
// The published model indexes dimensions (m, n, k) and tensors (C, A, B); a plan maps to its configuration as
// spatial [pm, pn, pk] and temporal [[cm, am, 1], [cn, 1, bn], [1, ak, bk]].
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/t10/t10_links.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

// The published model's transfers are fitted to the IPU's exchange (the chip default, 4 B per cycle per
// tile). A chip variant with another exchange_bytes_per_cycle scales every transfer term by 4 / that (a
// what-if of ours, not the published model's; 1 on the default chip). Syncs and compute are unchanged.
constexpr double kIpuExchangeBytesPerCycle = 4;
double exchange_scale(const Chip& chip);

// One shift level in the published model's order (sorted by size, largest first, ties in (m, n, k) order).
struct CalibratedLevel {
  char dim;             // 'm', 'n' or 'k'
  std::string tensors;  // rotating tensors at this level, in (C, A, B) order
  int64_t g;            // ring length
  int64_t size;         // elements moved per core per event (the tensors' partition sizes summed)
  int64_t events;       // outer iterations x (g - 1)
  double event_cycles;  // one event: size*e/2*0.56 shift + 2*118 per tensor sync
  double link_cycles = 0;  // linked chips: what one event's crossing part adds beyond its on-chip part
  LinkBytes link_bytes;    // and the bytes one event sends over each link (the placement's)
};

struct CalibratedCost {
  // evaluate_config's terms.
  int64_t steps = 0;            // get_num_comp_iter: tm*tn*tk
  double compute_per_step = 0;  // get_comp_time_per_iter_helper on the sub-task
  double compute = 0;           // compute_per_step x steps
  std::vector<CalibratedLevel> levels;
  int64_t shift_elements = 0;  // get_shift_info's total
  double shift = 0, sync = 0;  // get_shift_time(shift_elements); 118 x 2 per tensor per event
  double sync_shift = 0;       // get_sync_shift_time (x 1.25 beyond one chip)
  // get_shuffle_time, after the operator: the output partition moved, syncs, gather and reduce of the rho_C
  // output copies (x 1.25 beyond one chip).
  double shuffle_output = 0, shuffle_sync = 0, gather = 0, reduce = 0, shuffle = 0;
  double total = 0;       // compute + sync_shift + shuffle (+ collective)
  double inter_chip = 1;  // INTER_CHIP_OVERHEAD on shifts and shuffle beyond one chip's 1,472 cores
  // Chips joined by links (t10_links.hpp), for a plan that spans chips: each exchange phase takes the longer
  // of its on-chip part (the terms above) and its crossing part; `link` is what that adds (already in
  // sync_shift and shuffle), `crossing_bytes` what crosses, `placement` the order the plan's coordinates
  // are laid on the core ids in (fastest first: the one of "mnk"'s orders that adds least).
  double link = 0, crossing_bytes = 0;
  double output_link = 0, gather_link = 0;  // the shuffle's part of `link`: the output's move, the gather
  LinkBytes output_link_bytes, gather_link_bytes;  // their bytes over each link
  std::string placement;
  // A collective after the operator (tensor parallelism's all-reduce of a partial output), in total.
  double collective = 0;
  // Memory per core as the model counts it: hot with a receive buffer per rotating tensor
  // (get_byte_per_core_with_buffer), cold the inputs at rest (get_byte_per_core_idle).
  int64_t hot_bytes = 0, cold_bytes = 0;
  // cold_bytes split by input (A, B): what each operand occupies per core at rest, in the hot plan's own
  // layout and in the layout without copies (serving loads operand B from HBM into one of them).
  std::array<int64_t, 2> cold_input_bytes{0, 0}, no_copy_input_bytes{0, 0};
  // get_warm_up_time from the cold layout without copies (each input's ring extended over its rho copies
  // along k): reported beside the total, not added.
  double warm_up = 0;
  int64_t no_copy_cold_bytes = 0;  // that layout's inputs per core
  // The rules of the model's search space this plan breaks (empty: the model accepts it), each a sentence
  // with its figures: core count and utilisation, spatial and temporal padding, replica divisibility, ring
  // chains, per-dimension factors.
  std::vector<std::string> rejections;
  bool rejected = false;  // without messages (a search): some rule rejects it, no sentence built
  bool accepted() const { return !rejected && rejections.empty(); }
};

// Requires a plan whose rings are chains (no misaligned dimension); otherwise the terms are left at 0 and
// the rejection says why.
// `messages = false` (a search) stops at the first rejection and leaves one empty text for it.
CalibratedCost calibrated_cost(const Problem& problem, const Plan& plan, bool messages = true);
// The rules that depend on F_op alone (cores, utilisation, splits, spatial padding), for a search.
std::vector<std::string> calibrated_spatial_rejections(const Problem& problem,
                                                       const std::array<int64_t, 3>& f_op, int64_t pb = 1);
// is_chain_divisible: one dimension's ring factors, sorted, each divide the next (the model rejects a plan
// whose factors do not; a search may skip such plans before pricing them).
bool ring_factors_chain(std::array<int64_t, 3> factors);
// The same rules without their sentences: whether they accept the F_op (a search asks for every F_op).
bool calibrated_spatial_accepts(const Problem& problem, const std::array<int64_t, 3>& f_op, int64_t pb = 1);

// Operators without a contraction, as the published model prices them (get_comp_time_per_iter_helper's
// elementwise, relu and reduce branches, get_shuffle_time): every tensor shares the partition, so nothing
// rotates and the cold layout is the hot one (no warm-up). Row-wise normalisations (Softmax, LayerNorm) are
// the reduce over each row followed by the elementwise pass over it, as the model's own network files
// decompose them. Elementwise operators split their elements over the cores; row-wise ones their rows (a
// row stays on one core).
enum class VectorKind { Elementwise, Relu, RowWise };
struct VectorOp {
  VectorKind kind = VectorKind::Elementwise;
  int64_t rows = 1, cols = 1;  // the output's; an elementwise op is rows x cols elements
  int64_t inputs = 1;          // operands read (each rows x cols)
};
// What the cores split: elements, or rows for a row-wise operator.
int64_t vector_units(const VectorOp& op);
// `parts`: cores the units are split over; a row-wise operator may also split each row over `col_parts`
// cores, whose partial statistics are then gathered and reduced as the model's shuffle reduces copies
// (gather and reduce, counted in compute). Rejections: more parts than units, columns or cores.
CalibratedCost calibrated_vector_cost(const VectorOp& op, int64_t parts, int64_t dtype_bytes, const Chip& chip,
                                      int64_t col_parts = 1);
// One core's compute for its block of a vector operator: `rows` x `cols` of a row-wise operator (the reduce
// over each row, then the elementwise pass), rows x cols elements of the others. The operator's compute term is
// its busiest core's; the all-cores engine charges each core its own block (t10_vector_cores.hpp).
// A row-wise operator's block costs its statistics (the reduce) and then its pass over the elements.
struct VectorBlockCycles {
  double statistics = 0, pass = 0;
  double total() const { return statistics + pass; }
};
VectorBlockCycles vector_block_cycles(VectorKind kind, int64_t rows, int64_t cols);
// The gather and reduce terms (cost.gather, cost.reduce) of a row-wise operator's rows split over `col_parts`
// cores: each of the `rows` rows of a core's block has col_parts partial statistics.
void vector_combine_cost(int64_t col_parts, int64_t rows, int64_t dtype_bytes, const Chip& chip,
                         CalibratedCost& cost);

}  // namespace mlsys::t10
