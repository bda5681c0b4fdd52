// Theorem 11 (docs/bounds.md#theorem-11). The step model prices each MatMul's inner k-steps
// (SubgraphModel::inner_k_steps); this file decides which MatMuls and links the argument covers and runs the
// dynamic program over them.
#include "verifier/inner_k_step_bound.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <variant>

#include "sim/number_format.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

namespace {

constexpr double kInf = InnerKStepBound::kNone;

// The MatMuls and, per op, which of them it depends on (bit sets over the MatMuls' indices).
struct MatmulAncestry {
  std::vector<int> matmuls;
  std::vector<std::vector<uint64_t>> ancestors;
  bool has(int op, int matmul_index) const {
    return (ancestors[op][matmul_index / 64] >> (matmul_index % 64)) & 1;
  }
};

MatmulAncestry matmul_ancestry(const Problem& p, const Graph& g) {
  MatmulAncestry a;
  std::vector<int> index(p.num_ops(), -1);  // per op: its position in `matmuls`, or -1
  for (int o = 0; o < p.num_ops(); ++o)
    if (p.is_matmul(o)) {
      index[o] = static_cast<int>(a.matmuls.size());
      a.matmuls.push_back(o);
    }
  const size_t words = (a.matmuls.size() + 63) / 64;
  a.ancestors.assign(p.num_ops(), std::vector<uint64_t>(words, 0));
  for (int o : g.topological_order)
    for (int t : p.inputs[o]) {
      const int q = g.producer[t];
      if (q < 0) continue;
      for (size_t w = 0; w < words; ++w) a.ancestors[o][w] |= a.ancestors[q][w];
      if (index[q] >= 0) a.ancestors[o][index[q] / 64] |= uint64_t{1} << (index[q] % 64);
    }
  return a;
}

// The MatMuls the theorem covers: a reduction deeper than every native side (so every run that is no head
// splits it, M6 and M12, and no prologue can feed it, M14), two different operands, and every other MatMul
// an ancestor or a descendant (so none can share its subgraph unlinked without a recomputation).
std::vector<bool> covered_matmuls(const Problem& p, const Graph& g, const MatmulAncestry& a) {
  std::vector<bool> covered(p.num_ops(), false);
  const int64_t native = std::max(p.native_w, p.native_h);
  std::vector<int> descendants(a.matmuls.size(), 0), ancestors(a.matmuls.size(), 0);
  for (size_t i = 0; i < a.matmuls.size(); ++i)
    for (size_t j = 0; j < a.matmuls.size(); ++j)
      if (a.has(a.matmuls[i], static_cast<int>(j))) {
        ++ancestors[i];
        ++descendants[j];
      }
  for (size_t i = 0; i < a.matmuls.size(); ++i) {
    const int m = a.matmuls[i];
    covered[m] = g.reduction_depth[m] > native && p.inputs[m][0] != p.inputs[m][1] &&
                 ancestors[i] + descendants[i] + 1 == static_cast<int>(a.matmuls.size());
  }
  return covered;
}

// E_m: the least, over every granularity, of m's compute beyond its floor plus what the loads of its inner
// k-steps exceed their compute by, when it receives `received` retained and loads its other operands.
// Granularity pairs are tried by tile count: a MatMul's compute is base per tile (tiles are at most native,
// M24), so once it alone exceeds the best found, no larger count can do better. Returns 0 (no claim) when
// the budget of evaluations runs out.
struct MatmulExcess {
  double inner = 0;   // E_m
  double stored = 0;  // E_m with the last k-steps' excess when m's subgraph is m alone and stores its output
};

MatmulExcess matmul_excess(const Problem& p, const Graph& g, const ModelOptions& options, int m,
                           const std::vector<int>& received, double floor_m, int64_t& budget,
                           const std::function<bool()>& expired) {
  auto compiled = SubgraphModel::compile_structure(p, g, {m}, {}, 0, received, options);
  if (!std::holds_alternative<SubgraphModel>(compiled)) return {};
  SubgraphModel& model = std::get<SubgraphModel>(compiled);
  // The first k-step of a tile loads the operands too unless another op could have read them at the step
  // before (an epilogue of the previous tile, M19): only when m is their only reader is it counted.
  bool skip_first = false;
  for (int x : p.inputs[m])
    if (std::find(received.begin(), received.end(), x) == received.end() && g.consumers[x].size() != 1)
      skip_first = true;
  const int y = p.outputs[m][0];
  auto counts = [](int64_t extent, int64_t native) {  // tile count -> one size giving it
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t size = std::min(native, extent); size >= 1; --size) {
      const int64_t count = (extent + size - 1) / size;
      if (out.empty() || out.back().first != count) out.push_back({count, size});
    }
    return out;
  };
  const auto rows = counts(p.heights[y], p.native_h), cols = counts(p.widths[y], p.native_w);
  std::vector<std::array<int64_t, 3>> pairs;  // tiles, h, w
  for (const auto& [nr, h] : rows)
    for (const auto& [nc, w] : cols) pairs.push_back({nr * nc, h, w});
  std::sort(pairs.begin(), pairs.end());
  // The last k-steps count only where no Pointwise op can share m's subgraph: one would be an epilogue (no
  // prologue feeds m, M14) reading an operand of m, since m's output goes to the link's op.
  const bool alone =
      std::all_of(p.inputs[m].begin(), p.inputs[m].end(), [&](int x) { return g.consumers[x].size() == 1; });
  const int64_t k_max = std::min<int64_t>(p.native_w, g.reduction_depth[m]);
  const double B = p.slow_memory_bandwidth;
  MatmulExcess best{kInf, kInf};
  for (const auto& [tiles, h, w] : pairs)
    for (int64_t k = 1; k <= k_max; ++k) {
      if (--budget < 0 || (budget % 4096 == 0 && expired && expired())) {
        budget = -1;
        return {};
      }
      if (model.set_granularity({w, h, k})) continue;
      const SubgraphModel::InnerKSteps inner = model.inner_k_steps(skip_first);
      const double compute_extra = std::max(0.0, inner.all_steps_compute - floor_m);
      if (compute_extra >= best.stored) return best;  // this count and every larger one
      const double e = compute_extra + std::max(0.0, inner.elements / B - inner.compute);
      best.inner = std::min(best.inner, e);
      best.stored = std::min(best.stored, e + (alone ? inner.last_excess : 0));
    }
  return best.inner == kInf ? MatmulExcess{} : best;
}

