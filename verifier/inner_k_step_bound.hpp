// Theorem 11 (docs/bounds.md#theorem-11): a schedule costs its compute plus whatever memory time its steps
// cannot hide, and a MatMul whose reduction is deeper than native, comparable with every other MatMul, runs
// alone in its subgraph with k-steps before the last at which nothing else computes. Their loads beyond
// compute are priced per MatMul and per operand it receives retained or loads; a Pointwise op between two
// such MatMuls prices what it costs for both to receive their operand retained. A tree dynamic program over
// those links gives the least total, unless the schedule recomputes a MatMul or links two, which costs more
// compute than the alternatives named.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

struct InnerKStepBound {
  bool applies = false;      // some MatMul qualifies; otherwise `bound` is the compute floor alone
  std::string status;        // why not, when it does not apply
  double compute_floor = 0;  // every op's compute floor (M23, M24)
  // The three cases every schedule falls in, and what each costs beyond the compute floor at least.
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  double recompute_case = kNone;  // some MatMul runs twice: its compute again
  double link_case = kNone;       // some subgraph links two MatMuls: the head computes again per tile
  double chain_case = 0;          // neither: the dynamic program's least total
  double bound = 0;               // compute_floor + the least of the three
  // One line per tree of linked MatMuls, with the costs of each choice a reader can add up.
  struct Tree {
    std::vector<int> matmuls;  // the MatMuls of the tree, producers first
    double excess = 0;         // its least total
    std::string reason;
  };
  std::vector<Tree> trees;
};

// Milliseconds on the benchmarks. Graphs with more than kInnerKStepMaxMatmuls MatMuls get no claim (the
// reachability it needs is quadratic in them).
inline constexpr int kInnerKStepMaxMatmuls = 4096;
InnerKStepBound inner_k_step_bound(const Problem& problem, const Graph& graph, const ModelOptions& options);

}  // namespace mlsys
