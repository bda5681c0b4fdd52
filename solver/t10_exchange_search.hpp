// T10 plans ranked by the physical exchange timing (t10 solve --timing exchange): every plan the profile
// accepts gets a lower bound on its exchange time (its largest core's compute at the AMP rate and one sync
// per superstep); plans are simulated on every core (sim/t10/t10_cores) in order of that bound until the
// bound of the next one reaches the best time found, which proves the best, or until `max_simulations` have
// run.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

struct ExchangeRankedPlan {
  Plan plan;
  double exchange_total = 0;    // cycles, exchange timing (0 in a calibrated sweep)
  double grader_total = 0;      // cycles, the rule book's model
  double calibrated_total = 0;  // cycles, calibrated timing (a calibrated sweep only)
};

struct ExchangeSearchResult {
  std::vector<ExchangeRankedPlan> top;  // best first
  int64_t accepted = 0;                 // plans the profile accepts
  int64_t simulated = 0;                // plans simulated on every core
  bool proven = false;                  // the next bound reached the best: no accepted plan is faster
};

ExchangeSearchResult search_exchange(const Problem& problem, Profile profile, size_t top_n = 1,
                                     int64_t max_simulations = 5000);

// The best plan under the exchange timing for each chip variant: exchange bandwidth per tile x SRAM per core
// (t10 sweep). A variant where no plan is accepted is a point without a plan. Under the calibrated timing
// (`timing` Calibrated) the fitted model has no bandwidth: one point per SRAM size, at the chip's bandwidth,
// its best plan proven by exhausting the model's search space.
struct ChipVariantPoint {
  CoreTiming timing = CoreTiming::Exchange;
  double exchange_bytes_per_cycle = 0;
  int64_t sram_bytes_per_core = 0;
  std::optional<ExchangeRankedPlan> best;
  bool proven = false;
  int64_t simulated = 0;
  double seconds = 0;
};
std::vector<ChipVariantPoint> sweep_chip(
    const Problem& problem, Profile profile, const std::vector<double>& exchange_bytes_per_cycle,
    const std::vector<int64_t>& sram_bytes_per_core, int64_t max_simulations,
    const std::function<void(const ChipVariantPoint&)>& on_point = nullptr,
    CoreTiming timing = CoreTiming::Exchange);
// The cycles a point is ranked by: its timing's total.
inline double sweep_cycles(const ChipVariantPoint& p) {
  return !p.best ? 0 : p.timing == CoreTiming::Calibrated ? p.best->calibrated_total : p.best->exchange_total;
}

}  // namespace mlsys::t10
