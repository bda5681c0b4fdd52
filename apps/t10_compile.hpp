// `t10 compile`: its command-line options and its run (apps/t10_compile.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace mlsys::t10 {

struct CompileArgs {
  std::string model_path, out_path, trace_path, html_path, reconcile = "exact";
  int64_t sram_bytes = 0;  // 0: the chip's
  bool json_out = false, no_simulate = false, functional = false;
};

CLI::App* add_compile_command(CLI::App& app, CompileArgs& args);
// 0 compiled (and simulated), 1 it does not fit or the simulation disagrees, throws InputError on bad input.
int run_compile(const CompileArgs& args);

}  // namespace mlsys::t10
