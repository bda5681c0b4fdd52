// `bound`: a certified lower bound on the latency of every schedule the rule book accepts for a problem, with
// its certificate (the terms it sums, each with the rule that forces it; docs/bounds.md proves them).
// Exit codes: 0 printed, 2 malformed input or usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "sim/json_io.hpp"
#include "traces/bound_report.hpp"
#include "verifier/bound.hpp"

using namespace mlsys;

int main(int argc, char** argv) {
  CLI::App app{
      "A lower bound on the latency of every schedule of an MLSys 2026 problem (any grouping, "
      "recomputation, retention, granularity and traversal), with the terms it sums and the rule that "
      "forces each (docs/bounds.md).\nExit codes: 0 printed, 2 bad input or usage."};
  std::string problem_path, compute = "full-k";
  bool json_out = false, supernative = false;
  double timeout = 60;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_flag("--json", json_out, "print the certificate as JSON");
  app.add_option("--timeout", timeout,
                 "seconds; past it the best bound found so far is printed (still valid)")
      ->check(CLI::PositiveNumber)
      ->default_val(60);
  app.add_option("--matmul-compute", compute, "full-k or native-k (M24)")
      ->check(CLI::IsMember({"full-k", "native-k"}));
  app.add_flag("--allow-supernative-k", supernative, "bound the schedules that may use k above n_k (M6)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    ModelOptions options;
    options.matmul_compute = compute == "native-k" ? MatmulCompute::NativeK : MatmulCompute::FullK;
    options.allow_supernative_k = supernative;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    const CertifiedBound bound =
        certified_bound(problem, graph, options, [&] { return std::chrono::steady_clock::now() > deadline; });
    if (json_out) {
      std::cout << certified_bound_to_json(bound).dump(2) << "\n";
    } else {
      print_certified_bound(std::cout, bound);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
