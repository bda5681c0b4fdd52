// T10 mode: compute-shift plans for one MatMul on an IPU-style chip (rule book docs/t10-model.md,
// rules T1-T41). Everything here is plain data and formulas; the replay (t10_replay) and the search
// (t10_search) call it and never recompute a cost.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlsys::t10 {

// Cores of one Graphcore IPU Mk2 (GC200), the chip every preset is made of; the published model's
// IPU2_NUM_CORES, beyond which it charges its inter-chip overhead.
inline constexpr int64_t kIpuCoresPerChip = 1472;

// Chips a chip file may join by links (the link model keeps a load per directed pair of chips).
inline constexpr int64_t kMaxChips = 256;
// The topologies of chips joined by links: "ring" (each chip linked to two neighbours, half its links to
// each; two chips share all of them) and "all-to-all" (its links split evenly over every other chip).
bool is_chip_topology(const std::string& name);

struct Chip {  // T1 defaults: Graphcore IPU Mk2
  std::string name = "ipu-mk2";
  int64_t cores = kIpuCoresPerChip;
  int64_t sram_bytes_per_core = 638976;
  int64_t systolic = 16;  // Ts; the rule book requires a square array
  double flops_per_cycle = 512;
  double local_bytes_per_cycle = 32;
  double noc_elems_per_cycle = 3;
  std::string noc_topology = "mesh";
  // The physical exchange model of the all-cores engine (t10 simulate --timing exchange), not used by the
  // grader's formulas; docs/t10-model.md#exchange gives the sources of the defaults.
  double exchange_bytes_per_cycle = 4;  // per tile, for sends and for receives
  double exchange_latency_cycles = 0;   // per transfer (no published figure: set it to study it)
  double sync_cycles = 118;             // per superstep
  double amp_macs_per_cycle = 64;       // FP16 multiply-accumulates per cycle per tile
  // Whether one send reaches every tile that receives the same piece in one exchange phase (true), or the
  // sender sends each copy in turn (false). No public source we found settles it for the IPU exchange
  // (docs/t10-model.md#broadcast): a parameter, off by default, as the engine had it.
  bool exchange_multicast = false;
  // The calibrated model's INTER_CHIP_OVERHEAD: shifts and shuffles cost this much more when the cores span
  // more than one chip's 1,472 (docs/t10-model.md#calibrated).
  double inter_chip_overhead = 1.25;
  // Chips joined by links (docs/t10-chips.md): `cores` lie on `chips` chips of `cores_per_chip` each, core
  // ids in order. With link_gbps 0 they are the artifact's flat pool, where crossing a chip costs only the
  // overhead above; otherwise an exchange phase that crosses takes the longer of its on-chip part and its
  // bytes over the links of `topology` ("ring" or "all-to-all").
  int64_t chips = 1;
  int64_t cores_per_chip = kIpuCoresPerChip;
  double link_gbps = 0;        // each chip's links together, one way, in the HBM's GB/s (1000 x 1024^2 B/s)
  double link_latency_ns = 0;  // per crossing phase (per hop)
  std::string topology = "all-to-all";
  double clock_hz = 1.325e9;  // the calibrated model's cycle (IPU Mk2)
  bool linked() const { return link_gbps > 0 && chips > 1; }
};

struct Problem {
  int64_t m = 0, k = 0, n = 0;
  int64_t dtype_bytes = 2;
  Chip chip;
  std::optional<double> reference_cycles;
  std::string name;
  // Independent products of the same shape run together (attention heads, a batched MatMul). Only the
  // calibrated timing prices them (docs/t10-model.md#batch); the rule book's problems have one.
  int64_t batch = 1;
};

struct Plan {
  std::array<int64_t, 3> f_op{1, 1, 1};  // pm, pk, pn
  int64_t am = 1, ak = 1, bk = 1, bn = 1, cm = 1, cn = 1;
  // Spatial parts of the batch (1 for the rule book's problems): each group of pm·pk·pn cores computes
  // ceil(batch/pb) products, every piece carrying that many.
  int64_t pb = 1;
};

enum class Profile { Strict, EngDesign };

struct Violation {
  std::string code;  // E_CORES_MAX, ...
  std::string message;
};

