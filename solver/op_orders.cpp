// Topological orders of the ops for the order search: by index, depth first, by level, retention-friendly,
// siblings first, random, and moves of the incumbent's order (local search).
#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>

#include "solver/search_internal.hpp"

namespace mlsys::search {

// Whether MatMuls a and b read the same tensor in operand `position` with the same reduction depth.
bool same_operand(const Problem& p, const Graph& g, int a, int b, size_t position) {
  return p.is_matmul(a) && p.is_matmul(b) && g.reduction_depth[a] == g.reduction_depth[b] &&
         p.inputs[a][position] == p.inputs[b][position];
}

// MatMuls that read one tensor in the same operand position with the same reduction depth: M13 lets them
// share a subgraph under split-K, where that operand's slice is loaded once for all of them.
bool matmul_siblings(const Problem& p, const Graph& g, int a, int b) {
  return a != b && (same_operand(p, g, a, b, 0) || same_operand(p, g, a, b, 1));
}

bool reads_graph_inputs_only(const Problem& p, const Graph& g, int op) {
  return std::all_of(p.inputs[op].begin(), p.inputs[op].end(), [&](int t) { return g.producer[t] < 0; });
}

// The largest group of siblings that siblings-first orders put side by side: MatMuls of graph inputs only,
// reading one tensor in one position at one depth.
int largest_sibling_group(const Problem& p, const Graph& g) {
  // Counted per (position, tensor, depth) in one pass: comparing every pair took 5 s on 20,000 such MatMuls.
  std::map<std::tuple<size_t, int, int64_t>, int> groups;
  int largest = 1;
  for (int a = 0; a < p.num_ops(); ++a) {
    if (!p.is_matmul(a) || !reads_graph_inputs_only(p, g, a)) continue;
    for (size_t position = 0; position < 2; ++position)
      largest = std::max(largest, ++groups[{position, p.inputs[a][position], g.reduction_depth[a]}]);
  }
  return largest;
}

// A retention-friendly pick: prefer an op that reads what the previous op produced (it can receive that
// tensor retained), then one whose outputs complete the inputs of a waiting consumer (which can then follow
// it and receive them retained). Benchmark 8's best schedules interleave its three branches this way.
class RetentionFriendlyPicker {
 public:
  // `siblings_first`: a MatMul of graph inputs that shares an operand with the previous one ranks first, so
  // that siblings (benchmark 13: sixteen x_i @ W0) come side by side and one subgraph can load the shared
  // operand once. Only MatMuls of graph inputs: one that reads an intermediate usually does better chained to
  // its producer or consumer (benchmark 13's A_i @ W1 @ v_i chains load A_i once, a sibling group once per
  // tile).
  RetentionFriendlyPicker(const Problem& p, const Graph& g, std::mt19937_64* rng, bool siblings_first = false)
      : p_(p), g_(g), rng_(rng), siblings_first_(siblings_first), done_(p.num_ops(), false) {}

  size_t operator()(const std::vector<int>& ready) {
    int best_score = -1;
    std::vector<size_t> best;
    for (size_t i = 0; i < ready.size(); ++i) {
      const int score = siblings_first_ && last_ >= 0 && reads_graph_inputs_only(p_, g_, ready[i]) &&
                                matmul_siblings(p_, g_, last_, ready[i])
                            ? 3
                        : reads_last(ready[i])           ? 2
                        : completes_a_consumer(ready[i]) ? 1
                                                         : 0;
      if (score > best_score) best.clear();
      if (score >= best_score) best.push_back(i), best_score = score;
    }
    size_t at = best.front();  // the first tie in the ready list, unless ties are drawn at random
    if (rng_) at = best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(*rng_)];
    last_ = ready[at];
    done_[last_] = true;
    return at;
  }

 private:
  bool reads_last(int op) const {
    if (last_ < 0) return false;
    for (int t : p_.inputs[op])
      if (g_.producer[t] == last_) return true;
    return false;
  }
  bool completes_a_consumer(int op) const {
    for (int t : p_.outputs[op])
      for (const Consumer& c : g_.consumers[t]) {
        bool complete = true;
        for (int in : p_.inputs[c.op]) {
          const int producer = g_.producer[in];
          complete = complete && (producer == -1 || producer == op || done_[producer]);
        }
        if (complete) return true;
      }
    return false;
  }

  const Problem& p_;
  const Graph& g_;
  std::mt19937_64* rng_;
  bool siblings_first_;
  std::vector<bool> done_;
  int last_ = -1;
};

const char* order_name(OrderKind kind) {
  switch (kind) {
    case OrderKind::ByIndex:
      return "index order";
    case OrderKind::DepthFirst:
      return "depth-first order";
    case OrderKind::ByLevel:
      return "level order";
    case OrderKind::RetentionFriendly:
      return "retention-friendly order";
    case OrderKind::Random:
      return "random order";
    case OrderKind::RandomRetentionFriendly:
      return "random retention-friendly order";
    case OrderKind::SiblingsFirst:
      return "siblings-first order";
    case OrderKind::RandomSiblingsFirst:
      return "random siblings-first order";
    case OrderKind::MovedIncumbent:
      return "moved order";
    case OrderKind::BatchedLevels:
      return "batched-level order";
  }
  return "order";
}

