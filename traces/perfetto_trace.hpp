// Chrome/Perfetto trace-event JSON (the "JSON trace format"): complete events ("X") on named tracks and
// counter events ("C"), timestamps in microseconds as the format requires. One latency unit of the rule book
// is replayed as one microsecond, so ts/dur read directly in latency units. Events are kept as text, one per
// line, as they arrive: a replay of half a million steps holds hundreds of MB as text, but gigabytes as JSON
// objects (9 GB and 47 s for benchmark 16's third-party schedule before this).
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
  void span(int track, const std::string& name, double ts_us, double dur_us,
            nlohmann::json args = {}) override;
  void counter(const std::string& name, double ts_us, nlohmann::json values) override;
  nlohmann::json to_json() const;             // parses the text back (tests)
  void write(const std::string& path) const;  // atomically
  size_t size() const { return events_; }
  size_t bytes() const { return text_.size(); }

 private:
  void add(const nlohmann::json& event);
  std::string process_;
  int next_track_ = 1;
  size_t events_ = 0;
  std::string text_;  // the events, comma-separated
};

}  // namespace mlsys
