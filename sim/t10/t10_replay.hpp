// Discrete-event replay of a T10 plan (rule book section 6) in SystemC. All P cores run the same schedule on
// same-sized partitions (T31), so one representative core stands for the whole group of P identical cores:
// its SRAM, its compute, and one ring link per shift level. 1,472 cores cost no more than one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_model.hpp"

namespace mlsys {
class TraceObserver;
}

namespace mlsys::t10 {

struct ReplayLevel {
  int level;
  char dim;
  int64_t g;
  std::string tensors;
  int64_t events = 0;  // observed
  int64_t elems_per_event;
  double hops;
  int contention;  // 2(level+1), as the vectors report it
};

struct ReplaySummary {
  int64_t compute_steps = 0;
  double sub_task_cycles = 0, local_stall_cycles = 0;
  int64_t shift_events = 0;
  std::vector<ReplayLevel> levels;
  int64_t occupancy_start = 0, occupancy_broadcast = 0, occupancy_compute_shift = 0, occupancy_reduce = 0,
          occupancy_end = 0, peak_bytes = 0;
  // Components from the observed events (T37) and the raw simulated makespan.
  double compute = 0, stall = 0, total = 0, makespan = 0;
  int64_t shift = 0, bcast = 0, reduce = 0;
  bool misaligned = false;        // "misaligned: operands not moved, shift charged 0"
  bool consistent = true;         // T35 held at every compute step
  std::string consistency_error;  // first failure, if any
};

// Requires a plan whose cost is defined (no E4/E6). Reports its events to `trace` if given.
ReplaySummary replay_plan(const Problem& problem, const Plan& plan, TraceObserver* trace = nullptr);

}  // namespace mlsys::t10
