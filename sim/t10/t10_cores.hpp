// T10 on every core: a compute-shift engine that instantiates all P = pm·pk·pn cores of a plan, each with its
// coordinates (i_m, i_k, i_n), the real (clipped) extents of its block and its own SRAM, and moves specific
// pieces between specific cores: every ring of every shift level is an explicit cycle of core ids, the
// initial placement skews each core's pieces so that it starts on a block its three operands agree on, and a
// shift event is one send and one receive per core and tensor. At every compute step every core checks that
// the pieces it holds are the ones its block needs (T35 on all cores); over the run every (m, k, n) block
// must be computed exactly once and every output block must receive every k block exactly once in the
// reduction over the pk replicas. In functional mode the cores multiply real integer matrices with the pieces
// they hold, and the gathered C must equal A·B exactly.
//
// Two timings: `Grader` charges each phase what the T10 rule book charges (so the totals equal the analytic
// comp, shift, bcast, reduce and total exactly); `Exchange` is a bulk-synchronous model of the IPU's exchange
// (per-tile send and receive bandwidth, receives into one tile served one after another, a sync per
// superstep, a latency per transfer, compute from each core's real block at the AMP rate), with its
// parameters in the problem's chip object (docs/t10-model.md#exchange); `Calibrated` charges each phase what
// the T10 authors' IPU-fitted model charges (t10_calibrated.hpp): a compute step its per-iteration time, a
// shift event its transfer and two syncs per tensor, the shuffle after the operator in four parts, so that
// the makespan equals that model's total (docs/t10-model.md#calibrated).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_links.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys {
class TraceObserver;
}

namespace mlsys::t10 {

enum class CoreTiming { Grader, Exchange, Calibrated };
// Functional mode's check (t10_functional.hpp): exact for small products (up to 2^24 elements per operand and
// 2^28 multiply-adds when Auto picks), projected (Freivalds) beyond.
enum class FunctionalCheck { Auto, Exact, Projected };
const char* to_string(CoreTiming timing);  // "grader", "exchange", "calibrated"
std::optional<CoreTiming> core_timing_from(const std::string& name);

struct CoreSimOptions {
  CoreTiming timing = CoreTiming::Grader;
  bool functional = false;  // multiply real integer matrices and check C = A·B
  FunctionalCheck functional_check = FunctionalCheck::Auto;
  uint64_t seed = 1;  // of the matrices' random integers
  // Test hook: the n-th shift event (0-based) is not delivered to one core (the first core of the first
  // ring), as if a link dropped it. -1: none.
  int64_t drop_shift_event = -1;
  // The trace has one track for the whole core group; this many cores (in id order) also get a track each,
  // with their own compute, send and receive time per phase.
  int64_t core_tracks = 0;
  // Functional mode with given operands (row-major A: m x k, B: k x n; the exact check): a whole-model
  // program's data. The gathered C (m x n) is copied to `gathered_c` when given.
  const std::vector<int64_t>* operand_a = nullptr;
  const std::vector<int64_t>* operand_b = nullptr;
  std::vector<int64_t>* gathered_c = nullptr;
};
// A chip file may declare up to 2^31 cores: the engine keeps per-core state and per core-step records, so it
// refuses plans beyond these (a 1,472-core IPU plan needs at most about 2 M core-steps).
constexpr int64_t kMaxSimulatedCores = int64_t{1} << 20;
constexpr int64_t kMaxCoreSteps = int64_t{1} << 27;

// The first data-consistency failure: which step, which core, which tensor and piece.
struct CoreViolation {
  int64_t step = -1;              // compute step (-1: the reduction or the final check)
  std::array<int64_t, 3> core{};  // (i_m, i_k, i_n)
  char tensor = '?';              // 'A', 'B', 'C'
  std::string message;
};

// What one phase of the exchange timing cost, and the core that set it.
struct PhaseCost {
  std::string name;  // "broadcast", "compute step 3", "shift level 0", "reduce"
  double cycles = 0;
  std::array<int64_t, 3> critical_core{};
  int64_t bytes = 0;  // moved over the exchange in this phase, all cores together
};

// One core's figures over the run: its SRAM peak and its busy cycles (exchange timing: compute at the AMP
// rate plus its own send or receive time, whichever is longer, per exchange superstep).
struct CoreStats {
  std::array<int64_t, 3> core{};
  int64_t peak_sram_bytes = 0;
  double busy_cycles = 0;
};

// One ring of one shift level, as core ids in ring order, for the report.
struct RingPath {
  int level = 0;
  char tensor = '?';
  std::vector<std::array<int64_t, 3>> cores;
};

struct CoresResult {
  int64_t cores = 0, steps = 0;
  int64_t empty_cores = 0;                 // cores whose block is empty (the ceilings leave them nothing)
  std::vector<int64_t> events_per_level;   // shift events observed (all cores shift together)
  int64_t transfers = 0, bytes_moved = 0;  // core-to-core piece transfers (broadcast, shifts, reduction)
  // SRAM per core from the real piece sizes (with a receive buffer for every rotating tensor): the peak, the
  // core that reaches it, and the rule book's `hot` for comparison (it uses ceil(ms/am)-sized pieces).
  int64_t peak_sram_bytes = 0;
  std::array<int64_t, 3> peak_sram_core{};
  int64_t rule_book_hot_bytes = 0;
  // Compute cycles lost to the ceilings: a step costs the padded sub-task, an edge core's block is smaller.
  double edge_idle_cycles = 0;  // summed over cores and steps, on the AMP rate of the exchange timing
  // Grader timing (exact, equal to the analytic model).
  double compute = 0, stall = 0, total = 0;
  int64_t shift = 0, bcast = 0, reduce = 0;
  // Exchange timing.
  std::vector<PhaseCost> phases;
  double exchange_total = 0, exchange_compute = 0, exchange_exchange = 0, exchange_sync = 0;
  // Calibrated timing: the model's terms as the engine's phases summed them, and what it reports beside them.
  double calibrated_compute = 0, calibrated_sync_shift = 0, calibrated_shuffle = 0;
  double warm_up = 0;  // from the cold layout, not in the makespan
  int64_t calibrated_hot_bytes = 0, calibrated_cold_bytes = 0;
  std::vector<std::string> calibrated_rejections;  // the model's search-space rules the plan breaks
  double makespan = 0;                             // simulated time at the end, for the timing that was run
  // SystemC's own clock at the end (picosecond steps; calibrated timing's makespan is the binary64 sum), and
  // on linked chips what each link module carried.
  double simulated_cycles = 0;
  std::vector<LinkUse> links;
  bool misaligned = false;
  std::vector<CoreStats> per_core;         // in core id order ((i_m * pk + i_k) * pn + i_n)
  std::vector<RingPath> rings;             // the ring through core (0, 0, 0) of every level and tensor
  std::optional<CoreViolation> violation;  // data consistency (T35 on all cores) or the functional check
  bool functional_checked = false;         // the gathered C was compared with A·B
  std::string functional_method;           // "exact", or "freivalds" (error probability at most 2^-61)
};

nlohmann::json cores_result_to_json(const CoresResult& result, CoreTiming timing);

// Whether the functional check of these options on this problem is the projected one.
bool uses_projected_check(const Problem& problem, const CoreSimOptions& options);

// Requires a plan whose cost is defined (no E4/E6; throws std::invalid_argument otherwise, or when functional
// mode cannot afford its check, t10_functional.hpp). Reports phases to `trace` if given.
CoresResult simulate_cores(const Problem& problem, const Plan& plan, const CoreSimOptions& options,
                           TraceObserver* trace = nullptr);

}  // namespace mlsys::t10
