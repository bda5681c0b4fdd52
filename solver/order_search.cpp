// The dynamic program over one topological order: a state is (ops done, tensors the last segment retains);
// a transition appends one segment, priced by the oracle.
#include <algorithm>
#include <map>

#include "solver/search_internal.hpp"

namespace mlsys::search {
namespace {

class Strategy {
 public:
  // `base` is the order to perturb when `kind` is MovedIncumbent (local search).
  // `recompute`: the tensors whose later readers run their producer again (see with_recomputation).
  Strategy(Incumbent& inc, OracleCache& cache, OrderKind kind, int max_length, uint64_t seed,
           double tolerance, std::vector<int> base = {}, std::vector<int> recompute = {})
      : inc_(inc),
        oracle_(inc.problem, inc.graph, inc.options.model, &inc.evaluations, &cache),
        kind_(kind),
        max_length_(max_length),
        rng_(seed),
        tolerance_(tolerance),
        base_(std::move(base)),
        recompute_(std::move(recompute)) {
    const int ops = inc.problem.num_ops();
    oracle_.set_breadth(ops <= 32 ? 1 : 0);
    oracle_.set_expired([&inc] { return inc.expired(); });
  }

  // Dynamic programming over the order. A state is (ops done, tensors the last segment retains); a transition
  // appends one segment, priced by the oracle given what it receives retained and what it retains.
  void run() {
    const Problem& p = inc_.problem;
    const std::vector<int> op_order = kind_ == OrderKind::MovedIncumbent
                                          ? moved(base_, p, inc_.graph, rng_)
                                          : topological(p, inc_.graph, kind_, rng_);
    order_ = with_recomputation(op_order, recompute_, p, inc_.graph);
    const int n = static_cast<int>(order_.size());
    // Who reads what each item produces: a reader is served by the nearest instance of the producer before
    // it.
    readers_.assign(n, {});
    {
      std::vector<int> latest(p.num_ops(), -1);
      for (int q = 0; q < n; ++q) {
        for (int t : distinct_inputs(p, order_[q]))
          if (const int producer = inc_.graph.producer[t]; producer >= 0 && latest[producer] >= 0)
            readers_[latest[producer]].push_back({t, q});
        latest[order_[q]] = q;
      }
    }
    // No schedule pays less than each op's compute at native padding: what the ops from position i on add.
    std::vector<double> suffix_floor(n + 1, 0);
    for (int i = n - 1; i >= 0; --i)
      suffix_floor[i] =
          suffix_floor[i + 1] + compute_floor(p, inc_.graph, order_[i], inc_.options.model.matmul_compute);
    const std::string name =
        std::string("dp(") + order_name(kind_) + ", len " + std::to_string(max_length_) +
        (recompute_.empty() ? "" : ", recomputing " + std::to_string(recompute_.size())) + ")";
    struct State {
      std::vector<int> retain;  // what the segment ending here retains (sorted)
      double cost = 0;
      int from_position = -1, from_state = -1;
      SubgraphChoice choice;
    };
    const std::vector<std::vector<int>> long_sources = batch_sources();
    horizon_ = max_length_;
    for (int j = 0; j <= n; ++j)
      for (int i : long_sources[j]) horizon_ = std::max(horizon_, j - i);
    std::vector<std::vector<State>> states(n + 1);
    states[0].push_back({});
    for (int j = 1; j <= n; ++j) {
      std::vector<int> sources;
      for (int i = j - 1; i >= 0 && j - i <= max_length_; --i) sources.push_back(i);
      sources.insert(sources.end(), long_sources[j].begin(), long_sources[j].end());
      for (int i : sources) {
        if (states[i].empty()) continue;
        const std::vector<int> ops(order_.begin() + i, order_.begin() + j);
        const RetentionNeeds needs = retention_needs(i, j);
        if (!needs.feasible) continue;
        // A batch keeps all or none of what it may: hundreds of single choices would each ask the oracle.
        const std::vector<std::vector<int>> retain_options =
            j - i > max_length_ && needs.optional.size() > 1 ? all_or_none(needs) : retention_options(needs);
        for (int s = 0; s < static_cast<int>(states[i].size()); ++s) {
          const std::vector<int> retained_in = states[i][s].retain;
          if (!receives_all(retained_in, i, j)) continue;
          for (const std::vector<int>& retain : retain_options) {
            if (inc_.expired()) return;
            auto it = std::find_if(states[j].begin(), states[j].end(),
                                   [&](const State& st) { return st.retain == retain; });
            // Bound before asking the oracle: the segment's floor cannot beat the state it would replace, and
            // with the floor of the ops after it, the whole schedule cannot beat the incumbent.
            const double floor = states[i][s].cost + oracle_.lower_bound(ops, retained_in, retain);
            if (it != states[j].end() && floor >= it->cost) continue;
            if (floor + suffix_floor[j] >= limit()) continue;
            auto best = oracle_.best(ops, retained_in, retain);
            if (!best) continue;
            const double cost = states[i][s].cost + best->latency;
            if (it == states[j].end()) {
              states[j].push_back({retain, cost, i, s, *best});
            } else if (cost < it->cost) {
              *it = {retain, cost, i, s, *best};
            }
          }
        }
      }
    }
    auto done =
        std::find_if(states[n].begin(), states[n].end(), [](const State& st) { return st.retain.empty(); });
    if (done == states[n].end()) return;
    if (kind_ == OrderKind::MovedIncumbent && done->cost <= limit()) inc_.walk_to(op_order, recompute_);
    if (done->cost >= inc_.bound.load()) return;  // accepted as the local search's next point at most
    std::vector<Segment> segments;
    for (int j = n, s = static_cast<int>(done - states[n].begin()); j > 0;) {
      const State& st = states[j][s];
      segments.push_back(
          {std::vector<int>(order_.begin() + st.from_position, order_.begin() + j), st.retain, st.choice});
      j = st.from_position;
      s = st.from_state;
    }
    std::reverse(segments.begin(), segments.end());
    inc_.offer(segments, op_order, recompute_, name);
  }