// A Pointwise op p joining covered MatMuls: T = from's output, read by p alone; X = p's only output, read
// only by `to`, on `side`. Then `to` can receive X retained only from the subgraph just before its own,
// which holds p and either `from` (keeping X whole beside what `from` received) or nothing else (M7: p has
// no other neighbour), and then it receives T retained from `from`'s subgraph or loads all of T.
struct Link {
  int from, via, to, side, T, X;
};

std::vector<Link> links_between(const Problem& p, const Graph& g, const std::vector<bool>& covered) {
  std::vector<Link> links;
  for (int op = 0; op < p.num_ops(); ++op) {
    if (p.is_matmul(op) || p.outputs[op].size() != 1) continue;
    const int T = p.inputs[op][0], X = p.outputs[op][0];
    if (!std::all_of(p.inputs[op].begin(), p.inputs[op].end(), [&](int t) { return t == T; })) continue;
    const int from = g.producer[T];
    if (from < 0 || !covered[from]) continue;
    if (!std::all_of(g.consumers[T].begin(), g.consumers[T].end(),
                     [&](const Consumer& c) { return c.op == op; }))
      continue;
    if (g.consumers[X].size() != 1 || !covered[g.consumers[X][0].op]) continue;
    links.push_back({from, op, g.consumers[X][0].op, g.consumers[X][0].position, T, X});
  }
  return links;
}

