// Readers for serving (docs/t10-serving.md#model-files): the Elk artifact's model files as one decode step,
// and T10 model files whose products say what they load from HBM (mlsys-import --t10 of a decoder with a KV
// cache).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/t10/t10_serving.hpp"

namespace mlsys::t10 {

struct ServingShape {
  int64_t batch = 0;     // 0: not given (an imported file's shapes are its own)
  int64_t sequence = 0;  // the KV cache's length L
  int layers = 0;        // the first N layers; 0: all
};

// Throws InputError naming the file and the node ([i]) or the option (--batch, --seq, --layers).
ServingProgram read_elk_model(const nlohmann::json& doc, const std::string& file, const ServingShape& shape,
                              const ServingChip& chip);
// A T10 model file ({"t10_program": ...}) whose products carry "hbm": "weight" | "kv_cache" and "hbm_bytes".
// Its shapes were fixed when it was imported, so `shape` may only choose layers. Throws InputError naming the
// file and the field (ops[i].hbm ...).
ServingProgram read_imported_model(const nlohmann::json& doc, const std::string& file,
                                   const ServingShape& shape, const ServingChip& chip);
// Either format, told apart by its top level (a list of nodes, or an object).
ServingProgram read_serving_model(const nlohmann::json& doc, const std::string& file,
                                  const ServingShape& shape, const ServingChip& chip);

}  // namespace mlsys::t10
