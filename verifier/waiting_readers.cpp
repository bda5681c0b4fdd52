// Theorem 20: an op read by a MatMul and by what waits for that MatMul runs twice, or padded
// (docs/bounds.md#theorem-20).
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "verifier/pointwise_runs.hpp"

namespace mlsys {
namespace {

// Whether no subgraph where `op` runs in-chain can keep what an op above it, read alone, makes (a tensor of
// `op`'s shape, M2). In such a subgraph the chain goes on from `op` to a tail t among the MatMuls `op`'s
// output reaches through Pointwise ops, and the kept tensor is a non-ephemeral output. Ruled out for each t
// when t reduces deeper than n_w: two or more k-steps, where in-chain regions follow the k-step and a kept
// one is the tile's (M17). Or when t's output has another shape: then every output below t in the subgraph
// has that shape and must be ephemeral (M10), so a MatMul x there reads it and t is a middle, which needs
// K_t = K_x (M13); ruled out when every MatMul t's output reaches through Pointwise ops reduces to another
// depth. False past the walks' limit.
bool kept_above_nowhere(const Problem& p, const Graph& g, LinkWalker& walk, int op) {
  const std::optional<std::vector<int>> tails = walk.tails(op, kReaderWalk);
  if (!tails) return false;
  const int y = p.outputs[op][0];
  return std::all_of(tails->begin(), tails->end(), [&](int t) {
    const int64_t depth = g.reduction_depth[t];
    if (depth > p.native_w) return true;
    const int z = p.outputs[t][0];
    if (p.heights[z] == p.heights[y] && p.widths[z] == p.widths[y]) return false;
    const std::optional<std::vector<int>> below = walk.tails(t, kReaderWalk);
    return below &&
           std::none_of(below->begin(), below->end(), [&](int x) { return g.reduction_depth[x] == depth; });
  });
}

// Theorem 20's condition: no subgraph holds m's first run and `q` (a reader of m's output's descendants). On
// every path from m to q lie two or more MatMuls, and on none do they all reduce m's depth, at most n_w: with q
// there, m's first run would hold such a path whole (what q reads does not exist before it), so three or more
// MatMuls, all of one depth k <= n_w (M13, M6). Looks only at ops no later than q in topological order, within
// `max_ops`; false when it cannot tell.
class WaitingReaders {
 public:
  WaitingReaders(const Problem& p, const Graph& g, LinkWalker& walk)
      : p_(p), g_(g), walk_(walk), position_(p.num_ops()), reached_(p.num_ops()), fewest_(p.num_ops()),
        same_depth_(p.num_ops()) {
    for (int i = 0; i < p.num_ops(); ++i) position_[g.topological_order[i]] = i;
  }

  bool waits(int m, int q, int max_ops = 4096) {
    if (position_[q] <= position_[m]) return false;
    reached_.next();
    reached_.add(m);
    std::vector<int> region{m}, stack{m};
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      for (int t : p_.outputs[x])
        for (const Consumer& c : g_.consumers[t]) {
          walk_.visit();
          if (position_[c.op] > position_[q] || !reached_.add(c.op)) continue;
          if (static_cast<int>(region.size()) >= max_ops || walk_.out_of_budget()) return false;
          region.push_back(c.op);
          stack.push_back(c.op);
        }
    }
    if (!reached_.has(q)) return false;
    std::sort(region.begin(), region.end(), [&](int a, int b) { return position_[a] < position_[b]; });
    const int64_t depth = g_.reduction_depth[m];
    fewest_[m] = 0;
    same_depth_[m] = depth <= p_.native_w;
    for (int v : region) {
      if (v == m) continue;
      int fewest = std::numeric_limits<int>::max();
      bool same = false;
      for (int t : p_.inputs[v]) {
        const int u = g_.producer[t];
        if (u < 0 || !reached_.has(u)) continue;
        fewest = std::min(fewest, fewest_[u]);
        same = same || same_depth_[u];
      }
      const bool matmul = p_.is_matmul(v);
      fewest_[v] = fewest + (matmul ? 1 : 0);
      same_depth_[v] = same && (!matmul || g_.reduction_depth[v] == depth);
    }
    return fewest_[q] >= 2 && !same_depth_[q];
  }

