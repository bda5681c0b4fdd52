// The HTML report of `t10 serve --html` (docs/t10-serving.md#report): the decode step's timeline of loads and
// operators, HBM and NoC use, SRAM per core over time against the capacity, and time by operator type.
#pragma once

#include <string>

#include "sim/t10/t10_serving.hpp"
#include "solver/t10_serving.hpp"

namespace mlsys::t10 {

std::string serving_report_html(const ServingProgram& program, const ServingChip& chip, const ServingResult& result,
                                const std::string& title);

}  // namespace mlsys::t10
