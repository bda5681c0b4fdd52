// The cover bound (docs/bounds.md#theorem-6): every subgraph of a schedule pays its own roofline. Each
// connected set of ops that could be a subgraph gets a floor: the least, over every granularity at which it
// is legal and fits in fast memory, of max(its compute, the traffic every traversal order and every retention
// pays). A schedule's subgraphs cover every op, so it costs at least the cheapest cover of the ops by such
// sets. Its linear-programming dual (GLPK) gives the certificate: a price per op such that no set's prices
// add up to more than its floor; the prices' sum is the bound. Unlike certified_bound's one lambda for the
// whole schedule, this sees that a compute-bound subgraph and a memory-bound one each pay their larger side.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"

namespace mlsys {

// The floor of one set of ops, with the granularity that attains it.
struct SubgraphFloor {
  double value = 0;  // max(compute, memory)
  double compute = 0, memory = 0;
  Granularity granularity;
};

// nullopt: at no granularity is the set a legal subgraph that fits, whatever it retains or receives. Once
// `expired` says so, the granularities not yet priced count at the ops' compute floors (still a floor).
std::optional<SubgraphFloor> subgraph_floor(const Problem& problem, const Graph& graph,
                                            const ModelOptions& options, const std::vector<int>& ops,
                                            const std::function<bool()>& expired = {});

// Native tiles larger than this (on either side) make the cover bound decline: it tries tile sizes count by
// count, up to the native size.
inline constexpr int64_t kCoverMaxNative = 1024;

// Programs that report a proven gap in passing (verify, report, mlsys) run the cover bound only on graphs of
// up to this many ops: a set's floor cannot be interrupted, and one of hundreds of ops takes long.
inline constexpr int kCoverBoundMaxOps = 64;

struct CoverLimits {
  double seconds = 10;                        // then the best bound proven so far is returned
  int64_t max_subgraphs = 1'000'000;          // connected sets of ops; above it the bound is not attempted
  const std::atomic<bool>* cancel = nullptr;  // if set and true, stop as at the time limit
};

struct CoverBound {
  bool attempted = false;  // false: `status` says why not (too many sets, an LP failure)
  bool complete = false;   // every set the LP leans on was priced exactly (else the time limit struck)
  std::string status;
  double bound = 0;
  std::vector<double> op_prices;  // the certificate: per op, sum = bound; a set's floor bounds the prices of
                                  // the ops it can compute first (first_computations in the .cpp)
  int64_t subgraphs = 0;          // connected sets checked against the prices
  int64_t priced_exactly = 0;     // by subgraph_floor (the others by their cheap floor)
  int64_t never_fit = 0;          // sets that no granularity makes legal and fitting
  int64_t reentrant = 0;          // sets that read back what an op outside them made from theirs
  int64_t lp_rounds = 0;
  double seconds = 0;
  struct Binding {  // a set whose prices add up to its floor
    std::vector<int> ops;
    std::vector<int> charged;  // the ops it can compute first, whose prices count against its floor
    bool exact = false;
    SubgraphFloor floor;
  };
  std::vector<Binding> binding;  // the tightest few, for the certificate
};

CoverBound cover_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                       const CoverLimits& limits,
                       const std::function<void(const std::string&)>& progress = {});

}  // namespace mlsys