// The least compute a head pays beyond its floor when it links into any MatMul (M24: per tile of the tail,
// at least one native row of tiles of its output across the streamed side), or kInf without any possible
// link; -1 once `visits` steps along Pointwise paths are spent (a hostile graph), and the theorem then makes
// no claim.
double least_link_penalty(const Problem& p, const Graph& g, const ModelOptions& options,
                          const std::vector<double>& op_floor, int64_t visits) {
  double least = kInf;
  const double n_w = static_cast<double>(p.native_w), n_h = static_cast<double>(p.native_h);
  std::vector<int> seen(p.num_ops(), -1), stack;
  for (int a = 0; a < p.num_ops(); ++a) {
    if (!p.is_matmul(a)) continue;
    stack.assign(1, p.outputs[a][0]);
    while (!stack.empty()) {
      const int t = stack.back();
      stack.pop_back();
      for (const Consumer& c : g.consumers[t]) {
        if (--visits < 0) return -1;
        if (p.is_matmul(c.op)) {
          const int yb = p.outputs[c.op][0];
          const double tail_tiles = std::ceil(static_cast<double>(p.heights[yb]) / n_h) *
                                    std::ceil(static_cast<double>(p.widths[yb]) / n_w);
          const double per_tile = head_compute_per_tail_tile(p, g, a, c.position, options.matmul_compute);
          least = std::min(least, std::max(0.0, tail_tiles * per_tile - op_floor[a]));
          continue;
        }
        if (seen[c.op] == a) continue;
        seen[c.op] = a;
        for (int out : p.outputs[c.op]) stack.push_back(out);
      }
    }
  }
  return least;
}

// What a link costs when its Pointwise op runs alone on its loaded input: `G' = {p}` loads all of T.
double pointwise_alone_price(const Problem& p, const Link& l, const std::vector<double>& op_floor) {
  return std::max(0.0, static_cast<double>(p.size(l.T)) / p.slow_memory_bandwidth - op_floor[l.via]);
}

// What a subset of a MatMul's operands (bit 0 the LHS, bit 1 the RHS) occupies received whole.
int64_t received_size(const Problem& p, int m, int mask) {
  int64_t size = 0;
  for (int side = 0; side < 2; ++side)
    if (mask & (1 << side)) size += p.size(p.inputs[m][side]);
  return size;
}

// A tree's MatMuls (producers first) and, for its certificate, the price of each choice of each MatMul and
// each link.
InnerKStepBound::Tree describe_tree(const Problem& p, int root,
                                    const std::vector<std::vector<const Link*>>& incoming,
                                    const std::vector<std::array<MatmulExcess, 4>>& excess,
                                    const std::vector<double>& op_floor) {
  InnerKStepBound::Tree tree;
  std::vector<int> pending{root};
  std::string links_text;
  while (!pending.empty()) {
    const int x = pending.back();
    pending.pop_back();
    tree.matmuls.push_back(x);
    for (const Link* l : incoming[x]) {
      pending.push_back(l->from);
      links_text += "; op " + std::to_string(l->via) + " (tensor " + std::to_string(l->T) + " to " +
                    std::to_string(l->X) + ") costs " +
                    format_display(pointwise_alone_price(p, *l, op_floor)) + " when op " +
                    std::to_string(l->to) + " receives tensor " + std::to_string(l->X) + " and op " +
                    std::to_string(l->from) + "'s subgraph cannot keep it (then op " +
                    std::to_string(l->from) + " stores tensor " + std::to_string(l->T) + ")";
    }
  }
  std::reverse(tree.matmuls.begin(), tree.matmuls.end());
  std::string ops_text;
  for (int x : tree.matmuls) {
    ops_text += (ops_text.empty() ? "" : "; ") + std::string("op ") + std::to_string(x) + ":";
    for (int mask = 0; mask < 4; ++mask) {
      const MatmulExcess& e = excess[x][mask];
      if (e.inner == kInf) continue;
      std::string what = mask == 0 ? "loading both operands" : "receiving";
      for (int side = 0; side < 2; ++side)
        if (mask & (1 << side)) what += " tensor " + std::to_string(p.inputs[x][side]);
      ops_text += " " + what + " " + format_display(e.inner);
      if (e.stored > e.inner) ops_text += " (storing its output " + format_display(e.stored) + ")";
      ops_text += ",";
    }
    ops_text.pop_back();
  }
  tree.reason = "inner k-steps beyond compute (" + ops_text + ")" + links_text;
  return tree;
}

