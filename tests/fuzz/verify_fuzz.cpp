// verify end to end without the replay: an input is a problem and a schedule separated by a line "----".
// Every answer must be a report (valid, or a rule violation) or an InputError; the analytic evaluation must
// be bounded whatever the step count (the fast path counts tile classes; beyond the step budget a walk is
// refused with an InputError).
#include "fuzz_support.hpp"
#include "sim/graph.hpp"
#include "sim/json_io.hpp"
#include "sim/violation.hpp"
#include "traces/report.hpp"
#include "verifier/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = mlsys::fuzz::text_of(data, size);
  const size_t cut = text.find("\n----\n");
  if (cut == std::string::npos) return 0;
  try {
    const mlsys::Problem problem =
        mlsys::parse_problem(mlsys::parse_json_text(text.substr(0, cut), "problem.json"), "problem.json");
    const mlsys::Graph graph = mlsys::analyze_graph(problem, "problem.json");
    const mlsys::Schedule schedule = mlsys::parse_schedule(
        mlsys::parse_json_text(text.substr(cut + 6), "solution.json"), "solution.json", problem);
    const mlsys::LowerBound bound = mlsys::lower_bound(problem, graph);
    for (auto compute : {mlsys::MatmulCompute::FullK, mlsys::MatmulCompute::NativeK}) {
      mlsys::VerifyOptions options;
      options.model.matmul_compute = compute;
      const mlsys::ScheduleReport report = mlsys::verify_schedule(problem, graph, schedule, options);
      if (report.valid && !(report.total_latency >= 0)) __builtin_trap();  // a NaN or negative total
      if (report.error) (void)report.error->describe();
      (void)mlsys::report_to_json(report, bound, compute).dump();
    }
  } catch (const mlsys::InputError&) {
  }
  return 0;
}
