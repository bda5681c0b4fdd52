// Small helpers the step model's source files share (not part of its interface).
#pragma once

#include <cstdint>
#include <string>

namespace mlsys {

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
inline std::string tensor_name(int t) {
  return "T" + std::to_string(t);
}

}  // namespace mlsys
