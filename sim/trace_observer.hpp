// What a replay tells the world as it runs: spans on named tracks and counters, in simulated time. The
// replays (SystemC engine, T10) report to this interface and open no file; the trace writers above them
// (traces/: Perfetto JSON) implement it. Times are microseconds of simulated time: one latency unit of the
// graph model is one microsecond, one T10 cycle one nanosecond.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mlsys {

class TraceObserver {
 public:
  virtual ~TraceObserver() = default;
  // A named track (a row of the timeline); returns its id for span().
  virtual int track(const std::string& name) = 0;
  virtual void span(int track, const std::string& name, double start_us, double duration_us,
                    nlohmann::json args = {}) = 0;
  // A named counter's values from `time_us` on (one series per key of `values`).
  virtual void counter(const std::string& name, double time_us, nlohmann::json values) = 0;
};

}  // namespace mlsys
