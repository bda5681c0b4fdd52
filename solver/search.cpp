#include "solver/search.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <random>
#include <thread>
#include <unordered_set>

#include "solver/oracle.hpp"
#include "verifier/verify.hpp"

namespace mlsys {
namespace {

using Clock = std::chrono::steady_clock;

struct Segment {
  std::vector<int> ops;
  std::vector<int> retain;
  SubgraphChoice choice;
};

// Shared state of one solve: the best schedule so far and the clock.
struct Incumbent {
  const Problem& problem;
  const Graph& graph;
  const SolveOptions& options;
  const std::atomic<bool>& stop;
  const ImprovementCallback& on_improvement;
  Clock::time_point start, deadline;
  std::mutex mutex;
  std::optional<Schedule> best;
  std::vector<int> best_order;  // the op order whose segmentation gave `best` (before recomputation copies)
  std::vector<int> best_recompute;  // the tensors its later readers recomputed
  int best_longest_segment = 1;     // local search segments its moved orders at least this long
  double best_cost = 0;
  SolveStats stats;
  std::atomic<int64_t> evaluations{0};
  std::atomic<int64_t> orders{0};
  std::atomic<double> bound{std::numeric_limits<double>::infinity()};  // best_cost, readable without the lock
  // The local search's current point: the best order, or one a little worse that it moved to (threshold
  // accepting, so that it can cross from one local optimum to another through slightly worse orders).
  std::vector<int> walk_order{}, walk_recompute{};

  // Moves the local search to an order that cost no more than the best times (1 + tolerance).
  void walk_to(const std::vector<int>& order, const std::vector<int>& recompute) {
    std::lock_guard lock(mutex);
    walk_order = order;
    walk_recompute = recompute;
  }
  // How much worse than the best an accepted order may be: a little at first, nothing at the end. The end is
  // the order budget when there is one (then job `job` sees the same tolerance on any machine), else the
  // deadline.
  double tolerance(size_t job) const {
    if (options.max_orders > 0)
      return kWalkTolerance *
             std::max(0.0, 1.0 - static_cast<double>(job) / static_cast<double>(options.max_orders));
    const double total = std::chrono::duration<double>(deadline - start).count();
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    return total > 0 ? kWalkTolerance * std::max(0.0, left / total) : 0;
  }
  static constexpr double kWalkTolerance = 0.02;

  // Set when an exhaustive search has finished: the helper jobs beside it stop too.
  std::atomic<bool> exhaustive_done{false};
  bool expired() const { return stop.load() || exhaustive_done.load() || Clock::now() >= deadline; }

