#include "traces/perfetto_trace.hpp"

#include "sim/json_io.hpp"
#include "traces/atomic_file.hpp"

namespace mlsys {

PerfettoTrace::PerfettoTrace(std::string process_name) : process_(std::move(process_name)) {
  add({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", process_}}}});
}

void PerfettoTrace::add(const nlohmann::json& event) {
  if (events_++ > 0) text_ += ",\n";
  text_ += event.dump();
}

int PerfettoTrace::track(const std::string& name) {
  const int id = next_track_++;
  add({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", id}, {"args", {{"name", name}}}});
  add({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", id}, {"args", {{"sort_index", id}}}});
  return id;
}

void PerfettoTrace::span(int track, const std::string& name, double ts_us, double dur_us,
                         nlohmann::json args) {
  nlohmann::json e{{"name", name}, {"ph", "X"}, {"pid", 1}, {"tid", track}, {"ts", ts_us}, {"dur", dur_us}};
  if (!args.is_null()) e["args"] = std::move(args);
  add(e);
}

void PerfettoTrace::counter(const std::string& name, double ts_us, nlohmann::json values) {
  add({{"name", name}, {"ph", "C"}, {"pid", 1}, {"ts", ts_us}, {"args", std::move(values)}});
}

nlohmann::json PerfettoTrace::to_json() const {
  return nlohmann::json::parse("{\"traceEvents\":[" + text_ + "],\"displayTimeUnit\":\"ns\"}");
}

void PerfettoTrace::write(const std::string& path) const {
  write_file_atomic(path, {"{\"traceEvents\":[\n", text_, "\n],\"displayTimeUnit\":\"ns\"}\n"});
}

}  // namespace mlsys
