// Theorem 13: which deep MatMuls a schedule can price on their streamed axis, what a subgraph where one heads
// a link must load, and which ops can hide it (docs/bounds.md#theorem-13).
#include "verifier/head_discount_bound.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_set>
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
        component_(p.num_ops()),
        descendants_(p.num_ops()),
        position_(p.num_ops()) {
    for (int i = 0; i < p.num_ops(); ++i) position_[g.topological_order[i]] = i;
  }

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
    return first_run(head, component(head, [&](int o) {
                       return o == head || o == tail || ancestors_.has(o) ||
                              (!p_.is_matmul(o) && output_shape(p_, o) == grid);
                     }));
  }

 private:
  // The ops `allowed` accepts that are connected to `head` through shared tensors (M7).
  std::vector<int> component(int head, const std::function<bool(int)>& allowed) {
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

  // The pool of a head subgraph that is the head's first run: before it nothing made from the head's output
  // exists, so an op that reads such a tensor runs there only beside its maker. Drops, to a fixed point, the
  // members that read one made outside the pool (RegNet's sum of nine offsets, with one offset inside), and
  // keeps the head's component. Unchanged when the head's descendants up to the pool's last op are too many
  // to walk.
  std::vector<int> first_run(int head, std::vector<int> members) {
    constexpr int kMostDescendants = 4096;
    int last = 0;
    for (int m : members) last = std::max(last, position_[m]);
    descendants_.next();
    descendants_.add(head);
    std::vector<int> stack{head};
    for (int walked = 0; !stack.empty();) {
      const int x = stack.back();
      stack.pop_back();
      for (int t : p_.outputs[x])
        for (const Consumer& c : g_.consumers[t]) {  // capped below, apart from the walks' shared budget
          if (position_[c.op] > last || !descendants_.add(c.op)) continue;
          if (++walked > kMostDescendants) return members;
          stack.push_back(c.op);
        }
    }
    std::unordered_set<int> kept(members.begin(), members.end());
    for (bool dropped = true; dropped;) {
      dropped = false;
      for (int o : members)
        if (o != head && kept.count(o) && std::any_of(p_.inputs[o].begin(), p_.inputs[o].end(), [&](int t) {
              const int maker = g_.producer[t];
              return maker >= 0 && descendants_.has(maker) && !kept.count(maker);
            })) {
          kept.erase(o);
          dropped = true;
        }
    }
    if (kept.size() == members.size()) return members;
    return component(head, [&](int o) { return kept.count(o) > 0; });
  }

  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  EpochMarks tensors_, ancestors_, component_, descendants_;
  std::vector<int> position_;  // per op, its place in the topological order
};

// The tail-run bound's charges (Theorems 16, 18-20) that runs of some ops may take, for Theorem 21. Each
// charge is extra compute of the runs of its group of ops (Theorem 20's op and those above it, Theorem 19's
// op, Theorem 18's op and its readers); a join's charge is paid by its heads' padded runs, each head at
// most its discount (docs/bounds.md#theorem-21). Empty without a tail-run bound: nothing is taken.
class RunCharges {
 public:
  RunCharges() = default;
  RunCharges(const Problem& p, const Graph& g, const std::vector<double>& floors, const TailRunBound& runs,
             MatmulCompute model)
      : groups_(p.num_ops()), join_cap_(p.num_ops(), 0) {
    auto add = [&](int op, const std::vector<int>& others, double charge) {
      const int group = static_cast<int>(charges_.size());
      charges_.push_back(charge);
      groups_[op].push_back(group);
      for (int o : others) groups_[o].push_back(group);
    };
    for (const TailRunBound::WaitingOp& w : runs.waiting_ops) add(w.op, w.above, w.charge);
    for (const TailRunBound::RemadeOp& r : runs.remade_ops) add(r.op, {}, r.charge);
    for (const TailRunBound::SharedPath& s : runs.shared_paths) add(s.op, s.readers, s.charge);
    for (const TailRunBound::Join& j : runs.joins)
      for (int h : j.heads)
        join_cap_[h] += std::min(j.charge, padded_compute_floor(p, g, h, model) - floors[h]);
  }
  // What the charges meeting `ops` may take of their runs.
  double touching(const std::vector<int>& ops) const {
    if (groups_.empty()) return 0;
    std::vector<int> met;
    double taken = 0;
    for (int o : ops) {
      taken += join_cap_[o];
      met.insert(met.end(), groups_[o].begin(), groups_[o].end());
    }
    std::sort(met.begin(), met.end());
    met.erase(std::unique(met.begin(), met.end()), met.end());
    for (int group : met) taken += charges_[group];
    return taken;
  }
  // `value` (extra compute of runs of `ops`) less what those charges may already count.
  double beyond(const std::vector<int>& ops, double value) const { return std::max(0.0, value - touching(ops)); }