  // Verifies the whole schedule with the same library as `verify` and publishes it if it is better.
  void offer(const std::vector<Segment>& segments, const std::vector<int>& order,
             const std::vector<int>& recompute, const std::string& strategy) {
    Schedule s;
    for (const Segment& seg : segments)
      s.subgraphs.push_back({seg.ops, seg.choice.granularity, seg.retain, seg.choice.traversal_order()});
    VerifyOptions vo;
    vo.model = options.model;
    const ScheduleReport report = verify_schedule(problem, graph, s, vo);
    if (!report.valid) return;  // the oracle's per-subgraph view missed a schedule-level rule: not published
    std::vector<double> latencies;
    for (const auto& sg : report.subgraphs) latencies.push_back(sg.latency);
    s.reported_latencies = latencies;
    std::lock_guard lock(mutex);
    if (best && report.total_latency >= best_cost) return;
    best = s;
    best_order = walk_order = order;
    best_recompute = walk_recompute = recompute;
    best_cost = report.total_latency;
    best_longest_segment = 1;
    for (const Segment& seg : segments)
      best_longest_segment = std::max(best_longest_segment, static_cast<int>(seg.ops.size()));
    bound.store(best_cost);
    stats.best_cost = best_cost;
    stats.best_strategy = strategy;
    stats.time_to_best = std::chrono::duration<double>(Clock::now() - start).count();
    if (stats.improvements == 0) stats.time_to_first = stats.time_to_best;
    ++stats.improvements;
    if (on_improvement) on_improvement(s, best_cost, strategy, evaluations.load());
  }
};

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
  int largest = 1;
  for (int a = 0; a < p.num_ops(); ++a) {
    if (!p.is_matmul(a) || !reads_graph_inputs_only(p, g, a)) continue;
    for (size_t position = 0; position < 2; ++position) {
      int count = 0;
      for (int b = 0; b < p.num_ops(); ++b)
        count += reads_graph_inputs_only(p, g, b) && same_operand(p, g, a, b, position);
      largest = std::max(largest, count);
    }
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

// Topological orders: each strategy segments one. Different orders put different ops side by side.
enum class OrderKind {
  ByIndex,
  DepthFirst,
  ByLevel,
  RetentionFriendly,
  Random,
  RandomRetentionFriendly,
  SiblingsFirst,
  RandomSiblingsFirst,
  MovedIncumbent
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
  if (kind == OrderKind::ByLevel) {
    // Wavefronts: parallel branches advance together, so a segment can hold one layer of every branch.
    const std::vector<int> level = levels(p, g);
    return topological_order(p, g, [&](const std::vector<int>& ready) -> size_t {
      return std::min_element(ready.begin(), ready.end(),
                              [&](int a, int b) { return std::pair(level[a], a) < std::pair(level[b], b); }) -
             ready.begin();
    });
  }
  if (kind == OrderKind::RetentionFriendly)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, nullptr));
  if (kind == OrderKind::RandomRetentionFriendly)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, &rng));
  if (kind == OrderKind::SiblingsFirst)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, nullptr, true));
  if (kind == OrderKind::RandomSiblingsFirst)
    return topological_order(p, g, RetentionFriendlyPicker(p, g, &rng, true));
  return topological_order(p, g, [&](const std::vector<int>& ready) -> size_t {
    if (kind == OrderKind::ByIndex) return std::min_element(ready.begin(), ready.end()) - ready.begin();
    if (kind == OrderKind::DepthFirst) return ready.size() - 1;
    return std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
  });
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

// What a segment (a run of consecutive ops of the order) demands of retention. A tensor it consumes internally
// and that a later op also reads must be retained into the next segment (M8: otherwise it is ephemeral and
// unavailable later, M15). A tensor it only produces may be retained instead of stored (M9), which pays when the
// next segment reads it. Either way the next segment must hold every remaining consumer (M9: one subgraph only).
struct RetentionNeeds {
  bool feasible = true;
  std::vector<int> required;  // consumed inside and later
  std::vector<int> optional;  // produced, read only later, by ops close enough to fit in the next segment

  // Classifies an output `t` of the segment that a later op reads. `next_can_hold`: its later readers can
  // all be in the next segment.
  void add(int t, bool read_inside, bool matmul_reads_inside, bool next_can_hold) {
    if (read_inside) {
      // Must be retained, which M9 forbids when a MatMul reads it here.
      if (matmul_reads_inside || !next_can_hold) feasible = false;
      required.push_back(t);
    } else if (next_can_hold) {
      optional.push_back(t);
    }
  }
};

// Which optional tensors to retain besides the required ones: every subset when there are few (benchmark 4
// needs two of three retained: all three overflow the next segment, one alone costs a store and a load), else
// none, all, each alone and all but each (the exhaustive search takes every subset of up to 12). Each option
// is sorted.
std::vector<std::vector<int>> retention_options(const RetentionNeeds& needs, int every_subset_up_to = 4) {
  const std::vector<int>& opt = needs.optional;
  const int n = static_cast<int>(opt.size());
  std::vector<std::vector<int>> options;
  auto add = [&](auto&& keep) {
    std::vector<int> r = needs.required;
    for (int i = 0; i < n; ++i)
      if (keep(i)) r.push_back(opt[i]);
    std::sort(r.begin(), r.end());
    if (std::find(options.begin(), options.end(), r) == options.end()) options.push_back(std::move(r));
  };
  if (n <= every_subset_up_to) {
    for (unsigned mask = 0; mask < (1u << n); ++mask) add([mask](int i) { return (mask >> i) & 1u; });
    return options;
  }
  add([](int) { return false; });
  add([](int) { return true; });
  for (int j = 0; j < n; ++j) {
    add([j](int i) { return i == j; });
    add([j](int i) { return i != j; });
  }
  return options;
}

