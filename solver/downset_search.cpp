// The dynamic program over sets of done ops (closed under producers), which finds groupings that no order
// puts side by side; with every grouping and retention subset it is mlsys --exhaustive.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/number_format.hpp"
#include "solver/search_internal.hpp"
#include "verifier/subgraph_floor.hpp"

namespace mlsys::search {
namespace {

// Dynamic programming over sets of finished ops instead of the prefixes of one order. A state is (the ops
// done, always closed under producers; the tensors the last segment retains); a transition appends any
// connected set of at most `max_length` ops whose producers are done or in the set. Every schedule without
// recomputation whose subgraphs have at most `max_length` ops (and retain one of the retention_options) is
// one path, so the result is the best such schedule, given the oracle's best configuration per subgraph.
// Orders reach these schedules only if they happen to put each subgraph's ops side by side: benchmark 8's
// best groups projections of three different heads.
class DownsetSearch {
 public:
  // `exhaustive`: the wide oracle and every retention subset of up to 12 tensors (mlsys --exhaustive).
  DownsetSearch(Incumbent& inc, OracleCache& cache, int max_length, bool exhaustive)
      : inc_(inc),
        p_(inc.problem),
        g_(inc.graph),
        // An exhaustive search's answers (wider oracle) are its own: a private cache spares it the shared
        // cache's lock, which the other threads' jobs hold millions of times per second.
        oracle_(inc.problem, inc.graph, inc.options.model, &inc.evaluations, exhaustive ? nullptr : &cache),
        max_length_(max_length),
        exhaustive_(exhaustive),
        by_floors_(exhaustive && inc.options.prune_by_floors) {
    const int ops = p_.num_ops();
    oracle_.set_breadth(exhaustive ? 2 : ops <= 32 ? 1 : 0);
    oracle_.set_expired([&inc] { return inc.expired(); });
    producers_ = producer_masks(p_, g_);
    neighbours_.assign(ops, 0);
    for (int a = 0; a < ops; ++a) {
      for (int b = 0; b < ops; ++b)
        if (related(p_, g_, a, b)) neighbours_[a] |= bit(b);
      floor_.push_back(compute_floor(p_, g_, a, inc.options.model.matmul_compute));
    }
    rank_.assign(ops, 0);
    for (size_t i = 0; i < g_.topological_order.size(); ++i)
      rank_[g_.topological_order[i]] = static_cast<int>(i);
  }

  // Why the sets of done ops are too many to enumerate, or nullopt if they are not: at most kMaxDownsets
  // (benchmark 8 has 3,391; sixteen independent branches, as in benchmark 13, have more than 65,536). Ops are
  // bits of a 64-bit mask.
  static std::optional<std::string> unaffordable(const Problem& p, const Graph& g, size_t max_downsets) {
    const int n = p.num_ops();
    if (n > 64) return "more than 64 ops";
    const std::vector<uint64_t> producers = producer_masks(p, g);
    std::unordered_set<uint64_t> seen{0};
    std::vector<uint64_t> layer{0};
    while (!layer.empty()) {
      std::vector<uint64_t> next;
      for (uint64_t done : layer) {
        const uint64_t can_follow = ready(producers, done, n);
        for (int o = 0; o < n; ++o)
          if ((can_follow & bit(o)) && seen.insert(done | bit(o)).second) {
            if (seen.size() > max_downsets)
              return "more than " + std::to_string(max_downsets) +
                     " sets of done ops (independent branches multiply them)";
            next.push_back(done | bit(o));
          }
      }
      layer = std::move(next);
    }
    return std::nullopt;
  }
  static constexpr size_t kMaxDownsets = 10000;

