// `report`: one self-contained HTML page for a schedule (traces/html_report). Exit codes as verify's: 0
// valid, 1 the schedule breaks a rule (the page shows where and why), 2 malformed input or bad usage.
#include <CLI/CLI.hpp>
#include <iostream>

#include "sim/json_io.hpp"
#include "traces/html_report.hpp"
#include "traces/report.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;

extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{
      "Write an HTML report of a schedule: DAG, timeline, fast-memory occupancy, per-subgraph table.\n"
      "Exit codes: 0 valid, 1 the schedule breaks a rule (the report shows it), 2 bad input or usage."};
  std::string problem_path, solution_path, out_path, compute = "full-k";
  bool supernative = false;
  int64_t max_steps = kDefaultMaxSteps;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_option("solution", solution_path, "solution JSON")->required();
  app.add_option("-o,--out", out_path, "HTML file to write")->required();
  app.add_option("--matmul-compute", compute, "full-k or native-k")
      ->check(CLI::IsMember({"full-k", "native-k"}));
  app.add_flag("--allow-supernative-k", supernative, "lift the limit k <= native width (M6)");
  app.add_option("--max-steps", max_steps, "largest number of steps the replay (occupancy chart) walks")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const Problem problem = load_problem(problem_path);
    const Graph graph = analyze_graph(problem, problem_path);
    const Schedule schedule = load_schedule(solution_path, problem);
    VerifyOptions options;
    options.model.matmul_compute = compute == "native-k" ? MatmulCompute::NativeK : MatmulCompute::FullK;
    options.model.allow_supernative_k = supernative;
    options.max_walk_steps = max_steps;
    const ScheduleReport report = verify_schedule(problem, graph, schedule, options);
    if (report.refused) throw InputError(solution_path, "--max-steps", "limits", *report.refused);
    std::cerr << "replaying and rendering...\n";
    write_schedule_report(out_path, problem_path, solution_path, problem, graph, schedule, report,
                          options.model, max_steps);
    std::cout << out_path << "\n";
    if (report.error) std::cerr << "error: " << describe_error(*report.error) << "\n";
    return report.valid ? 0 : 1;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
