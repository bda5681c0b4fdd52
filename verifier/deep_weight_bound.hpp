// Theorem 12 (docs/bounds.md#theorem-12): graph inputs that only MatMuls deeper than native read. Every
// subgraph that loads such an input holds a MatMul of that depth, so it can only hold ops from a small
// pool: MatMuls of the same depth or linked to a reader (M13), and Pointwise ops shaped like one of their
// outputs or like the input of one shallow enough for a prologue (M10, M14). Those subgraphs take at least
// the inputs' loads together, and only the pool's compute can hide them: a schedule costs at least the
// compute floor plus the loads beyond the pool's compute floor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

struct DeepWeightBound {
  bool applies = false;      // some family's loads exceed its pool's compute
  std::string status;        // why not, when it does not apply
  double compute_floor = 0;  // every op's compute floor (M23, M24)
  struct Family {
    int64_t depth = 0;         // the reduction depth K of every MatMul that reads the family's inputs
    std::vector<int> inputs;   // graph inputs that only MatMuls of this depth read
    double loads = 0;          // their sizes over the bandwidth: each is loaded at least once (M9, M21)
    std::vector<int> pool;     // every op that can share a subgraph with one of their readers
    double pool_compute = 0;   // the pool's compute floor
    double excess() const { return loads > pool_compute ? loads - pool_compute : 0; }
  };
  std::vector<Family> families;  // those counted: each with an excess, pools pairwise disjoint
  double bound = 0;              // compute_floor + the families' excesses
};

// Linear in the graph per depth; no claim with --allow-supernative-k (k may then exceed n_k, and a deep
// MatMul may sit among many). `op_floors`: compute_floor of every op (compute_floors), which the lambda
// bound has already computed.
DeepWeightBound deep_weight_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                                  const std::vector<double>& op_floors);

}  // namespace mlsys