 private:
  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  std::vector<int> position_;
  EpochMarks reached_;
  std::vector<int> fewest_;         // per reached op, the fewest MatMuls on a path from m (m not counted)
  std::vector<bool> same_depth_;    // some path from m has only MatMuls of m's depth, at most n_w
};

// Theorem 20's first run: the side of P's output that m reads, when no other tail can be in-chain beside it
// in the run of P that serves m's first run. m is then P's only MatMul reader, reading it once, and every
// other reader waits for m: none can be in that run, nor before it (docs/bounds.md#theorem-20).
std::optional<int> only_tail_in_first_run(const Problem& p, const Graph& g, WaitingReaders& readers, int o,
                                          int m) {
  constexpr size_t kMostReaders = 8;  // each is a walk of the graph between m and it
  std::optional<int> side;
  std::vector<int> others;
  for (int t : p.outputs[o])
    for (const Consumer& c : g.consumers[t]) {
      if (c.op != m) {
        if (p.is_matmul(c.op)) return std::nullopt;
        others.push_back(c.op);
      } else if (side) {
        return std::nullopt;
      } else {
        side = c.position;
      }
    }
  if (others.size() > kMostReaders) return std::nullopt;
  for (int q : others)
    if (!readers.waits(m, q)) return std::nullopt;
  return side;
}

}  // namespace

// Theorem 20: a Pointwise op P read by a MatMul m and by an op q that waits for m (WaitingReaders). Either some
// run of P is not in-chain, at its padded price, or none is and P is never stored: then m's first run and q's
// first run (a later one) each make P or receive it retained from the subgraph just before, and one run
// cannot serve both, since P made beside m is not kept (M9). So P runs twice, and each run in-chain holds the
// single-input Pointwise ops above it in-chain too. The charge is the least of that, of P and the ops read
// alone above it never in-chain, and of P padded once beside an in-chain run (docs/bounds.md#theorem-20).
// Ops Theorems 18 and 19 charge are left out, and each op is counted once. False when the work limit
// stopped it.
bool charge_waiting_readers(const Problem& p, const Graph& g, LinkWalker& walk, const std::vector<double>& floors,
                            MatmulCompute model, TailRunBound& out) {
  std::vector<bool> counted = charged_ops(p, out);
  WaitingReaders readers(p, g, walk);
  for (int o : g.topological_order) {
    if (walk.out_of_budget()) return false;
    if (p.is_matmul(o) || counted[o]) continue;
    const Discount discount = in_chain_discount(p, g, floors, o, model);
    if (discount.value <= 0) continue;
    std::vector<int> matmuls, others;
    for (int t : p.outputs[o])
      for (const Consumer& c : g.consumers[t]) (p.is_matmul(c.op) ? matmuls : others).push_back(c.op);
    TailRunBound::WaitingOp op;
    op.op = o;
    // A few readers of each kind are tried: the question walks the graph between them.
    for (size_t i = 0; i < matmuls.size() && i < 4 && op.reader < 0; ++i)
      for (size_t j = 0; j < others.size() && j < 4 && op.reader < 0; ++j)
        if (readers.waits(matmuls[i], others[j])) op.reader = matmuls[i], op.waiting = others[j];
    if (op.reader < 0) continue;
    // The run that serves m's first run, priced towards m when m is the only tail it can have there.
    const std::optional<int> side = only_tail_in_first_run(p, g, readers, o, op.reader);
    auto first_run = [&](int x) {
      return side ? compute_toward_tail(p, g, x, op.reader, *side, model) : floors[x];
    };
    double twice = first_run(o);
    // Up through Pointwise ops that alone make what the last one reads: each in-chain run holds them.
    // While each is read by the op below it alone, it is in-chain only where P is. If P never runs in-chain,
    // none of them does and each pays its padded price. If P runs padded somewhere, what it reads there was
    // made padded, or kept from a run where P is in-chain, which its tails may rule out (M10, M13, M17).
    double padded_alone = discount.value, padded_once = floors[o] + discount.value;
    bool read_alone = true;
    std::optional<bool> never_kept;  // walked for only once some op above is read alone
    for (int x = o; op.above.size() < 64;) {
      int maker = -1;
      bool single = true;
      for (int t : p.inputs[x]) {
        const int u = g.producer[t];
        if (u < 0) continue;
        if (maker >= 0 && maker != u) single = false;
        maker = u;
      }
      if (maker < 0 || !single || p.is_matmul(maker) || counted[maker]) break;
      op.above.push_back(maker);
      twice += first_run(maker);
      read_alone = read_alone && reads_only(p, g, maker, x);
      if (read_alone) {
        const double d = in_chain_discount(p, g, floors, maker, model).value;
        ++op.read_alone;
        padded_alone += d;
        if (!never_kept) never_kept = kept_above_nowhere(p, g, walk, o);
        if (*never_kept) ++op.never_kept, padded_once += d;
      }
      x = maker;
    }
    // P in-chain twice (each run holds the ops above); or P padded and in-chain once (what it reads there made
    // padded); or P and the ops read alone above it never in-chain.
    op.charge = std::min({twice, padded_once, padded_alone});
    counted[o] = true;
    for (int u : op.above) counted[u] = true;
    out.waiting_charges += op.charge;
    out.waiting_ops.push_back(std::move(op));
  }
  return !walk.out_of_budget();
}


}  // namespace mlsys
