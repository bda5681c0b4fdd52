// Pricing the iterations of a serving run (docs/t10-traffic.md#pricing): each iteration is a program of the
// serving step model (ServingModel::instantiate), scheduled by a per-operator policy (elk or fastest) and
// timed by its timeline, exactly as `t10 serve` times one decode step. Option tables are computed once per
// operator shape. Unless `exact`, three approximations make thousands of iterations affordable, and the
// price check reports what they cost:
// - identical layers: the timeline of the first `sample_layers` layers and the last one, and of one layer
//   more, extrapolated linearly to every layer;
// - tokens: the price at the two neighbouring points of a grid (powers of two up to 16, then four points an
//   octave), interpolated linearly (unless `exact_tokens`);
// - query and KV lengths (a chunk's new positions, context and cached) rounded up to one of `kv_steps_per_octave` values an octave (exact below
//   that many, at most 1/steps above the length).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/t10/t10_traffic.hpp"
#include "solver/t10_serving.hpp"

namespace mlsys::t10 {

struct PricingOptions {
  ServingPolicy policy = ServingPolicy::Elk;  // elk or fastest (a search per iteration would not end)
  bool exact = false;
  // Not `exact`: each token count is priced at itself (false: interpolated on the grid below). A weight
  // product's price is not smooth in its token count (its layouts follow the count's factors), so this is
  // what keeps a prefill iteration's price exact, at an option table per count.
  bool exact_tokens = false;
  int sample_layers = 2;
  int64_t kv_steps_per_octave = 32;
  int threads = 2;  // option tables computed at once
  // Tensor parallelism over the chip's linked chips (docs/t10-chips.md#traffic): each iteration runs as one
  // chip's Megatron share with its all-reduces, on one chip's cores and HBM. false: one flat partition.
  bool tensor_parallel = false;
  std::function<void(const std::string&)> progress;  // told every 5 s of work: tables and timelines so far
};

class TrafficPricer {
 public:
  // Throws std::invalid_argument for a policy other than elk and fastest.
  TrafficPricer(const ServingModel& model, const ServingChip& chip, PricingOptions options);
  // The iteration's price, exact or approximated as the options say (then `exact` is false). Throws
  // std::invalid_argument when an operator cannot fit a core.
  IterationPrice price(const IterationShape& shape);
  // The iteration's own timeline, every layer, no bucket (cached too).
  IterationPrice price_exactly(const IterationShape& shape);

  int64_t timelines() const { return timelines_; }
  int64_t memo_hits() const { return hits_; }
  const ServingOptionCache& option_cache() const { return cache_; }
  // The chip each iteration's program is scheduled on (one chip of the system under tensor parallelism).
  const ServingChip& pricing_chip() const { return chip_; }
  ServingOptionCache& option_cache() { return cache_; }

 private:
  IterationPrice timeline_price(const IterationShape& shape, int first_layers);
  IterationPrice layered(const IterationShape& shape);

  const ServingModel& model_;
  ServingChip system_, chip_;
  PricingOptions options_;
  ServingOptionCache cache_;
  std::map<std::string, IterationPrice> memo_;
  int64_t timelines_ = 0, hits_ = 0;
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
};

// The grid of token counts between which prices are interpolated: 1, 2, 4, 8, 16, 20, 24, 28, 32, 40, ...
std::pair<int64_t, int64_t> token_grid_neighbours(int64_t tokens);

// The price check: `samples` iterations of the run (evenly spaced, and the longest), priced exactly.
struct PriceCheck {
  int64_t sampled = 0;
  double largest_relative_difference = 0;
  int worst_iteration = -1;
  bool below_one_percent = true;
};
PriceCheck check_prices(const TrafficRun& run, TrafficPricer& pricer, int samples);

// Each finished request's TTFT against its prompt's prefill alone on the whole chip, from its arrival, in the
// chunks the scheduler would give it alone (the token budget's; whole for the schedulers that do not chunk),
// priced as the run is. Throws std::invalid_argument naming the request when that prefill cannot fit.
struct TtftBoundCheck {
  int64_t checked = 0, violations = 0;
  double worst_slack_ms = 0;  // the smallest TTFT less its bound (negative: a violation)
  std::string worst_request;
};
TtftBoundCheck check_ttft_bound(const TrafficRun& run, const TrafficOptions& options, TrafficPricer& pricer);

}  // namespace mlsys::t10
