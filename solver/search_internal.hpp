// The parts of the schedule search that its strategies share (not part of the solver's interface): the
// incumbent every thread publishes to, the op orders, what a segment may retain or recompute, and the two
// dynamic programs (over the prefixes of one order, over sets of done ops) that solve() runs as jobs.
#pragma once

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "solver/oracle.hpp"
#include "solver/search.hpp"
#include "verifier/verify.hpp"

namespace mlsys::search {

using Clock = std::chrono::steady_clock;

struct Segment {
  std::vector<int> ops;
  std::vector<int> retain;
  SubgraphChoice choice;
};

// The cover bound's certificate (docs/bounds.md#theorem-7): the ops still to run cost at least their prices'
// sum minus the credits of the tensors they receive retained. It prunes the search over sets of done ops and
// bounds what that search has not reached.
struct CoverCertificate {
  std::vector<double> op_prices, tensor_credits;
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
  mutable std::mutex certificate_mutex{};
  std::shared_ptr<const CoverCertificate> certificate{};

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

  // The cover bound's certificate, once the thread beside the search has it.
  void publish(CoverCertificate c) {
    auto shared = std::make_shared<const CoverCertificate>(std::move(c));
    std::lock_guard lock(certificate_mutex);
    certificate = std::move(shared);
  }
  std::shared_ptr<const CoverCertificate> current_certificate() const {
    std::lock_guard lock(certificate_mutex);
    return certificate;
  }
  // What the exhaustive search proved about its space when it ended (complete or cut by the clock).
  void record_space_bound(double bound, bool complete) {
    std::lock_guard lock(mutex);
    stats.exact_space_bound = bound;
    stats.exhaustive_complete = stats.exhaustive_complete || complete;
  }

  // The best cost the merge pass last started from (merge_search.cpp): it runs again only on a new best.
  double merged_from = -1;
  bool merge_running = false;
  // Claims the merge pass for the calling thread when the best schedule changed since its last run.
  bool claim_merge() {
    std::lock_guard lock(mutex);
    if (!best || merge_running || best_cost == merged_from) return false;
    merge_running = true;
    merged_from = best_cost;
    return true;
  }
  void release_merge() {
    std::lock_guard lock(mutex);
    merge_running = false;
  }

  // How long the last offer took to verify its whole schedule: a pass that offers one at its end stops early
  // enough to verify it before the deadline (merge_search.cpp).
  std::atomic<double> verify_seconds{0};

  // Set when an exhaustive search has finished: the helper jobs beside it stop too.
  std::atomic<bool> exhaustive_done{false};
  bool expired() const { return stop.load() || exhaustive_done.load() || Clock::now() >= deadline; }

  // Verifies the whole schedule with the same library as `verify` and publishes it if it is better.
  void offer(const std::vector<Segment>& segments, const std::vector<int>& order,
             const std::vector<int>& recompute, const std::string& strategy) {
    Schedule s;
    for (const Segment& seg : segments)
      s.subgraphs.push_back({seg.ops, seg.choice.granularity, seg.retain, seg.choice.traversal_order()});
    offer(std::move(s), order, recompute, strategy);
  }
  void offer(Schedule s, const std::vector<int>& order, const std::vector<int>& recompute,
             const std::string& strategy) {
    VerifyOptions vo;
    vo.model = options.model;
    const Clock::time_point verify_start = Clock::now();
    const ScheduleReport report = verify_schedule(problem, graph, s, vo);
    verify_seconds.store(std::chrono::duration<double>(Clock::now() - verify_start).count());
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
    for (const SubgraphSpec& sg : s.subgraphs)
      best_longest_segment = std::max(best_longest_segment, static_cast<int>(sg.ops.size()));
    bound.store(best_cost);
    stats.best_cost = best_cost;
    stats.best_strategy = strategy;
    stats.time_to_best = std::chrono::duration<double>(Clock::now() - start).count();
    if (stats.improvements == 0) stats.time_to_first = stats.time_to_best;
    ++stats.improvements;
    if (on_improvement) on_improvement(s, best_cost, strategy, evaluations.load());
  }
};

// ---- op orders (solver/op_orders.cpp)

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
  MovedIncumbent,
  BatchedLevels
};
const char* order_name(OrderKind kind);

