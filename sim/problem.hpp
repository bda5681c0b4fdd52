// Problem and schedule types of the MLSys 2026 model (rule book sections 1-2).
// Plain structs: parsing lives in json_io, validation in graph and step_model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlsys {

enum class OpType { MatMul, Pointwise };

struct Problem {
  std::vector<int64_t> widths;   // W_t, columns
  std::vector<int64_t> heights;  // H_t, rows
  std::vector<std::vector<int>> inputs;
  std::vector<std::vector<int>> outputs;
  std::vector<double> base_costs;
  std::vector<OpType> op_types;
  double fast_memory_capacity = 0;
  double slow_memory_bandwidth = 0;
  int64_t native_w = 0;  // native_granularity[0]; also the native reduction depth n_k
  int64_t native_h = 0;  // native_granularity[1]
  // The optional "names" section of imported models (mlsys-import): the model's node and value names. Only
  // reports read them; they are empty when the section is absent or does not match the lists above.
  struct Names {
    std::string model, hardware;
    std::vector<std::string> ops, op_kinds, tensors;
  } names;

  int num_tensors() const { return static_cast<int>(widths.size()); }
  int num_ops() const { return static_cast<int>(op_types.size()); }
  int64_t size(int tensor) const { return widths[tensor] * heights[tensor]; }
  bool is_matmul(int op) const { return op_types[op] == OpType::MatMul; }
  // T(t) of the rule book (section 8): native tiles covering the tensor, edge tiles padded.
  int64_t native_tiles(int tensor) const {
    return ((heights[tensor] + native_h - 1) / native_h) * ((widths[tensor] + native_w - 1) / native_w);
  }
};

struct Granularity {
  int64_t w = 0, h = 0, k = 0;
  bool operator==(const Granularity&) const = default;
};

// One subgraph of a schedule: what the step model needs to know about it.
struct SubgraphSpec {
  std::vector<int> ops;  // declared (execution) order
  Granularity granularity;
  std::vector<int> retain;                      // tensors_to_retain[i]
  std::optional<std::vector<int64_t>> traversal;  // null = raster order
};

struct Schedule {
  std::vector<SubgraphSpec> subgraphs;
  std::optional<std::vector<double>> reported_latencies;  // subgraph_latencies, if present
};

enum class MatmulCompute { FullK, NativeK };

// Model parameters (rule book section 0). Defaults here and nowhere else.
struct ModelOptions {
  MatmulCompute matmul_compute = MatmulCompute::FullK;
  bool allow_supernative_k = false;
};

const char* to_string(MatmulCompute m);

// The model flags by name (--matmul-compute full-k|native-k, --allow-supernative-k; Python's compute= and
// allow_supernative_k=): the one mapping every program and the Python module use. Throws
// std::invalid_argument ("expected "full-k" or "native-k", got ...") for any other name.
inline const std::vector<std::string> kMatmulComputeNames{"full-k", "native-k"};
ModelOptions parse_model_options(const std::string& matmul_compute, bool allow_supernative_k);

}  // namespace mlsys
