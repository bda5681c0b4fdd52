// What the schedule CLIs (verify, simulate, report) share: the model flags with their defaults, and reading
// a problem with its graph and a schedule. Thin glue: the rules live in the library.
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

  // --matmul-compute, --allow-supernative-k and --max-steps (`walks` says what the budget limits).
  void add_to(CLI::App& app, const std::string& walks) {
    app.add_option("--matmul-compute", compute,
                   "MatMul compute per k-step: full-k (base*k/K) or native-k (base*k/n_k)")
        ->check(CLI::IsMember({"full-k", "native-k"}));
    app.add_flag("--allow-supernative-k", supernative, "lift the limit k <= native width (M6)");
    app.add_option("--max-steps", max_steps, "largest number of steps " + walks + " walks one by one")
        ->check(CLI::PositiveNumber)
        ->default_val(kDefaultMaxSteps);
  }
  VerifyOptions options() const {
    VerifyOptions o;
    o.model.matmul_compute = compute == "native-k" ? MatmulCompute::NativeK : MatmulCompute::FullK;
    o.model.allow_supernative_k = supernative;
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
inline ScheduleInputs read_schedule_inputs(const std::string& problem_path, const std::string& solution_path) {
  ScheduleInputs in;
  in.problem = load_problem(problem_path);
  in.graph = analyze_graph(in.problem, problem_path);
  in.schedule = load_schedule(solution_path, in.problem);
  return in;
}

}  // namespace mlsys
