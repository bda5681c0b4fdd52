// Theorem 12: which graph inputs only deep MatMuls read, which ops can share a subgraph with their readers,
// and what their loads add beyond those ops' compute (docs/bounds.md#theorem-12).
#include "verifier/deep_weight_bound.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "sim/step_model.hpp"

namespace mlsys {
namespace {

using Shape = std::pair<int64_t, int64_t>;  // rows, columns

Shape shape_of(const Problem& p, int t) {
  return {p.heights[t], p.widths[t]};
}

// The MatMuls joined to `readers` by a path through Pointwise ops only, either way: a subgraph with a link
// holds exactly its two ends (M13), so these are the only other MatMuls a reader can share one with.
std::vector<int> linked_matmuls(const Problem& p, const Graph& g, const std::vector<int>& readers) {
  std::vector<char> seen_down(p.num_tensors(), 0), seen_up(p.num_tensors(), 0);
  std::vector<int> found, down, up;
  for (int r : readers) {
    down.insert(down.end(), p.outputs[r].begin(), p.outputs[r].end());
    up.insert(up.end(), p.inputs[r].begin(), p.inputs[r].end());
  }
  while (!down.empty()) {
    const int t = down.back();
    down.pop_back();
    if (seen_down[t]) continue;
    seen_down[t] = 1;
    for (const Consumer& c : g.consumers[t]) {
      if (p.is_matmul(c.op))
        found.push_back(c.op);
      else
        down.insert(down.end(), p.outputs[c.op].begin(), p.outputs[c.op].end());
    }
  }
  while (!up.empty()) {
    const int t = up.back();
    up.pop_back();
    if (seen_up[t] || g.producer[t] < 0) continue;
    seen_up[t] = 1;
    const int a = g.producer[t];
    if (p.is_matmul(a))
      found.push_back(a);
    else
      up.insert(up.end(), p.inputs[a].begin(), p.inputs[a].end());
  }
  return found;
}

// The family of graph inputs that only MatMuls of depth `depth` read, with the pool of ops that can share a
// subgraph with a reader. Such a subgraph holds either unlinked MatMuls all of depth K_s = `depth` (M13:
// nk > 1, since k <= n_k < depth) or exactly two linked MatMuls, a reader and its partner (a third, or a
// middle, would need K_o = k <= n_k). Its Pointwise ops share their one shape (M2) with a tensor of those
// MatMuls: an output (the grid's shape, M10, or an in-chain op's) or, for a prologue (M14: w or h >= K_b),
// the input of one no deeper than the native tile.
DeepWeightBound::Family family_of_depth(const Problem& p, const Graph& g, const std::vector<double>& floors,
                                        int64_t depth) {
  DeepWeightBound::Family f;
  f.depth = depth;
  std::vector<int> readers;
  for (int t = 0; t < p.num_tensors(); ++t) {
    if (g.producer[t] >= 0 || g.consumers[t].empty()) continue;
    const bool only_deep = std::all_of(g.consumers[t].begin(), g.consumers[t].end(), [&](const Consumer& c) {
      return p.is_matmul(c.op) && g.reduction_depth[c.op] == depth;
    });
    if (!only_deep) continue;
    f.inputs.push_back(t);
    f.loads += static_cast<double>(p.size(t)) / p.slow_memory_bandwidth;
    for (const Consumer& c : g.consumers[t]) readers.push_back(c.op);
  }
  if (f.inputs.empty()) return f;
  std::vector<char> in_pool(p.num_ops(), 0);
  for (int o = 0; o < p.num_ops(); ++o)
    if (p.is_matmul(o) && g.reduction_depth[o] == depth) in_pool[o] = 1;
  for (int m : linked_matmuls(p, g, readers)) in_pool[m] = 1;
  const int64_t prologue_depth = std::max(p.native_w, p.native_h);
  std::set<Shape> shapes;
  for (int o = 0; o < p.num_ops(); ++o) {
    if (!in_pool[o]) continue;
    shapes.insert(shape_of(p, p.outputs[o][0]));
    if (g.reduction_depth[o] <= prologue_depth)
      for (int t : p.inputs[o]) shapes.insert(shape_of(p, t));
  }
  for (int o = 0; o < p.num_ops(); ++o) {
    if (!p.is_matmul(o) && shapes.count(shape_of(p, p.outputs[o][0]))) in_pool[o] = 1;
    if (!in_pool[o]) continue;
    f.pool.push_back(o);
    f.pool_compute += floors[o];
  }
  return f;
}

}  // namespace

DeepWeightBound deep_weight_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                                  const std::vector<double>& floors) {
  DeepWeightBound out;
  out.compute_floor = std::accumulate(floors.begin(), floors.end(), 0.0);
  out.bound = out.compute_floor;
  if (options.allow_supernative_k) {
    out.status = "--allow-supernative-k lets k exceed n_k, so a deep MatMul may share a subgraph with any";
    return out;
  }
  std::set<int64_t> depths;
  for (int o = 0; o < p.num_ops(); ++o)
    if (p.is_matmul(o) && g.reduction_depth[o] > p.native_w) depths.insert(g.reduction_depth[o]);
  std::vector<DeepWeightBound::Family> candidates;
  for (int64_t depth : depths) {
    DeepWeightBound::Family f = family_of_depth(p, g, floors, depth);
    if (f.excess() > 0) candidates.push_back(std::move(f));
  }
  // Families with disjoint pools never share a subgraph, so their excesses add; the largest first.
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.excess() > b.excess(); });
  std::vector<char> taken(p.num_ops(), 0);
  for (DeepWeightBound::Family& f : candidates) {
    if (std::any_of(f.pool.begin(), f.pool.end(), [&](int o) { return taken[o] != 0; })) continue;
    for (int o : f.pool) taken[o] = 1;
    out.bound += f.excess();
    out.families.push_back(std::move(f));
  }
  out.applies = !out.families.empty();
  if (!out.applies)
    out.status = depths.empty() ? "no MatMul reduces deeper than native"
                                : "no graph input only deep MatMuls read loads more than its pool computes";
  return out;
}

}  // namespace mlsys
