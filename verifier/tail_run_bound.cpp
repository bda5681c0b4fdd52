// Theorem 14: which heads get their streamed price only beside their tail alone, and what every further such
// head costs that tail (docs/bounds.md#theorem-14).
#include "verifier/tail_run_bound.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "sim/step_model.hpp"
#include "verifier/link_walks.hpp"

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
  std::map<int64_t, std::vector<double>> fewest;  // per reduction depth no wider than the native tile
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
    if (walk.out_of_budget()) {
      out.status = stopped;
      return out;
    }
    if (!h.tails.empty()) heads.push_back(std::move(h));
  }
  if (heads.empty()) {
    out.status =
        "every streamed price is met by a subgraph of three or more MatMuls, or none is below the "
        "padded one";
    return out;
  }
  // Theorem 14 on every head, and Theorem 16 on the joins with Theorem 14 on the other heads: both sound, the
  // larger stands (where heads of two joins share a tail, Theorem 14 alone may charge more).
  TailRunBound alone = out, joined = out;
  if (!charge_tails(p, g, walk, floors, heads, alone)) {
    out.status = stopped;
    return out;
  }
  charge_joins(p, g, walk, heads, joined);
  if (walk.out_of_budget()) {
    out.status = stopped;
    return out;
  }
  if (joined.joins.empty()) {  // no head left Theorem 14's list: its charges stand as computed
    out = std::move(alone);
  } else {
    joined.bound += joined.join_charges;
    if (!charge_tails(p, g, walk, floors, heads, joined)) {
      out.status = stopped;
      return out;
    }
    out = joined.bound >= alone.bound ? std::move(joined) : std::move(alone);
  }
  out.applies = out.bound > out.compute_floor * (1 + 1e-12);
  if (!out.applies) out.status = "each tail's first run serves every head that needs one, and no heads join";
  return out;
}

}  // namespace mlsys