// Per op, the longest path (in ops) from the graph inputs: ops of one level never depend on each other.
std::vector<int> levels(const Problem& p, const Graph& g) {
  std::vector<int> level(p.num_ops(), 0);
  for (int op : g.topological_order)
    for (int t : p.inputs[op])
      if (g.producer[t] >= 0) level[op] = std::max(level[op], level[g.producer[t]] + 1);
  return level;
}

std::vector<int> topological(const Problem& p, const Graph& g, OrderKind kind, std::mt19937_64& rng) {
  if (kind == OrderKind::ByLevel || kind == OrderKind::BatchedLevels) {
    // Wavefronts: parallel branches advance together, so a segment can hold one layer of every branch; the
    // batched kind also puts each layer's copies side by side, so a segment can hold a layer of every row
    // block and load its weights once. A producer's level is below its readers', so sorting by level is
    // already topological: O(n log n), where picking the least ready op would be quadratic on wide graphs.
    const std::vector<int> level = levels(p, g);
    const std::vector<int> copy_class =
        kind == OrderKind::BatchedLevels ? layer_copy_classes(p, g) : std::vector<int>(p.num_ops(), 0);
    std::vector<int> order(p.num_ops());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return std::tuple(level[a], copy_class[a], a) < std::tuple(level[b], copy_class[b], b);
    });
    return order;
  }
  if (kind == OrderKind::RetentionFriendly)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, nullptr));
  if (kind == OrderKind::RandomRetentionFriendly)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, &rng));
  if (kind == OrderKind::SiblingsFirst)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, nullptr, true));
  if (kind == OrderKind::RandomSiblingsFirst)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, &rng, true));
  if (kind == OrderKind::ByIndex) return g.topological_order;  // analyze_graph's canonical order
  return topological_order(p, g, [&](const std::vector<int>& ready) -> size_t {
    if (kind == OrderKind::DepthFirst) return ready.size() - 1;
    return std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
  });
}

std::vector<int> layer_copy_classes(const Problem& p, const Graph& g) {
  std::map<std::vector<int64_t>, int> ids;
  std::vector<int> copy_class(p.num_ops());
  for (int op = 0; op < p.num_ops(); ++op) {
    const int y = p.outputs[op][0];
    std::vector<int64_t> key{p.is_matmul(op), static_cast<int64_t>(p.base_costs[op] * 1024), p.heights[y],
                             p.widths[y]};
    for (int t : p.inputs[op]) key.insert(key.end(), {g.producer[t] < 0 ? t : -1, p.heights[t], p.widths[t]});
    copy_class[op] = ids.emplace(std::move(key), static_cast<int>(ids.size())).first->second;
  }
  return copy_class;
}

int longest_copy_run(const Problem& p, const Graph& g) {
  std::mt19937_64 unused;
  const std::vector<int> order = topological(p, g, OrderKind::BatchedLevels, unused);
  const std::vector<int> copy_class = layer_copy_classes(p, g);
  int longest = 0;
  for (size_t i = 0, run = 0; i < order.size(); ++i) {
    run = i > 0 && copy_class[order[i]] == copy_class[order[i - 1]] ? run + 1 : 1;
    longest = std::max(longest, static_cast<int>(run));
  }
  return longest;
}

// Whether two ops share a tensor: one reads what the other produces, or both read the same tensor (the links
// that make a subgraph connected, M7).
bool related(const Problem& p, const Graph& g, int a, int b) {
  for (int t : p.inputs[a]) {
    if (g.producer[t] == b) return true;
    for (int u : p.inputs[b])
      if (u == t) return true;
  }
  for (int t : p.inputs[b])
    if (g.producer[t] == a) return true;
  return false;
}

// Local search in order space: the incumbent's order with a few ops moved to other legal places (after all
// their producers, before all their consumers), so that other ops become neighbours and can be fused.
std::vector<int> moved(std::vector<int> order, const Problem& p, const Graph& g, std::mt19937_64& rng) {
  const int n = static_cast<int>(order.size());
  const int moves = 1 + static_cast<int>(rng() % 3);
  for (int m = 0; m < moves && n > 1; ++m) {
    const int from = static_cast<int>(rng() % n);
    const int op = order[from];
    order.erase(order.begin() + from);
    int lo = 0, hi = n - 1;  // insertion range in the shortened order
    for (int i = 0; i < n - 1; ++i) {
      const int other = order[i];
      for (int t : p.inputs[op])
        if (g.producer[t] == other) lo = std::max(lo, i + 1);
      for (int t : p.outputs[op])
        for (const Consumer& c : g.consumers[t])
          if (c.op == other) hi = std::min(hi, i);
    }
    // Half of the moves put the op right next to a related op (one it shares a tensor with), if that place is
    // legal: those are the neighbours it can be fused with. On benchmark 8 the best schedules group three
    // X @ W MatMuls of different branches into one subgraph (they share X), which moves to random places
    // almost never assemble.
    int to = lo + static_cast<int>(rng() % (hi - lo + 1));
    if (rng() % 2) {
      std::vector<int> beside;  // insertion points next to a related op, within [lo, hi]
      for (int i = 0; i < n - 1; ++i)
        if (related(p, g, op, order[i]))
          for (int at : {i, i + 1})
            if (at >= lo && at <= hi) beside.push_back(at);
      if (!beside.empty()) to = beside[rng() % beside.size()];
    }
    order.insert(order.begin() + to, op);
  }
  return order;
}

}  // namespace mlsys::search
