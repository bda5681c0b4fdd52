// The T10 chip sweep's files: a CSV row per chip variant (exchange bandwidth x SRAM) with its best plan under
// the exchange timing, and an HTML page with the chart (time against bandwidth, one curve per SRAM size).
#pragma once

#include <string>
#include <vector>

#include "solver/t10_exchange_search.hpp"

namespace mlsys::t10 {

std::string chip_sweep_csv(const std::vector<ChipVariantPoint>& points);
std::string chip_sweep_html(const std::string& problem_name, const std::vector<ChipVariantPoint>& points);

}  // namespace mlsys::t10