// Recomputation (M5: an op may run in several subgraphs). A tensor that a Pointwise op produces and several
// ops read need not be kept for all of them: the first reader can receive it retained (or fused), and the
// later ones run its producer again in their own subgraph (tests/solver_test.cpp has a graph where this wins;
// on the benchmarks, only 15 gains, docs/solver.md).
std::vector<int> recomputable_tensors(const Problem& p, const Graph& g) {
  std::vector<int> tensors;
  for (int t = 0; t < p.num_tensors(); ++t) {
    const int producer = g.producer[t];
    if (producer < 0 || p.is_matmul(producer)) continue;
    std::vector<int> readers;
    for (const Consumer& c : g.consumers[t]) readers.push_back(c.op);
    std::sort(readers.begin(), readers.end());
    if (std::unique(readers.begin(), readers.end()) - readers.begin() >= 2) tensors.push_back(t);
  }
  return tensors;
}

// Those whose producer reads only graph inputs: recomputing them loads what loading them would, no more.
std::vector<int> recomputable_from_graph_inputs(const Problem& p, const Graph& g) {
  std::vector<int> tensors;
  for (int t : recomputable_tensors(p, g)) {
    const std::vector<int>& in = p.inputs[g.producer[t]];
    if (std::all_of(in.begin(), in.end(), [&](int x) { return g.producer[x] < 0; })) tensors.push_back(t);
  }
  return tensors;
}

// The tensors an op reads, each once (`T1 = T0 @ T0` reads T0 once).
std::vector<int> distinct_inputs(const Problem& p, int op) {
  std::vector<int> reads = p.inputs[op];
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  return reads;
}

