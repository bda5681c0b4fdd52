// Rendering of verification reports: the human table, the --steps listing and the --json report.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "sim/step_model.hpp"
#include "verifier/verify.hpp"

namespace mlsys {

// Shortest text that reads back as the same double (M28).
std::string format_number(double value);
// For people: thousands separators, whole numbers as such, others with two decimals (41,943.04).
std::string format_display(double value);

nlohmann::json violation_to_json(const RuleViolation& v);
nlohmann::json report_to_json(const ScheduleReport& report, const LowerBound& bound, MatmulCompute model);
void print_report(std::ostream& out, const ScheduleReport& report, const LowerBound& bound, MatmulCompute model);
void print_step(std::ostream& out, int subgraph, const StepDetail& step, double capacity);
// Multi-line message for an error, with the working-set terms of an OOM.
std::string describe_error(const RuleViolation& v);

}  // namespace mlsys
