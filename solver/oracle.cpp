#include "solver/oracle.hpp"

#include <algorithm>
#include <set>
#include <type_traits>

namespace mlsys {
namespace {

// The longest step-by-step walk one candidate may take (about 50 ms); tile classes make every other answer
// independent of the step count.
constexpr int64_t kMaxWalkSteps = 1'000'000;

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Membership in a subgraph's op list: a scan for a handful of ops (every DP question), a bitmap for the
// thousands of a batched layer, where scans made each question quadratic.
class OpSet {
 public:
  OpSet(const std::vector<int>& ops, int num_ops) : ops_(ops) {
    if (ops.size() <= kScanned) return;
    marked_.assign(num_ops, false);
    for (int o : ops) marked_[o] = true;
  }
  bool has(int op) const {
    if (marked_.empty()) return contains(ops_, op);
    return op >= 0 && marked_[op];
  }

 private:
  static constexpr size_t kScanned = 32;
  const std::vector<int>& ops_;
  std::vector<bool> marked_;
};

// Whether an op of the subgraph reads tensor t (otherwise an output t is stored).
bool read_inside(const Graph& graph, int t, const OpSet& ops) {
  const auto& readers = graph.consumers[t];
  return std::any_of(readers.begin(), readers.end(), [&](const Consumer& c) { return ops.has(c.op); });
}

}  // namespace

std::vector<int64_t> traversal_order(Traversal kind, int64_t rows, int64_t cols) {
  std::vector<int64_t> order;
  order.reserve(rows * cols);
  if (kind == Traversal::ColumnSnake) {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t i = 0; i < rows; ++i) order.push_back((c % 2 ? rows - 1 - i : i) * cols + c);
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i)
        order.push_back(r * cols + (kind == Traversal::RowSnake && r % 2 ? cols - 1 - i : i));
  }
  return order;
}

std::optional<std::vector<int64_t>> SubgraphChoice::traversal_order() const {
  if (traversal == Traversal::Raster) return std::nullopt;
  return mlsys::traversal_order(traversal, grid_rows, grid_cols);
}

size_t SubgraphKeyHash::operator()(const std::vector<int>& key) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the entries
  for (int x : key) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

bool OracleCache::find(const std::vector<int>& key, std::optional<SubgraphChoice>* answer) const {
  std::lock_guard lock(mutex_);
  auto it = answers_.find(key);
  if (it == answers_.end()) return false;
  *answer = it->second;
  return true;
}

void OracleCache::store(const std::vector<int>& key, const std::optional<SubgraphChoice>& answer) {
  std::lock_guard lock(mutex_);
  answers_[key] = answer;
}

SubgraphOracle::SubgraphOracle(const Problem& problem, const Graph& graph, const ModelOptions& options,
                               std::atomic<int64_t>* shared_count, OracleCache* cache)
    : problem_(problem),
      graph_(graph),
      options_(options),
      shared_count_(shared_count),
      cache_(cache ? cache : &own_cache_) {}

std::vector<int64_t> SubgraphOracle::spatial_candidates(int64_t extent, int64_t native) const {
  // Tile sizes that give distinct tile counts: native and its halvings, and the smallest size for a few tile
  // counts near the minimum (non powers of two, so edge tiles are not wasted).
  std::set<int64_t> sizes;
  for (int64_t s = native; s >= 1 && s * 4 >= native; s /= 2) sizes.insert(std::min(s, extent));
  const int64_t min_tiles = (extent + native - 1) / native;
  const int64_t extra = breadth_ == 0 ? 4 : breadth_ == 1 ? 8 : INT64_MAX / 4;
  for (int64_t c = min_tiles; c < min_tiles + extra; ++c) {
    const int64_t size = (extent + c - 1) / c;
    if (size * 16 < native) break;
    sizes.insert(size);
    if (size == 1)
      break;  // more tiles give no smaller size (below a native of 16, the test above never ends it)
  }
  return {sizes.rbegin(), sizes.rend()};
}

