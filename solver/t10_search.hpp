// T10 search (rule book T39-T41): every plan the profile accepts, enumerated with E4 satisfied by
// construction, F_op candidates visited in order of their compute lower bound so the T41 prune cuts early.
#pragma once

#include <functional>
#include <vector>

#include "sim/t10/t10_calibrated.hpp"

#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

struct RankedPlan {
  Plan plan;
  double total = 0;
  int64_t hot = 0;
};

struct SearchResult {
  std::vector<RankedPlan> top;  // best first (T40 order)
  int64_t ties = 0;             // plans with the best total
  int64_t evaluated = 0;        // plans fully evaluated
  int64_t pruned_fops = 0;      // F_op skipped by the T41 bound
  int64_t accepted = 0;         // plans the profile accepts among those evaluated
};

// The searches enumerate every F_op with pm·pk·pn <= cores: a chip file may declare 2^31 cores, beyond which
// that takes hours; they refuse chips above this (std::invalid_argument). The IPU has 1,472.
constexpr int64_t kMaxSearchCores = int64_t{1} << 14;
void check_searchable(const Problem& problem);

// `prune = false` visits every plan (for counting accepted plans, T39).
SearchResult search(const Problem& problem, Profile profile, size_t top_n = 1, bool prune = true);

// The best plans under the calibrated timing (docs/t10-model.md#calibrated), over the published model's own
// search space (its spatial and temporal rules, the SRAM limit): every F_op it allows, every temporal
// factor pair dividing the replication. Exhaustive, so the best is proven. Ranked by total, then hot bytes,
// then the plan's fields.
struct CalibratedRankedPlan {
  Plan plan;
  double total = 0;
  int64_t hot = 0, cold = 0;
};
struct CalibratedSearchResult {
  std::vector<CalibratedRankedPlan> top;
  int64_t fops = 0;       // F_op the spatial rules allow
  int64_t evaluated = 0;  // plans priced
  int64_t accepted = 0;   // plans the model accepts
};
CalibratedSearchResult search_calibrated(const Problem& problem, size_t top_n = 1);

// Every plan of that search space (with the batch's spatial parts pb when the problem has a batch), priced;
// `visit` sees the accepted ones. Returns {F_op allowed, plans priced}.
std::pair<int64_t, int64_t> for_each_calibrated_plan(
    const Problem& problem, const std::function<void(const Plan&, const CalibratedCost&)>& visit);

}  // namespace mlsys::t10
