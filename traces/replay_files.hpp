// What the command lines ask of a replay: a timing name ("contest" | "overlapped") and optional Perfetto and
// VCD paths. The engine reports to the writers; this writes their files (atomically) when the replay ends.
#pragma once

#include <string>

#include "sim/systemc/replay.hpp"

namespace mlsys {

// --trace-detail: "step", "subgraph", or "auto": every step up to kStepTraceLimit steps, one span per
// subgraph above (a trace of half a million steps is half a gigabyte that Perfetto's UI cannot use).
constexpr int64_t kStepTraceLimit = 20000;
TraceDetail trace_detail_for(const std::string& name, int64_t steps);
const char* to_string(TraceDetail detail);

ReplayResult replay_to_files(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ModelOptions& model, const std::string& timing,
                             const std::string& trace_path, const std::string& vcd_path,
                             const std::string& label, TraceDetail detail = TraceDetail::Step);

}  // namespace mlsys