 private:
  std::vector<std::vector<int>> groups_;  // per op, the charges whose runs it is in
  std::vector<double> join_cap_;          // per op, the part of a join's charge its padded runs may take
  std::vector<double> charges_;
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
double charge_heads(const Graph& g, const std::vector<double>& floors, const RunCharges& runs,
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
      operand.rerun = runs.beyond({g.producer[h.made_operand]}, floors[g.producer[h.made_operand]]);
      for (int keeper : keepers[h.made_operand]) {
        ++operand.free_readers;
        operand.rerun = std::min(operand.rerun, runs.beyond({keeper}, floors[keeper]));
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

namespace {

// Theorem 13 on the compute floor (`tail_runs` null), or Theorem 21 on the tail-run bound.
HeadDiscountBound charge_deep_heads(const Problem& p, const Graph& g, const ModelOptions& options,
                                    const std::vector<double>& floors, const TailRunBound* tail_runs,
                                    const std::function<bool()>& expired, int64_t max_visits) {
  HeadDiscountBound out;
  out.compute_floor = std::accumulate(floors.begin(), floors.end(), 0.0);
  out.base = tail_runs ? tail_runs->bound : out.compute_floor;
  out.bound = out.base;
  if (tail_runs && !tail_runs->heads.empty()) {
    out.status = "the tail-run bound charges Theorem 14's heads, whose runs are not told apart here";
    return out;
  }
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
  const RunCharges runs = tail_runs ? RunCharges(p, g, floors, *tail_runs, options.matmul_compute) : RunCharges();
  LinkWalker walk(p, g, max_visits, expired);
  PoolFinder finder(p, g, walk);
  for (HeadDiscountBound::Head& h : heads) {
    // Each subgraph where the head heads a link has one tail, so the heaviest (head, tail) pool bounds
    // what any of them computes.
    // Beside the tail runs, the head subgraph's ops may take the charges that count their runs, and what the
    // head saves may be a charge already.
    h.tails = walk.tails(h.op);
    h.pool = {h.op};
    h.runs_beside = runs.touching(h.pool);
    h.discount = std::max(0.0, h.discount - h.runs_beside);
    h.pool_compute = floors[h.op] + h.runs_beside;
    for (int t : h.tails) {
      std::vector<int> members = finder.pool(h.op, t);
      double compute = 0;
      for (int o : members) {
        compute += (o != h.op && is_head[o]) ? padded[o] : floors[o];
        for (int made : p.outputs[o])
          if (single_made[made] && !reads(p, h.op, made) && !reads(p, t, made)) keepers[made].push_back(h.op);
      }
      const double beside = runs.touching(members);
      if (compute + beside > h.pool_compute) {
        h.pool_compute = compute + beside;
        h.runs_beside = beside;
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
  out.free_operands = charge_heads(g, floors, runs, heads, keepers);
  for (HeadDiscountBound::Head& h : heads)
    if (h.charge > 0) {
      out.bound += h.charge;
      out.heads.push_back(std::move(h));
    }
  out.bound -= out.free_operands;
  out.applies = out.bound > out.base;
  if (!out.applies) out.status = "every head subgraph's loads are hidden by its pool's compute";
  return out;
}

}  // namespace

HeadDiscountBound head_discount_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                                      const std::vector<double>& floors, const std::function<bool()>& expired,
                                      int64_t max_visits) {
  return charge_deep_heads(p, g, options, floors, nullptr, expired, max_visits);
}

HeadDiscountBound head_loads_beside_tail_runs(const Problem& p, const Graph& g, const ModelOptions& options,
                                              const std::vector<double>& floors, const TailRunBound& tail_runs,
                                              const std::function<bool()>& expired, int64_t max_visits) {
  return charge_deep_heads(p, g, options, floors, &tail_runs, expired, max_visits);
}

}  // namespace mlsys
