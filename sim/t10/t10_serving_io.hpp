// Readers for serving (docs/t10-serving.md#model-files): the Elk artifact's model files as one decode step.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/t10/t10_serving.hpp"

namespace mlsys::t10 {

struct ServingShape {
  int64_t batch = 1;
  int64_t sequence = 1;  // the KV cache's length L
  int layers = 0;        // the first N layers; 0: all
};

// Throws InputError naming the file and the node ([i]) or the option (--batch, --seq, --layers).
ServingProgram read_elk_model(const nlohmann::json& doc, const std::string& file, const ServingShape& shape,
                              const ServingChip& chip);

}  // namespace mlsys::t10
