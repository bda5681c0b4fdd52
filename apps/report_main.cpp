// `report`: one self-contained HTML page for a schedule (traces/html_report). Exit codes as verify's: 0
// valid, 1 the schedule breaks a rule (the page shows where and why), 2 malformed input or bad usage.
#include <CLI/CLI.hpp>
#include <iostream>

#include "traces/html_report.hpp"
#include "apps/cli_inputs.hpp"
#include "traces/report.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;

extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{
      "Write an HTML report of a schedule: DAG, timeline, fast-memory occupancy, per-subgraph table.\n"
      "Exit codes: 0 valid, 1 the schedule breaks a rule (the report shows it), 2 bad input or usage."};
  std::string problem_path, solution_path, out_path;
  ModelFlags flags;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_option("solution", solution_path, "solution JSON")->required();
  app.add_option("-o,--out", out_path, "HTML file to write")->required();
  flags.add_to(app, "the replay (occupancy chart)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const ScheduleInputs in = read_schedule_inputs(problem_path, solution_path);
    const VerifyOptions options = flags.options();
    const ScheduleReport report = verify_schedule(in.problem, in.graph, in.schedule, options);
    if (report.refused) throw InputError(solution_path, "--max-steps", "limits", *report.refused);
    std::cerr << "replaying and rendering...\n";
    write_schedule_report(out_path, problem_path, solution_path, in.problem, in.graph, in.schedule, report,
                          options.model, flags.max_steps);
    std::cout << out_path << "\n";
    if (report.error) std::cerr << "error: " << describe_error(*report.error) << "\n";
    return report.valid ? 0 : 1;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
