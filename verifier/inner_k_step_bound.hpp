// Theorem 11 (docs/bounds.md#theorem-11): a schedule costs its compute plus whatever memory time its steps
// cannot hide, and a MatMul whose reduction is deeper than native, comparable with every other MatMul, runs
// alone in its subgraph with k-steps before the last at which nothing else computes. Their loads beyond
// compute are priced per MatMul and per operand it receives retained or loads; a Pointwise op between two
// such MatMuls prices what it costs for both to receive their operand retained. A tree dynamic program over
// those links gives the least total; recomputing or linking MatMuls costs compute that is weighed against
// what it takes out of that argument.
#pragma once

#include <functional>
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
  // What every schedule costs beyond the compute floor at least: `chain_case` if it recomputes no MatMul and
  // links none, else `mixed_case`, built from what an extra run of a MatMul costs at least
  // (`recompute_case`), what a link costs its head at least (`link_case`) and what each covered MatMul they
  // take out of the chain argument can lower the chain case by (`disturbed_loss`).
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  double recompute_case = kNone;
  double link_case = kNone;
  double disturbed_loss = 0;
  double chain_case = 0;
  double mixed_case = kNone;
  double bound = 0;  // compute_floor + min(chain_case, mixed_case)
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
// `expired`, if given, is asked every few thousand granularities; once it says yes, the theorem makes no
// claim
// (`bound` is the compute floor), so a deadline holds on hostile graphs.
InnerKStepBound inner_k_step_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                                   const std::function<bool()>& expired = nullptr);

}  // namespace mlsys
