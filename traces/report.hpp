// Rendering of verification reports: the human table, the --steps listing and the --json report.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sim/number_format.hpp"
#include "sim/step_model.hpp"
#include "verifier/verify.hpp"

namespace mlsys {

nlohmann::json violation_to_json(const RuleViolation& v);
nlohmann::json report_to_json(const ScheduleReport& report, const LowerBound& bound, MatmulCompute model);
void print_report(std::ostream& out, const ScheduleReport& report, const LowerBound& bound, MatmulCompute model);
void print_step(std::ostream& out, int subgraph, const StepDetail& step, double capacity);
// Multi-line message for an error, with the working-set terms of an OOM.
std::string describe_error(const RuleViolation& v);

}  // namespace mlsys