std::vector<int64_t> SubgraphOracle::k_candidates(const std::vector<int>& ops) const {
  int64_t depth = INT64_MAX;  // the smallest reduction depth of the subgraph's MatMuls
  for (int o : ops)
    if (problem_.is_matmul(o)) depth = std::min(depth, graph_.reduction_depth[o]);
  if (depth == INT64_MAX) return {1};
  // Powers-of-two fractions of the largest k, and the k of the first few step counts.
  const int64_t counts = breadth_ == 0 ? 4 : breadth_ == 1 ? 8 : 32;
  std::set<int64_t> ks;
  auto add_below = [&](int64_t k_max) {
    for (int64_t k = k_max; k >= 1 && k * 32 >= k_max; k /= 2) ks.insert(k);
    for (int64_t c = 1; c <= counts; ++c) ks.insert((k_max + c - 1) / c);
  };
  // Lifting the k limit adds candidates and keeps the native ones, so the wider search tries every
  // granularity the default one does and cannot answer worse (benchmark 13's two-MatMul chains fit only at
  // k = 8; candidates from K/32 = 128 up once made them look infeasible).
  add_below(std::min(depth, problem_.native_w));
  if (options_.allow_supernative_k && depth > problem_.native_w) add_below(depth);
  return {ks.rbegin(), ks.rend()};
}

double SubgraphOracle::lower_bound(const std::vector<int>& ops, const std::vector<int>& retained_in,
                                   const std::vector<int>& retain) const {
  // Every op pays base per native tile of its output at least once; every external input not retained-in is
  // loaded at least once and every output that leaves the subgraph is stored at least once.
  double compute = 0;
  int64_t traffic = 0;
  const OpSet inside(ops, problem_.num_ops());
  std::vector<int> seen;  // a handful of tensors, sorted: a vector beats a set (this runs for every question)
  for (int o : ops) {
    compute += compute_floor(problem_, graph_, o, options_.matmul_compute);
    for (int t : problem_.inputs[o])
      if (!inside.has(graph_.producer[t]) && !contains(retained_in, t)) {
        const auto at = std::lower_bound(seen.begin(), seen.end(), t);
        if (at != seen.end() && *at == t) continue;
        seen.insert(at, t);
        traffic += problem_.size(t);
      }
    for (int t : problem_.outputs[o])
      if (!read_inside(graph_, t, inside) && !contains(retain, t)) traffic += problem_.size(t);
  }
  return std::max(compute, static_cast<double>(traffic) / problem_.slow_memory_bandwidth);
}

std::vector<int> SubgraphOracle::cache_key(const std::vector<int>& ops, const std::vector<int>& retained_in,
                                           const std::vector<int>& retain) const {
  std::vector<int> key = ops;
  key.push_back(-1);
  key.insert(key.end(), retained_in.begin(), retained_in.end());
  key.push_back(-2);
  key.insert(key.end(), retain.begin(), retain.end());
  key.push_back(-3 - breadth_);  // a narrower search's answer must not stand in for a wider one's
  return key;
}

std::optional<std::string> SubgraphOracle::retained_overflow(const std::vector<int>& retained_in,
                                                             const std::vector<int>& retain) const {
  // At the last step every retained-in tensor is resident (M20 A) and every retained output has grown to its
  // full size (M20 C), whatever the granularity.
  int64_t resident = 0;
  for (int t : retained_in) resident += problem_.size(t);
  for (int t : retain) resident += problem_.size(t);
  if (resident <= problem_.fast_memory_capacity) return std::nullopt;
  return "M20: retained-in and retained tensors alone need " + std::to_string(resident) +
         " elements at the last step, over the capacity " + std::to_string(problem_.fast_memory_capacity);
}

double SubgraphOracle::compute_per_tile_floor(const std::vector<int>& ops,
                                              const std::vector<int>& retain) const {
  double compute_per_tile = 0;
  const OpSet inside(ops, problem_.num_ops());
  for (int o : ops) {
    const auto& outputs = problem_.outputs[o];
    // Stored or retained: either way it is produced on every tile.
    auto leaves = [&](int t) { return !read_inside(graph_, t, inside) || contains(retain, t); };
    if (std::any_of(outputs.begin(), outputs.end(), leaves))
      compute_per_tile += compute_floor(problem_, graph_, o, options_.matmul_compute) /
                          static_cast<double>(problem_.native_tiles(problem_.outputs[o][0]));
  }
  return compute_per_tile;
}

