// A serving run as discrete events on the SystemC kernel (docs/t10-traffic.md#engine): an arrival process
// that hands each request to the scheduler at its arrival time, and a chip process that plans an iteration
// whenever it is idle, runs it for the pricer's time and finishes it. The scheduler is the analytic driver's
// TrafficEngine and the pricer the same; the replayed makespan must equal run_traffic's.
#pragma once

#include <string>
#include <vector>

#include "sim/t10/t10_traffic.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys::t10 {

struct TrafficReplay {
  double makespan_ms = 0;         // the kernel's clock when the last iteration ended
  int64_t iterations = 0, arrivals = 0;
  bool agrees = false;            // makespan (1e-9 relative), iterations and finished requests equal the run's
  std::string disagreement;
};

// Runs `requests` again on the kernel and compares with `analytic`. `trace`, if given, gets a track of
// iterations and a counter of the KV cache ("KV cache", bytes) and of the queue.
TrafficReplay replay_traffic(const std::vector<ServingRequest>& requests, const TrafficOptions& options,
                             const IterationPricer& price, const TrafficRun& analytic,
                             TraceObserver* trace = nullptr);

}  // namespace mlsys::t10
