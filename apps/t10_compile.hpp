// `t10 compile`: its command-line options and its run (apps/t10_compile.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace mlsys::t10 {

struct CompileArgs {
  std::string model_path, out_path, trace_path, html_path, values_path, reconcile = "exact";
  std::string chip, parallel = "flat";  // --chip (default the model's) and --parallel over its chips
  int64_t sram_bytes = 0;  // 0: the chip's
  bool json_out = false, no_simulate = false, functional = false;
};

CLI::App* add_compile_command(CLI::App& app, CompileArgs& args);

// `t10 sweep MODEL`: the model compiled for every chip variant (SRAM x exchange bandwidth), a shard of them
// with --shard I/N; `t10 merge DIR... -o OUT` combines the shards' CSVs.
bool is_model_file(const std::string& path);  // .onnx, a T10 model file or a graph problem
int run_model_sweep(const std::string& model_path, const std::vector<int64_t>& srams,
                    const std::vector<double>& exchange, const std::string& shard, const std::string& out_dir);
int run_model_merge(const std::vector<std::string>& dirs, const std::string& out_dir);
// 0 compiled (and simulated), 1 it does not fit or the simulation disagrees, throws InputError on bad input.
int run_compile(const CompileArgs& args);

}  // namespace mlsys::t10
