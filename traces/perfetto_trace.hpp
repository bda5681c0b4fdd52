// Chrome/Perfetto trace-event JSON (the "JSON trace format"): complete events ("X") on named tracks and counter
// events ("C"), timestamps in microseconds as the format requires. One latency unit of the rule book is
// replayed as one microsecond, so ts/dur read directly in latency units.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/trace_observer.hpp"

namespace mlsys {

class PerfettoTrace : public TraceObserver {
 public:
  explicit PerfettoTrace(std::string process_name);
  // Tracks are threads of one process, shown in the order they were named.
  int track(const std::string& name) override;
  void span(int track, const std::string& name, double ts_us, double dur_us, nlohmann::json args = {}) override;
  void counter(const std::string& name, double ts_us, nlohmann::json values) override;
  nlohmann::json to_json() const;
  void write(const std::string& path) const;  // atomically
  size_t size() const { return events_.size(); }

 private:
  std::string process_;
  int next_track_ = 1;
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace mlsys
