// Replay speed of the SystemC engine on the largest third-party schedules (simulated steps per second, whole
// elaboration + simulation + teardown per iteration).
#include <benchmark/benchmark.h>

#include "sim/json_io.hpp"
#include "sim/systemc/replay.hpp"
#include "sim/t10/t10_cores.hpp"
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
BENCHMARK(Replay)->Args({9, 0})->Args({13, 0})->Args({17, 0})->Args({21, 0})->Args({9, 1})->Unit(
    benchmark::kMillisecond);

// T10 on every core (sim/t10/t10_cores): the seed reference plan (1,464 cores x 2 steps) and a 1,472-core
// plan of 1,472 steps, grader timing; a functional 512^3 run. Events: transfers plus core compute steps.
static void T10AllCores(benchmark::State& state) {
  mlsys::t10::Problem p;
  mlsys::t10::Plan plan;
  mlsys::t10::CoreSimOptions options;
  if (state.range(0) == 0) {
    p.m = 32, p.k = 5120, p.n = 15360;
    plan.f_op = {1, 366, 4};
    plan.am = 2;
  } else if (state.range(0) == 1) {
    p.m = 32, p.k = 5120, p.n = 15360;
    plan.f_op = {2, 23, 32};
    plan.am = 32, plan.bk = 2, plan.cn = 23;
  } else {
    p.m = p.k = p.n = 512;
    plan.f_op = {8, 23, 8};
    plan.am = 2, plan.ak = 4, plan.bk = 2, plan.bn = 4;
    options.functional = true;
  }
  int64_t events = 0;
  for (auto _ : state) {
    const mlsys::t10::CoresResult r = mlsys::t10::simulate_cores(p, plan, options);
    events = r.transfers + r.cores * r.steps;
    benchmark::DoNotOptimize(r.total);
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(T10AllCores)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

extern "C" int sc_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
