#include "solver/search.hpp"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <queue>
#include <random>
#include <thread>

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
  double best_cost = 0;
  SolveStats stats;
  std::atomic<int64_t> evaluations{0};

  bool expired() const { return stop.load() || Clock::now() >= deadline; }

  // Verifies the whole schedule with the same library as `verify` and publishes it if it is better.
  void offer(const std::vector<Segment>& segments, const std::string& strategy) {
    Schedule s;
    for (const Segment& seg : segments)
      s.subgraphs.push_back({seg.ops, seg.choice.granularity, seg.retain, seg.choice.traversal});
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
    best_cost = report.total_latency;
    stats.best_cost = best_cost;
    stats.best_strategy = strategy;
    stats.time_to_best = std::chrono::duration<double>(Clock::now() - start).count();
    if (stats.improvements == 0) stats.time_to_first = stats.time_to_best;
    ++stats.improvements;
    if (on_improvement) on_improvement(s, best_cost, strategy, evaluations.load());
  }
};

// Topological orders: each strategy segments one. Different orders put different ops side by side.
std::vector<int> topological(const Problem& p, const Graph& g, int variant, std::mt19937_64& rng) {
  return topological_order(p, g, [&](const std::vector<int>& ready) -> size_t {
    if (variant == 0) return std::min_element(ready.begin(), ready.end()) - ready.begin();  // by index
    if (variant == 1) return ready.size() - 1;                                              // depth first
    return std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
  });
}

// A segment is closed when every tensor it consumes internally has no consumer outside it: such a tensor is
// ephemeral (M8) and could not be read later (M15).
bool closed(const Problem& p, const Graph& g, const std::vector<int>& ops, std::vector<char>& member) {
  for (int o : ops) member[o] = 1;
  bool ok = true;
  for (int o : ops) {
    for (int t : p.outputs[o]) {
      bool internal = false, external = false;
      for (const Consumer& c : g.consumers[t]) (member[c.op] ? internal : external) = true;
      if (internal && external) ok = false;
    }
  }
  for (int o : ops) member[o] = 0;
  return ok;
}

class Strategy {
 public:
  Strategy(Incumbent& inc, int variant, int max_length, uint64_t seed)
      : inc_(inc), oracle_(inc.problem, inc.graph, inc.options.model, &inc.evaluations), variant_(variant), max_length_(max_length),
        rng_(seed) {
    const int ops = inc.problem.num_ops();
    oracle_.set_breadth(ops <= 32 ? 1 : 0);
    oracle_.set_expired([&inc] { return inc.expired(); });
  }

  void run() {
    const Problem& p = inc_.problem;
    const std::vector<int> order = topological(p, inc_.graph, variant_, rng_);
    const int n = static_cast<int>(order.size());
    const std::string name = "dp(order " + std::to_string(variant_) + ", len " + std::to_string(max_length_) + ")";
    std::vector<double> cost(n + 1, INFINITY);
    std::vector<int> from(n + 1, -1);
    std::vector<std::optional<SubgraphChoice>> choice(n + 1);
    std::vector<char> member(p.num_ops(), 0);
    cost[0] = 0;
    for (int j = 1; j <= n; ++j) {
      for (int i = j - 1; i >= 0 && j - i <= max_length_; --i) {
        if (inc_.expired()) return;
        if (cost[i] == INFINITY) continue;
        std::vector<int> ops(order.begin() + i, order.begin() + j);
        if (!closed(p, inc_.graph, ops, member)) continue;
        auto best = oracle_.best(ops, {}, {});
        if (best && cost[i] + best->latency < cost[j]) {
          cost[j] = cost[i] + best->latency;
          from[j] = i;
          choice[j] = best;
        }
      }
    }
    if (cost[n] == INFINITY) return;
    std::vector<Segment> segments;
    for (int j = n; j > 0; j = from[j])
      segments.push_back({std::vector<int>(order.begin() + from[j], order.begin() + j), {}, *choice[j]});
    std::reverse(segments.begin(), segments.end());
    inc_.offer(segments, name);
    add_retention(segments);
    inc_.offer(segments, name + "+retain");
  }

 private:
  // Retaining a tensor saves its store in subgraph A and its load in B, at the price of holding it whole in
  // fast memory. Tried boundary by boundary; kept where the oracle says A + B got cheaper.
  void add_retention(std::vector<Segment>& segs) {
    const Problem& p = inc_.problem;
    const Graph& g = inc_.graph;
    for (size_t b = 0; b + 1 < segs.size() && !inc_.expired(); ++b) {
      Segment& a = segs[b];
      Segment& next = segs[b + 1];
      std::vector<int> candidates;
      for (int o : a.ops)
        for (int t : p.outputs[o]) {
          if (g.consumers[t].empty()) continue;
          const bool all_in_next = std::all_of(g.consumers[t].begin(), g.consumers[t].end(), [&](const Consumer& c) {
            return std::find(next.ops.begin(), next.ops.end(), c.op) != next.ops.end();
          });
          if (all_in_next) candidates.push_back(t);
        }
      if (candidates.empty()) continue;
      const std::vector<int> a_in = b == 0 ? std::vector<int>{} : segs[b - 1].retain;
      std::vector<std::vector<int>> options{candidates};
      if (candidates.size() > 1)
        for (int t : candidates) options.push_back({t});
      double best_gain = 0;
      std::optional<std::tuple<std::vector<int>, SubgraphChoice, SubgraphChoice>> best;
      for (const auto& retain : options) {
        auto ca = oracle_.best(a.ops, a_in, retain);
        if (!ca) continue;
        auto cb = oracle_.best(next.ops, retain, next.retain);
        if (!cb) continue;
        const double gain = a.choice.latency + next.choice.latency - ca->latency - cb->latency;
        if (gain > best_gain) {
          best_gain = gain;
          best = std::make_tuple(retain, *ca, *cb);
        }
      }
      if (best) {
        a.retain = std::get<0>(*best);
        a.choice = std::get<1>(*best);
        next.choice = std::get<2>(*best);
      }
    }
  }

  Incumbent& inc_;
  SubgraphOracle oracle_;
  int variant_, max_length_;
  std::mt19937_64 rng_;
};

}  // namespace

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
  Incumbent inc{problem, graph, options, stop, on_improvement, Clock::now(), {}, {}, {}, 0, {}, {}};
  inc.deadline = inc.start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options.timeout_seconds));
  // First a quick answer (every op alone, then short fusions), then longer fusions and other orders.
  std::mutex queue_mutex;
  std::vector<std::pair<int, int>> plan;  // (order variant, max length), in priority order
  for (int length : {1, 3, 6, 10, 16})
    for (int variant : {0, 1}) plan.push_back({variant, length});
  // Then random topological orders for as long as time allows.
  for (int variant = 2; variant < 200; ++variant) plan.push_back({variant, variant % 2 ? 6 : 10});
  size_t next = 0;

  auto worker = [&] {
    while (!inc.expired()) {
      std::pair<int, int> job;
      size_t index;
      {
        std::lock_guard lock(queue_mutex);
        if (next >= plan.size()) return;
        index = next++;
        job = plan[index];
      }
      // The seed depends on the job, not on the thread or timing: the same --seed gives the same orders.
      Strategy s(inc, job.first, job.second, options.seed * 7919 + index * 104729);
      s.run();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.threads); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  inc.stats.evaluations = inc.evaluations.load();
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