// The order with a copy of each recomputed tensor's producer placed just before the tensor's second reader;
// that copy serves every later reader (a reader is served by the nearest instance of the producer before it).
std::vector<int> with_recomputation(const std::vector<int>& order, const std::vector<int>& recompute,
                                    const Problem& p, const Graph& g) {
  if (recompute.empty()) return order;
  std::vector<int> items;
  std::vector<int> readers_seen(p.num_tensors(), 0);
  for (int op : order) {
    for (int t : distinct_inputs(p, op))
      if (std::find(recompute.begin(), recompute.end(), t) != recompute.end() && ++readers_seen[t] == 2)
        items.push_back(g.producer[t]);
    items.push_back(op);
  }
  return items;
}

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
      suffix_floor[i] = suffix_floor[i + 1] + compute_floor(p, inc_.graph, order_[i], inc_.options.model.matmul_compute);
    const std::string name =
        std::string("dp(") + order_name(kind_) + ", len " + std::to_string(max_length_) +
        (recompute_.empty() ? "" : ", recomputing " + std::to_string(recompute_.size())) + ")";
    struct State {
      std::vector<int> retain;  // what the segment ending here retains (sorted)
      double cost = 0;
      int from_position = -1, from_state = -1;
      SubgraphChoice choice;
    };
    std::vector<std::vector<State>> states(n + 1);
    states[0].push_back({});
    for (int j = 1; j <= n; ++j) {
      for (int i = j - 1; i >= 0 && j - i <= max_length_; --i) {
        if (states[i].empty()) continue;
        const std::vector<int> ops(order_.begin() + i, order_.begin() + j);
        const RetentionNeeds needs = retention_needs(i, j);
        if (!needs.feasible) continue;
        const std::vector<std::vector<int>> retain_options = retention_options(needs);
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
    auto done = std::find_if(states[n].begin(), states[n].end(), [](const State& st) { return st.retain.empty(); });
    if (done == states[n].end()) return;
    if (kind_ == OrderKind::MovedIncumbent && done->cost <= limit()) inc_.walk_to(op_order, recompute_);
    if (done->cost >= inc_.bound.load()) return;  // accepted as the local search's next point at most
    std::vector<Segment> segments;
    for (int j = n, s = static_cast<int>(done - states[n].begin()); j > 0;) {
      const State& st = states[j][s];
      segments.push_back({std::vector<int>(order_.begin() + st.from_position, order_.begin() + j), st.retain,
                          st.choice});
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
        needs.add(t, internal, internal_matmul, last_consumer < end + max_length_);
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
  std::mt19937_64 rng_;
  double tolerance_;
  std::vector<int> base_;
  std::vector<int> recompute_;
  std::vector<int> order_;  // the items this strategy segments: a topological order plus recomputation copies
  std::vector<std::vector<std::pair<int, int>>> readers_;  // item -> (tensor, reading item) it serves
};

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
        exhaustive_(exhaustive) {
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
  static std::optional<std::string> unaffordable(const Problem& p, const Graph& g) {
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
            if (seen.size() > kMaxDownsets)
              return "more than " + std::to_string(kMaxDownsets) +
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
      // Cheapest first, so that later ones may be cut; ties keep the map's order, so runs agree.
      std::vector<std::pair<double, const Key*>> ranked;
      for (const auto& [key, st] : layers[size])
        ranked.push_back({st.cost + remaining_floor(key.done), &key});
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [f, key] : ranked) {
        if (inc_.expired()) return false;
        if (f >= inc_.bound.load(std::memory_order_relaxed)) break;
        expand(*key, layers[size].at(*key), layers);
      }
      if (inc_.expired()) return false;
      layers[size].clear();  // parents are no longer needed: each state keeps its path
      if (inc_.options.on_progress && exhaustive_)
        inc_.options.on_progress("exhaustive search: expanded " + std::to_string(ranked.size()) +
                                 " states with " + std::to_string(size) + " of " + std::to_string(n) +
                                 " ops done");
    }
    if (inc_.expired()) return false;
    auto done = layers[n].find(Key{all, {}});
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

  double remaining_floor(uint64_t done) const {
    double f = 0;
    for (int o = 0; o < p_.num_ops(); ++o)
      if (!(done & bit(o))) f += floor_[o];
    return f;
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
    std::unordered_set<uint64_t> seen;
    std::vector<uint64_t> stack{0};
    while (!stack.empty()) {
      if (inc_.expired()) return;
      const uint64_t set = stack.back();
      stack.pop_back();
      if (set != 0 && connected(set)) try_segment(key, st, set, must, layers);
      if (__builtin_popcountll(set) >= max_length_) continue;
      const uint64_t next = ready(producers_, key.done | set, n) & pool;
      for (int o = 0; o < n; ++o)
        if ((next & bit(o)) && seen.insert(set | bit(o)).second) stack.push_back(set | bit(o));
    }
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
    const int n = p_.num_ops();
    if ((set & must) != must) return;
    const uint64_t done = key.done | set;
    std::vector<int> ops;  // expand() grows only sets whose producers are done or in them
    for (int o = 0; o < n; ++o)
      if (set & bit(o)) ops.push_back(o);
    std::sort(ops.begin(), ops.end(), [&](int a, int b) { return rank_[a] < rank_[b]; });
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
    const double rest = remaining_floor(done);
    for (const std::vector<int>& retain : retention_options(needs, exhaustive_ ? 12 : 4)) {
      if (inc_.expired()) return;  // up to 4,096 options in an exhaustive search: a signal must not wait
      const double floor = st.cost + oracle_.lower_bound(ops, key.retain, retain);
      if (floor + rest >= inc_.bound.load(std::memory_order_relaxed)) continue;
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
  std::vector<uint64_t> producers_, neighbours_;
  std::vector<double> floor_;
  std::vector<int> rank_;
};

}  // namespace

std::optional<std::string> exhaustive_search_impossible(const Problem& problem, const Graph& graph) {
  return DownsetSearch::unaffordable(problem, graph);
}

double default_timeout_seconds(int num_ops) {
  if (num_ops <= 5) return 2;
  if (num_ops <= 20) return 5;
  if (num_ops <= 32) return 15;
  if (num_ops <= 63) return 30;
  if (num_ops <= 103) return 60;
  return 120;
}

std::optional<Schedule> solve(const Problem& problem, const Graph& graph, const SolveOptions& options,
                              const std::atomic<bool>& stop, const ImprovementCallback& on_improvement,
                              SolveStats* stats) {
  Incumbent inc{problem, graph, options, stop, on_improvement, Clock::now(), {}, {}, {}, {}, {}, 0, {}, {}};
  inc.deadline = inc.start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options.timeout_seconds));
  // First a quick answer (every op alone, then short fusions), then longer fusions and other orders.
  std::mutex queue_mutex;
  // Which tensors a job's later readers recompute: none; those computed from graph inputs alone (no more
  // traffic than loading them); a random subset of all that may be; or the incumbent's choice, sometimes with
  // one tensor toggled (local search).
  enum class Recompute { None, FromGraphInputs, RandomSubset, AsIncumbent };
  struct Job {
    OrderKind kind;
    int max_length;
    Recompute recompute = Recompute::None;
    bool downsets = false;  // a DownsetSearch instead of an order
    bool exhaustive = false;  // that DownsetSearch is mlsys --exhaustive's
  };
  const std::optional<std::string> too_many_sets = DownsetSearch::unaffordable(problem, graph);
  const bool downsets = !too_many_sets;
  const std::vector<int> recomputable = recomputable_tensors(problem, graph);
  const std::vector<int> cheap = recomputable_from_graph_inputs(problem, graph);
  if (options.exhaustive && too_many_sets) {
    if (stats)
      stats->infeasible_reason = "the exhaustive search cannot enumerate this graph: " + *too_many_sets;
    return std::nullopt;
  }
  // Siblings (MatMuls sharing an operand) in one subgraph load it once. Groups of up to 10 can form in the
  // segments of the other orders; a larger group (benchmark 13: sixteen x_i @ W0) needs orders that put it
  // side by side and segments as long as it. (Adding such orders for benchmark 8's group of nine cost it 1 %
  // over 8 seeds.)
  const int siblings = largest_sibling_group(problem, graph);
  const bool long_siblings = siblings > 10;
  std::vector<Job> plan;  // in priority order
  if (options.exhaustive) {
    // A first schedule at once (every op alone), then every grouping. Other threads meanwhile run the usual
    // jobs below: their schedules are what a signal leaves if it comes first, and their costs bound the
    // exhaustive DP's pruning.
    plan.push_back({OrderKind::ByIndex, 1});
    plan.push_back({OrderKind::ByIndex, problem.num_ops(), Recompute::None, true, true});
  }
  for (int length : {1, 3, 6, 10, 16}) {
    for (OrderKind kind : {OrderKind::ByIndex, OrderKind::DepthFirst}) plan.push_back({kind, length});
    if (length == 6 || length == 10) plan.push_back({OrderKind::RetentionFriendly, length});
    if (downsets && length == 3) plan.push_back({OrderKind::ByIndex, 3, Recompute::None, true});
  }
  // Long segments: benchmark 15's copy of op 0 belongs inside its 14-op side-read segment.
  if (!cheap.empty())
    for (OrderKind kind : {OrderKind::ByIndex, OrderKind::DepthFirst, OrderKind::RetentionFriendly})
      plan.push_back({kind, 16, Recompute::FromGraphInputs});
  if (long_siblings) plan.push_back({OrderKind::SiblingsFirst, siblings});
  // Wavefronts: benchmark 10's best schedule holds one layer of all six branches per subgraph (12 and 11
  // ops), which other orders line up only by chance (random ones took 2.4-10 s of its 15).
  plan.push_back({OrderKind::ByLevel, 16});
  // Subgraphs of up to 4 ops (5 on graphs of at most 20 ops) from any set of done ops: a graph whose best
  // subgraphs gather ops that orders seldom put side by side needs it. Since the rule book revision of
  // 2026-11-23, benchmark 8's best schedule ends with a 5-op subgraph (the three O = S V with the final
  // Pointwise ops): at L = 5 this job finds it in 0.6 s of one thread. At L = 4 it takes seconds on graphs of
  // 60 ops, so it comes last.
  if (downsets) plan.push_back({OrderKind::ByIndex, problem.num_ops() <= 20 ? 5 : 4, Recompute::None, true});
  // Then, for as long as time allows (or until the schedule meets the lower bound): every other job perturbs
  // the incumbent's order (local search); the others draw new orders, random or retention-friendly with
  // random ties, one in four of the random ones with a random set of recomputed tensors, and with a long
  // sibling group one in eight siblings-first with random ties.
  // Every eighth job's random order is segmented at up to 16 ops on graphs larger than 20 ops: benchmark 10's
  // best schedule has segments of 12 and 11 ops (10,118,758.4 against 10,433,331.2 at L = 10). On smaller
  // graphs the slower DP costs the local search more than it gains (benchmark 8).
  const int long_random = problem.num_ops() > 20 ? 16 : 10;
  auto job_at = [&](size_t index) -> Job {
    if (index < plan.size()) return plan[index];
    const size_t j = index - plan.size();
    if (j % 2 == 1) return {OrderKind::MovedIncumbent, 6, Recompute::AsIncumbent};
    if (j % 8 == 4 && !recomputable.empty()) return {OrderKind::Random, 10, Recompute::RandomSubset};
    if (j % 16 == 6 && long_siblings) return {OrderKind::RandomSiblingsFirst, siblings};
    return {j % 4 == 2 ? OrderKind::RandomRetentionFriendly : OrderKind::Random,
            j % 8 == 0 ? long_random : 10};
  };
  const double floor = lower_bound(problem, graph).bound(options.model.matmul_compute);
  auto at_floor = [&] { return inc.bound.load() <= floor * (1 + 1e-9); };  // nothing can beat it: stop
  size_t next = 0;
  OracleCache cache;

  auto worker = [&] {
    while (!inc.expired() && !at_floor()) {
      Job job;
      size_t index;
      {
        std::lock_guard lock(queue_mutex);
        index = next++;
        job = job_at(index);
      }
      if (options.max_orders > 0 && index >= static_cast<size_t>(options.max_orders)) break;
      if (job.downsets) {
        if (DownsetSearch(inc, cache, job.max_length, job.exhaustive).run() && job.exhaustive) {
          std::lock_guard lock(inc.mutex);
          inc.stats.exhaustive_complete = true;
          inc.exhaustive_done = true;
        }
        ++inc.orders;
        continue;
      }
      // The seed depends on the job, not on the thread or timing: the same --seed gives the same orders.
      const uint64_t seed = options.seed * 7919 + index * 104729;
      std::vector<int> base, recompute;
      if (job.kind == OrderKind::MovedIncumbent) {
        std::lock_guard lock(inc.mutex);
        base = inc.walk_order;
        recompute = inc.walk_recompute;
        // Moves must be able to keep a long sibling subgraph of the incumbent whole (benchmark 13: sixteen);
        // below the usual length of new orders, short segments keep the local search fast.
        if (inc.best_longest_segment > 10) job.max_length = inc.best_longest_segment;
      }
      std::mt19937_64 rng(seed ^ 0x5eed);
      if (job.recompute == Recompute::FromGraphInputs) recompute = cheap;
      if (job.recompute == Recompute::RandomSubset)
        for (int t : recomputable)
          if (rng() % 2) recompute.push_back(t);
      if (job.recompute == Recompute::AsIncumbent && !recomputable.empty() && rng() % 4 == 0) {
        const int t = recomputable[rng() % recomputable.size()];
        if (auto it = std::find(recompute.begin(), recompute.end(), t); it != recompute.end())
          recompute.erase(it);
        else
          recompute.push_back(t);
      }
      Strategy s(inc, cache, job.kind, job.max_length, seed, inc.tolerance(index), base, recompute);
      s.run();
      ++inc.orders;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.threads); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  inc.stats.evaluations = inc.evaluations.load();
  inc.stats.orders = inc.orders.load();
  inc.stats.stopped_by = stop.load()                                                        ? "signal"
                         : at_floor()                                                       ? "lower bound"
                         : options.max_orders > 0 && inc.stats.orders >= options.max_orders ? "order budget"
                         : inc.stats.exhaustive_complete ? "exhaustive search done"
                                                         : "timeout";
  if (!inc.best) {
    // Name the first op that fits nowhere on its own, the usual reason.
    SubgraphOracle oracle(problem, graph, options.model);
    for (int o = 0; o < problem.num_ops() && inc.stats.infeasible_reason.empty(); ++o) {
      std::string reason;
      if (!oracle.best({o}, {}, {}, &reason)) inc.stats.infeasible_reason = "op " + std::to_string(o) + ": " + reason;
    }
    if (inc.stats.infeasible_reason.empty()) inc.stats.infeasible_reason = "no schedule found within the time limit";
  }
  if (stats) *stats = inc.stats;
  return inc.best;
}

}  // namespace mlsys
