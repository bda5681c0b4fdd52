#include "sim/systemc/hardware.hpp"

#include <algorithm>
#include <sstream>

namespace mlsys::hw {

using namespace sc_core;

SlowMemoryLink::SlowMemoryLink(sc_module_name name, double bandwidth, ActivitySink* sink)
    : sc_module(name), busy("busy"), bandwidth_(bandwidth), sink_(sink) {
  SC_THREAD(run);
}

int64_t SlowMemoryLink::submit(std::vector<Transfer> job) {
  queue_.push_back(std::move(job));
  submitted_event_.notify(SC_ZERO_TIME);
  return submitted_++;
}

void SlowMemoryLink::wait_for(int64_t job) {
  while (completed_ <= job) wait(completed_event_);
}

void SlowMemoryLink::run() {
  for (;;) {
    while (queue_.empty()) wait(submitted_event_);
    const std::vector<Transfer> job = std::move(queue_.front());
    queue_.pop_front();
    for (const Transfer& t : job) {
      busy.write(true);
      const double begin = now_units(), duration = static_cast<double>(t.region.area()) / bandwidth_;
      wait(units(duration));
      if (sink_) sink_->transfer(t, begin, now_units() - begin);
    }
    if (queue_.empty()) busy.write(false);
    ++completed_;
    completed_event_.notify(SC_ZERO_TIME);
  }
}

ComputeArray::ComputeArray(sc_module_name name, ActivitySink* sink) : sc_module(name), busy("busy"), sink_(sink) {
  SC_THREAD(run);
}

void ComputeArray::run() {
  for (;;) {
    wait(start);
    for (const OpCompute& c : work) {
      busy.write(true);
      const double begin = now_units();
      wait(units(c.cost));
      if (sink_) sink_->compute(c, begin, now_units() - begin);
    }
    busy.write(false);
    done.notify(SC_ZERO_TIME);
  }
}

FastMemory::FastMemory(sc_module_name name, double capacity, ActivitySink* sink)
    : sc_module(name), occupancy("occupancy"), capacity_(capacity), sink_(sink) {}

static bool same_term(const WorkingSetTerm& a, const WorkingSetTerm& b) {
  return a.part == b.part && a.tensor == b.tensor && a.region == b.region;
}

bool FastMemory::apply(int subgraph, const StepDetail& step) {
  const auto& wanted = step.working_set.terms;
  // Free first: what the previous step held and this one does not.
  for (auto it = resident_.begin(); it != resident_.end();) {
    auto keep = std::find_if(wanted.begin(), wanted.end(), [&](const auto& w) { return same_term(*it, w); });
    if (keep == wanted.end()) {
      used_ -= it->elements;
      it = resident_.erase(it);
    } else {
      ++it;
    }
  }
  for (const WorkingSetTerm& w : wanted) {
    auto have = std::find_if(resident_.begin(), resident_.end(), [&](const auto& r) { return same_term(r, w); });
    const int64_t extra = have == resident_.end() ? w.elements : w.elements - have->elements;
    if (extra <= 0) continue;
    if (static_cast<double>(used_ + extra) > capacity_) {
      std::ostringstream msg;
      msg << "out of fast memory at t = " << now_units() << ": allocating " << w.part << " T" << w.tensor
          << " " << to_string(w.region) << " (" << extra << " elements) raises occupancy " << used_ << " to "
          << used_ + extra << " > capacity " << capacity_ << "; the step needs " << step.working_set.total()
          << " (A " << step.working_set.retained_in << " + B " << step.working_set.slices << " + C "
          << step.working_set.outputs << " + D " << step.working_set.accumulators << ")";
      RuleViolation v;
      v.rule = "M20";
      v.subgraph = subgraph;
      v.step = step.ref;
      v.tensor = w.tensor;
      v.message = msg.str();
      v.working_set = step.working_set;
      v.capacity = capacity_;
      violation_ = v;
      return false;
    }
    used_ += extra;
    if (have == resident_.end()) resident_.push_back(w);
    else have->elements = w.elements;
  }
  peak_ = std::max(peak_, used_);
  report_occupancy();
  return true;
}

void FastMemory::report_occupancy() {
  occupancy.write(used_);
  if (!sink_) return;
  Occupancy parts;
  for (const WorkingSetTerm& t : resident_) {
    int64_t& part = t.part == 'A' ? parts.retained_in : t.part == 'B' ? parts.slices
                    : t.part == 'C' ? parts.outputs : parts.accumulators;
    part += t.elements;
  }
  sink_->occupancy(now_units(), parts, capacity_);
}

void FastMemory::clear() {
  resident_.clear();
  used_ = 0;
  report_occupancy();
}

}  // namespace mlsys::hw
