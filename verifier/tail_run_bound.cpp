// Theorem 14: which heads get their streamed price only beside their tail alone, and what every further such
// head costs that tail (docs/bounds.md#theorem-14).
#include "verifier/tail_run_bound.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "sim/step_model.hpp"
#include "verifier/link_walks.hpp"
#include "verifier/pointwise_runs.hpp"

namespace mlsys {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// Per op, the fewest tiles a grid has when every MatMul of the subgraph reduces `depth` deep at w = k = depth
// (M13) and a MatMul downstream of the op, of that depth, is its tail: ceil(W/depth) columns of at least
// ceil(H/n_h) rows of that tail's output (M10: the grid is a tail's output shape). Infinite: no such MatMul.
// The links followed pass Pointwise ops and MatMuls of that depth only: a MatMul of another depth cannot
// share such a subgraph, so nothing beyond it is a tail of the op there.
std::vector<double> fewest_tiles_downstream(const Problem& p, const Graph& g, int64_t depth,
                                            LinkWalker& walk) {
  std::vector<double> fewest(p.num_ops(), kNever);
  for (auto it = g.topological_order.rbegin(); it != g.topological_order.rend() && !walk.out_of_budget();
       ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : g.consumers[t]) {
        walk.visit();
        if (p.is_matmul(c.op) && g.reduction_depth[c.op] != depth) continue;
        double here = fewest[c.op];
        if (p.is_matmul(c.op)) {
          const int y = p.outputs[c.op][0];
          const int64_t cols = (p.widths[y] + depth - 1) / depth;
          const int64_t rows = (p.heights[y] + p.native_h - 1) / p.native_h;
          here = std::min(here, static_cast<double>(cols) * static_cast<double>(rows));
        }
        fewest[*it] = std::min(fewest[*it], here);
      }
  return fewest;
}

// The Pointwise ops on every path from the heads to `tail` through Pointwise ops only: the dominators of the
// heads in the graph of those paths reversed, rooted at the tail. A DAG's dominator tree comes from one pass
// in topological order: a node's immediate dominator is the nearest common dominator of its consumers.
class PassedOps {
 public:
  PassedOps(const Problem& p, const Graph& g, LinkWalker& walk)
      : p_(p),
        g_(g),
        walk_(walk),
        position_(p.num_ops()),
        in_region_(p.num_ops()),
        idom_(p.num_ops()),
        depth_(p.num_ops()) {
    for (int i = 0; i < p.num_ops(); ++i) position_[g.topological_order[i]] = i;
  }

