// Shared by the libFuzzer targets: what counts as a correct answer to bad input. A reader may reject its
// input only with the project's own error type (InputError), which the CLIs turn
// into a message and exit code 2; any other exception, a crash, a sanitizer report or a hang is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlsys::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace mlsys::fuzz
