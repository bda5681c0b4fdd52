// T10: plans evaluated per second (full evaluation with every rule of a profile) and a whole search.
#include <benchmark/benchmark.h>

#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_model.hpp"
#include "solver/t10_search.hpp"

using namespace mlsys::t10;

static Problem seed() {
  Problem p;
  p.m = 32, p.k = 5120, p.n = 15360;
  return p;
}

static void EvaluatePlan(benchmark::State& state) {
  const Problem p = seed();
  Plan plan;
  plan.f_op = {2, 16, 4};
  plan.am = 4, plan.bk = 2, plan.cm = 2, plan.cn = 8;
  const Profile profile = state.range(0) ? Profile::Strict : Profile::EngDesign;
  for (auto _ : state) benchmark::DoNotOptimize(evaluate(p, plan, profile, false).cost->total);
  state.counters["plans_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(EvaluatePlan)->Arg(0)->Arg(1);

static void SearchSeed(benchmark::State& state) {
  const Problem p = seed();
  int64_t evaluated = 0;
  for (auto _ : state) evaluated = search(p, state.range(0) ? Profile::Strict : Profile::EngDesign, 1, state.range(1) != 0).evaluated;
  state.counters["plans"] = static_cast<double>(evaluated);
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsIterationInvariantRate);
}
// {strict, prune}
BENCHMARK(SearchSeed)->Args({1, 1})->Args({0, 1})->Args({1, 0})->Unit(benchmark::kMillisecond);

// The calibrated model's exhaustive plan search, as each option table runs it: every plan of a decode-step
// weight product on one IPU's cores priced without messages (the serving runs' dearest work).
static void CalibratedPlanSearch(benchmark::State& state) {
  Problem p;
  p.m = state.range(0), p.k = 5120, p.n = 5120;
  p.dtype_bytes = 2;
  int64_t evaluated = 0, accepted = 0;
  for (auto _ : state) {
    accepted = 0;
    evaluated = for_each_calibrated_plan(p, [&](const Plan&, const CalibratedCost&) { ++accepted; }).second;
  }
  state.counters["plans"] = static_cast<double>(evaluated);
  state.counters["accepted"] = static_cast<double>(accepted);
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(evaluated), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(CalibratedPlanSearch)->Arg(8)->Arg(512)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
