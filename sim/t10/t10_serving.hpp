// LLM serving on the IPU-style chip with HBM behind it (docs/t10-serving.md): one decode step is a sequence of
// operators that run one after another on all cores; the operands that live in HBM (weights, the KV cache)
// are loaded ahead of their operator while earlier operators run. This header is the serving step model: the
// chip with its HBM, the operators with what they load, a schedule (one option per operator), and the
// timeline of loads and executions with every core's SRAM at every event. The analytic evaluator, the
// SystemC replay (t10_serving_sim) and the scheduler (solver/t10_serving) all go through serving_timeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_program.hpp"

namespace mlsys::t10 {

// The chip of t10_model.hpp plus off-chip memory. Units are the published artifact's (platformxlab/elk,
// DNNProgram.py): its "GB/s" of HBM is 1000 x 1024^2 B/s (it converts bytes to ms as bytes / 1024 / 1024 /
// GBps), its per-core NoC share GBPS_PER_CORE is in GiB/s, and a cycle is 1 / 1.325 GHz.
struct ServingChip {
  Chip chip;                         // cores, SRAM per core, clock, chips and links: the calibrated model's
  double hbm_gbps = 0;               // per chip; 0: no HBM (nothing can be loaded)
  double hbm_capacity_bytes = 0;     // per chip; 0: unlimited
  double host_link_gbps = 0;         // to the host, for swapped KV caches (same units as HBM); 0: none
  double noc_gib_per_core = 5.5;     // how fast HBM loads reach one core over the NoC (GBPS_PER_CORE)
  // A program spread over every chip's cores loads each chip's share from that chip's HBM: together the
  // chips' bandwidths and capacities.
  double total_hbm_gbps() const { return hbm_gbps * static_cast<double>(chip.chips); }
  double total_hbm_capacity_bytes() const { return hbm_capacity_bytes * static_cast<double>(chip.chips); }
  double hbm_bytes_per_cycle() const { return total_hbm_gbps() * 1000.0 * 1024 * 1024 / chip.clock_hz; }
  double host_link_bytes_per_ms() const { return host_link_gbps * 1000.0 * 1024 * 1024 / 1e3; }  // 0: none
  double noc_bytes_per_cycle_per_core() const {
    return noc_gib_per_core * 1024.0 * 1024 * 1024 / chip.clock_hz;
  }
  double cycles_to_ms(double cycles) const { return cycles / chip.clock_hz * 1e3; }
};

// Presets: "ipu-mk2" (no HBM), "elk-1472" (1,472 cores, 4,000 GB/s, 80 GB), "elk-5888" (5,888 cores over
// four chips as one flat pool, 4 x 4,000 GB/s, 4 x 80 GB), and linked chips: "ipu-pod4" (four Mk2 chips
// with IPU-Links, no HBM) and "elk-5888-linked" (elk-5888's chips joined by IPU-Links).
// docs/t10-traffic.md#capacity and docs/t10-chips.md cite the numbers. nullopt for an unknown name.
std::optional<ServingChip> serving_chip_preset(const std::string& name);
std::vector<std::string> serving_chip_preset_names();

// What an operator loads from HBM: nothing (activations only), a weight, or the KV cache. Always operand B of a
// MatMul (the model files put the weight or the cached keys and values second).
enum class HbmOperand { None, Weight, KvCache };
const char* to_string(HbmOperand kind);

// How tensor parallelism splits an operator over chips (docs/t10-chips.md#tensor): not at all (every chip
// computes it whole), its weight's columns, its weight's rows (a partial sum to all-reduce), its heads (a
// product with the KV cache), or its rows or columns as its split input is.
enum class TensorShard { Replicated, Column, Row, Heads, Split };
const char* to_string(TensorShard shard);

struct ServingOperator {
  TensorOperator op;
  HbmOperand hbm = HbmOperand::None;
  int64_t hbm_bytes = 0;  // the operand's size, read once from HBM
  // The KV rows this operator's new positions add, written to HBM through the same channel, in the slot of
  // this operator's load (docs/t10-traffic.md#writes).
  int64_t hbm_write_bytes = 0;
  int layer = 0;
  // Cycles after the operator before the next may start: tensor parallelism's all-reduce of this
  // operator's partial output over the links (t10_links.hpp), charged to each of its options.
  double collective_cycles = 0;
  TensorShard shard = TensorShard::Replicated;  // read from the model file's data flow
};

struct ServingProgram {
  std::string name;
  TensorProgram program;  // chip and dtype; program.ops mirrors `ops` for pricing
  std::vector<ServingOperator> ops;
  int layers = 0;
  int64_t batch = 0, sequence = 0;
  std::vector<std::string> warnings;  // where the model file contradicts itself (ServingModel::warnings)
};

// One operator's choice: its option (hot plan, cold layout, time) and, derived, what its load costs.
struct ServingChoice {
  OperatorOption option;
  int64_t preload_bytes = 0;  // per core: operand B in the cold layout (0 when nothing is loaded)
  int64_t hbm_bytes = 0;      // through the HBM channel, all cores together (each byte once): read and written
};
ServingChoice serving_choice(const ServingOperator& op, const OperatorOption& option);

// The timeline of a schedule (docs/t10-serving.md#timeline). Loads go through the HBM channel one at a time,
// each as soon as the previous load is done and every core has room for it until its operator ends: in
// operator order, or passing up to `lookahead - 1` earlier loads that wait for room (serving_next_load). A load is limited by HBM (hbm_bytes / bandwidth) and by the NoC (preload_bytes per core at
// the per-core share); the running operator's exchanges have the NoC first, so during an operator a load's
// NoC part advances only in the operator's compute share (compute / time). An operator starts when the one
// before it has ended and its load is done, and runs for its option's time.
struct ServingEvent {
  double time = 0;
  std::string what;          // "load start", "load end", "op start", "op end"
  int op = 0;
  int64_t sram_bytes = 0;    // per core, just after the event
};
struct LoadSpan {
  double start = 0, end = 0, hbm_cycles = 0, noc_cycles = 0;
};
struct OpSpan {
  double start = 0, end = 0;
};
// An SRAM overflow, with its terms: the core (every core holds the same share), the time, and what is
// resident against the capacity.
struct SramOverflow {
  double time = 0;
  int op = -1;  // the operator running (or about to) when it happens
  std::vector<std::pair<std::string, int64_t>> resident;  // name and bytes per core
  int64_t total = 0, capacity = 0;
  std::string message() const;
};
struct ServingTimeline {
  std::vector<LoadSpan> loads;  // per operator (zero spans when it loads nothing)
  std::vector<OpSpan> ops;
  std::vector<ServingEvent> events;  // in time order
  double makespan = 0;               // cycles
  int64_t peak_sram_bytes = 0;       // per core, over all events
  double hbm_bytes = 0;
  double hbm_busy_cycles = 0, noc_load_cycles = 0, compute_cycles = 0, exchange_cycles = 0;
  std::optional<SramOverflow> overflow;  // set when some operator cannot fit even alone
};
ServingTimeline serving_timeline(const ServingProgram& program, const ServingChip& chip,
                                 const std::vector<ServingChoice>& choices, int lookahead = 1);

// The timeline's rules, which the analytic walk above and the SystemC replay (t10_serving_sim) both apply.
// What an operator holds per core while it runs: its hot plan, and the cold copy of its loaded operand until
// the warm-up has moved it (unless the cold layout is the hot plan's own).
int64_t serving_running_bytes(const ServingChoice& c);
// The loads started so far and the first operator not ended: what decides the SRAM now and what may start.
struct ServingResidency {
  const std::vector<ServingChoice>& choices;
  const std::vector<bool>& load_started;
  int first_unended = 0;
  int running = -1;  // -1: no operator runs
};
// Bytes per core now: the running operator's, plus every started load whose operator has not run yet.
int64_t serving_sram_now(const ServingResidency& r);
// Which load the HBM channel starts now, or -1: among the first `lookahead` loads not started (operator
// order), the first that fits with every earlier one of them reserved: while each operator from the first
// unended one on runs, its running bytes plus the started and reserved loads of later operators fit `sram`.
// Lookahead 1 loads in operator order; more lets a small load pass a large one that waits for room, never
// at the expense of the earlier ones (they stay reserved, so none is starved).
int serving_next_load(const ServingResidency& r, const std::vector<bool>& has_load, int lookahead, int64_t sram);
// The fraction of a load done per cycle: HBM-bound, or NoC-bound within the share the running operator's
// exchanges leave (its compute over its time).
double serving_load_rate(const ServingChip& chip, const ServingChoice& loading, const ServingChoice* running);
double serving_hbm_cycles(const ServingChip& chip, const ServingChoice& c);
double serving_noc_cycles(const ServingChip& chip, const ServingChoice& c);

// No schedule of these option sets is faster (docs/t10-serving.md#bound): the HBM channel moves every byte
// once at its bandwidth and the last loaded operator and those after it still run; every operator runs for
// at least its fastest option; the first load precedes the first operator that needs it.
double serving_lower_bound(const ServingProgram& program, const ServingChip& chip,
                           const std::vector<std::vector<ServingChoice>>& options);

}  // namespace mlsys::t10
