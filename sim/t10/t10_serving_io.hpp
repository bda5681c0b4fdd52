// Readers for serving (docs/t10-serving.md#model-files): the Elk artifact's model files as one decode step,
// and T10 model files whose products say what they load from HBM (mlsys-import --t10 of a decoder with a KV
// cache).
#pragma once

#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sim/t10/t10_serving.hpp"

namespace mlsys::t10 {

// A serving chip file (docs/t10-serving.md#the-chip): a JSON object with T1's chip fields (parse_chip: the
// cores, chips and links too) and the HBM's, over "preset": NAME (default elk-1472). The same reader takes a
// preset's name. Throws InputError naming the file and the field.
ServingChip parse_serving_chip(const nlohmann::json& doc, const std::string& file);

struct ServingShape {
  int64_t batch = 0;     // 0: not given (an imported file's shapes are its own)
  int64_t sequence = 0;  // the KV cache's length L
  int layers = 0;        // the first N layers; 0: all
};

// One iteration of a serving run (docs/t10-traffic.md#iterations): `tokens` rows through every per-token
// operator (projections, MLP, norms), and per group of requests that share a query length and a context
// their own attention: `requests` requests, each with `query` new positions attending over `context` keys, of
// which `cached` are read from HBM (the others are computed in this iteration). Every new position's key and
// value rows are written to HBM. A decode step at batch B and KV length L is {B, {{B, 1, L, L}}}.
struct AttentionGroup {
  int64_t requests = 1, query = 1, context = 1, cached = 0;
};
struct IterationShape {
  int64_t tokens = 0;
  std::vector<AttentionGroup> groups;
};

// An Elk model file read once and instantiated for any iteration: its nodes, each either per-token or
// per-request (a product with the KV cache, or an operator over scores, whose shape names the sequence
// twice), and its layers.
class ServingModel {
 public:
  // Throws InputError naming the file and the node ([i]) or the option (--layers).
  static ServingModel read_elk(const nlohmann::json& doc, const std::string& file, int layers,
                               const ServingChip& chip);
  // Throws std::invalid_argument when a dimension leaves 1 to 2^24 (the option that chose it is the
  // caller's to name).
  // With `first_layers` > 0, only the first that many layers and the last one (with the model's head):
  // a sample from which a pricer may extrapolate over identical layers (docs/t10-traffic.md#pricing).
  ServingProgram instantiate(const IterationShape& shape, int first_layers = 0) const;
  int layers() const { return layers_; }
  // Bytes of the KV cache per token of context (every layer's key and value rows), and of all weights.
  int64_t kv_bytes_per_token() const { return kv_bytes_per_token_; }
  int64_t weight_bytes() const { return weight_bytes_; }
  // Where the file contradicts itself but can still be priced as written (one line each, naming the node).
  const std::vector<std::string>& warnings() const { return warnings_; }
  struct Node;  // defined in t10_serving_io.cpp

 private:
  std::vector<std::shared_ptr<const Node>> nodes_;
  ServingChip chip_;
  int layers_ = 0;
  int64_t kv_bytes_per_token_ = 0, weight_bytes_ = 0;
  std::vector<std::string> warnings_;
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
