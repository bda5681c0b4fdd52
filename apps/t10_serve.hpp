// `t10 serve`: its command-line options and its run (apps/t10_serve.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace mlsys::t10 {

// Request traffic (apps/t10_traffic.cpp, docs/t10-traffic.md): a request file or a generated workload.
struct TrafficArgs {
  std::string requests_path, arrivals, workload, write_requests, options_cache;
  std::string prompt_dist = "fixed", output_dist = "fixed";
  double rate = 0, cv = 1, prompt_mean = 0, prompt_spread = 0, output_mean = 0, output_spread = 0;
  int64_t count = 100, max_prompt = 0, max_output = 0;
  uint64_t seed = 1;
  std::string scheduler = "sarathi";
  int64_t max_batch = 64, token_budget = 0, kv_steps = 32;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  bool exact = false, exact_tokens = false;
  int price_samples = 20;
  int sample_layers = 2;
  int64_t max_iterations = 1'000'000;  // kDefaultMaxIterations (sim/t10/t10_traffic.hpp)
  double time_limit = 0;               // seconds of wall time for the whole run; 0: none
};

struct ServeArgs {
  std::string model_path, chip = "elk-1472", policy = "ours", trace_path, html_path, schedule_path;
  std::string parallel = "flat";               // over linked chips (solver/t10_parallel.hpp)
  int64_t batch = 0, sequence = 0, cores = 0;  // batch and sequence: 0 when not given
  int layers = 0;
  double hbm_gbps = 0, seconds = 30;
  bool json_out = false, no_simulate = false;
  TrafficArgs traffic;
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);
// 0 scheduled (and replayed, agreeing), 1 it does not fit or the replay disagrees; throws InputError.
int run_serve(const ServeArgs& args);

// The chip a serve command names (a preset or a chip file, with --cores and --hbm-gbps over it); throws
// InputError naming the file and the field.
struct ServingChip;
ServingChip read_serving_chip(const std::string& spec);
std::string serving_chip_presets_text();  // the presets' names, comma-separated, for --help
ServingChip serving_chip_for(const ServeArgs& args);
// The model file's warnings on stderr: the first three, then how many more.
void print_model_warnings(const std::string& model_path, const std::vector<std::string>& warnings);

// The traffic form of `t10 serve` (apps/t10_traffic.cpp).
void add_traffic_options(CLI::App* serve, TrafficArgs& args);
bool traffic_requested(const ServeArgs& args);
int run_serve_traffic(const ServeArgs& args);

}  // namespace mlsys::t10