  // Returns false if the deadline or a signal cut it short.
  bool run() {
    const int n = p_.num_ops();
    const uint64_t all = n == 64 ? ~0ull : (1ull << n) - 1;
    std::vector<std::map<Key, State>> layers(n + 1);
    layers[0][Key{0, {}}] = State{};
    for (int size = 0; size < n; ++size) {
      // The cover bound may have arrived meanwhile.
      if (inc_.options.prune_by_floors) certificate_ = inc_.current_certificate();
      // Cheapest first, so that later ones may be cut; ties keep the map's order, so runs agree. A state
      // whose cost plus the floor of what remains reaches the incumbent cannot lead below it (the branch and
      // bound's pruning).
      std::vector<std::pair<double, const Key*>> ranked;
      for (const auto& [key, st] : layers[size]) ranked.push_back({st.cost + remaining_floor(key), &key});
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      if (size == 0 && exhaustive_ && inc_.options.on_progress && !ranked.empty())
        inc_.options.on_progress("exhaustive search: no schedule of its space costs less than " +
                                 format_number(ranked[0].first) +
                                 " (the floors of its subgraphs, docs/bounds.md#theorem-7)");
      size_t expanded = 0;
      for (const auto& [f, key] : ranked) {
        if (inc_.expired()) return cut_short(layers, size);
        if (f >= inc_.bound.load(std::memory_order_relaxed)) break;
        expand(*key, layers[size].at(*key), layers);
        ++expanded;
      }
      if (inc_.expired()) return cut_short(layers, size);
      layers[size].clear();  // parents are no longer needed: each state keeps its path
      if (inc_.options.on_progress && exhaustive_)
        inc_.options.on_progress("exhaustive search: expanded " + std::to_string(expanded) + " of " +
                                 std::to_string(ranked.size()) + " states with " + std::to_string(size) +
                                 " of " + std::to_string(n) + " ops done (the others cannot beat " +
                                 format_number(inc_.bound.load()) + ")");
    }
    if (inc_.expired()) return cut_short(layers, n);
    auto done = layers[n].find(Key{all, {}});
    if (exhaustive_)
      inc_.record_space_bound(
          std::min(inc_.bound.load(), done == layers[n].end() ? kNoBound : done->second.cost), true);
    if (done == layers[n].end() || done->second.cost >= inc_.bound.load()) return true;
    std::vector<int> order;
    for (const Segment& seg : done->second.path) order.insert(order.end(), seg.ops.begin(), seg.ops.end());
    inc_.offer(done->second.path, order, {}, "dp(sets of done ops, len " + std::to_string(max_length_) + ")");
    return true;
  }

 private:
  struct Key {
    uint64_t done;
    std::vector<int> retain;
    bool operator<(const Key& o) const { return done != o.done ? done < o.done : retain < o.retain; }
  };
  struct State {
    double cost = 0;
    std::vector<Segment> path;
  };
  static uint64_t bit(int op) { return 1ull << op; }
  // The ops not in `have` whose producers are all in it.
  static uint64_t ready(const std::vector<uint64_t>& producers, uint64_t have, int n) {
    uint64_t mask = 0;
    for (int o = 0; o < n; ++o)
      if (!(have & bit(o)) && (producers[o] & have) == producers[o]) mask |= bit(o);
    return mask;
  }
  // Per op, the ops that produce its inputs.
  static std::vector<uint64_t> producer_masks(const Problem& p, const Graph& g) {
    std::vector<uint64_t> masks(p.num_ops(), 0);
    for (int o = 0; o < p.num_ops(); ++o)
      for (int t : p.inputs[o])
        if (g.producer[t] >= 0) masks[o] |= bit(g.producer[t]);
    return masks;
  }

  static constexpr double kNoBound = std::numeric_limits<double>::infinity();

  // What remaining_floor adds up over the ops not in `done`, whatever is retained: once per segment, not once
  // per retention option.
  struct RemainingSums {
    double compute = 0, priced = 0;
  };
  RemainingSums remaining_sums(uint64_t done) const {
    RemainingSums sums;
    for (int o = 0; o < p_.num_ops(); ++o)
      if (!(done & bit(o))) {
        sums.compute += floor_[o];
        if (certificate_) sums.priced += certificate_->op_prices[o];
      }
    return sums;
  }

