#include "sim/number_format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace mlsys {

std::string format_number(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

std::string format_certified(double value) {
  if (!std::isfinite(value) || value == 0) return format_number(value);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.12g", value);
  return format_number(std::strtod(buffer, nullptr));
}

std::string format_display(double value) {
  if (!std::isfinite(value)) return format_number(value);
  const double rounded = std::round(value);
  const bool whole = std::fabs(value - rounded) <= 1e-9 * std::max(1.0, std::fabs(value));
  std::ostringstream fixed;
  fixed << std::fixed << std::setprecision(whole ? 0 : 2) << std::fabs(whole ? rounded : value);
  std::string text = fixed.str();
  const size_t point = text.find('.');
  for (int i = static_cast<int>(point == std::string::npos ? text.size() : point) - 3; i > 0; i -= 3)
    text.insert(static_cast<size_t>(i), ",");
  return (value < 0 && text.find_first_not_of("0.,") != std::string::npos ? "-" : "") + text;
}

}  // namespace mlsys
