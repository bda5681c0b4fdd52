// What the schedule CLIs (verify, simulate, report, mlsys, sweep, bound) share: the model flags with their
// defaults, and reading a problem with its graph and a schedule. Thin glue: the rules live in the library.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "sim/json_io.hpp"
#include "verifier/verify.hpp"

namespace mlsys {

struct ModelFlags {
  std::string compute = "full-k";
  bool supernative = false;
  int64_t max_steps = kDefaultMaxSteps;

  // --matmul-compute and --allow-supernative-k: every program that evaluates schedules takes them.
  void add_model_to(CLI::App& app) {
    app.add_option("--matmul-compute", compute,
                   "MatMul compute per k-step: full-k (base*k/K) or native-k (base*k/n_k) (M24)")
        ->check(CLI::IsMember(kMatmulComputeNames));
    app.add_flag("--allow-supernative-k", supernative, "lift the limit k <= native width (M6)");
  }
  // Those and --max-steps (`walks` says what the budget limits).
  void add_to(CLI::App& app, const std::string& walks) {
    add_model_to(app);
    app.add_option("--max-steps", max_steps, "largest number of steps " + walks + " walks one by one")
        ->check(CLI::PositiveNumber)
        ->default_val(kDefaultMaxSteps);
  }
  ModelOptions model() const { return parse_model_options(compute, supernative); }
  VerifyOptions options() const {
    VerifyOptions o;
    o.model = model();
    o.max_walk_steps = max_steps;
    return o;
  }
};

struct ScheduleInputs {
  Problem problem;
  Graph graph;
  Schedule schedule;
};

// Throws InputError (exit 2) naming the file, the field and the rule.
inline ScheduleInputs read_schedule_inputs(const std::string& problem_path,
                                           const std::string& solution_path) {
  ScheduleInputs in;
  in.problem = load_problem(problem_path);
  in.graph = analyze_graph(in.problem, problem_path);
  in.schedule = load_schedule(solution_path, in.problem);
  return in;
}

// --shard I/N of the sweeps (sweep, t10 sweep MODEL): 0 <= I < N.
inline std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      size_t a = 0, b = 0;
      const int i = std::stoi(text.substr(0, slash), &a), n = std::stoi(text.substr(slash + 1), &b);
      if (a == slash && b == text.size() - slash - 1 && n >= 1 && i >= 0 && i < n) return {i, n};
    }
  } catch (const std::exception&) {
  }
  throw InputError("", "--shard", "usage", "expected I/N with 0 <= I < N, got \"" + text + "\"");
}

}  // namespace mlsys