  // A floor on what the ops not in `done` cost after a subgraph that retained `retain`: the largest of their
  // compute floors, the cover bound's certificate once it has run, and (pruning by floors) floors_to_end.
  // For the certificate: each later subgraph costs at least its
  // ops' prices plus the credits of what it keeps minus those of what it receives (dual feasibility), and
  // each tensor received is one the subgraph before kept, so the credits telescope to those of `retain`.
  double remaining_floor(uint64_t done, const std::vector<int>& retain, const RemainingSums& sums) {
    double priced = sums.priced;
    if (certificate_)
      for (int t : retain) priced -= certificate_->tensor_credits[t];
    return std::max({sums.compute, priced, by_floors_ ? floors_to_end(done, retain, retain) : 0.0});
  }
  double remaining_floor(const Key& key) {
    return remaining_floor(key.done, key.retain, remaining_sums(key.done));
  }

  // The set's floor under the rule book (docs/bounds.md#theorem-7) when it receives `received` and keeps
  // `kept`: the least over its undominated contexts that receive no more and keep no less (the context the
  // run maps to is one of them or dominated by one). Far cheaper than the oracle's answer, and often above
  // the oracle's own quick floor, it lets the branch and bound skip the oracle. 0 when no context matches.
  double floor_in_context(uint64_t set, const std::vector<int>& ops, const std::vector<int>& received,
                          const std::vector<int>& kept) {
    double least = kNoBound;
    for (const RetentionFloor& r : floors_of(set, ops))
      if (within(r.retained_in, received) && within(kept, r.retained_out))
        least = std::min(least, r.floor.value);
    return least == kNoBound ? 0.0 : least;
  }
  static bool has(const std::vector<int>& tensors, int t) {
    return std::find(tensors.begin(), tensors.end(), t) != tensors.end();
  }
  static bool within(const std::vector<int>& part, const std::vector<int>& whole) {
    return std::all_of(part.begin(), part.end(), [&](int t) { return has(whole, t); });
  }
  // subgraph_floors of a set, computed once per search.
  const std::vector<RetentionFloor>& floors_of(uint64_t set, const std::vector<int>& ops) {
    auto it = set_floors_.find(set);
    if (it == set_floors_.end())
      it = set_floors_
               .emplace(set,
                        subgraph_floors(p_, g_, inc_.options.model, ops, [this] { return inc_.expired(); }))
               .first;
    return it->second;
  }

