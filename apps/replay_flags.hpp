// The replay flags of the programs that replay a schedule in SystemC (simulate, verify --replay):
// --timing, --trace, --trace-detail and --vcd, declared once, and the replay they ask for.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "traces/replay_files.hpp"

namespace mlsys {

struct ReplayFlags {
  std::string timing = "contest", trace_path, trace_detail = "auto", vcd_path;

  // `when` prefixes the file flags' help ("with --replay: "), empty where the program always replays.
  void add_to(CLI::App& app, const std::string& when) {
    app.add_option("--timing", timing,
                   "replay timing: contest (the rule book) or overlapped (what-if: next step's loads overlap "
                   "this step's compute)")
        ->check(CLI::IsMember({"contest", "overlapped"}));
    app.add_option("--trace", trace_path, when + "write a Chrome/Perfetto trace-event JSON file");
    app.add_option("--trace-detail", trace_detail,
                   "auto (default: every step up to " + std::to_string(kStepTraceLimit) +
                       " steps, else one span per subgraph), step, or subgraph")
        ->check(CLI::IsMember({"auto", "step", "subgraph"}));
    app.add_option("--vcd", vcd_path, when + "write a VCD of occupancy, link busy and compute busy");
  }

  // The replay, with its trace at the detail asked for (saying so on stderr when auto falls back).
  ReplayResult replay(const Problem& problem, const Graph& graph, const Schedule& schedule,
                      const ModelOptions& model, const std::string& label) const {
    const TraceDetail detail =
        trace_detail_for(trace_detail, trace_path.empty() ? 0 : count_steps(problem, graph, schedule, model));
    if (!trace_path.empty() && detail == TraceDetail::Subgraph && trace_detail == "auto")
      std::cerr << "trace: more than " << kStepTraceLimit
                << " steps, one span per subgraph (--trace-detail step for every step)\n";
    return replay_to_files(problem, graph, schedule, model, timing, trace_path, vcd_path, label, detail);
  }
};

}  // namespace mlsys
