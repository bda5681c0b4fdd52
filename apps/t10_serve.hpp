// `t10 serve`: its command-line options and its run (apps/t10_serve.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace mlsys::t10 {

struct ServeArgs {
  std::string model_path, chip = "elk-1472", policy = "ours", trace_path, html_path, schedule_path;
  int64_t batch = 0, sequence = 0, cores = 0;  // batch and sequence: 0 when not given
  int layers = 0;
  double hbm_gbps = 0, seconds = 30;
  bool json_out = false, no_simulate = false;
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);
// 0 scheduled (and replayed, agreeing), 1 it does not fit or the replay disagrees; throws InputError.
int run_serve(const ServeArgs& args);

}  // namespace mlsys::t10
