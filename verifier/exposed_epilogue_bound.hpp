// Theorem 15 (docs/bounds.md#theorem-15): a memory-bound schedule still pays the compute that no graph input
// or output moves beside. Every schedule loads each graph input and stores each graph output at least once,
// and a step costs max(compute, memory); so the schedule costs at least that traffic plus, over any steps,
// what their compute exceeds the first-time graph traffic moved in them. A Pointwise op `g` between two deep
// MatMuls (made by one, read only by others, all reducing deeper than the native tile) cannot be a prologue
// (M14), so its first run is alone, an epilogue at its producer's last k-steps, or in-chain and recomputed on
// every tile of its reader: each case leaves a least exposed compute, and ops whose first runs cannot share
// a subgraph add theirs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

struct ExposedEpilogueBound {
  bool applies = false;      // some epilogue is charged
  std::string status;        // why not, when it does not apply
  double graph_traffic = 0;  // each graph input loaded once and each graph output stored once
  double pointwise_io = 0;   // the graph inputs Pointwise ops read and the graph outputs they make
  struct Epilogue {
    int op = -1, producer = -1;
    // The least exposed compute of its first run in each case (after the graph traffic that may hide it):
    double alone = 0;        // the subgraph is the op alone
    double in_chain = 0;     // a reader of its output shares the subgraph: the op runs on every reader tile
    double epilogue = 0;     // its producer shares the subgraph and no other MatMul is linked to it
    double beside_head = 0;  // its producer is the tail of a link (infinite: no MatMul can head one)
    int cheapest_head = -1;
    double exposed = 0;  // the least of the four, at least 0
  };
  std::vector<Epilogue> epilogues;  // those charged, whose first runs never share a subgraph
  double bound = 0;                 // graph_traffic + the exposed compute of the epilogues
};

// No claim with --allow-supernative-k (k <= n_k is what keeps the reductions split). The work is bounded:
// once `expired` says yes, or past `max_visits` ops visited, the bound makes no claim and says so.
ExposedEpilogueBound exposed_epilogue_bound(const Problem& problem, const Graph& graph,
                                            const ModelOptions& options,
                                            const std::function<bool()>& expired = nullptr,
                                            int64_t max_visits = 50'000'000);

}  // namespace mlsys