  // The least sum of rule-book floors over every way to run the ops not in `done` as a sequence of connected
  // sets whose first receives at most `received` retained (docs/solver.md#exact-search): no schedule of the
  // search's space (each op run once) pays less from such a state on. A run's context maps to a listed one
  // that receives no more and keeps no less (subgraph_floors), and receiving more only lowers this least, so
  // the run's path is never below it. `unstored`: what the subgraph before surely kept and so never wrote
  // (retained, not among a context's possible evictions); with no recomputation the next subgraph must
  // receive it and hold every reader left (M9, M15, Theorem 10). For the rest of `received` that demand is
  // not imposed (a relaxation). Infinite when no sequence fits; 0 once the clock has struck.
  double floors_to_end(uint64_t done, std::vector<int> received, std::vector<int> unstored) {
    const int n = p_.num_ops();
    const uint64_t all = n == 64 ? ~0ull : (1ull << n) - 1;
    if (done == all) return 0;
    uint64_t readers_left = 0;  // of what arrives unstored: the next set must hold them all
    for (auto* list : {&received, &unstored}) {
      std::erase_if(*list, [&](int t) {
        return std::none_of(g_.consumers[t].begin(), g_.consumers[t].end(),
                            [&](const Consumer& c) { return !(done & bit(c.op)); });
      });
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    for (int t : unstored)
      for (const Consumer& c : g_.consumers[t])
        if (!(done & bit(c.op))) readers_left |= bit(c.op);
    auto key = std::make_tuple(done, received, unstored);
    if (auto it = floors_to_end_.find(key); it != floors_to_end_.end()) return it->second;
    double least = kNoBound;
    const bool whole = for_each_segment(done, all & ~done, [&](uint64_t set) {
      if (readers_left & ~set) return;
      const std::vector<int> ops = ops_of(set);
      for (const RetentionFloor& r : floors_of(set, ops)) {
        if (r.floor.value >= least || !within(r.retained_in, received)) continue;
        // Each unstored tensor is received: listed so, or at least not surely loaded (an untried input).
        if (std::any_of(unstored.begin(), unstored.end(),
                        [&](int t) { return !has(r.retained_in, t) && has(r.loaded, t); }))
          continue;
        std::vector<int> kept_unstored;
        for (int t : r.retained_out)
          if (!has(r.evicted, t)) kept_unstored.push_back(t);
        least = std::min(least, r.floor.value + floors_to_end(done | set, r.retained_out, kept_unstored));
      }
    });
    if (!whole || inc_.expired()) return 0;
    floors_to_end_.emplace(std::move(key), least);
    return least;
  }

  // The clock cut the search while it expanded the states with `size` ops done: every schedule of its space
  // passes through a state with at least `size` ops done whose parent was expanded (or pruned against the
  // incumbent), so the least of their costs plus remaining floors bounds the space from below.
  bool cut_short(const std::vector<std::map<Key, State>>& layers, int size) {
    if (!exhaustive_) return false;
    double bound = inc_.bound.load();
    for (int s = size; s < static_cast<int>(layers.size()); ++s)
      for (const auto& [key, st] : layers[s]) bound = std::min(bound, st.cost + remaining_floor(key));
    inc_.record_space_bound(bound, false);
    return false;
  }

  void expand(const Key& key, const State& st, std::vector<std::map<Key, State>>& layers) {
    const int n = p_.num_ops();
    // The segment must hold every remaining reader of what it receives retained (M9: one subgraph only).
    uint64_t must = 0;
    for (int t : key.retain)
      for (const Consumer& c : g_.consumers[t])
        if (!(key.done & bit(c.op))) must |= bit(c.op);
    // Ops that can join: not done, with few enough undone ancestors to fit in one segment with them.
    uint64_t pool = 0;
    {
      std::vector<uint64_t> ancestors(n, 0);
      for (int o : g_.topological_order) {
        if (key.done & bit(o)) continue;
        for (int q = 0; q < n; ++q)
          if ((producers_[o] & bit(q)) && !(key.done & bit(q))) ancestors[o] |= ancestors[q] | bit(q);
        if (__builtin_popcountll(ancestors[o]) < max_length_) pool |= bit(o);
      }
    }
    if ((must & pool) != must) return;
    // Segments are the sets S of at most L ops with done + S closed under producers, grown by adding one
    // ready op at a time (any such S can be built in its own topological order); connectivity (M7) is
    // checked on each. There are no more of them than sets of done ops (kMaxDownsets). Growing connected
    // sets instead also walked the far more numerous unclosed ones: on benchmark 15 at L = 61 the first state
    // alone took 44 s and gigabytes.
    for_each_segment(key.done, pool, [&](uint64_t set) { try_segment(key, st, set, must, layers); });
  }

  // Calls `visit` with each connected set of at most L ops from `pool` that, added to `done`, keeps it closed
  // under producers. False if the clock cut it short.
  template <class Visit>
  bool for_each_segment(uint64_t done, uint64_t pool, Visit&& visit) {
    std::unordered_set<uint64_t> seen;
    std::vector<uint64_t> stack{0};
    while (!stack.empty()) {
      if (inc_.expired()) return false;
      const uint64_t set = stack.back();
      stack.pop_back();
      if (set != 0 && connected(set)) visit(set);
      if (__builtin_popcountll(set) >= max_length_) continue;
      const uint64_t next = ready(producers_, done | set, p_.num_ops()) & pool;
      for (int o = 0; o < p_.num_ops(); ++o)
        if ((next & bit(o)) && seen.insert(set | bit(o)).second) stack.push_back(set | bit(o));
    }
    return true;
  }

  // The ops of `set`, in topological order.
  std::vector<int> ops_of(uint64_t set) const {
    std::vector<int> ops;
    for (int o = 0; o < p_.num_ops(); ++o)
      if (set & bit(o)) ops.push_back(o);
    std::sort(ops.begin(), ops.end(), [&](int a, int b) { return rank_[a] < rank_[b]; });
    return ops;
  }

  // Whether the ops of `set` are linked through shared tensors (M7).
  bool connected(uint64_t set) const {
    uint64_t reached = set & (~set + 1);  // its lowest op
    for (uint64_t last = 0; reached != last;) {
      last = reached;
      for (int o = 0; o < p_.num_ops(); ++o)
        if (last & bit(o)) reached |= neighbours_[o] & set;
    }
    return reached == set;
  }

  void try_segment(const Key& key, const State& st, uint64_t set, uint64_t must,
                   std::vector<std::map<Key, State>>& layers) {
    if ((set & must) != must) return;
    const uint64_t done = key.done | set;
    const std::vector<int> ops = ops_of(set);  // expand() grows only sets whose producers are done or in them
    // Retention (as RetentionNeeds for orders): what a later op reads must be retained if it is consumed
    // here, and may be retained if it is not.
    RetentionNeeds needs;
    for (int o : ops)
      for (int t : p_.outputs[o]) {
        bool internal = false, internal_matmul = false;
        int later = 0;
        for (const Consumer& c : g_.consumers[t]) {
          if (set & bit(c.op)) {
            internal = true;
            internal_matmul = internal_matmul || p_.is_matmul(c.op);
          } else if (!(done & bit(c.op))) {
            ++later;
          }
        }
        if (later == 0) continue;
        needs.add(t, internal, internal_matmul, later <= max_length_);
      }
    if (!needs.feasible) return;
    const RemainingSums rest = remaining_sums(done);
    for (const std::vector<int>& retain : retention_options(needs, exhaustive_ ? 12 : 4)) {
      if (inc_.expired()) return;  // up to 4,096 options in an exhaustive search: a signal must not wait
      const double floor =
          st.cost + std::max(oracle_.lower_bound(ops, key.retain, retain),
                             by_floors_ ? floor_in_context(set, ops, key.retain, retain) : 0.0);
      if (floor + remaining_floor(done, retain, rest) >= inc_.bound.load(std::memory_order_relaxed)) continue;
      Key next{done, retain};
      std::map<Key, State>& layer = layers[__builtin_popcountll(done)];
      auto it = layer.find(next);
      if (it != layer.end() && floor >= it->second.cost) continue;
      auto best = oracle_.best(ops, key.retain, retain);
      if (!best) continue;
      const double cost = st.cost + best->latency;
      if (it != layer.end() && cost >= it->second.cost) continue;
      State s{cost, st.path};
      s.path.push_back({ops, retain, *best});
      layer[next] = std::move(s);
    }
  }

  Incumbent& inc_;
  const Problem& p_;
  const Graph& g_;
  SubgraphOracle oracle_;
  int max_length_;
  bool exhaustive_;
  bool by_floors_;  // prune by the rule-book floors: worth their cost only where every grouping is walked
  std::vector<uint64_t> producers_, neighbours_;
  std::vector<double> floor_;
  std::vector<int> rank_;
  std::shared_ptr<const CoverCertificate> certificate_;                   // refreshed once per layer
  std::unordered_map<uint64_t, std::vector<RetentionFloor>> set_floors_;  // floors_of's
  std::map<std::tuple<uint64_t, std::vector<int>, std::vector<int>>, double> floors_to_end_;
};

}  // namespace

bool run_downset_search(Incumbent& inc, OracleCache& cache, int max_length, bool exhaustive) {
  return DownsetSearch(inc, cache, max_length, exhaustive).run();
}

std::optional<std::string> downsets_unaffordable(const Problem& p, const Graph& g, size_t max_downsets) {
  return DownsetSearch::unaffordable(p, g, max_downsets ? max_downsets : DownsetSearch::kMaxDownsets);
}

}  // namespace mlsys::search