  std::vector<int> passed(int tail, const std::vector<int>& heads) {
    in_region_.next();
    in_region_.add(tail);
    std::vector<int> region, stack(p_.inputs[tail].begin(), p_.inputs[tail].end());
    while (!stack.empty() && !walk_.out_of_budget()) {
      const int t = stack.back();
      stack.pop_back();
      walk_.visit();
      const int op = g_.producer[t];
      if (op < 0 || !in_region_.add(op)) continue;
      region.push_back(op);
      if (!p_.is_matmul(op)) stack.insert(stack.end(), p_.inputs[op].begin(), p_.inputs[op].end());
    }
    // Readers before what they read: descending topological position.
    std::sort(region.begin(), region.end(), [&](int a, int b) { return position_[a] > position_[b]; });
    idom_[tail] = tail;
    depth_[tail] = 0;
    for (int v : region) {
      int dominator = -1;
      for (int t : p_.outputs[v])
        for (const Consumer& c : g_.consumers[t])
          if (in_region_.has(c.op) && !(p_.is_matmul(c.op) && c.op != tail))
            dominator = dominator < 0 ? c.op : common_dominator(dominator, c.op);
      idom_[v] = dominator < 0 ? tail : dominator;
      depth_[v] = depth_[idom_[v]] + 1;
    }
    int top = heads.empty() ? tail : heads[0];
    for (int h : heads) top = common_dominator(top, h);
    std::vector<int> out;
    for (int x = top; x != tail && !walk_.out_of_budget(); x = idom_[x]) {
      walk_.visit();
      if (!p_.is_matmul(x)) out.push_back(x);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  int common_dominator(int a, int b) {
    while (a != b && !walk_.out_of_budget()) {
      walk_.visit();
      if (depth_[a] >= depth_[b])
        a = idom_[a];
      else
        b = idom_[b];
    }
    return a;
  }

  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  std::vector<int> position_;
  EpochMarks in_region_;
  std::vector<int> idom_;
  std::vector<int64_t> depth_;
};

// Each discounted head takes a run of one of its tails; each tail's first run is in the floor already. So of
// the heads a group of tails joins, at most one per tail, and each at most once, goes free: the charges
// minus the lesser of the tails' largest charges and the group's largest charges, one per tail.
double first_runs(const std::vector<TailRunBound::Head>& heads, const std::vector<TailRunBound::Tail>& tails,
                  const std::map<int, int>& tail_index) {
  const int n = static_cast<int>(heads.size());
  std::vector<int> parent(n + tails.size());
  std::iota(parent.begin(), parent.end(), 0);
  // Iterative, with path halving: a graph of many heads may chain the groups deeper than the stack.
  auto root = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (int i = 0; i < n; ++i)
    for (int t : heads[i].tails) parent[root(i)] = root(n + tail_index.at(t));
  std::map<int, std::vector<double>> charges;  // per group
  std::map<int, double> largest_per_tail;      // per group, the sum over its tails
  std::map<int, int> group_tails;
  std::map<int, double> head_charge;
  for (int i = 0; i < n; ++i) {
    charges[root(i)].push_back(heads[i].charge);
    head_charge[heads[i].op] = heads[i].charge;
  }
  for (size_t j = 0; j < tails.size(); ++j) {
    double largest = 0;
    for (int h : tails[j].heads) largest = std::max(largest, head_charge[h]);
    largest_per_tail[root(n + static_cast<int>(j))] += largest;
    ++group_tails[root(n + static_cast<int>(j))];
  }
  double saved = 0;
  for (auto& [group, c] : charges) {
    const size_t free = std::min(c.size(), static_cast<size_t>(group_tails[group]));
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(free), c.end(), std::greater<>());
    const double largest_charges =
        std::accumulate(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(free), 0.0);
    saved += std::min(largest_charges, largest_per_tail[group]);
  }
  return saved;
}

// The Pointwise op where a head's output first merges with another computed tensor, following single
// consumers through Pointwise ops of one output: then every path from the head to a MatMul passes it. -1
// when the path forks, meets a MatMul first or never merges.
int join_of(const Problem& p, const Graph& g, int head, LinkWalker& walk) {
  int t = p.outputs[head][0];
  while (!walk.out_of_budget()) {
    walk.visit();
    if (g.consumers[t].size() != 1) return -1;
    const int c = g.consumers[t][0].op;
    if (p.is_matmul(c) || p.outputs[c].size() != 1) return -1;
    const auto made = std::count_if(p.inputs[c].begin(), p.inputs[c].end(),
                                    [&](int in) { return g.producer[in] >= 0; });
    if (made >= 2) return c;
    t = p.outputs[c][0];
  }
  return -1;
}

// Theorem 16: groups the heads by their join; a join of two or more charges all their discounts but the
// largest, and its heads leave the list for Theorem 14.
void charge_joins(const Problem& p, const Graph& g, LinkWalker& walk, std::vector<TailRunBound::Head>& heads,
                  TailRunBound& out) {
  std::map<int, std::vector<size_t>> by_join;
  for (size_t i = 0; i < heads.size(); ++i)
    if (const int j = join_of(p, g, heads[i].op, walk); j >= 0) by_join[j].push_back(i);
  std::vector<bool> joined(heads.size(), false);
  for (const auto& [op, members] : by_join) {
    if (members.size() < 2) continue;
    TailRunBound::Join join;
    join.op = op;
    double largest = 0;
    for (size_t i : members) {
      join.heads.push_back(heads[i].op);
      join.charge += heads[i].discount;
      largest = std::max(largest, heads[i].discount);
      joined[i] = true;
    }
    join.charge -= largest;
    out.join_charges += join.charge;
    out.joins.push_back(std::move(join));
  }
  std::vector<TailRunBound::Head> rest;
  for (size_t i = 0; i < heads.size(); ++i)
    if (!joined[i]) rest.push_back(std::move(heads[i]));
  heads = std::move(rest);
}

// Theorem 14's charges on `heads` (copied: the caller keeps its list), added to out.bound with their tails
// and first runs. False when the work limit stopped it.
bool charge_tails(const Problem& p, const Graph& g, LinkWalker& walk, const std::vector<double>& floors,
                  std::vector<TailRunBound::Head> heads, TailRunBound& out) {
  std::map<int, int> tail_index;
  for (const TailRunBound::Head& h : heads)
    for (int t : h.tails)
      if (tail_index.emplace(t, static_cast<int>(out.tails.size())).second) {
        out.tails.emplace_back();
        out.tails.back().op = t;
      }
  for (const TailRunBound::Head& h : heads)
    for (int t : h.tails) out.tails[tail_index[t]].heads.push_back(h.op);
  PassedOps passed(p, g, walk);
  for (TailRunBound::Tail& t : out.tails) {
    t.passed = passed.passed(t.op, t.heads);
    t.rerun = floors[t.op];
    for (int o : t.passed) t.rerun += floors[o];
  }
  if (walk.out_of_budget()) return false;
  for (TailRunBound::Head& h : heads) {
    h.rerun = kNever;
    for (int t : h.tails) h.rerun = std::min(h.rerun, out.tails[tail_index[t]].rerun);
    h.charge = std::min(h.discount, h.rerun);
    out.bound += h.charge;
  }
  out.first_runs = first_runs(heads, out.tails, tail_index);
  out.bound -= out.first_runs;
  out.heads = std::move(heads);
  return true;
}

// What Theorems 18 and 19 ask of a Pointwise op's links: the depths of the heads above it, and whether a
// subgraph of three or more MatMuls (nk = 1, w = k = kappa for all, M13) may price it below its padded price.
class ChainRuns {
 public:
  ChainRuns(const Problem& p, const Graph& g, LinkWalker& walk, std::map<int64_t, std::vector<double>>& fewest)
      : p_(p), g_(g), walk_(walk), fewest_(fewest) {}