namespace {

// Under a tight capacity the largest k that fits may lie between the candidates or below all of them
// (benchmark 4 fuses at k = 2): the working set grows with k (slices are k wide), so bisect for it between
// `lo` (fits; 0 = none known) and `hi` (does not). A smaller k costs no extra traffic, only more steps.
// Returns false when the clock ran out.
// Snakes save one strip load per turn; on large grids that is a small share and costs a per-tile
// classification, so they are tried only where a turn is a noticeable part of the grid.
std::vector<Traversal> traversals_worth_trying(const SubgraphModel& model) {
  if (model.grid_rows() > 1 && model.grid_cols() > 1 && model.tiles() <= 512)
    return {Traversal::RowSnake, Traversal::ColumnSnake};
  return {Traversal::Raster};
}

template <class Try>
bool bisect_largest_fitting_k(int64_t lo, int64_t hi, Try&& attempt) {
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    const auto outcome = attempt(mid);
    using Outcome = std::decay_t<decltype(outcome)>;
    if (outcome == Outcome::OutOfTime) return false;
    if (outcome == Outcome::Fits)
      lo = mid;
    else if (outcome == Outcome::OutOfMemory)
      hi = mid;
    else
      break;  // another rule depends on k here (M13 w = k): no bisection
  }
  return true;
}

}  // namespace

