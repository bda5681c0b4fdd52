// Numbers as text, the same everywhere: round-trip form for machines (M28), thousands separators for people.
#pragma once

#include <string>

namespace mlsys {

// Shortest text that reads back as the same double (M28).
std::string format_number(double value);
// For people: thousands separators, whole numbers as such, others with two decimals (41,943.04).
std::string format_display(double value);
// A certified bound as people read it: to 12 significant digits, so that the ulps it was stepped down by
// (docs/bounds.md#rounding) do not show as 65535.99999999944. Machine output (--json) keeps the value itself.
std::string format_certified(double value);

}  // namespace mlsys
