// A T10 plan's report as one self-contained HTML page: the plan (F_op and temporal factors), its cycle
// breakdown, per-core SRAM occupancy through the replay's phases against the core's capacity, and the best
// plans of the exhaustive search. The headline, the breakdown and the ranking follow one timing, named at the
// top: calibrated (the default, the IPU-fitted model), exchange or grader (the rule book's).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"
#include "sim/t10/t10_replay.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"

namespace mlsys::t10 {

struct PlanReportPage {
  std::string problem_name, plan_name;
  const Problem* problem = nullptr;
  const Plan* plan = nullptr;
  const Evaluation* evaluation = nullptr;
  std::optional<ReplaySummary> replay;  // none when the plan has no defined cost
  std::optional<CoresResult> cores;     // every core, exchange timing (none when the cost is undefined)
  std::optional<CoresResult>
      calibrated;  // every core, calibrated timing (none when the model cannot price it)
  std::vector<CalibratedRankedPlan> calibrated_top;  // of t10 solve --timing calibrated
  std::vector<RankedPlan> top;                       // of t10 solve, best first
  std::vector<ExchangeRankedPlan> exchange_top;      // of t10 solve --timing exchange (that timing only)
  std::string timing = "calibrated";                 // grader | exchange | calibrated
  std::string profile;
  std::string docs = "docs";  // where rule ids link to (docs_location)
};

std::string plan_report_html(const PlanReportPage& page);

}  // namespace mlsys::t10
