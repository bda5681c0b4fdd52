// The floor of one connected set of ops as a subgraph (docs/bounds.md#theorem-6): the least, over every
// granularity at which it is legal and fits, of max(its compute, the traffic every traversal order pays), in
// each retention context it could run in (what it receives retained, what it keeps for the next subgraph).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

// The floor of one set of ops, with the granularity that attains it.
struct SubgraphFloor {
  double value =
      0;  // max(compute, memory), or more where a split reduction's last k-steps show it (Theorem 8)
  double compute = 0, memory = 0;
  Granularity granularity;
};

// A set's floor in one retention context (M9, M26). `retained_in`: inputs it receives whole in fast memory
// and does not load. `retained_out`: outputs it may keep whole for the next subgraph instead of storing them.
// A context that keeps more or receives less is never cheaper in the schedule's bookkeeping: the cover LP
// (docs/bounds.md#theorem-7) lets a subgraph receive a tensor retained only as often as one keeps it.
struct RetentionFloor {
  SubgraphFloor floor;
  std::vector<int> retained_in, retained_out;
  // For Theorem 10 (a loaded tensor was stored before): `loaded`, the inputs made outside that this context
  // surely loads (tried, and not received); `evicted`, the outputs it may write to slow memory (read outside,
  // not inside, and not surely kept). Both err on the side that proves less.
  std::vector<int> loaded, evicted;
};

// Tensors whose traffic no retention avoids: graph inputs and outputs (never retained, M9) and tensors over
// the capacity (a retained tensor is whole in fast memory, M20).
bool always_moves(const Problem& problem, const Graph& graph, int tensor);

// The floors of a set in the contexts that are not dominated (none has a floor as low with fewer retained-in
// tensors and as many retained-out). Empty: at no granularity is the set a legal subgraph that fits,
// whatever it retains or receives. Once `expired` says so, one context is returned at the ops' compute
// floors (still a floor), receiving nothing and keeping every output it could. `choices`: how many inputs
// made outside, and how many outputs read outside, are tried both ways (the others are bounded together).
inline constexpr size_t kRetentionChoices = 4;
std::vector<RetentionFloor> subgraph_floors(const Problem& problem, const Graph& graph,
                                            const ModelOptions& options, const std::vector<int>& ops,
                                            const std::function<bool()>& expired = {},
                                            size_t choices = kRetentionChoices);

// The least floor over every context; nullopt when the set never fits.
std::optional<SubgraphFloor> subgraph_floor(const Problem& problem, const Graph& graph,
                                            const ModelOptions& options, const std::vector<int>& ops,
                                            const std::function<bool()>& expired = {});

// The outputs of `ops` that M9 lets them retain and that fit whole in fast memory.
std::vector<int> retainable_outputs(const Problem& problem, const Graph& graph, const std::vector<int>& ops);

}  // namespace mlsys
