#include "traces/replay_files.hpp"

#include <memory>

#include "traces/perfetto_trace.hpp"
#include "traces/vcd_trace.hpp"

namespace mlsys {

TraceDetail trace_detail_for(const std::string& name, int64_t steps) {
  if (name == "step") return TraceDetail::Step;
  if (name == "subgraph") return TraceDetail::Subgraph;
  return steps > kStepTraceLimit ? TraceDetail::Subgraph : TraceDetail::Step;
}

const char* to_string(TraceDetail detail) {
  return detail == TraceDetail::Step ? "step" : "subgraph";
}

ReplayResult replay_to_files(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ModelOptions& model, const std::string& timing,
                             const std::string& trace_path, const std::string& vcd_path,
                             const std::string& label, TraceDetail detail) {
  ReplayOptions options;
  options.trace_detail = detail;
  options.model = model;
  options.timing = timing == "overlapped" ? TimingMode::Overlapped : TimingMode::Contest;
  PerfettoTrace trace("mlsys replay: " + label);
  if (!trace_path.empty()) options.trace = &trace;
  std::unique_ptr<VcdTrace> vcd;
  if (!vcd_path.empty()) vcd = std::make_unique<VcdTrace>(vcd_path);
  options.waveform = vcd.get();
  ReplayResult result = replay_schedule(problem, graph, schedule, options);
  if (!trace_path.empty()) trace.write(trace_path);
  return result;
}

}  // namespace mlsys
