// Replay speed of the SystemC engine on the largest third-party schedules (simulated steps per second, whole
// elaboration + simulation + teardown per iteration).
#include <benchmark/benchmark.h>

#include "sim/json_io.hpp"
#include "sim/systemc/replay.hpp"
#include "traces/perfetto_trace.hpp"

using namespace mlsys;

static void Replay(benchmark::State& state) {
  const int bench = static_cast<int>(state.range(0));
  const bool traced = state.range(1) != 0;
  const std::string root = MLSYS_SOURCE_DIR;
  const Problem problem = load_problem(root + "/benchmarks/mlsys-2026-" + std::to_string(bench) + ".json");
  const Graph graph = analyze_graph(problem, "bench");
  const Schedule schedule =
      load_schedule(root + "/tests/data/vinci/mlsys-2026-" + std::to_string(bench) + ".json", problem);
  int64_t steps = 0;
  for (auto _ : state) {
    PerfettoTrace trace("bench");
    ReplayOptions options;
    if (traced) options.trace = &trace;
    const ReplayResult r = replay_schedule(problem, graph, schedule, options);
    steps = r.steps;
    benchmark::DoNotOptimize(r.total_latency);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate);
}
// {benchmark, with Perfetto trace}
BENCHMARK(Replay)->Args({9, 0})->Args({13, 0})->Args({17, 0})->Args({21, 0})->Args({9, 1})->Unit(benchmark::kMillisecond);

extern "C" int sc_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
