// `t10 serve MODEL --requests FILE | --arrivals poisson|gamma ...`: request traffic on the chip with HBM
// (docs/t10-traffic.md). Parse, run, print: the scheduler, the pricing and the reports live in the libraries.
#include "sim/t10/t10_traffic.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "apps/t10_serve.hpp"
#include "sim/json_io.hpp"
#include "sim/t10/t10_requests.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/t10/t10_traffic_sim.hpp"
#include "sim/violation.hpp"
#include "solver/t10_traffic_pricing.hpp"
#include "traces/atomic_file.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/t10_traffic_report.hpp"

namespace mlsys::t10 {

void add_traffic_options(CLI::App* serve, TrafficArgs& a) {
  const std::string group = "Request traffic (docs/t10-traffic.md)";
  auto opt = [&](const std::string& name, auto& value, const std::string& help) {
    return serve->add_option(name, value, help)->group(group);
  };
  opt("--requests", a.requests_path,
      "a request file: JSON lines {\"arrival_ms\", \"prompt_tokens\", \"output_tokens\"[, \"id\"]}");
  opt("--arrivals", a.arrivals, "generate requests: poisson or gamma arrivals")
      ->check(CLI::IsMember({"poisson", "gamma"}));
  opt("--workload", a.workload, "a preset of lengths and rate for --arrivals: conversation")
      ->check(CLI::IsMember(workload_preset_names()));
  opt("--rate", a.rate, "requests per second (default: the preset's)")->check(CLI::PositiveNumber);
  opt("--cv", a.cv, "gamma arrivals: the gaps' coefficient of variation (1 is Poisson)")->check(CLI::PositiveNumber);
  opt("--count", a.count, "requests to generate (default 100)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  opt("--seed", a.seed, "the generator's seed (default 1)");
  opt("--prompt-dist", a.prompt_dist, "fixed, uniform or lognormal")
      ->check(CLI::IsMember({"fixed", "uniform", "lognormal"}));
  opt("--prompt-mean", a.prompt_mean, "mean prompt tokens")->check(CLI::PositiveNumber);
  opt("--prompt-spread", a.prompt_spread, "uniform: half-width; lognormal: standard deviation")
      ->check(CLI::NonNegativeNumber);
  opt("--output-dist", a.output_dist, "fixed, uniform or lognormal")
      ->check(CLI::IsMember({"fixed", "uniform", "lognormal"}));
  opt("--output-mean", a.output_mean, "mean output tokens")->check(CLI::PositiveNumber);
  opt("--output-spread", a.output_spread, "uniform: half-width; lognormal: standard deviation")
      ->check(CLI::NonNegativeNumber);
  opt("--max-prompt", a.max_prompt, "clip generated prompts to this many tokens")
      ->check(CLI::Range(int64_t{1}, kMaxRequestTokens));
  opt("--max-output", a.max_output, "clip generated outputs to this many tokens")
      ->check(CLI::Range(int64_t{1}, kMaxRequestTokens));
  opt("--write-requests", a.write_requests, "write the requests (generated or read) as JSON lines");
  opt("--scheduler", a.scheduler, "vllm, sarathi (default) or decode-first")
      ->check(CLI::IsMember(batch_scheduler_names()));
  opt("--max-batch", a.max_batch, "requests in one iteration (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  opt("--token-budget", a.token_budget, "tokens in one iteration (default: vllm 4096, sarathi 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  opt("--slo-ttft-ms", a.slo_ttft_ms, "time-to-first-token objective for goodput")->check(CLI::NonNegativeNumber);
  opt("--slo-tpot-ms", a.slo_tpot_ms, "time-per-output-token objective for goodput")->check(CLI::NonNegativeNumber);
  serve->add_flag("--exact", a.exact, "price every iteration at its own shape (no bucket, no interpolation)")
      ->group(group);
  serve->add_flag("--exact-tokens", a.exact_tokens,
                  "when not --exact, price each token count at itself instead of interpolating on a grid "
                  "(exact prefill prices, an option table per count)")
      ->group(group);
  opt("--kv-steps", a.kv_steps, "when not --exact, KV lengths round up to this many values an octave (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  opt("--options-cache", a.options_cache,
      "a file of option tables' plans: read if it exists (for this chip), written at the end; runs that share "
      "it skip the plan search");
  opt("--sample-layers", a.sample_layers,
      "when not --exact, time this many first layers (and the last) and extrapolate over the rest (default 2)")
      ->check(CLI::Range(1, 1000));
  opt("--max-iterations", a.max_iterations,
      "stop after this many iterations (default 1000000); requests that need more are refused up front")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  opt("--time-limit", a.time_limit,
      "stop the run after this many seconds, plan search included; what ran is reported, exit 1")
      ->check(CLI::PositiveNumber);
  opt("--price-check", a.price_samples, "iterations priced exactly to check the approximations (default 20)")
      ->check(CLI::Range(0, 100000));
}

bool traffic_requested(const ServeArgs& a) {
  return !a.traffic.requests_path.empty() || !a.traffic.arrivals.empty();
}

namespace {

LengthDistribution::Kind length_kind(const std::string& name) {
  if (name == "uniform") return LengthDistribution::Kind::Uniform;
  if (name == "lognormal") return LengthDistribution::Kind::Lognormal;
  return LengthDistribution::Kind::Fixed;
}

std::vector<ServingRequest> requests_for(const TrafficArgs& t) {
  if (!t.requests_path.empty()) {
    if (!t.arrivals.empty())
      throw InputError(t.requests_path, "--arrivals", "", "a request file or generated arrivals, not both");
    return read_requests_file(t.requests_path);
  }
  Workload w;
  if (!t.workload.empty()) w = *workload_preset(t.workload);
  w.arrivals.kind = t.arrivals == "gamma" ? ArrivalProcess::Kind::Gamma : ArrivalProcess::Kind::Poisson;
  w.arrivals.cv = t.cv;
  if (t.rate > 0) w.arrivals.rate_per_s = t.rate;
  w.requests = t.count;
  w.seed = t.seed;
  auto lengths = [&](LengthDistribution& d, const std::string& dist, double mean, double spread, int64_t max,
                     const char* option) {
    if (mean > 0) d = {length_kind(dist), mean, spread, 1, kMaxRequestTokens};
    if (d.mean <= 0) throw InputError("", option, "", "required without --workload");
    if (max > 0) d.max = std::max<int64_t>(d.min, max);
  };
  lengths(w.prompt, t.prompt_dist, t.prompt_mean, t.prompt_spread, t.max_prompt, "--prompt-mean");
  lengths(w.output, t.output_dist, t.output_mean, t.output_spread, t.max_output, "--output-mean");
  return generate_requests(w);
}

// The run's options from the command line; nullopt (after saying why) when the weights alone fill the HBM.
// Throws InputError when the requests need more iterations than the limit.
std::optional<TrafficOptions> traffic_options_for(const TrafficArgs& t, const ServingModel& model,
                                                  const ServingChip& chip,
                                                  const std::vector<ServingRequest>& requests) {
  TrafficOptions options;
  options.scheduler = *batch_scheduler_from(t.scheduler);
  options.max_batch = t.max_batch;
  options.token_budget = t.token_budget > 0 ? t.token_budget : default_token_budget(options.scheduler);
  options.kv_bytes_per_token = model.kv_bytes_per_token();
  options.slo_ttft_ms = t.slo_ttft_ms;
  options.slo_tpot_ms = t.slo_tpot_ms;
  options.max_iterations = t.max_iterations;
  if (const int64_t least = least_iterations(requests, options.max_batch); least > options.max_iterations)
    throw InputError(t.requests_path, "--max-iterations", "",
                     "the requests need at least " + std::to_string(least) +
                         " iterations (their decode tokens over --max-batch, or the longest output), above the "
                         "limit of " + std::to_string(options.max_iterations) +
                         "; each iteration is kept and reported, so raise the limit only with the memory for it");
  options.host_link_bytes_per_ms = chip.host_link_bytes_per_ms();
  if (chip.hbm_capacity_bytes > 0) {
    options.kv_capacity_bytes = chip.total_hbm_capacity_bytes() - static_cast<double>(model.weight_bytes());
    if (options.kv_capacity_bytes <= 0) {
      std::cerr << "error: the weights need " << model.weight_bytes() << " B of HBM, the chip has "
                << static_cast<int64_t>(chip.total_hbm_capacity_bytes()) << " B\n";
      return std::nullopt;
    }
  }
  return options;
}

// The pricer of the way --parallel asks for (docs/t10-chips.md#traffic): flat, tensor, or under auto the
// faster of the two on one decode iteration of the run's size (the largest batch the requests allow, at their
// mean context halfway through their output). Each pricer reads the options cache for its own chip.
struct TrafficWay {
  std::vector<std::unique_ptr<TrafficPricer>> pricers;  // flat, tensor: those asked for
  std::vector<std::string> names;
  size_t chosen = 0;
  nlohmann::json options = nlohmann::json::array();
  TrafficPricer& pricer() { return *pricers[chosen]; }
};

TrafficWay traffic_way(const ServeArgs& a, const ServingModel& model, const ServingChip& chip,
                       const PricingOptions& pricing, const std::vector<ServingRequest>& requests,
                       int64_t max_batch) {
  const std::string way = chip.chip.chips > 1 ? a.parallel : "flat";
  if (way == "pipeline")
    throw InputError(a.model_path, "--parallel", "",
                     "request traffic runs flat or tensor: a pipeline's micro-batches would be different "
                     "iterations in flight at once (docs/t10-chips.md#traffic)");
  TrafficWay w;
  for (const char* name : {"flat", "tensor"}) {
    if (way != name && way != "auto") continue;
    PricingOptions options = pricing;
    options.tensor_parallel = std::string(name) == "tensor";
    w.pricers.push_back(std::make_unique<TrafficPricer>(model, chip, options));
    w.names.push_back(name);
    const std::string& cache = a.traffic.options_cache;
    std::string why_not;
    if (!cache.empty() && std::filesystem::exists(cache) &&
        !w.pricers.back()->option_cache().load(cache, w.pricers.back()->pricing_chip().chip, why_not))
      std::cerr << "t10 serve: " << name << ": not using " << cache << ": " << why_not << "\n";
  }
  if (w.pricers.size() < 2) return w;
  double context = 0;
  for (const ServingRequest& r : requests)
    context += static_cast<double>(r.prompt_tokens) + static_cast<double>(r.output_tokens) / 2;
  const int64_t batch = std::min<int64_t>(max_batch, static_cast<int64_t>(requests.size()));
  const int64_t length = std::max<int64_t>(1, std::llround(context / static_cast<double>(requests.size())));
  const IterationShape decode{batch, {{batch, 1, length, length}}};
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < w.pricers.size(); ++i) {
    nlohmann::json o{{"parallelism", w.names[i]}, {"decode_batch", batch}, {"decode_context", length}};
    try {
      const double ms = w.pricers[i]->price(decode).ms;
      o["decode_ms"] = ms;
      if (ms < best) best = ms, w.chosen = i;
    } catch (const std::invalid_argument& e) {
      o["why_not"] = e.what();
    }
    w.options.push_back(std::move(o));
  }
  if (!std::isfinite(best)) throw std::invalid_argument("no way to run the requests' decode fits the chips");
  return w;
}

}  // namespace

int run_serve_traffic(const ServeArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  const TrafficArgs& t = a.traffic;
  if (a.batch > 0 || a.sequence > 0)
    throw InputError(a.model_path, a.batch > 0 ? "--batch" : "--seq", "",
                     "request traffic sets each iteration's batch and KV lengths itself");
  if (!a.schedule_path.empty())
    throw InputError(a.schedule_path, "--schedule", "", "a given schedule prices one step, not request traffic");
  if (a.no_simulate && !a.trace_path.empty())
    throw InputError(a.trace_path, "--trace", "", "the trace is the SystemC replay's: drop --no-simulate");
  const ServingChip chip = serving_chip_for(a);
  const std::vector<ServingRequest> requests = requests_for(t);
  if (!t.write_requests.empty()) write_file_atomic(t.write_requests, requests_to_jsonl(requests));
  const nlohmann::json doc = read_json_file(a.model_path);
  if (!doc.is_array())
    throw InputError(a.model_path, "", "",
                     "request traffic needs an Elk model file, whose shapes follow each iteration; an imported "
                     "step's shapes were fixed by mlsys-import");
  const ServingModel model = ServingModel::read_elk(doc, a.model_path, a.layers, chip);
  print_model_warnings(a.model_path, model.warnings());

  std::optional<TrafficOptions> fits = traffic_options_for(t, model, chip, requests);
  if (!fits) return 1;
  const TrafficOptions& options = *fits;

  PricingOptions pricing;
  const std::string policy = a.policy == "ours" ? "elk" : a.policy;  // a search per iteration would not end
  pricing.policy = *serving_policy_from(policy);
  pricing.exact = t.exact;
  pricing.exact_tokens = t.exact_tokens;
  pricing.kv_steps_per_octave = t.kv_steps;
  pricing.sample_layers = t.sample_layers;
  pricing.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  TrafficWay way = traffic_way(a, model, chip, pricing, requests, options.max_batch);
  TrafficPricer& pricer = way.pricer();
  // The tables are kept however the run ends: they cost minutes on a large chip.
  struct SaveTables {
    std::function<void()> save;
    ~SaveTables() { save(); }
  } save_on_exit{[&] {
    if (!t.options_cache.empty())
      write_file_atomic(t.options_cache, pricer.option_cache().to_json_text(pricer.pricing_chip().chip));
  }};
  const IterationPricer price = [&](const IterationShape& s) { return pricer.price(s); };
  auto progress = [](const std::string& line) { std::cerr << line << "\n"; };
  std::cerr << "t10 serve: " << requests.size() << " requests, scheduler " << t.scheduler << ", "
            << (t.exact ? "exact pricing" : "bucketed pricing") << "\n";
  // The deadline is asked between iterations; an iteration's plan search is not interrupted, so the run can
  // pass it by one iteration's pricing.
  auto stop = [&]() -> std::string {
    if (t.time_limit <= 0) return "";
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return elapsed > t.time_limit ? "the time limit of " + std::to_string(t.time_limit) + " s (--time-limit)" : "";
  };
  TrafficRun run;
  try {
    run = run_traffic(requests, options, price, progress, stop);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }

  TrafficReport report;
  report.model = a.model_path;
  report.chip = chip.chip.name;
  report.run = &run;
  report.metrics = summarize_traffic(run, options);
  report.options = options;
  report.hbm_capacity_bytes = chip.total_hbm_capacity_bytes();
  report.weight_bytes = static_cast<double>(model.weight_bytes());
  try {
    report.ttft_bound = check_ttft_bound(run, options, pricer);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  try {
    if (!t.exact) report.price_check = check_prices(run, pricer, t.price_samples);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: the price check: " << e.what() << "\n";
    return 1;
  }
  report.pricing = {
      {"policy", policy},
      {"parallelism", way.names[way.chosen]},
      {"parallel_options", way.options},
      {"exact", t.exact},
      {"kv_steps_per_octave", t.exact ? 0 : t.kv_steps},
      {"sample_layers", t.exact ? 0 : pricing.sample_layers},
      {"token_grid",
       t.exact || t.exact_tokens ? "none" : "1, 2, 4, 8, 16, then 4 points an octave (interpolated)"},
      {"approximate_iterations", report.metrics.approximate_iterations},
      {"timelines", pricer.timelines()},
      {"memo_hits", pricer.memo_hits()},
      {"option_tables", pricer.option_cache().tables()},
      {"option_tables_from_file", pricer.option_cache().tables_from_file()},
      {"options_seconds", pricer.option_cache().seconds()}};
  if (!a.no_simulate && run.stopped.empty()) {
    PerfettoTrace trace("t10 serve: " + a.model_path);
    report.replay = replay_traffic(requests, options, price, run, a.trace_path.empty() ? nullptr : &trace);
    if (!a.trace_path.empty()) trace.write(a.trace_path);
  }
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!a.html_path.empty()) write_file_atomic(a.html_path, traffic_report_html(report));
  if (a.json_out)
    std::cout << traffic_json(report).dump(1) << "\n";
  else
    std::cout << traffic_text(report);
  if (!run.stopped.empty()) {
    std::cerr << "error: the run stopped at " << run.stopped << " after " << run.iterations.size()
              << " iterations: " << report.metrics.completed << " of " << requests.size()
              << " requests finished (no SystemC replay of a stopped run)\n";
    return 1;
  }
  if (report.metrics.unfinished > 0) {
    std::cerr << "error: " << report.metrics.unfinished << " admitted requests did not finish\n";
    return 1;
  }
  if (report.replay && !report.replay->agrees) {
    std::cerr << "error: the SystemC replay disagrees: " << report.replay->disagreement << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mlsys::t10