  // The depths of the MatMuls above `op` through Pointwise ops only: the heads a link through it starts from.
  // Made once for every op, in topological order (a walk per op would be quadratic on long Pointwise chains).
  const std::set<int64_t>& head_depths(int op) {
    if (above_.empty()) {
      above_.resize(p_.num_ops());
      for (int x : g_.topological_order)
        for (int in : p_.inputs[x]) {
          walk_.visit();
          const int q = g_.producer[in];
          if (q < 0) continue;
          if (p_.is_matmul(q))
            above_[x].insert(g_.reduction_depth[q]);
          else
            above_[x].insert(above_[q].begin(), above_[q].end());
        }
    }
    return above_[op];
  }

  // Whether `op`, in-chain beside two tails, may pay less than `padded`: all MatMuls then reduce one depth
  // kappa <= n_w that a head above it and one of `tails` share, and it runs once per tile on a kappa-wide
  // strip, at least base * kappa/n_k per tile (M23), over at least Theorem 14's fewest tiles.
  bool shares_cheaply(int op, const std::vector<int>& tails, const std::set<int64_t>& heads, double padded) {
    return std::any_of(tails.begin(), tails.end(), [&](int b) {
      const int64_t kappa = g_.reduction_depth[b];
      if (kappa > p_.native_w || heads.count(kappa) == 0) return false;
      auto it = fewest_.find(kappa);
      if (it == fewest_.end()) it = fewest_.emplace(kappa, fewest_tiles_downstream(p_, g_, kappa, walk_)).first;
      const double per_tile = p_.base_costs[op] * static_cast<double>(kappa) / static_cast<double>(p_.native_w);
      return per_tile * it->second[op] < padded * (1 - 1e-12);
    });
  }

