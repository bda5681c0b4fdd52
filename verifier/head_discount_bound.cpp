// Theorem 13: which deep MatMuls a schedule can price on their streamed axis, what a subgraph where one heads
// a link must load, and which ops can hide it (docs/bounds.md#theorem-13).
#include "verifier/head_discount_bound.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <utility>

#include "sim/step_model.hpp"
#include "verifier/link_walks.hpp"

namespace mlsys {
namespace {

using Shape = std::pair<int64_t, int64_t>;  // rows, columns

Shape output_shape(const Problem& p, int op) {
  const int t = p.outputs[op][0];
  return {p.heights[t], p.widths[t]};
}

bool reads(const Problem& p, int op, int tensor) {
  return std::find(p.inputs[op].begin(), p.inputs[op].end(), tensor) != p.inputs[op].end();
}

class PoolFinder {
 public:
  PoolFinder(const Problem& p, const Graph& g, LinkWalker& walk)
      : p_(p),
        g_(g),
        walk_(walk),
        tensors_(p.num_tensors()),
        ancestors_(p.num_ops()),
        component_(p.num_ops()) {}

  // The ops a subgraph where `head` heads a link to `tail` can hold. The grid has the tail's output shape
  // (M10: following the tail's output through Pointwise readers ends at a non-ephemeral output). A
  // Pointwise op of another shape has an ephemeral output, read inside by Pointwise ops of its shape or by
  // a MatMul: not the head (a prologue needs w or h >= K_head, M14; an in-chain op would make it a middle,
  // M13), so by the tail. So each op is the head, the tail, a Pointwise op that reaches the tail through
  // Pointwise ops, or a Pointwise op of the tail's output shape; and the subgraph is connected (M7).
  std::vector<int> pool(int head, int tail) {
    ancestors_.next();
    std::vector<int> stack(p_.inputs[tail].begin(), p_.inputs[tail].end());
    tensors_.next();
    while (!stack.empty()) {
      const int t = stack.back();
      stack.pop_back();
      walk_.visit();
      if (!tensors_.add(t) || g_.producer[t] < 0 || p_.is_matmul(g_.producer[t])) continue;
      ancestors_.add(g_.producer[t]);
      stack.insert(stack.end(), p_.inputs[g_.producer[t]].begin(), p_.inputs[g_.producer[t]].end());
    }
    const Shape grid = output_shape(p_, tail);
    auto allowed = [&](int o) {
      return o == head || o == tail || ancestors_.has(o) || (!p_.is_matmul(o) && output_shape(p_, o) == grid);
    };
    component_.next();
    std::vector<int> members{head}, queue{head};
    component_.add(head);
    while (!queue.empty() && !walk_.out_of_budget()) {
      const int x = queue.back();
      queue.pop_back();
      auto visit = [&](int q) {
        walk_.visit();
        if (q >= 0 && allowed(q) && component_.add(q)) {
          members.push_back(q);
          queue.push_back(q);
        }
      };
      for (const auto* tensors : {&p_.inputs[x], &p_.outputs[x]})
        for (int t : *tensors) {
          visit(g_.producer[t]);
          for (const Consumer& c : g_.consumers[t]) visit(c.op);
        }
    }
    return members;
  }

 private:
  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  EpochMarks tensors_, ancestors_, component_;
};

// What a head subgraph loads: every graph input the head reads, and its one made operand (if it has exactly
// one) unless the subgraph before made it and kept it (M9). Marks those made operands.
void count_loads(const Problem& p, const Graph& g, std::vector<HeadDiscountBound::Head>& heads,
                 std::vector<char>& single_made) {
  for (HeadDiscountBound::Head& h : heads) {
    std::vector<int> operands = p.inputs[h.op], made;
    std::sort(operands.begin(), operands.end());
    operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
    for (int t : operands) {
      if (g.producer[t] < 0)
        h.loads += static_cast<double>(p.size(t)) / p.slow_memory_bandwidth;
      else
        made.push_back(t);
    }
    if (made.size() == 1) {
      h.made_operand = made[0];
      h.made_loads = static_cast<double>(p.size(made[0])) / p.slow_memory_bandwidth;
      single_made[made[0]] = 1;
    }
  }
}

// Each head: its discount (it never heads a link), or what its head subgraph adds beyond its pool. Returns
// what the readers that may take their made operand for free save.
double charge_heads(const Graph& g, const std::vector<double>& floors,
                    std::vector<HeadDiscountBound::Head>& heads, std::map<int, std::vector<int>>& keepers) {
  // A reader gets its made operand without a load only from the subgraph just before it, which ran the
  // maker: the maker's first run outside head subgraphs, a keeper's first head subgraph (both counted in
  // the floor already), or one more run of the maker or of a keeper (at least its floor). So per made
  // operand 1 + |keepers| readers go free, and the others load it or pay the cheapest extra run.
  struct Operand {
    int free_readers = 1;
    double rerun = 0;
    std::vector<double> savings;
  };
  std::map<int, Operand> operands;
  for (auto& [tensor, heads_keeping] : keepers) {
    std::sort(heads_keeping.begin(), heads_keeping.end());
    heads_keeping.erase(std::unique(heads_keeping.begin(), heads_keeping.end()), heads_keeping.end());
  }
  for (HeadDiscountBound::Head& h : heads) {
    const double unloaded = std::max(0.0, h.loads - h.pool_compute);
    if (h.made_operand < 0) {
      h.charge = std::min(h.discount, unloaded);
      continue;
    }
    Operand& operand = operands[h.made_operand];
    if (operand.savings.empty()) {
      operand.rerun = floors[g.producer[h.made_operand]];
      for (int keeper : keepers[h.made_operand]) {
        ++operand.free_readers;
        operand.rerun = std::min(operand.rerun, floors[keeper]);
      }
    }
    h.remake = operand.rerun;
    const double loaded = std::max(0.0, h.loads + h.made_loads - h.pool_compute);
    h.charge = std::min(h.discount, std::min(loaded, unloaded + h.remake));
    operand.savings.push_back(h.charge - std::min(h.discount, unloaded));
  }
  double free_operands = 0;
  for (auto& [tensor, operand] : operands) {
    std::vector<double>& s = operand.savings;
    const size_t free = std::min(s.size(), static_cast<size_t>(operand.free_readers));
    std::partial_sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(free), s.end(), std::greater<>());
    free_operands += std::accumulate(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(free), 0.0);
  }
  return free_operands;
}

}  // namespace