 private:
  // Orders that cannot cost less are not finished: the best cost, or for local search the best cost plus
  // the tolerance of threshold accepting.
  double limit() const {
    const double best = inc_.bound.load(std::memory_order_relaxed);
    return kind_ == OrderKind::MovedIncumbent ? best * (1 + tolerance_) : best;
  }

  // Batched-level orders (issue 38, the zoo): besides segments of up to max_length_ items, a segment may
  // span up to kBatchRuns whole runs of one layer's copies, or up to kBatchLevels whole levels (one layer of
  // every row block with its epilogues, or two layers chained), so that a layer's weights are loaded once for
  // all blocks and its intermediates stay in fast memory. Per end position, its starts.
  std::vector<std::vector<int>> batch_sources() const {
    const int n = static_cast<int>(order_.size());
    std::vector<std::vector<int>> sources(n + 1);
    if (kind_ != OrderKind::BatchedLevels) return sources;
    const std::vector<int> copy_class = layer_copy_classes(inc_.problem, inc_.graph);
    const std::vector<int> level = levels(inc_.problem, inc_.graph);
    auto add_spans = [&](auto&& boundary, size_t most) {
      std::vector<int> starts;
      for (int q = 0; q < n; ++q)
        if (q == 0 || boundary(order_[q], order_[q - 1])) starts.push_back(q);
      starts.push_back(n);
      for (size_t r = 0; r + 1 < starts.size(); ++r)
        for (size_t m = 1; m <= most && r + m < starts.size(); ++m) {
          const int begin = starts[r], end = starts[r + m];
          if (end - begin > kMaxBatch) break;
          if (end - begin <= max_length_ ||
              std::find(sources[end].begin(), sources[end].end(), begin) != sources[end].end())
            continue;
          sources[end].push_back(begin);
        }
    };
    add_spans([&](int a, int b) { return copy_class[a] != copy_class[b]; }, kBatchRuns);
    add_spans([&](int a, int b) { return level[a] != level[b]; }, kBatchLevels);
    return sources;
  }
  static std::vector<std::vector<int>> all_or_none(const RetentionNeeds& needs) {
    std::vector<int> all = needs.required;
    all.insert(all.end(), needs.optional.begin(), needs.optional.end());
    std::sort(all.begin(), all.end());
    std::vector<int> none = needs.required;
    std::sort(none.begin(), none.end());
    return {none, all};
  }
  static constexpr size_t kBatchRuns = 3, kBatchLevels = 12;
  static constexpr int kMaxBatch = 4096;

  // Ops at positions [begin, end) of the order as one segment.
  RetentionNeeds retention_needs(int begin, int end) const {
    const Problem& p = inc_.problem;
    RetentionNeeds needs;
    for (int i = begin; i < end; ++i)
      for (int t : p.outputs[order_[i]]) {
        bool internal = false, internal_matmul = false;
        int last_consumer = -1;
        for (const auto& [read, at] : readers_[i]) {
          if (read != t) continue;
          if (at < end) {
            internal = true;
            internal_matmul = internal_matmul || p.is_matmul(order_[at]);
          }
          last_consumer = std::max(last_consumer, at);
        }
        if (last_consumer < end) continue;  // graph output or consumed only here: stored or ephemeral
        needs.add(t, internal, internal_matmul, last_consumer < end + horizon_);
      }
    return needs;
  }

  // Every item still to read a tensor retained into the segment [begin, end) lies before `end`. The tensor
  // comes from the last instance of its producer before `begin`.
  bool receives_all(const std::vector<int>& retained_in, int begin, int end) const {
    for (int t : retained_in) {
      int from = begin - 1;
      while (from >= 0 && order_[from] != inc_.graph.producer[t]) --from;
      if (from < 0) return false;
      for (const auto& [read, at] : readers_[from])
        if (read == t && at >= end) return false;
    }
    return true;
  }

  Incumbent& inc_;
  SubgraphOracle oracle_;
  OrderKind kind_;
  int max_length_;
  int horizon_ = 0;  // the longest segment: a tensor retained into the next must have all its readers there
  std::mt19937_64 rng_;
  double tolerance_;
  std::vector<int> base_;
  std::vector<int> recompute_;
  std::vector<int> order_;  // the items this strategy segments: a topological order plus recomputation copies
  std::vector<std::vector<std::pair<int, int>>> readers_;  // item -> (tensor, reading item) it serves
};

}  // namespace

void run_order_search(Incumbent& inc, OracleCache& cache, OrderKind kind, int max_length, uint64_t seed,
                      double tolerance, std::vector<int> base, std::vector<int> recompute) {
  Strategy(inc, cache, kind, max_length, seed, tolerance, std::move(base), std::move(recompute)).run();
}

}  // namespace mlsys::search
