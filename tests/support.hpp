// Helpers shared by the test suites: paths to checked-in data and running the CLI binaries.
#pragma once

#include <string>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "verifier/verify.hpp"

namespace mlsys::test {

std::string source_path(const std::string& relative);  // relative to the repository root

struct Loaded {
  Problem problem;
  Graph graph;
  Schedule schedule;
};
Loaded load(const std::string& problem_path, const std::string& solution_path);

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs `binary args...` with stdout and stderr captured into files (no shell quoting issues for our paths).
CommandResult run_command(const std::string& binary, const std::string& args);

// A fresh temporary directory for the calling test.
std::string temp_dir(const std::string& name);
void write_text(const std::string& path, const std::string& text);

}  // namespace mlsys::test