 private:
  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  std::map<int64_t, std::vector<double>>& fewest_;
  std::vector<std::set<int64_t>> above_;
};

// Theorem 18: for each Pointwise op `u` whose readers are Pointwise ops reading nothing else made, the readers
// discounted only in-chain, and apart: a run holds `u` for each of them in-chain, and never serves two of
// them (two tails beside a head, all of one depth: ChainRuns::shares_cheaply), as their tails are theirs
// alone. So `u` runs once per such reader served, or the reader pays its padded price. False when the work
// limit stopped it.
bool charge_shared_paths(const Problem& p, const Graph& g, LinkWalker& walk, const std::vector<double>& floors,
                         MatmulCompute model, ChainRuns& chains, TailRunBound& out) {
  EpochMarks seen(p.num_ops());
  std::vector<TailRunBound::SharedPath> found;
  std::vector<bool> served(p.num_ops(), false);  // a reader counted in some group
  for (int u = 0; u < p.num_ops() && !walk.out_of_budget(); ++u) {
    if (p.is_matmul(u)) continue;
    std::vector<int> readers;
    seen.next();
    for (int t : p.outputs[u])
      for (const Consumer& c : g.consumers[t]) {
        walk.visit();
        if (p.is_matmul(c.op) || !seen.add(c.op)) continue;
        const bool reads_u_alone = std::all_of(p.inputs[c.op].begin(), p.inputs[c.op].end(),
                                               [&](int in) { return g.producer[in] < 0 || g.producer[in] == u; });
        if (reads_u_alone) readers.push_back(c.op);
      }
    if (readers.size() < 2) continue;
    const std::set<int64_t>& heads = chains.head_depths(u);  // a reader's heads are above u
    if (heads.empty()) continue;  // no reader is ever in-chain: the floor prices them padded
    struct Reader {
      int op;
      double discount;
      std::vector<int> tails;
    };
    std::vector<Reader> apart;
    std::map<int, int> tail_uses;
    for (int r : readers) {
      const Discount discount = in_chain_discount(p, g, floors, r, model);
      if (discount.value <= 0) continue;
      std::optional<std::vector<int>> walked = walk.tails(r, kReaderWalk);
      if (!walked) continue;  // not counted: sound, and the work stays linear
      std::vector<int> tails = std::move(*walked);
      if (chains.shares_cheaply(r, tails, heads, discount.padded)) continue;
      for (int b : tails) ++tail_uses[b];
      apart.push_back({r, discount.value, std::move(tails)});
    }
    if (walk.out_of_budget()) return false;
    TailRunBound::SharedPath path;
    path.op = u;
    path.rerun = floors[u];
    double largest = 0;
    for (const Reader& r : apart) {
      if (std::any_of(r.tails.begin(), r.tails.end(), [&](int b) { return tail_uses[b] > 1; })) continue;
      const double term = std::min(r.discount, path.rerun);
      path.readers.push_back(r.op);
      path.charge += term;
      largest = std::max(largest, term);
    }
    path.charge -= largest;  // the first reader served takes the run the floor counts
    if (path.readers.size() < 2 || path.charge <= 0) continue;
    for (int r : path.readers) served[r] = true;
    found.push_back(std::move(path));
  }
  if (walk.out_of_budget()) return false;
  // An op both served and serving would be charged twice for one run: keep it as a reader only.
  for (TailRunBound::SharedPath& path : found) {
    if (served[path.op]) continue;
    out.shared_path_charges += path.charge;
    out.shared_paths.push_back(std::move(path));
  }
  return true;
}

// Theorem 19: a Pointwise op read by MatMuls only. In-chain, its output feeds a MatMul of that subgraph, so
// it is neither kept (M9) nor stored (ephemeral): each reader's first run makes it again, in-chain and
// apart (ChainRuns::shares_cheaply), unless some run makes it padded for all. So it pays the lesser of its
// discount and one more floor per reader beyond the first. Ops Theorem 18 charges are left out. False when
// the work limit stopped it.
bool charge_remade_ops(const Problem& p, const Graph& g, LinkWalker& walk, const std::vector<double>& floors,
                       MatmulCompute model, ChainRuns& chains, TailRunBound& out) {
  const std::vector<bool> charged = charged_ops(p, out);
  for (int o = 0; o < p.num_ops() && !walk.out_of_budget(); ++o) {
    if (p.is_matmul(o) || charged[o]) continue;
    std::vector<int> readers;
    bool only_matmuls = true;
    for (int t : p.outputs[o])
      for (const Consumer& c : g.consumers[t]) {
        walk.visit();
        only_matmuls &= p.is_matmul(c.op);
        readers.push_back(c.op);
      }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    if (!only_matmuls || readers.size() < 2) continue;
    const Discount discount = in_chain_discount(p, g, floors, o, model);
    if (discount.value <= 0) continue;
    if (chains.shares_cheaply(o, readers, chains.head_depths(o), discount.padded)) continue;
    TailRunBound::RemadeOp remade;
    remade.op = o;
    remade.readers = std::move(readers);
    remade.charge = std::min(discount.value, floors[o] * static_cast<double>(remade.readers.size() - 1));
    out.remade_charges += remade.charge;
    out.remade_ops.push_back(std::move(remade));
  }
  return !walk.out_of_budget();
}

}  // namespace

TailRunBound tail_run_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                            const std::vector<double>& floors, const std::function<bool()>& expired,
                            int64_t max_visits) {
  TailRunBound out;
  out.compute_floor = std::accumulate(floors.begin(), floors.end(), 0.0);
  out.bound = out.compute_floor;
  if (options.allow_supernative_k) {
    out.status = "--allow-supernative-k is not covered by the brute-force campaigns that test this bound";
    return out;
  }
  LinkWalker walk(p, g, max_visits, expired);
  const std::string stopped =
      "stopped at the deadline or its work limit (" + std::to_string(max_visits) + " ops visited); no claim";
  // Theorems 18-20 charge runs of Pointwise ops (disjoint ones), Theorem 16 runs of heads: they add.
  // Theorem 14's count runs of Pointwise ops on paths to tails too, so that variant stands apart. They walk
  // with a budget of their own: past it they claim nothing, and Theorems 14 and 16 still stand.
  TailRunBound paths = out;
  {
    LinkWalker path_walk(p, g, max_visits, expired);
    std::map<int64_t, std::vector<double>> path_fewest;  // filled only by complete walks, or dropped here
    ChainRuns chains(p, g, path_walk, path_fewest);
    if (!charge_shared_paths(p, g, path_walk, floors, options.matmul_compute, chains, paths) ||
        !charge_remade_ops(p, g, path_walk, floors, options.matmul_compute, chains, paths) ||
        !charge_waiting_readers(p, g, path_walk, floors, options.matmul_compute, paths))
      paths = out;
  }
  std::map<int64_t, std::vector<double>> fewest;  // per reduction depth no wider than the native tile
  const double path_charges = paths.shared_path_charges + paths.remade_charges + paths.waiting_charges;
  // The compute floor, the joins of `from` (Theorem 16, when it has any) and Theorems 18-20's charges.
  auto with_paths = [&](const TailRunBound& from) {
    TailRunBound variant = paths;
    variant.joins = from.joins;
    variant.join_charges = from.join_charges;
    variant.bound = variant.compute_floor + variant.join_charges + path_charges;
    return variant;
  };
  // Theorems 14 and 16 past the work limit claim nothing; Theorems 18-20, walked apart, still stand alone.
  auto stop = [&] {
    if (path_charges <= 0) {
      out.status = stopped;
      return out;
    }
    TailRunBound alone_paths = with_paths(paths);
    alone_paths.applies = true;
    alone_paths.status = "Theorems 14 and 16 " + stopped;
    return alone_paths;
  };
  std::vector<TailRunBound::Head> heads;
  for (int o = 0; o < p.num_ops(); ++o) {
    if (!p.is_matmul(o)) continue;
    const double padded = padded_compute_floor(p, g, o, options.matmul_compute);
    if (padded - floors[o] <= 1e-9 * padded) continue;  // no streamed price below the padded one
    TailRunBound::Head h;
    h.op = o;
    h.shared_price = kNever;
    const int64_t depth = g.reduction_depth[o];
    if (depth <= p.native_w) {  // w = k = K <= n_w (M6, M13)
      auto it = fewest.find(depth);
      if (it == fewest.end()) it = fewest.emplace(depth, fewest_tiles_downstream(p, g, depth, walk)).first;
      // Once per tile, streamed over the tail's K (M17: a producer's consumer reduces [0, K) at nk = 1),
      // on whichever side it feeds.
      const double per_tile = std::min(head_compute_per_tail_tile(p, g, o, 0, options.matmul_compute),
                                       head_compute_per_tail_tile(p, g, o, 1, options.matmul_compute));
      if (std::isfinite(it->second[o])) h.shared_price = per_tile * it->second[o];
    }
    h.discount = std::min(padded, h.shared_price) - floors[o];
    if (h.discount <= 1e-9 * padded) continue;  // a subgraph of three or more MatMuls streams it as cheaply
    h.tails = walk.tails(o);
    if (walk.out_of_budget()) return stop();
    if (!h.tails.empty()) heads.push_back(std::move(h));
  }
  if (heads.empty()) {
    if (path_charges > 0) {
      out = with_paths(out);
      out.applies = true;
      return out;
    }
    out.status =
        "every streamed price is met by a subgraph of three or more MatMuls, or none is below the "
        "padded one, and no op's readers need runs of their own";
    return out;
  }
  // Theorem 14 on every head, and Theorem 16 on the joins with Theorem 14 on the other heads: both sound, the
  // larger stands (where heads of two joins share a tail, Theorem 14 alone may charge more).
  TailRunBound alone = out, joined = out;
  if (!charge_tails(p, g, walk, floors, heads, alone)) return stop();
  charge_joins(p, g, walk, heads, joined);
  if (walk.out_of_budget()) return stop();
  if (joined.joins.empty()) {  // no head left Theorem 14's list: its charges stand as computed
    out = std::move(alone);
  } else {
    joined.bound += joined.join_charges;
    if (!charge_tails(p, g, walk, floors, heads, joined)) return stop();
    TailRunBound joined_paths = with_paths(joined);
    out = joined.bound >= alone.bound ? std::move(joined) : std::move(alone);
    if (joined_paths.bound > out.bound) out = std::move(joined_paths);
  }
  if (path_charges > 0 && out.compute_floor + path_charges > out.bound) {
    out = with_paths(paths);
  }
  out.applies = out.bound > out.compute_floor * (1 + 1e-12);
  if (!out.applies) out.status = "each tail's first run serves every head that needs one, and no heads join";
  return out;
}

}  // namespace mlsys
