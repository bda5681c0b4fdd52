// `bound`: a certified lower bound on the latency of every schedule the rule book accepts for a problem, with
// its certificate (the terms it sums, each with the rule that forces it; docs/bounds.md proves them).
// Exit codes: 0 printed, 2 malformed input or usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "apps/cli_inputs.hpp"
#include "sim/json_io.hpp"
#include "traces/bound_report.hpp"
#include "verifier/bound.hpp"

using namespace mlsys;

int main(int argc, char** argv) {
  CLI::App app{
      "A lower bound on the latency of every schedule of an MLSys 2026 problem (any grouping, "
      "recomputation, retention, granularity and traversal), with the terms it sums and the rule that "
      "forces each (docs/bounds.md).\nExit codes: 0 printed, 2 bad input or usage."};
  std::string problem_path;
  bool json_out = false;
  double timeout = 60;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_flag("--json", json_out, "print the certificate as JSON");
  app.add_option("--timeout", timeout,
                 "seconds; past it the best bound found so far is printed (still valid)")
      ->check(CLI::PositiveNumber)
      ->default_val(60);
  double cover_seconds = 60;
  int64_t cover_sets = CoverLimits{}.max_subgraphs;
  bool progress = false;
  app.add_option("--cover-seconds", cover_seconds,
                 "seconds for the cover bound (docs/bounds.md#theorem-6); 0 skips it. Past them the best "
                 "cover bound proven so far is kept (still valid)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(60);
  app.add_option("--cover-max-sets", cover_sets,
                 "the cover bound is not attempted on graphs with more connected sets of ops than this")
      ->check(CLI::PositiveNumber)
      ->default_val(CoverLimits{}.max_subgraphs);
  app.add_flag("--progress", progress, "report the cover bound's rounds on stderr");
  ModelFlags model_flags;
  model_flags.add_model_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    const ModelOptions options = model_flags.model();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    CertifiedBound bound =
        certified_bound(problem, graph, options, [&] { return std::chrono::steady_clock::now() > deadline; });
    // The cover bound gets what the timeout leaves, so that --timeout bounds the whole run.
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (cover_seconds > 0 && left > 0) {
      const CoverLimits limits{std::min(cover_seconds, left), cover_sets};
      auto report = [&](const std::string& line) {
        if (progress) std::cerr << line << "\n";
      };
      add_cover_bound(bound, cover_bound(problem, graph, options, limits, report));
    }
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
