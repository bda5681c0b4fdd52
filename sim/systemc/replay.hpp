// Replay of a schedule in simulated time on SystemC modules of the hardware: a slow-memory link (DMA), a fast
// memory (capacity, allocation, OOM), a compute array, and a sequencer. The sequencer takes every step from
// the step model (StepWalker) and never computes a cost itself; the modules turn the step's transfers and
// computes into simulated time. This header has no SystemC include: callers need no SystemC flags.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/violation.hpp"

namespace mlsys {

class TraceObserver;
class WaveformObserver;

enum class TimingMode {
  Contest,     // the rule book: a step's DMA and compute start together; the step ends when both finish
  Overlapped,  // what-if, outside the contest model: the next step's loads start while this step computes
};

// Fast-memory occupancy from the moment `time` (latency units) on.
struct OccupancySample {
  double time = 0;
  int64_t elements = 0;
};

// How much a trace records: every step (its transfers, its compute and the occupancy at every change), or one
// span per subgraph with its step count and its occupancy peak (long replays: docs/performance.md#traces).
enum class TraceDetail { Step, Subgraph };

struct ReplayOptions {
  ModelOptions model;
  TimingMode timing = TimingMode::Contest;
  TraceObserver* trace = nullptr;  // if set, receives DMA, compute, step, subgraph and occupancy events
  TraceDetail trace_detail = TraceDetail::Step;
  WaveformObserver* waveform = nullptr;  // if set, receives the occupancy, link busy and compute busy signals
  std::vector<OccupancySample>* occupancy = nullptr;  // if set, receives every change of the occupancy
};

struct ReplayResult {
  bool completed = false;    // every subgraph replayed without a violation
  double total_latency = 0;  // simulated time at the end, in latency units
  std::vector<double> subgraph_latencies;
  int64_t peak_occupancy = 0;  // fast memory, elements
  int64_t steps = 0;
  std::optional<RuleViolation> error;  // the first violation (an OOM is detected by the fast memory itself)
  double error_time = 0;               // simulated time of the violation
};

// Elaborates the modules, runs the simulation, tears the modules down and resets the SystemC kernel, so that
// any number of replays can run in one process.
ReplayResult replay_schedule(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ReplayOptions& options);

}  // namespace mlsys
