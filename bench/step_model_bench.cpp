// Speed of the step model on the largest subgraphs of benchmarks 9, 13 and 17 (as scheduled by the
// first-place contest solver, tests/data/vinci), plus the same subgraphs split to k = 32 (256 tiles x 32 k-steps
// on benchmark 9). Reports steps/s for the step-by-step walk and evaluations/s for the fast path.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "sim/json_io.hpp"
#include "sim/schedule_model.hpp"
#include "sim/step_model.hpp"

using namespace mlsys;

namespace {

struct Subject {
  Problem problem;
  Graph graph;
  SubgraphSpec spec;
  std::unique_ptr<SubgraphModel> model;
};

// The subgraph with the most steps of the vinci schedule for `bench`, optionally with another k.
Subject& subject(int bench, int64_t k_override) {
  static std::map<std::pair<int, int64_t>, Subject> cache;
  auto [it, fresh] = cache.try_emplace({bench, k_override});
  Subject& s = it->second;
  if (!fresh) return s;
  const std::string root = MLSYS_SOURCE_DIR;
  s.problem = load_problem(root + "/benchmarks/mlsys-2026-" + std::to_string(bench) + ".json");
  s.graph = analyze_graph(s.problem, "bench");
  const Schedule schedule = load_schedule(root + "/tests/data/vinci/mlsys-2026-" + std::to_string(bench) + ".json",
                                          s.problem);
  size_t best = 0;
  int64_t best_steps = -1;
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    auto compiled = SubgraphModel::compile(s.problem, s.graph, schedule.subgraphs[i], 0, {}, {});
    if (auto* m = std::get_if<SubgraphModel>(&compiled); m && m->num_steps() > best_steps) {
      best_steps = m->num_steps();
      best = i;
    }
  }
  s.spec = schedule.subgraphs[best];
  s.spec.retain.clear();
  if (k_override) {
    s.spec.granularity.k = k_override;
    s.spec.traversal.reset();
  }
  s.problem.fast_memory_capacity = 1e12;  // speed, not feasibility, is measured here
  s.model = std::make_unique<SubgraphModel>(
      std::get<SubgraphModel>(SubgraphModel::compile(s.problem, s.graph, s.spec, 0, {}, {})));
  return s;
}

void StepByStep(benchmark::State& state) {
  const SubgraphModel& m = *subject(static_cast<int>(state.range(0)), state.range(1)).model;
  for (auto _ : state) {
    StepWalker walker(m);
    double total = 0;
    while (!walker.done()) {
      walker.advance();
      total += walker.last_latency();
    }
    benchmark::DoNotOptimize(total);
  }
  state.SetItemsProcessed(state.iterations() * m.num_steps());
  state.counters["steps"] = static_cast<double>(m.num_steps());
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(m.num_steps()), benchmark::Counter::kIsIterationInvariantRate);
}

void StepByStepWithDetail(benchmark::State& state) {
  const SubgraphModel& m = *subject(static_cast<int>(state.range(0)), state.range(1)).model;
  StepDetail detail;
  for (auto _ : state) {
    StepWalker walker(m);
    while (!walker.done()) walker.advance(&detail);
    benchmark::DoNotOptimize(detail.latency);
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(m.num_steps()), benchmark::Counter::kIsIterationInvariantRate);
}

void FastPath(benchmark::State& state) {
  const SubgraphModel& m = *subject(static_cast<int>(state.range(0)), state.range(1)).model;
  for (auto _ : state) benchmark::DoNotOptimize(m.evaluate_fast().latency);
  state.counters["steps"] = static_cast<double>(m.num_steps());
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

void CompileAndFastPath(benchmark::State& state) {
  Subject& s = subject(static_cast<int>(state.range(0)), state.range(1));
  for (auto _ : state) {
    auto compiled = SubgraphModel::compile(s.problem, s.graph, s.spec, 0, {}, {});
    benchmark::DoNotOptimize(std::get<SubgraphModel>(compiled).evaluate_fast().latency);
  }
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

// What the solver's oracle does per candidate: the structure is compiled once per subgraph, each granularity
// is applied to a copy of it (compare with CompileAndFastPath).
void WithGranularityAndFastPath(benchmark::State& state) {
  Subject& s = subject(static_cast<int>(state.range(0)), state.range(1));
  const auto structure =
      SubgraphModel::compile_structure(s.problem, s.graph, s.spec.ops, s.spec.retain, 0, {}, {});
  const SubgraphModel& shape = std::get<SubgraphModel>(structure);
  for (auto _ : state) {
    auto model = shape.with_granularity(s.spec.granularity, s.spec.traversal);
    benchmark::DoNotOptimize(std::get<SubgraphModel>(model).evaluate_fast().latency);
  }
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

// What the oracle does now: the granularity re-applied in place on one working copy (no copy per candidate).
void SetGranularityAndFastPath(benchmark::State& state) {
  Subject& s = subject(static_cast<int>(state.range(0)), state.range(1));
  auto structure = SubgraphModel::compile_structure(s.problem, s.graph, s.spec.ops, s.spec.retain, 0, {}, {});
  SubgraphModel& model = std::get<SubgraphModel>(structure);
  for (auto _ : state) {
    if (model.set_granularity(s.spec.granularity, s.spec.traversal)) state.SkipWithError("rejected");
    benchmark::DoNotOptimize(model.evaluate_fast().latency);
  }
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

// Benchmark 12's residual block {MatMul 2, Pointwise 3, Pointwise 4}: op 4 reads op 2's LHS again, as R x C,
// so that tensor has two slice forms. At k = 32 they never give the same slice (the fast path counts tile
// classes); at k = 128 = w they do where ks = column (it walks every step).
SubgraphModel& residual(int64_t k) {
  static std::map<int64_t, Subject> cache;
  Subject& s = cache[k];
  if (!s.model) {
    s.problem = load_problem(std::string(MLSYS_SOURCE_DIR) + "/benchmarks/mlsys-2026-12.json");
    s.problem.fast_memory_capacity = 1e12;
    s.graph = analyze_graph(s.problem, "bench");
    s.spec = {{2, 3, 4}, {128, 128, k}, {}, std::nullopt};
    s.model = std::make_unique<SubgraphModel>(
        std::get<SubgraphModel>(SubgraphModel::compile(s.problem, s.graph, s.spec, 0, {}, {})));
  }
  return *s.model;
}

void ResidualStepByStep(benchmark::State& state) {
  const SubgraphModel& m = residual(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(m.simulate().latency);
  state.counters["steps"] = static_cast<double>(m.num_steps());
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

void ResidualFastPath(benchmark::State& state) {
  const SubgraphModel& m = residual(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(m.evaluate_fast().latency);
  state.counters["tile_classes"] = m.counts_tile_classes();
  state.counters["evals_per_s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(ResidualStepByStep)->Arg(32)->Arg(128);
BENCHMARK(ResidualFastPath)->Arg(32)->Arg(128);

// {benchmark, k override (0 = as scheduled)}
#define SUBJECTS Args({9, 0})->Args({13, 0})->Args({17, 0})->Args({9, 32})->Args({13, 32})->Args({17, 32})
BENCHMARK(StepByStep)->SUBJECTS;
BENCHMARK(StepByStepWithDetail)->SUBJECTS;
BENCHMARK(FastPath)->SUBJECTS;
BENCHMARK(CompileAndFastPath)->SUBJECTS;
BENCHMARK(WithGranularityAndFastPath)->SUBJECTS;
BENCHMARK(SetGranularityAndFastPath)->SUBJECTS;

}  // namespace

BENCHMARK_MAIN();