struct ChainSolution {
  double total = 0;           // the least sum over the trees
  double disturbed_loss = 0;  // the most one MatMul left out can lower it
  std::vector<InnerKStepBound::Tree> trees;
};

// The dynamic program, producers first: each covered MatMul has at most one link out (its output is read by
// the link's Pointwise op alone) and one in per operand, so the links form trees. A state is the operands
// received (bits 0 and 1) and whether the MatMul stores its output for its link (bit 2), which prices its
// last k-steps too.
ChainSolution solve_chains(const Problem& p, const Graph& g, const std::vector<bool>& covered,
                           const std::vector<std::array<MatmulExcess, 4>>& excess,
                           const std::vector<Link>& links, const std::vector<double>& op_floor) {
  const double cap = p.fast_memory_capacity;
  std::vector<std::vector<const Link*>> incoming(p.num_ops());
  std::vector<const Link*> outgoing(p.num_ops(), nullptr);
  for (const Link& l : links) {
    incoming[l.to].push_back(&l);
    outgoing[l.from] = &l;
  }
  auto link_cost = [&](const Link& l, int from_state, int to_state) {
    if (!(to_state & (1 << l.side))) return 0.0;  // `to` loads X: priced in its own E
    const double beside = static_cast<double>(received_size(p, l.from, from_state & 3));
    if (beside + static_cast<double>(p.size(l.X)) <= cap || beside + static_cast<double>(p.size(l.T)) <= cap)
      return 0.0;                        // from's subgraph could keep X (or T) whole beside what it received
    if (!(from_state & 4)) return kInf;  // p loads T, which from's subgraph must have stored
    return pointwise_alone_price(p, l, op_floor);
  };
  auto node_cost = [&](int m, int state) {
    return state & 4 ? excess[m][state & 3].stored : excess[m][state & 3].inner;
  };
  ChainSolution out;
  std::vector<std::array<double, 8>> best(p.num_ops());
  for (int m : g.topological_order) {
    if (!covered[m]) continue;
    // What leaving m out of the trees can lower their total by at most: m's cost and its links' in the state
    // that keeps them finite whatever its neighbours' states are.
    double ext = kInf;
    for (int state = 0; state < 8; ++state) {
      double total = node_cost(m, state), alone = node_cost(m, state);
      for (const Link* l : incoming[m]) {
        double least = kInf, worst = 0;
        for (int from_state = 0; from_state < 8; ++from_state) {
          least = std::min(least, best[l->from][from_state] + link_cost(*l, from_state, state));
          worst = std::max(worst, link_cost(*l, from_state, state));
        }
        total += least;
        alone += worst;
      }
      if (const Link* l = outgoing[m]) {
        double worst = 0;
        for (int to_state = 0; to_state < 8; ++to_state)
          worst = std::max(worst, link_cost(*l, state, to_state));
        alone += worst;
      }
      best[m][state] = total;
      ext = std::min(ext, alone);
    }
    out.disturbed_loss = std::max(out.disturbed_loss, ext);
  }
  for (int m : g.topological_order) {
    if (!covered[m] || outgoing[m]) continue;
    InnerKStepBound::Tree tree = describe_tree(p, m, incoming, excess, op_floor);
    tree.excess = *std::min_element(best[m].begin(), best[m].end());
    out.total += tree.excess;
    out.trees.push_back(std::move(tree));
  }
  return out;
}

}  // namespace

