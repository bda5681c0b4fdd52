// SystemC modules of the MLSys machine. They know durations and capacities, never the rules: the sequencer
// hands them each step as the step model computed it.
#pragma once

#include <systemc>
#include <deque>
#include <vector>

#include "sim/step_model.hpp"

namespace mlsys::hw {

// One latency unit of the rule book is one microsecond of simulated time; the kernel resolution is 1 fs, so
// each duration is rounded by at most 5e-10 units (totals stay exact to far better than 1e-9 relative).
inline sc_core::sc_time units(double latency_units) { return sc_core::sc_time(latency_units, sc_core::SC_US); }
inline double now_units() { return sc_core::sc_time_stamp().to_seconds() * 1e6; }


struct Transfer {
  bool store = false;
  int tensor = -1;
  Region region;
};

// Fast-memory occupancy by working-set part (M20: A retained-in, B slices, C outputs, D accumulators).
struct Occupancy {
  int64_t retained_in = 0, slices = 0, outputs = 0, accumulators = 0;
  int64_t total() const { return retained_in + slices + outputs + accumulators; }
};

// Optional observer of what the modules do (the Perfetto writer implements it).
struct ActivitySink {
  virtual ~ActivitySink() = default;
  virtual void transfer(const Transfer& t, double start, double duration) = 0;
  virtual void compute(const OpCompute& c, double start, double duration) = 0;
  virtual void occupancy(double time, const Occupancy& parts, double capacity) = 0;
};

// The DMA channel between slow and fast memory: `bandwidth` elements per unit, one transfer at a time.
// Jobs (one per step: its loads, then its stores) are served in submission order.
class SlowMemoryLink : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(SlowMemoryLink);
  SlowMemoryLink(sc_core::sc_module_name name, double bandwidth, ActivitySink* sink);
  sc_core::sc_signal<bool> busy;
  int64_t submit(std::vector<Transfer> job);  // returns the job's number
  void wait_for(int64_t job);                 // from a thread: until that job's transfers are done

 private:
  void run();
  double bandwidth_;
  ActivitySink* sink_;
  std::deque<std::vector<Transfer>> queue_;
  int64_t submitted_ = 0, completed_ = 0;
  sc_core::sc_event submitted_event_, completed_event_;
};

// The compute array: executes the ops of a step one after another for the durations the step model gives.
class ComputeArray : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ComputeArray);
  ComputeArray(sc_core::sc_module_name name, ActivitySink* sink);
  sc_core::sc_signal<bool> busy;
  sc_core::sc_event start, done;
  std::vector<OpCompute> work;

 private:
  void run();
  ActivitySink* sink_;
};

// Fast memory: holds the working-set terms of the current step. Allocation beyond capacity is an OOM,
// detected at the allocation, with the time, the step and every resident term.
class FastMemory : public sc_core::sc_module {
 public:
  FastMemory(sc_core::sc_module_name name, double capacity, ActivitySink* sink);
  sc_core::sc_signal<sc_dt::int64> occupancy;
  // Frees the terms the step no longer holds, allocates the new (or grown) ones. False on OOM.
  bool apply(int subgraph, const StepDetail& step);
  void clear();  // end of a subgraph: everything not retained is discarded (retained tensors come back as A)
  const std::optional<RuleViolation>& violation() const { return violation_; }
  int64_t peak() const { return peak_; }
  double capacity() const { return capacity_; }

 private:
  double capacity_;
  ActivitySink* sink_;
  std::vector<WorkingSetTerm> resident_;
  int64_t used_ = 0, peak_ = 0;
  std::optional<RuleViolation> violation_;
  void report_occupancy();
};

}  // namespace mlsys::hw
