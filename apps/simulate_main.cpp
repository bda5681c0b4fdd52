// `simulate`: replays a schedule on the SystemC model of the machine and reports simulated time beside the
// analytic total. libsystemc provides main() and calls sc_main.
#include <CLI/CLI.hpp>
#include <iostream>

#include "apps/cli_inputs.hpp"
#include "apps/replay_flags.hpp"
#include "sim/json_io.hpp"
#include "sim/systemc/replay.hpp"
#include "traces/replay_files.hpp"
#include "traces/report.hpp"
#include "verifier/verify.hpp"

using namespace mlsys;

extern "C" int sc_main(int argc, char** argv) {
  CLI::App app{
      "Replay an MLSys 2026 schedule in simulated time (SystemC) and write traces.\n"
      "Exit codes: 0 replayed, 1 the schedule breaks a rule (e.g. OOM), 2 malformed input or bad usage."};
  std::string problem_path, solution_path;
  bool json_out = false;
  ModelFlags flags;
  app.add_option("problem", problem_path, "problem JSON")->required();
  app.add_option("solution", solution_path, "solution JSON")->required();
  flags.add_to(app, "the replay");
  ReplayFlags replay_flags;
  replay_flags.add_to(app, "");
  app.add_flag("--json", json_out, "print a JSON report on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const ScheduleInputs in = read_schedule_inputs(problem_path, solution_path);
    const VerifyOptions vo = flags.options();
    check_step_budget(in.problem, in.graph, in.schedule, vo.model, flags.max_steps, "the replay",
                      solution_path);
    const ScheduleReport analytic = verify_schedule(in.problem, in.graph, in.schedule, vo);
    if (analytic.refused) throw InputError(solution_path, "--max-steps", "limits", *analytic.refused);
    std::cerr << "replaying " << in.schedule.subgraphs.size() << " subgraphs...\n";
    const ReplayResult replay =
        replay_flags.replay(in.problem, in.graph, in.schedule, vo.model, solution_path);
    const std::string& timing = replay_flags.timing;
    const char* label = timing == "contest" ? "contest" : "overlapped (what-if, outside the contest model)";
    if (json_out) {
      nlohmann::json j{
          {"valid", replay.completed},
          {"timing", timing},
          {"analytic_total_latency", analytic.valid ? nlohmann::json(analytic.total_latency) : nullptr},
          {"replay_total_latency", replay.completed ? nlohmann::json(replay.total_latency) : nullptr},
          {"replay_peak_occupancy", replay.peak_occupancy},
          {"replay_subgraph_latencies", replay.subgraph_latencies},
          {"steps", replay.steps},
          {"errors", nlohmann::json::array()}};
      if (replay.error) {
        auto e = violation_to_json(*replay.error);
        e["time"] = replay.error_time;
        j["errors"].push_back(e);
      }
      std::cout << j.dump(2) << "\n";
    } else if (replay.completed) {
      if (analytic.valid) std::cout << "analytic total: " << format_number(analytic.total_latency) << "\n";
      std::cout << "replay total (" << label << "): " << format_number(replay.total_latency) << "\n"
                << "peak fast-memory occupancy: " << replay.peak_occupancy << " / "
                << format_number(in.problem.fast_memory_capacity) << "\n"
                << "steps: " << replay.steps << "\n";
    }
    if (replay.error)
      std::cerr << "error at t = " << format_number(replay.error_time) << ": "
                << describe_error(*replay.error) << "\n";
    return replay.completed ? 0 : 1;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