InnerKStepBound inner_k_step_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                                   const std::function<bool()>& expired) {
  InnerKStepBound out;
  const std::vector<double> op_floor = compute_floors(p, g, options.matmul_compute);
  for (double f : op_floor) out.compute_floor += f;
  out.bound = out.compute_floor;
  auto refuse = [&](std::string why) {
    out.status = std::move(why);
    return out;
  };
  if (options.allow_supernative_k) return refuse("k above native is allowed: no reduction must split");
  int matmul_count = 0;
  for (int o = 0; o < p.num_ops(); ++o) matmul_count += p.is_matmul(o);
  if (matmul_count > kInnerKStepMaxMatmuls) return refuse("more MatMuls than the theorem's limit");
  // The ancestry bit sets: ops x MatMuls bits (at most 128 MiB).
  if (static_cast<int64_t>(p.num_ops()) * ((matmul_count + 63) / 64) > (int64_t{1} << 24))
    return refuse("too many ops and MatMuls for the theorem's reachability");
  const MatmulAncestry ancestry = matmul_ancestry(p, g);
  const std::vector<bool> covered = covered_matmuls(p, g, ancestry);
  if (std::none_of(covered.begin(), covered.end(), [](bool c) { return c; }))
    return refuse("no MatMul reduces deeper than native and is comparable with every other MatMul");

  for (int m : ancestry.matmuls) out.recompute_case = std::min(out.recompute_case, op_floor[m]);
  constexpr int64_t kVisits = 20'000'000;
  out.link_case = least_link_penalty(p, g, options, op_floor, kVisits);
  if (out.link_case < 0) return refuse("too many Pointwise paths between MatMuls to price their links");

  // E_m for each subset of operands m may receive (never a graph input, M9; whole, M20 A).
  const double cap = p.fast_memory_capacity;
  int64_t budget = 2'000'000;
  std::vector<std::array<MatmulExcess, 4>> excess(p.num_ops());
  for (int m : ancestry.matmuls) {
    if (!covered[m]) continue;
    for (int mask = 0; mask < 4; ++mask) {
      std::vector<int> received;
      bool possible = received_size(p, m, mask) <= cap;
      for (int side = 0; side < 2; ++side)
        if (mask & (1 << side)) {
          received.push_back(p.inputs[m][side]);
          possible = possible && !g.is_graph_input[p.inputs[m][side]];
        }
      excess[m][mask] = possible ? matmul_excess(p, g, options, m, received, op_floor[m], budget, expired)
                                 : MatmulExcess{kInf, kInf};
    }
  }
  if (budget < 0) return refuse("too many granularities to price in the time or work allowed");

  const ChainSolution chains = solve_chains(p, g, covered, excess, links_between(p, g, covered), op_floor);
  out.chain_case = chains.total;
  out.trees = chains.trees;
  out.disturbed_loss = chains.disturbed_loss;
  // Recomputed or linked MatMuls: each extra run costs at least the least MatMul floor and leaves at most 3
  // covered MatMuls outside the chain argument (itself and two it shares subgraphs with), each link costs at
  // least the least head penalty and leaves 2; the trees lose at most `disturbed_loss` per MatMul left out.
  out.mixed_case = kInf;
  const double L = chains.disturbed_loss;
  const int64_t most =
      L > 0 && L < kInf ? std::min<int64_t>(1000, static_cast<int64_t>(out.chain_case / L) + 2) : 1;
  // Without a possible link (link_case infinite) 0 links cost nothing, not 0 x infinity. Past `most` the
  // trees are spent, so more runs or links only cost more; if the cap cut that short, each still costs at
  // least the cheaper of the two.
  auto times = [](int64_t n, double each) { return n == 0 ? 0.0 : static_cast<double>(n) * each; };
  if (most == 1000) out.mixed_case = std::min(out.recompute_case, out.link_case);
  for (int64_t runs = 0; runs <= most; ++runs)
    for (int64_t links = runs == 0 ? 1 : 0; links <= most; ++links) {
      const double paid = times(runs, out.recompute_case) + times(links, out.link_case);
      const double left =
          L < kInf ? std::max(0.0, out.chain_case - static_cast<double>(3 * runs + 2 * links) * L) : 0;
      out.mixed_case = std::min(out.mixed_case, paid + left);
    }
  out.applies = true;
  out.bound = out.compute_floor + std::min(out.mixed_case, out.chain_case);
  return out;
}

}  // namespace mlsys
