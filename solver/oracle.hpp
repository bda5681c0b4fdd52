// The search's oracle: it proposes a subgraph (ops, what it receives retained, what it retains) and is told
// the best configuration the step model finds for it (granularity, traversal order, latency) or why none
// works. It never computes cost itself: every number comes from SubgraphModel (compile = static rules, then
// evaluate_fast = latency and working set).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

// Traversal orders the search tries. Snakes keep one strip shared at every turn.
enum class Traversal { Raster, RowSnake, ColumnSnake };
std::vector<int64_t> traversal_order(Traversal kind, int64_t rows, int64_t cols);

// The traversal is kept as its kind and grid, not as the tile list: choices are copied into every DP state
// and cache hit, and the list (up to hundreds of entries) is needed only for the schedule that is written.
struct SubgraphChoice {
  Granularity granularity;
  Traversal traversal = Traversal::Raster;
  int64_t grid_rows = 1, grid_cols = 1;
  double latency = 0;
  int64_t peak_working_set = 0;

  // The schedule's traversal_orders entry: nullopt for raster.
  std::optional<std::vector<int64_t>> traversal_order() const;
};

// Hash of a subgraph key (op and tensor indices with negative separators), for caches of subgraph answers.
struct SubgraphKeyHash {
  size_t operator()(const std::vector<int>& key) const;
};

// Answers already found, shared by the oracles of all search threads: different strategies propose many of
// the same subgraphs. Key: ops | -1 | retained_in | -2 | retain | -3 - breadth.
class OracleCache {
 public:
  bool find(const std::vector<int>& key, std::optional<SubgraphChoice>* answer) const;
  void store(const std::vector<int>& key, const std::optional<SubgraphChoice>& answer);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::vector<int>, std::optional<SubgraphChoice>, SubgraphKeyHash> answers_;
};

class SubgraphOracle {
 public:
  // `shared_count`, if given, is incremented with every evaluation (live progress across threads); `cache`,
  // if given, is shared with other oracles of the same problem and options.
  SubgraphOracle(const Problem& problem, const Graph& graph, const ModelOptions& options,
                 std::atomic<int64_t>* shared_count = nullptr, OracleCache* cache = nullptr);

  // Best configuration, or nullopt with `reason` set to the last rule that rejected every candidate.
  std::optional<SubgraphChoice> best(const std::vector<int>& ops, const std::vector<int>& retained_in,
                                     const std::vector<int>& retain, std::string* reason = nullptr);
  int64_t evaluations() const { return evaluations_; }
  // How many tile sizes and k values to try: 0 = the usual few, 1 = more tile counts, 2 = every tile count
  // down to 1/16 of native and every k that gives a distinct number of k-steps (small problems can afford
  // it).
  void set_breadth(int breadth) { breadth_ = breadth; }
  // Checked between candidates: once it returns true, best() returns what it has (uncached) at once.
  void set_expired(std::function<bool()> expired) { expired_ = std::move(expired); }
  // No configuration of this subgraph can be cheaper (compute at native padding, each transfer once).
  double lower_bound(const std::vector<int>& ops, const std::vector<int>& retained_in,
                     const std::vector<int>& retain) const;

 private:
  std::vector<int64_t> spatial_candidates(int64_t extent, int64_t native) const;
  std::vector<int64_t> k_candidates(const std::vector<int>& ops) const;
  // best()'s parts: the cache key of a question; M20's check at the last step, where every retained-in and
  // retained tensor is whole, whatever the granularity (the reason, or nullopt when they fit); the compute
  // each grid tile pays at least.
  std::vector<int> cache_key(const std::vector<int>& ops, const std::vector<int>& retained_in,
                             const std::vector<int>& retain) const;
  std::optional<std::string> retained_overflow(const std::vector<int>& retained_in,
                                               const std::vector<int>& retain) const;
  double compute_per_tile_floor(const std::vector<int>& ops, const std::vector<int>& retain) const;

  const Problem& problem_;
  const Graph& graph_;
  ModelOptions options_;
  int64_t evaluations_ = 0;
  int breadth_ = 0;
  std::function<bool()> expired_;
  std::atomic<int64_t>* shared_count_ = nullptr;
  int64_t counted_ = 0;  // evaluations already added to shared_count_
  OracleCache own_cache_;
  OracleCache* cache_;
};

}  // namespace mlsys