std::optional<SubgraphChoice> SubgraphOracle::best(const std::vector<int>& ops,
                                                   const std::vector<int>& retained_in,
                                                   const std::vector<int>& retain, std::string* reason) {
  const std::vector<int> key = cache_key(ops, retained_in, retain);
  if (std::optional<SubgraphChoice> known; cache_->find(key, &known) && (known || !reason)) return known;
  if (expired_ && expired_()) return std::nullopt;  // not cached: the question was not answered

  std::optional<SubgraphChoice> best;
  auto answer = [&] {  // count the evaluations and cache the answer
    if (shared_count_) shared_count_->fetch_add(evaluations_ - counted_, std::memory_order_relaxed);
    counted_ = evaluations_;
    cache_->store(key, best);
    return best;
  };
  // A cheap feasibility check first: most subgraphs the DP proposes with two large tensors retained fail
  // here, without trying any granularity.
  if (std::optional<std::string> overflow = retained_overflow(retained_in, retain)) {
    if (reason) *reason = *overflow;
    return answer();
  }
  // The rules that do not depend on the granularity, and the symbolic regions, once for all candidates.
  auto structure = SubgraphModel::compile_structure(problem_, graph_, ops, retain, 0, retained_in, options_);
  ++evaluations_;
  if (auto* v = std::get_if<RuleViolation>(&structure)) {
    if (reason) *reason = v->describe();
    return answer();
  }
  // One working copy: each candidate re-applies its granularity in place instead of copying the structure.
  SubgraphModel& model = std::get<SubgraphModel>(structure);
  std::optional<RuleViolation> last_violation;  // described only if asked: most candidates are rejected
  const int grid_tensor = problem_.outputs[ops.back()][0];  // the last op's outputs are non-ephemeral
  const int64_t grid_w = problem_.widths[grid_tensor], grid_h = problem_.heights[grid_tensor];
  const double floor = lower_bound(ops, retained_in, retain);
  // Evaluates one granularity (with the traversal orders worth trying); says whether it fitted in memory.
  enum class Outcome { Fits, OutOfMemory, Rejected, OutOfTime };
  auto try_granularity = [&](int64_t w, int64_t h, int64_t k) {
    if (expired_ && (evaluations_ & 63) == 0 && expired_()) return Outcome::OutOfTime;
    const Granularity granularity{w, h, k};
    ++evaluations_;
    if (auto v = model.set_granularity(granularity)) {
      last_violation = std::move(v);
      return Outcome::Rejected;
    }
    // A candidate priced by a walk may take up to kMaxWalkSteps steps: ask the clock before each one, not
    // only every 64 evaluations.
    if (expired_ && !model.counts_tile_classes() && model.num_steps() > 4096 && expired_())
      return Outcome::OutOfTime;
    Outcome outcome = Outcome::Rejected;
    for (Traversal kind : traversals_worth_trying(model)) {
      std::optional<std::vector<int64_t>> order;
      if (kind != Traversal::Raster) order = traversal_order(kind, model.grid_rows(), model.grid_cols());
      if (auto v = model.set_traversal(order)) {
        last_violation = std::move(v);
        continue;
      }
      // A candidate that only a long step-by-step walk can price (numeric M17 checks or aliasing forms on a
      // huge grid) is skipped: one such walk could outlast the whole deadline.
      const SubgraphResult r = model.evaluate_fast(SubgraphModel::Violations::Summarize, kMaxWalkSteps);
      ++evaluations_;
      if (r.walk_refused) continue;
      if (r.violation) {
        last_violation = r.violation;
        if (r.violation->rule == "M20") outcome = Outcome::OutOfMemory;
        continue;
      }
      outcome = Outcome::Fits;
      if (!best || r.latency < best->latency - 1e-9 * r.latency)
        best = SubgraphChoice{granularity,       kind,      model.grid_rows(),
                              model.grid_cols(), r.latency, r.peak_working_set};
    }
    return outcome;
  };
  std::vector<int64_t> ks = k_candidates(ops);  // descending
  const std::vector<int64_t> hs = spatial_candidates(grid_h, problem_.native_h);
  const std::vector<int64_t> ws = spatial_candidates(grid_w, problem_.native_w);  // both descending
  // One probe at the smallest tiles and k = 1 settles most of the subgraphs the DP proposes (hundreds of
  // candidates each otherwise):
  // - the working set grows with w, h and k (slices are k wide, output tiles w x h), and nk = 1 only adds to
  //   a step (a prologue's and an epilogue's inputs then meet at one step), except that nk = 1 drops the
  //   partial sums without a host (M20 D, revision of 2026-11-24). So if k = 1 overflows, every k with
  //   nk > 1 does; with unhosted partial sums only the largest k (nk = 1 if it reaches K_s) is left to try.
  //   (k = 1, not the smallest candidate: the bisection below reaches under the candidates.)
  // - M13's rule for nk > 1 depends only on the subgraph's MatMul structure: if k = 1 (which splits the
  //   reduction unless K_s = 1) breaks it, only the largest k (nk = 1, if it reaches K_s) can work.
  const Outcome small_k = try_granularity(ws.back(), hs.back(), 1);
  if (small_k == Outcome::OutOfTime) return best;
  if (small_k == Outcome::Rejected && last_violation && last_violation->rule == "M13" && ks.size() > 1)
    ks = {ks.front()};
  if (small_k == Outcome::OutOfMemory) {
    if (model.unhosted_accumulators() == 0 || ks.size() == 1) {
      if (reason && last_violation) *reason = last_violation->describe();
      return answer();
    }
    ks = {ks.front()};
  }
  // Each op whose output leaves the subgraph runs on every grid tile and pays at least one native tile's
  // compute there (M23, M24: smaller tiles are padded): a floor that grows with the number of tiles.
  const double compute_per_tile = compute_per_tile_floor(ops, retain);
  for (int64_t h : hs)
    for (int64_t w : ws) {
      if (best && best->latency <= floor * (1 + 1e-12)) break;  // nothing can beat the subgraph's floor
      const double tiles = static_cast<double>(((grid_h + h - 1) / h) * ((grid_w + w - 1) / w));
      if (best && tiles * compute_per_tile >= best->latency) break;  // narrower tiles only pay more
      int64_t largest_fit = 0, smallest_too_big = 0;  // among the candidates (ks is descending)
      for (int64_t k : ks) {
        const Outcome outcome = try_granularity(w, h, k);
        if (outcome == Outcome::OutOfTime) return best;  // out of time: not cached
        if (outcome == Outcome::OutOfMemory && largest_fit == 0) smallest_too_big = k;
        if (outcome == Outcome::Fits && largest_fit == 0) largest_fit = k;
      }
      // The largest k that fits may lie between the candidates or below them all.
      if (smallest_too_big > largest_fit + 1 &&
          !bisect_largest_fitting_k(largest_fit, smallest_too_big,
                                    [&](int64_t k) { return try_granularity(w, h, k); }))
        return best;  // out of time: not cached
    }
  if (!best && reason) *reason = last_violation ? last_violation->describe() : "no candidate granularity";
  return answer();
}

}  // namespace mlsys
