// The cover bound (docs/bounds.md#theorem-6 and #theorem-7): every subgraph of a schedule pays its own
// roofline. Each connected set of ops that could be a subgraph gets a floor in each retention context
// (subgraph_floor.hpp): the least, over every granularity at which it is legal and fits in fast memory, of
// max(its compute, the traffic every traversal order pays). A schedule's subgraphs cover every op, and a
// subgraph receives a tensor retained only right after one that kept it, so the schedule costs at least the
// cheapest fractional cover of the ops by such sets in which each tensor is received no more often than
// kept. Its linear-programming dual (GLPK) is the certificate: a price per op and a credit per tensor such
// that no set's prices, plus the credits of what it keeps, minus those of what it receives, exceed its floor
// in that context; the prices' sum is the bound. Unlike certified_bound's one lambda for the whole schedule,
// this sees that a compute-bound subgraph and a memory-bound one each pay their larger side.
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
#include "verifier/subgraph_floor.hpp"

namespace mlsys {

// Native tiles larger than this (on either side) make the cover bound decline: it tries tile sizes count by
// count, up to the native size.
inline constexpr int64_t kCoverMaxNative = 1024;
inline constexpr size_t kCoverRetentionChoices = 6;

// Programs that report a proven gap in passing (verify, report, mlsys) run the cover bound only on graphs of
// up to this many ops: a set's floor cannot be interrupted, and one of hundreds of ops takes long.
inline constexpr int kCoverBoundMaxOps = 64;
// Above this many ops the cover bound declines wherever it is asked for (bound): which ops a set can compute
// first comes from every op's ancestors and descendants as bit sets, ops^2 / 4 bytes (64 MiB here), and a
// graph of 100,000 independent ops, each a set of its own, would otherwise need 2.5 GB.
inline constexpr int kCoverMaxOps = 16'384;

struct CoverLimits {
  double seconds = 10;                        // then the best bound proven so far is returned
  int64_t max_subgraphs = 1'000'000;          // connected sets of ops; above it the bound is not attempted
  const std::atomic<bool>* cancel = nullptr;  // if set and true, stop as at the time limit
  // Per set, inputs and outputs tried both ways: more than subgraph_floor's default, since benchmark 8's
  // fused projections hand on six outputs (docs/bounds.md#theorem-7) and the LP prices each set once.
  size_t retention_choices = kCoverRetentionChoices;
  bool store_rows = true;  // Theorem 10's rows (a loaded tensor was stored before); false to compare without
};

struct CoverBound {
  bool attempted = false;  // false: `status` says why not (too many sets, an LP failure)
  bool complete = false;   // every set the LP leans on was priced exactly (else the time limit struck)
  std::string status;
  double bound = 0;
  // The certificate: per op; with the store terms their sum is the bound. A set's floor bounds the prices
  // of the ops it can compute first (first_computations in the .cpp).
  std::vector<double> op_prices;
  std::vector<double> tensor_credits;  // per tensor: earned by a set that keeps it, paid by one receiving it
  struct StoreTerm {                   // Theorem 10: some run stores `tensor`, or `reader` first runs without
    int tensor, reader;                // loading it; `price` is added to the bound and charged to the columns
    double price;                      // that may store it or count the reader without loading it
  };
  std::vector<StoreTerm> store_terms;  // those with a positive price
  int64_t subgraphs = 0;               // connected sets checked against the prices
  int64_t priced_exactly = 0;          // by subgraph_floor (the others by their cheap floor)
  int64_t never_fit = 0;               // sets that no granularity makes legal and fitting
  int64_t reentrant = 0;               // sets that read back what an op outside them made from theirs
  int64_t lp_rounds = 0;
  double seconds = 0;
  struct Binding {  // a set whose prices add up to its floor
    std::vector<int> ops;
    std::vector<int> charged;  // the ops it can compute first, whose prices count against its floor
    std::vector<int> retained_in, retained_out;  // its context, whose credits count too
    bool exact = false;
    SubgraphFloor floor;
  };
  std::vector<Binding> binding;  // the tightest few, for the certificate
};

CoverBound cover_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                       const CoverLimits& limits,
                       const std::function<void(const std::string&)>& progress = {});

}  // namespace mlsys
