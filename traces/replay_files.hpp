// What the command lines ask of a replay: a timing name ("contest" | "overlapped") and optional Perfetto and
// VCD paths. The engine reports to the writers; this writes their files (atomically) when the replay ends.
#pragma once

#include <string>

#include "sim/systemc/replay.hpp"

namespace mlsys {

ReplayResult replay_to_files(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ModelOptions& model, const std::string& timing,
                             const std::string& trace_path, const std::string& vcd_path,
                             const std::string& label);

}  // namespace mlsys
