#include "traces/replay_files.hpp"

#include <memory>

#include "traces/perfetto_trace.hpp"
#include "traces/vcd_trace.hpp"

namespace mlsys {

ReplayResult replay_to_files(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ModelOptions& model, const std::string& timing,
                             const std::string& trace_path, const std::string& vcd_path,
                             const std::string& label) {
  ReplayOptions options;
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
