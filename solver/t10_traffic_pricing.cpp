#include "solver/t10_traffic_pricing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/t10/t10_parallel.hpp"

namespace mlsys::t10 {

namespace {

std::string shape_key(const IterationShape& s, int first_layers) {
  std::string key = std::to_string(first_layers) + "|" + std::to_string(s.tokens);
  for (const AttentionGroup& g : s.groups)
    key += "|" + std::to_string(g.requests) + "," + std::to_string(g.query) + "," + std::to_string(g.context) +
           "," + std::to_string(g.cached);
  return key;
}

IterationPrice lerp(const IterationPrice& a, const IterationPrice& b, double t) {
  IterationPrice p;
  p.ms = a.ms + t * (b.ms - a.ms);
  p.hbm_bytes = a.hbm_bytes + t * (b.hbm_bytes - a.hbm_bytes);
  p.compute_ms = a.compute_ms + t * (b.compute_ms - a.compute_ms);
  p.hbm_busy_ms = a.hbm_busy_ms + t * (b.hbm_busy_ms - a.hbm_busy_ms);
  p.exact = false;
  return p;
}

// `v` rounded up to one of `steps` values per octave (exact up to `steps`): at most 1/steps above it.
int64_t round_up_relative(int64_t v, int64_t steps) {
  if (steps < 1 || v <= steps) return v;
  int64_t step = 1;
  while (v / step >= 2 * steps) step *= 2;
  return (v + step - 1) / step * step;
}

// Query, context and cached lengths rounded up to `steps` per octave, and groups that became equal merged.
IterationShape bucketed(const IterationShape& s, int64_t steps) {
  if (steps <= 0) return s;
  auto up = [&](int64_t v) { return round_up_relative(v, steps); };
  IterationShape out{s.tokens, {}};
  for (AttentionGroup g : s.groups) {
    // A decode attends over its cached positions (context = cached); a prefill chunk over the cached ones
    // and its own new positions (context = cached + query): both keep their form when rounded.
    const bool chunk = g.context > g.cached;
    g.cached = g.cached > 0 ? up(g.cached) : 0;
    if (chunk) {
      g.query = up(g.query);
      g.context = g.cached + g.query;
    } else {
      g.context = g.cached;
    }
    bool merged = false;
    for (AttentionGroup& h : out.groups)
      if (h.query == g.query && h.context == g.context && h.cached == g.cached) {
        h.requests += g.requests;
        merged = true;
        break;
      }
    if (!merged) out.groups.push_back(g);
  }
  return out;
}

}  // namespace

std::pair<int64_t, int64_t> token_grid_neighbours(int64_t tokens) {
  // Each grid point costs a weight product's option tables, the dearest work of a run: powers of two up to
  // 16, where a decode step's price hardly moves with its tokens, then four points an octave (16, 20, 24,
  // 28, 32, 40, ...), where a prefill's compute grows with them and its layouts change.
  if (tokens <= 16) {
    int64_t lo = 1;
    while (lo * 2 <= tokens) lo *= 2;
    return {lo, lo == tokens ? lo : lo * 2};
  }
  int64_t octave = 16;
  while (octave * 2 <= tokens) octave *= 2;
  const int64_t step = octave / 4;
  const int64_t lo = octave + (tokens - octave) / step * step;
  return {lo, lo == tokens ? lo : lo + step};
}

TrafficPricer::TrafficPricer(const ServingModel& model, const ServingChip& chip, PricingOptions options)
    : model_(model), system_(chip), chip_(chip), options_(std::move(options)) {
  if (options_.policy != ServingPolicy::Elk && options_.policy != ServingPolicy::Fastest)
    throw std::invalid_argument(std::string("policy ") + to_string(options_.policy) +
                                " searches each program: a serving run prices each iteration with elk or fastest");
  if (options_.tensor_parallel) {
    if (system_.chip.chips < 2)
      throw std::invalid_argument("tensor parallelism needs a chip file of several chips");
    chip_ = single_chip(system_);
  }
}

IterationPrice TrafficPricer::timeline_price(const IterationShape& shape, int first_layers) {
  const std::string key = shape_key(shape, first_layers);
  if (const auto found = memo_.find(key); found != memo_.end()) {
    ++hits_;
    return found->second;
  }
  ServingProgram program = model_.instantiate(shape, first_layers);
  if (options_.tensor_parallel) {
    if (!has_tensor_shards(program))
      throw std::invalid_argument("the model file gives no data flow to split its operators by");
    program = tensor_parallel_share(program, system_.chip.chips, system_, chip_.chip);
  }
  cache_.prefetch(program.program, options_.threads);
  ServeOptions serve_options;
  serve_options.policy = options_.policy;
  serve_options.baselines = false;
  const ServingResult r = serve(program, chip_, serve_options, &cache_);
  ++timelines_;
  if (options_.progress && std::chrono::steady_clock::now() - last_progress_ > std::chrono::seconds(5)) {
    last_progress_ = std::chrono::steady_clock::now();
    options_.progress("t10 serve: " + std::to_string(cache_.tables()) + " option tables (" +
                      std::to_string(static_cast<int64_t>(cache_.seconds())) + " s), " +
                      std::to_string(timelines_) + " timelines");
  }
  if (r.timeline.overflow) throw std::invalid_argument("an iteration cannot fit: " + r.timeline.overflow->message());
  IterationPrice p;
  p.ms = chip_.cycles_to_ms(r.timeline.makespan);
  p.hbm_bytes = r.timeline.hbm_bytes;
  p.compute_ms = chip_.cycles_to_ms(r.timeline.compute_cycles);
  p.hbm_busy_ms = chip_.cycles_to_ms(r.timeline.hbm_busy_cycles);
  memo_.emplace(key, p);
  return p;
}

IterationPrice TrafficPricer::layered(const IterationShape& shape) {
  const int k = options_.sample_layers, layers = model_.layers();
  if (k < 1 || layers <= k + 2) return timeline_price(shape, 0);
  // Layers k+1 .. N-2 are the same program as layer k: each adds what layer k added.
  const IterationPrice a = timeline_price(shape, k), b = timeline_price(shape, k + 1);
  IterationPrice p = lerp(a, b, static_cast<double>(layers - k - 1));
  return p;
}

IterationPrice TrafficPricer::price_exactly(const IterationShape& shape) { return timeline_price(shape, 0); }

IterationPrice TrafficPricer::price(const IterationShape& shape) {
  if (options_.exact) return price_exactly(shape);
  const IterationShape b = bucketed(shape, options_.kv_steps_per_octave);
  const auto [lo, hi] = options_.exact_tokens ? std::pair{b.tokens, b.tokens} : token_grid_neighbours(b.tokens);
  IterationShape at_lo = b, at_hi = b;
  at_lo.tokens = lo;
  at_hi.tokens = hi;
  IterationPrice p = lo == hi ? layered(at_lo)
                              : lerp(layered(at_lo), layered(at_hi),
                                     static_cast<double>(b.tokens - lo) / static_cast<double>(hi - lo));
  p.exact = false;
  return p;
}

PriceCheck check_prices(const TrafficRun& run, TrafficPricer& pricer, int samples) {
  PriceCheck c;
  const int n = static_cast<int>(run.iterations.size());
  if (n == 0 || samples <= 0) return c;
  std::vector<int> picked;
  for (int s = 0; s < samples && s < n; ++s) picked.push_back(static_cast<int>((static_cast<int64_t>(s) * n) / std::min(samples, n)));
  int longest = 0;
  for (int i = 0; i < n; ++i)
    if (run.iterations[i].price.ms > run.iterations[longest].price.ms) longest = i;
  picked.push_back(longest);
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  for (int i : picked) {
    const IterationRecord& it = run.iterations[i];
    const IterationPrice exact = pricer.price_exactly(it.shape);
    const double diff = exact.ms > 0 ? std::abs(it.price.ms - exact.ms) / exact.ms : 0;
    if (diff > c.largest_relative_difference || c.worst_iteration < 0) {
      c.largest_relative_difference = diff;
      c.worst_iteration = i;
    }
    ++c.sampled;
  }
  c.below_one_percent = c.largest_relative_difference < 0.01;
  return c;
}

TtftBoundCheck check_ttft_bound(const TrafficRun& run, const TrafficOptions& options, TrafficPricer& pricer) {
  auto prefill_alone = [&](int64_t prompt) {
    const int64_t chunk = options.scheduler == BatchScheduler::Sarathi ? options.token_budget : prompt;
    double ms = 0;
    for (int64_t done = 0; done < prompt; done += std::min(chunk, prompt - done)) {
      const int64_t q = std::min(chunk, prompt - done);
      ms += pricer.price({q, {{1, q, done + q, done}}}).ms;
    }
    return ms;
  };
  TtftBoundCheck bound;
  for (const RequestOutcome& o : run.requests) {
    if (o.status != RequestOutcome::Status::Finished) continue;
    double alone = 0;
    try {
      alone = prefill_alone(o.request.prompt_tokens);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("request " + o.request.id + "'s prefill alone: " + e.what());
    }
    const double slack = o.ttft_ms() - alone;
    if (bound.checked == 0 || slack < bound.worst_slack_ms) {
      bound.worst_slack_ms = slack;
      bound.worst_request = o.request.id;
    }
    ++bound.checked;
    bound.violations += slack < -1e-9 * std::max(1.0, alone);
  }
  return bound;
}

}  // namespace mlsys::t10