// T1-T2. Returns the problem or the fault naming the field and value. (The JSON readers and writers of T10
// are defined together in t10_json_io.cpp.)
// A file that is not a problem or a plan at all throws InputError (sim/violation.hpp), as the graph family's
// readers do, with the rule E_PROBLEM, E_FORMAT or E_PROFILE, the file (when given) and the field.
Problem parse_problem(const nlohmann::json& doc, const std::string& file = "");
// T1's chip object at `where` (a field name for the messages), faults under `rule`; the fields it lacks
// keep `base`'s values. The serving chip file is read by the same function (t10_serving_io.hpp).
Chip parse_chip(const nlohmann::json& chip, const std::string& where, const std::string& rule,
                const std::string& file, const Chip& base = Chip());
// T4-T5 (accepts the {"config": {...}} wrapper).
Plan parse_plan(const nlohmann::json& doc, const std::string& file = "");
nlohmann::json plan_to_json(const Plan& plan);
// T3: E_PROFILE for engdesign on a non-default chip.
void check_profile(const Problem& problem, Profile profile, const std::string& file = "");

struct ShiftLevel {     // T15-T17
  char dim;             // 'm', 'k' or 'n'
  int64_t g;            // ring length
  std::string tensors;  // e.g. "CB"
  int64_t size;         // elements per core moved per event
  int64_t iterations;   // it_i
  int64_t events;       // it_i * (g - 1)
  double hops;          // 1, or rho_C / rho_A / rho_B by level position (Q5)
};

struct Derived {  // T7-T10, T15-T16
  int64_t cores = 0;
  std::array<int64_t, 3> spatial{}, steps_per_dim{}, sub_task{};
  int64_t steps = 0;
  std::array<int64_t, 3> elems{}, replication{}, ring_products{};  // indexed C, A, B
  int64_t hot_bytes = 0, cold_bytes = 0;
  bool misaligned = false;
  char misaligned_dim = 0;
  std::vector<ShiftLevel> levels;  // sorted (T16); empty when misaligned
  bool rotates(int tensor) const { return ring_products[tensor] > 1; }
};

struct Cost {  // T11-T21
  double compute = 0, load = 0, store = 0, comp = 0;
  int64_t shift = 0, bcast = 0, reduce = 0;
  double total = 0;
};

struct Evaluation {
  Derived derived;
  std::optional<Cost> cost;           // null under E4 or E6 (T28)
  std::vector<Violation> violations;  // of the active profile, in T24/T25 order
  std::vector<Violation> engdesign_violations;
  bool accepted = false;
  std::optional<double> score;  // T29 (engdesign semantics)
};

enum Tensor { C = 0, A = 1, B = 2 };

Derived derive(const Problem& problem, const Plan& plan);
// 'C', 'A', 'B' as the Tensor index.
inline int tensor_index(char name) {
  return name == 'C' ? C : name == 'A' ? A : B;
}
// T34: one move of the reflected mixed-radix Gray code over the level digits (level 0 most significant):
// the last digit that can still move in its direction moves, every later one reverses. Returns that level.
size_t gray_advance(const std::vector<ShiftLevel>& levels, std::vector<int64_t>& digits,
                    std::vector<int64_t>& dir);
// T17/T21 shift term for given event counts per level (the analytic model passes it_i*(g_i-1); the replay
// passes the events it observed).
int64_t shift_cycles(const Derived& derived, const std::vector<int64_t>& events_per_level,
                     double noc_elems_per_cycle);
Cost cost_of(const Problem& problem, const Plan& plan, const Derived& derived);

// Durations of single events (T33, T34), raw (no floors): what the replay spends in simulated time.
struct EventCycles {
  double sub_task;            // one compute step: 2*sm*sk*sn/fl
  double bcast[3];            // per rotating input X (A, B): S_X*(Pi_X-1)*2/noc; 0 for C or a still tensor
  double reduce;              // r*2*rho_C/noc, 0 when C does not rotate
  std::vector<double> shift;  // per level: size*hops*2(i+1)/noc
};
EventCycles event_cycles(const Problem& problem, const Derived& derived);
// All rules of the profile, in T24/T25 order. `messages = false` skips building the texts (the search).
Evaluation evaluate(const Problem& problem, const Plan& plan, Profile profile, bool messages = true);
std::optional<double> reference_cycles(const Problem& problem);  // T30
double compute_lower_bound(const Problem& problem);              // T41

nlohmann::json evaluation_to_json(const Problem& problem, const Plan& plan, const Evaluation& e,
                                  Profile profile);

}  // namespace mlsys::t10
