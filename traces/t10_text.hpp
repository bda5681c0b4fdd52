// T10's human-readable output: a plan's cycle breakdown under the grader's rules, and what the all-cores
// engine found under each timing.
#pragma once

#include <ostream>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

void print_breakdown(std::ostream& out, const Problem& problem, const Plan& plan, const Evaluation& evaluation);
void print_cores_result(std::ostream& out, const CoresResult& result, CoreTiming timing);

}  // namespace mlsys::t10