HeadDiscountBound head_discount_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                                      const std::vector<double>& floors, const std::function<bool()>& expired,
                                      int64_t max_visits) {
  HeadDiscountBound out;
  out.compute_floor = std::accumulate(floors.begin(), floors.end(), 0.0);
  out.bound = out.compute_floor;
  if (options.allow_supernative_k) {
    out.status = "--allow-supernative-k lets k exceed n_k, so a deep MatMul may share a subgraph with any";
    return out;
  }
  // Deeper than any side of the native tile: then no subgraph can make the head's operands (M14, M13), and
  // a subgraph where it heads a link holds no other MatMul than its tail (M13: k <= n_k < K).
  const int64_t deep = std::max(p.native_w, p.native_h);
  std::vector<char> is_head(p.num_ops(), 0);
  std::vector<double> padded(p.num_ops(), 0);
  std::vector<HeadDiscountBound::Head> heads;
  for (int o = 0; o < p.num_ops(); ++o) {
    if (!p.is_matmul(o) || g.reduction_depth[o] <= deep) continue;
    padded[o] = padded_compute_floor(p, g, o, options.matmul_compute);  // a non-head's k-steps add up to K
    if (padded[o] - floors[o] <= 1e-9 * padded[o]) continue;  // no streamed price below the padded one
    is_head[o] = 1;
    HeadDiscountBound::Head h;
    h.op = o;
    h.discount = padded[o] - floors[o];
    heads.push_back(h);
  }
  if (heads.empty()) {
    out.status = "no MatMul deeper than the native tile has a streamed price below its padded one";
    return out;
  }
  std::vector<char> single_made(p.num_tensors(), 0);
  count_loads(p, g, heads, single_made);
  // Per made operand, the heads whose subgraphs may make it and keep it: a pool holds its maker and neither
  // of the pool's MatMuls reads it (M9 forbids keeping what a MatMul of the subgraph reads).
  std::map<int, std::vector<int>> keepers;
  LinkWalker walk(p, g, max_visits, expired);
  PoolFinder finder(p, g, walk);
  for (HeadDiscountBound::Head& h : heads) {
    // Each subgraph where the head heads a link has one tail, so the heaviest (head, tail) pool bounds
    // what any of them computes.
    h.tails = walk.tails(h.op);
    h.pool = {h.op};
    h.pool_compute = floors[h.op];
    for (int t : h.tails) {
      std::vector<int> members = finder.pool(h.op, t);
      double compute = 0;
      for (int o : members) {
        compute += (o != h.op && is_head[o]) ? padded[o] : floors[o];
        for (int made : p.outputs[o])
          if (single_made[made] && !reads(p, h.op, made) && !reads(p, t, made)) keepers[made].push_back(h.op);
      }
      if (compute > h.pool_compute) {
        h.pool_compute = compute;
        h.pool = std::move(members);
      }
    }
    if (walk.out_of_budget()) {
      out.status = "stopped at the deadline or its work limit (" + std::to_string(max_visits) +
                   " ops visited) before every pool was found; no claim";
      return out;
    }
    std::sort(h.pool.begin(), h.pool.end());
  }
  out.free_operands = charge_heads(g, floors, heads, keepers);
  for (HeadDiscountBound::Head& h : heads)
    if (h.charge > 0) {
      out.bound += h.charge;
      out.heads.push_back(std::move(h));
    }
  out.bound -= out.free_operands;
  out.applies = out.bound > out.compute_floor;
  if (!out.applies) out.status = "every head subgraph's loads are hidden by its pool's compute";
  return out;
}

}  // namespace mlsys
