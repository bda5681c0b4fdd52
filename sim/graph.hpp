// Graph analysis of a problem (M2, M3): producers, consumers, graph inputs/outputs, topological order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/problem.hpp"

namespace mlsys {

struct Consumer {
  int op;
  int position;  // input position: 0 = LHS, 1 = RHS for MatMul
};

struct Graph {
  std::vector<int> producer;                     // per tensor, -1 if none
  std::vector<std::vector<Consumer>> consumers;  // per tensor
  std::vector<bool> is_graph_input;              // consumed, never produced
  std::vector<bool> is_graph_output;             // produced, never consumed
  std::vector<int> topological_order;            // of ops, the lowest ready index first
  std::vector<int64_t> reduction_depth;          // K_o per MatMul op (0 for Pointwise)
  // Per op, the axes on which some subgraph could price it proportionally (M23, M24): bit 0 (kStreamsColumns)
  // when it can be the head or an in-chain op of an LHS link, bit 1 (kStreamsRows) of an RHS link. That needs
  // a MatMul at or above it and a MatMul input below it, both through Pointwise ops only (M12).
  std::vector<uint8_t> streamable_axes;
  // Per op, the fewest grid columns (rows) a subgraph where it streams into an LHS (RHS) link can have: the
  // MatMul its path enters has an output ceil(W / max(n_w, n_h)) wide (ceil(H / max(n_w, n_h)) high) at
  // least, and the op runs again on every column (row) of tiles (M24). 1 when it feeds no such MatMul.
  std::vector<int64_t> lhs_tail_columns, rhs_tail_rows;
};

constexpr uint8_t kStreamsColumns = 1, kStreamsRows = 2;

// Kahn's algorithm over `graph.producer` / `graph.consumers`. `pick` chooses which of the ready ops (listed
// in the order they became ready, initially by index) runs next. Ops on a cycle are left out of the result.
std::vector<int> topological_order(const Problem& problem, const Graph& graph,
                                   const std::function<size_t(const std::vector<int>& ready)>& pick);
// The topological order that always takes the lowest ready index, in O(n log n) (a heap, where `pick` would
// scan the ready list: quadratic on a graph of many independent ops).
std::vector<int> lowest_index_topological_order(const Problem& problem, const Graph& graph);

// Whether `reader` is the only op that reads what `op` makes.
bool reads_only(const Problem& problem, const Graph& graph, int op, int reader);

// Validates M2 and derives M3. Throws InputError (exit 2) naming the op, tensor and rule; `file` is for
// messages.
Graph analyze_graph(const Problem& problem, const std::string& file);

}  // namespace mlsys
