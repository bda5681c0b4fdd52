// Numbers as text, the same everywhere: round-trip form for machines (M28), thousands separators for people.
#pragma once

#include <string>

namespace mlsys {

// Shortest text that reads back as the same double (M28).
std::string format_number(double value);
// For people: thousands separators, whole numbers as such, others with two decimals (41,943.04).
std::string format_display(double value);

}  // namespace mlsys