// Whether MatMuls a and b read the same tensor in operand `position` with the same reduction depth.
bool same_operand(const Problem& p, const Graph& g, int a, int b, size_t position);
// The largest group of MatMul siblings (graph inputs only, one operand shared) that siblings-first orders
// put side by side.
int largest_sibling_group(const Problem& p, const Graph& g);
// A topological order of `kind` (random kinds draw from `rng`).
std::vector<int> topological(const Problem& p, const Graph& g, OrderKind kind, std::mt19937_64& rng);
// Per op, a class id shared by ops that do the same work on other rows: same kind, base cost and shapes, and
// the same graph inputs (weights) in the same positions. An importer that cuts tokens or pixels into row
// blocks makes one copy of each layer per block; batched-level orders put a layer's copies side by side.
std::vector<int> layer_copy_classes(const Problem& p, const Graph& g);
// Per op, the longest path (in ops) from the graph inputs: ops of one level never depend on each other.
std::vector<int> levels(const Problem& p, const Graph& g);
// The longest run of consecutive ops of one class in the batched-level order.
int longest_copy_run(const Problem& p, const Graph& g);
// Whether two ops share a tensor (the links that make a subgraph connected, M7).
bool related(const Problem& p, const Graph& g, int a, int b);
// Local search: `order` with a few ops moved to other legal places.
std::vector<int> moved(std::vector<int> order, const Problem& p, const Graph& g, std::mt19937_64& rng);

// ---- what a segment may retain and recompute (solver/segment_options.cpp)

// What a segment (a run of consecutive ops of the order) demands of retention. A tensor it consumes
// internally and that a later op also reads must be retained into the next segment (M8: otherwise it is
// ephemeral and unavailable later, M15). A tensor it only produces may be retained instead of stored (M9),
// which pays when the next segment reads it. Either way the next segment must hold every remaining consumer
// (M9: one subgraph only).
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

// Which optional tensors to retain besides the required ones (each option sorted).
std::vector<std::vector<int>> retention_options(const RetentionNeeds& needs, int every_subset_up_to = 4);
// Tensors a Pointwise op produces and several ops read: their later readers may run the producer again.
std::vector<int> recomputable_tensors(const Problem& p, const Graph& g);
// Those whose producer reads only graph inputs.
std::vector<int> recomputable_from_graph_inputs(const Problem& p, const Graph& g);
// The tensors an op reads, each once.
std::vector<int> distinct_inputs(const Problem& p, int op);
// The order with a copy of each recomputed tensor's producer just before the tensor's second reader.
std::vector<int> with_recomputation(const std::vector<int>& order, const std::vector<int>& recompute,
                                    const Problem& p, const Graph& g);

// ---- the two dynamic programs

// Segments one order (solver/order_search.cpp). `base` is the order to perturb when `kind` is
// MovedIncumbent; `recompute` the tensors whose later readers run their producer again.
void run_order_search(Incumbent& inc, OracleCache& cache, OrderKind kind, int max_length, uint64_t seed,
                      double tolerance, std::vector<int> base, std::vector<int> recompute);
// Every schedule without recomputation whose subgraphs have at most `max_length` ops, by sets of done ops
// (solver/downset_search.cpp). Returns false if the deadline or a signal cut it short.
bool run_downset_search(Incumbent& inc, OracleCache& cache, int max_length, bool exhaustive);

// ---- fusing the best schedule's neighbours (solver/merge_search.cpp)

// Merges pairs of the best schedule's subgraphs where one reads what the other produces, while the oracle
// says the pair costs less as one subgraph, and offers the result. It finds fusions that no op order puts
// side by side: an attention head's scores, softmax and weighted sum lie levels apart among other heads'.
void run_merge_search(Incumbent& inc, OracleCache& cache);
// Why the DP over sets of done ops cannot run on this graph (too many such sets: at most `max_downsets`, 0
// for the exhaustive search's own limit), or nullopt.
std::optional<std::string> downsets_unaffordable(const Problem& p, const Graph& g, size_t max_downsets = 0);

}  // namespace mlsys::search
