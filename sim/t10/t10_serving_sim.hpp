// The decode step's schedule replayed in simulated time on the SystemC engine (docs/t10-serving.md#replay):
// an HBM channel module that streams the loads, a compute module that runs the operators, the NoC shared
// between them by the serving step model's rule, and every core's SRAM checked at every event.
#pragma once

#include <string>
#include <vector>

#include "sim/t10/t10_serving.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys::t10 {

struct ServingReplay {
  double makespan = 0;  // cycles
  int64_t peak_sram_bytes = 0;
  int64_t events = 0;
  bool agrees = false;       // makespan and peak equal the analytic timeline's (1e-9 relative)
  std::string disagreement;  // or the first SRAM overflow the replay met
};

// `trace`, if given, gets tracks "HBM", "NoC (loads)" and "compute" and a counter "SRAM per core".
ServingReplay replay_serving(const ServingProgram& program, const ServingChip& chip,
                             const std::vector<ServingChoice>& choices, int lookahead = 1,
                             TraceObserver* trace = nullptr);

}  // namespace mlsys::t10
