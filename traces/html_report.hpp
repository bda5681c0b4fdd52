// A schedule's report as one self-contained HTML page (inline SVG, style and a small script; no network):
// summary, the DAG laid out by Graphviz, a timeline of the subgraphs split into compute- and memory-bound
// time, fast-memory occupancy over time from the SystemC replay against the capacity, the per-subgraph
// table, and for an invalid schedule the violation with its working-set terms drawn against the capacity.
#pragma once

#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/systemc/replay.hpp"
#include "verifier/verify.hpp"

namespace mlsys {

struct ScheduleReportPage {
  std::string problem_name, solution_name;
  const Problem* problem = nullptr;
  const Graph* graph = nullptr;
  const Schedule* schedule = nullptr;
  const ScheduleReport* report = nullptr;
  LowerBound bound;
  ModelOptions model;
  std::vector<OccupancySample> occupancy;  // from the replay; empty if it was not run
  std::string occupancy_note;              // why there is no occupancy chart, if there is none
  std::string docs = "docs";               // where rule ids link to (docs_location)
};

std::string schedule_report_html(const ScheduleReportPage& page);

// The occupancy chart's points: about `limit` of them, each bucket of time keeping its highest sample.
std::vector<OccupancySample> downsample_occupancy(const std::vector<OccupancySample>& samples, size_t limit);

// Verifies (already done: `report`), replays within `max_steps` for the occupancy, renders and writes `path`
// atomically. Used by `report` and `verify --html`.
void write_schedule_report(const std::string& path, const std::string& problem_name,
                           const std::string& solution_name, const Problem& problem, const Graph& graph,
                           const Schedule& schedule, const ScheduleReport& report, const ModelOptions& model,
                           int64_t max_steps);

}  // namespace mlsys
