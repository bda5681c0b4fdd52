// evaluate_fast (tile classes counted, not re-simulated) must equal the step-by-step walk exactly: same
// feasibility, same peak working set, latency within 1e-9 relative. Randomized over the 24 benchmarks:
// connected subgraphs, granularities (powers of two and not), traversal orders, retention, capacities.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "sim/json_io.hpp"
#include "sim/step_model.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

std::vector<int64_t> make_order(int kind, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<int64_t> order;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t cc = (kind == 1 && r % 2 == 1) ? cols - 1 - c : c;  // row snake
      order.push_back(r * cols + cc);
    }
  if (kind == 2) {  // column-major
    order.clear();
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < rows; ++r) order.push_back(r * cols + c);
  }
  if (kind == 3) std::shuffle(order.begin(), order.end(), rng);
  return order;
}

TEST(FastPath, EqualsStepByStepOnRandomSubgraphs) {
  std::mt19937 rng(20261122);
  int compared = 0, infeasible = 0, multi_k = 0, reordered_compared = 0, split_compared = 0,
      split_rejections = 0, reused_compared = 0;
  const int64_t sizes[] = {8, 16, 32, 48, 64, 96, 100, 128};
  for (int bench = 1; bench <= 24; ++bench) {
    Problem problem = load_problem(source_path("benchmarks/mlsys-2026-" + std::to_string(bench) + ".json"));
    const Graph graph = analyze_graph(problem, "benchmark");
    const double capacity = problem.fast_memory_capacity;
    for (int trial = 0; trial < 150; ++trial) {
      // Grow a connected op set from a random seed op along producer/consumer edges, then order it
      // topologically.
      std::vector<int> ops{std::uniform_int_distribution<int>(0, problem.num_ops() - 1)(rng)};
      const int want = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int grow = 0; grow < 8 && static_cast<int>(ops.size()) < want; ++grow) {
        const int o = ops[std::uniform_int_distribution<size_t>(0, ops.size() - 1)(rng)];
        std::vector<int> next;
        for (int t : problem.outputs[o])
          for (const auto& c : graph.consumers[t]) next.push_back(c.op);
        for (int t : problem.inputs[o])
          if (graph.producer[t] >= 0) next.push_back(graph.producer[t]);
        if (next.empty()) continue;
        const int n = next[std::uniform_int_distribution<size_t>(0, next.size() - 1)(rng)];
        if (std::find(ops.begin(), ops.end(), n) == ops.end()) ops.push_back(n);
      }
      std::vector<int> ordered;
      for (int o : graph.topological_order)
        if (std::find(ops.begin(), ops.end(), o) != ops.end()) ordered.push_back(o);
      SubgraphSpec spec;
      spec.ops = ordered;
      const int64_t w = sizes[rng() % 8], h = sizes[rng() % 8];
      const int64_t k = std::uniform_int_distribution<int64_t>(1, 128)(rng);
      spec.granularity = {w, h, k};
      for (int o : ordered)  // sometimes retain a produced Pointwise-fed tensor
        for (int t : problem.outputs[o])
          if (rng() % 4 == 0) spec.retain.push_back(t);
      std::vector<int> retained_in;
      for (int o : ordered)
        for (int t : problem.inputs[o])
          if (graph.producer[t] >= 0 && rng() % 5 == 0) retained_in.push_back(t);
      problem.fast_memory_capacity = rng() % 3 == 0 ? capacity : 1e15;
      auto compiled = SubgraphModel::compile(problem, graph, spec, 0, retained_in, {});
      {
        // The search's path (structure once, then the granularity) must give the same verdict, message and
        // numbers as compile(), except that M6 is checked after the structure's rules there.
        auto structure =
            SubgraphModel::compile_structure(problem, graph, spec.ops, spec.retain, 0, retained_in, {});
        std::optional<RuleViolation> split_error;
        std::optional<SubgraphModel> split_model;
        if (auto* v = std::get_if<RuleViolation>(&structure))
          split_error = *v;
        else {
          auto with = std::get<SubgraphModel>(structure).with_granularity(spec.granularity);
          if (auto* v = std::get_if<RuleViolation>(&with))
            split_error = *v;
          else
            split_model = std::get<SubgraphModel>(with);
        }
        if (auto* s = std::get_if<SubgraphModel>(&structure)) {
          // The oracle re-applies granularities in place on one working copy: what the copy held before
          // (another granularity, perhaps rejected, and a snake order) must not leak into the next one.
          std::mt19937 reuse_rng(static_cast<unsigned>(bench * 1000 + trial));  // leaves `rng` untouched
          SubgraphModel reused = *s;
          const Granularity other{sizes[reuse_rng() % 8], sizes[reuse_rng() % 8],
                                  std::uniform_int_distribution<int64_t>(1, 128)(reuse_rng)};
          if (!reused.set_granularity(other)) {
            ASSERT_FALSE(
                reused.set_traversal(make_order(1, reused.grid_rows(), reused.grid_cols(), reuse_rng)));
          }
          const std::optional<RuleViolation> again = reused.set_granularity(spec.granularity);
          ASSERT_EQ(again.has_value(), split_error.has_value());
          if (again) {
            EXPECT_EQ(again->describe(), split_error->describe());
          } else {
            const SubgraphResult a = reused.evaluate_fast(), b = split_model->evaluate_fast();
            EXPECT_EQ(a.latency, b.latency);
            EXPECT_EQ(a.peak_working_set, b.peak_working_set);
            EXPECT_EQ(a.violation.has_value(), b.violation.has_value());
            ++reused_compared;
          }
        }
        if (auto* v = std::get_if<RuleViolation>(&compiled)) {
          ASSERT_TRUE(split_error) << v->describe();
          if (v->rule != "M6") {
            EXPECT_EQ(v->describe(), split_error->describe());
          }
          ++split_rejections;
        } else {
          ASSERT_FALSE(split_error) << split_error->describe();
          const SubgraphResult a = split_model->simulate(), b = std::get<SubgraphModel>(compiled).simulate();
          EXPECT_EQ(a.latency, b.latency);
          EXPECT_EQ(a.peak_working_set, b.peak_working_set);
          EXPECT_EQ(a.violation.has_value(), b.violation.has_value());
          ++split_compared;
        }
      }
      if (std::holds_alternative<RuleViolation>(compiled)) continue;
      const auto& model = std::get<SubgraphModel>(compiled);
      if (model.tiles() > 4096 || model.num_steps() > 60000) continue;
      const int kind = static_cast<int>(rng() % 4);
      if (kind != 0) {
        spec.traversal = make_order(kind, model.grid_rows(), model.grid_cols(), rng);
        // The search sets the order on a raster-compiled model instead of compiling again: same result.
        SubgraphModel reordered = model;
        ASSERT_FALSE(reordered.set_traversal(spec.traversal));
        compiled = SubgraphModel::compile(problem, graph, spec, 0, retained_in, {});
        const SubgraphResult a = reordered.simulate(), b = std::get<SubgraphModel>(compiled).simulate();
        EXPECT_EQ(a.latency, b.latency);
        EXPECT_EQ(a.peak_working_set, b.peak_working_set);
        EXPECT_EQ(a.violation.has_value(), b.violation.has_value());
        ++reordered_compared;
      }
      const auto& m = std::get<SubgraphModel>(compiled);
      const SubgraphResult slow = m.simulate(), fast = m.evaluate_fast();
      const SubgraphResult summary = m.evaluate_fast(SubgraphModel::Violations::Summarize);
      ASSERT_EQ(slow.violation.has_value(), fast.violation.has_value()) << "benchmark " << bench;
      ASSERT_EQ(slow.violation.has_value(), summary.violation.has_value()) << "benchmark " << bench;
      if (slow.violation) {
        ++infeasible;
        EXPECT_EQ(slow.violation->describe(), fast.violation->describe());
        // The search's mode may skip locating the step but must name the same rule.
        EXPECT_EQ(slow.violation->rule, summary.violation->rule);
        if (summary.violation->rule == "M20") {  // its sentence is rendered from the totals, on demand
          EXPECT_NE(std::string::npos, summary.violation->describe().find("capacity"))
              << summary.violation->describe();
        }
        continue;
      }
      EXPECT_EQ(fast.latency, summary.latency);
      ++compared;
      multi_k += m.k_steps() > 2;
      EXPECT_NEAR(slow.latency, fast.latency, 1e-9 * slow.latency) << "benchmark " << bench << " trial " << trial;
      EXPECT_EQ(slow.peak_working_set, fast.peak_working_set) << "benchmark " << bench << " trial " << trial;
      EXPECT_EQ(slow.steps, fast.steps);
    }
  }
  // The generator must actually exercise the interesting paths.
  EXPECT_GT(compared, 500);
  EXPECT_GT(infeasible, 20);
  EXPECT_GT(multi_k, 50);
  EXPECT_GT(reordered_compared, 300);
  EXPECT_GT(split_compared, 1000);
  EXPECT_GT(split_rejections, 100);
  EXPECT_GT(reused_compared, 1000);
}

TEST(FastPath, EqualsStepByStepWhereATensorIsReadInTwoForms) {
  // A residual read by a MatMul (as R x Kr or Kr x C) and by a Pointwise op (R x C) in one subgraph. Where
  // the two forms can never give the same slice, evaluate_fast still counts tile classes; where they can (k =
  // w, k = h, one tile column), it walks every step. Both must equal the walk.
  std::mt19937 rng(20261123);
  int counted = 0, walked = 0;
  const int64_t sizes[] = {16, 32, 64, 96, 100, 128};
  for (int bench = 1; bench <= 24; ++bench) {
    const Problem problem =
        load_problem(source_path("benchmarks/mlsys-2026-" + std::to_string(bench) + ".json"));
    const Graph graph = analyze_graph(problem, "benchmark");
    // Every op with up to two of its consumers, in topological order: covers MatMul + residual Pointwise.
    for (int o = 0; o < problem.num_ops(); ++o) {
      std::vector<int> around{o};
      for (int t : problem.outputs[o])
        for (const auto& c : graph.consumers[t]) around.push_back(c.op);
      for (int t : problem.outputs[around.back()])
        for (const auto& c : graph.consumers[t]) around.push_back(c.op);
      std::vector<int> ops;
      for (int x : graph.topological_order)
        if (std::find(around.begin(), around.end(), x) != around.end()) ops.push_back(x);
      auto structure = SubgraphModel::compile_structure(problem, graph, ops, {}, 0, {}, {});
      auto* model = std::get_if<SubgraphModel>(&structure);
      if (!model || !model->reads_a_tensor_in_two_forms()) continue;
      for (int trial = 0; trial < 60; ++trial) {
        const int64_t w = sizes[rng() % 6], h = sizes[rng() % 6];
        const int64_t k = trial % 3 == 0   ? w
                          : trial % 3 == 1 ? h
                                           : std::uniform_int_distribution<int64_t>(1, 128)(rng);
        if (model->set_granularity({w, h, k})) continue;
        if (model->num_steps() > 60000) continue;
        if (trial % 2 == 1) {
          ASSERT_FALSE(
              model->set_traversal(make_order(1 + rng() % 3, model->grid_rows(), model->grid_cols(), rng)));
        }
        const SubgraphResult slow = model->simulate(), fast = model->evaluate_fast();
        ASSERT_EQ(slow.violation.has_value(), fast.violation.has_value()) << "benchmark " << bench;
        ++(model->counts_tile_classes() ? counted : walked);
        if (slow.violation) continue;
        EXPECT_NEAR(slow.latency, fast.latency, 1e-9 * slow.latency)
            << "benchmark " << bench << " ops from " << o << " at [" << w << "," << h << "," << k << "]";
        EXPECT_EQ(slow.peak_working_set, fast.peak_working_set) << "benchmark " << bench;
      }
    }
  }
  EXPECT_GT(counted, 100);
  EXPECT_GT(walked, 50);
}

// A random chain head -> in-chain Pointwise op(s) -> tail (M12 since the 2026-11-23 revision), with its
// problem: LHS or RHS link, one or two in-chain ops (unary, binary with an extra input, or a diamond that
// reads the head's output twice), sometimes an epilogue, sides that are not multiples of the tile (clipped
// edges).
struct RandomChain {
  nlohmann::json problem;
  std::vector<int> ops;
  bool lhs = true, binary = false;
  int in_chain = 1;
};

RandomChain random_chain(std::mt19937& rng) {
  const int64_t sides[] = {40, 64, 96, 100, 128, 160, 200, 256};
  auto side = [&] { return sides[rng() % 8]; };
  RandomChain c;
  ProblemBuilder builder;
  auto tensor = [&](int64_t rows, int64_t cols) { return builder.tensor(rows, cols); };
  auto op = [&](const char* type, std::vector<int> in, int out) {
    c.ops.push_back(builder.op(type, in, out, std::uniform_int_distribution<int>(1, 4000)(rng)));
  };
  c.lhs = rng() % 2 == 0;
  const int64_t rows = side(), cols = side(), k_tail = side(), k_head = side();
  // LHS link: X (rows x k_tail) = A (rows x k_head) @ B; Y = Z @ C. RHS link: X (k_tail x cols); Y = C @ Z.
  const int64_t x_rows = c.lhs ? rows : k_tail, x_cols = c.lhs ? k_tail : cols;
  const int a = tensor(x_rows, k_head), b = tensor(k_head, x_cols), x = tensor(x_rows, x_cols);
  op("MatMul", {a, b}, x);
  c.in_chain = 1 + static_cast<int>(rng() % 2);
  int z = x;
  for (int i = 0; i < c.in_chain; ++i) {
    const int next = tensor(x_rows, x_cols);
    const int form = static_cast<int>(rng() % 3);  // unary, binary with an extra input, diamond (second op)
    if (form == 1) {
      op("Pointwise", {z, tensor(x_rows, x_cols)}, next);
      c.binary = true;
    } else if (form == 2 && i == 1) {
      op("Pointwise", {z, x}, next);
    } else {
      op("Pointwise", {z}, next);
    }
    z = next;
  }
  const int other = c.lhs ? tensor(k_tail, cols) : tensor(rows, k_tail);
  const int y = tensor(rows, cols);
  op("MatMul", c.lhs ? std::vector<int>{z, other} : std::vector<int>{other, z}, y);
  if (rng() % 3 == 0) op("Pointwise", {y, tensor(rows, cols)}, tensor(rows, cols));  // epilogue
  const double capacity = rng() % 2 == 0 ? 10000 + static_cast<int>(rng() % 100000) : 1e15;
  const double bandwidth = 1 + static_cast<int>(rng() % 40);
  const int64_t natives[] = {64, 128};
  const int64_t native_w = natives[rng() % 2], native_h = natives[rng() % 2];
  c.problem = builder.problem(capacity, bandwidth, native_w, native_h);
  return c;
}

TEST(FastPath, EqualsStepByStepOnChainsThroughPointwiseOps) {
  std::mt19937 rng(20261123);
  int compared = 0, infeasible = 0, split_k = 0, single_k = 0, lhs = 0, rhs = 0, two_in_chain = 0, binary = 0,
      clipped = 0, counted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const RandomChain chain = random_chain(rng);
    Problem problem = parse_problem(chain.problem, "chain");
    const Graph graph = analyze_graph(problem, "chain");
    SubgraphSpec spec;
    spec.ops = chain.ops;
    const int64_t w = std::uniform_int_distribution<int64_t>(1, problem.native_w)(rng);
    const int64_t h = std::uniform_int_distribution<int64_t>(1, problem.native_h)(rng);
    // A third of the time the largest k M6 allows, so that nk = 1 where the tail's K fits in one step.
    const int64_t k_max = std::min(
        {problem.native_w, graph.reduction_depth[0], graph.reduction_depth[chain.ops[chain.in_chain + 1]]});
    spec.granularity = {
        rng() % 2 ? problem.native_w : w, rng() % 2 ? problem.native_h : h,
        rng() % 3 == 0 ? k_max : std::uniform_int_distribution<int64_t>(1, problem.native_w)(rng)};
    auto compiled = SubgraphModel::compile(problem, graph, spec, 0, {}, {});
    if (std::holds_alternative<RuleViolation>(compiled)) continue;  // k above a K, M14 cannot apply here
    auto& model = std::get<SubgraphModel>(compiled);
    if (model.num_steps() > 20000) continue;
    if (rng() % 2) {
      ASSERT_FALSE(model.set_traversal(make_order(1 + rng() % 3, model.grid_rows(), model.grid_cols(), rng)));
    }
    const SubgraphResult slow = model.simulate(), fast = model.evaluate_fast();
    const SubgraphResult summary = model.evaluate_fast(SubgraphModel::Violations::Summarize);
    ASSERT_EQ(slow.violation.has_value(), fast.violation.has_value()) << chain.problem.dump();
    ASSERT_EQ(slow.violation.has_value(), summary.violation.has_value()) << chain.problem.dump();
    if (slow.violation) {
      ++infeasible;
      EXPECT_EQ(slow.violation->describe(), fast.violation->describe());
      EXPECT_EQ(slow.violation->rule, summary.violation->rule);
      continue;
    }
    ++compared;
    EXPECT_NEAR(slow.latency, fast.latency, 1e-9 * slow.latency) << chain.problem.dump();
    EXPECT_EQ(slow.peak_working_set, fast.peak_working_set) << chain.problem.dump();
    EXPECT_EQ(fast.latency, summary.latency);
    (model.k_steps() > 1 ? split_k : single_k)++;
    (chain.lhs ? lhs : rhs)++;
    two_in_chain += chain.in_chain == 2;
    binary += chain.binary;
    const int y = problem.outputs[chain.ops.back()][0];
    clipped += problem.widths[y] % spec.granularity.w != 0 || problem.heights[y] % spec.granularity.h != 0;
    counted += model.counts_tile_classes();
  }
  // Every structure the issue names must actually be compared, most of them by counted tile classes.
  EXPECT_GT(compared, 1000);
  EXPECT_GT(infeasible, 50);
  EXPECT_GT(split_k, 300);
  EXPECT_GT(single_k, 50);
  EXPECT_GT(lhs, 300);
  EXPECT_GT(rhs, 300);
  EXPECT_GT(two_in_chain, 300);
  EXPECT_GT(binary, 300);
  EXPECT_GT(clipped, 300);
  EXPECT_GT(counted, 500);
}

// Several split-K MatMuls of equal K feeding one or several epilogues (M20 D, revision of 2026-11-24): the
// fast path equals the walk, and every step's D term is the number of partial sums without a host (derived
// by hand for each generated shape) times the tile, while the reduction is split, and 0 with nk = 1.
TEST(FastPath, EqualsStepByStepWithSeveralSplitKAccumulators) {
  std::mt19937 rng(20261124);
  int compared = 0, infeasible = 0, with_d = 0, single_k = 0, three = 0, retained = 0;
  std::array<int, 6> shapes{};
  for (int trial = 0; trial < 3000; ++trial) {
    const RandomSplitK sk = random_split_k(rng);
    Problem problem = parse_problem(sk.problem, "split-k");
    const Graph graph = analyze_graph(problem, "split-k");
    SubgraphSpec spec;
    spec.ops = sk.ops;
    spec.retain = sk.retain;
    const int64_t k_max = std::min(problem.native_w, sk.K);
    spec.granularity = {rng() % 2 ? problem.native_w : std::uniform_int_distribution<int64_t>(1, problem.native_w)(rng),
                        rng() % 2 ? problem.native_h : std::uniform_int_distribution<int64_t>(1, problem.native_h)(rng),
                        rng() % 4 == 0 ? k_max : std::uniform_int_distribution<int64_t>(1, k_max)(rng)};
    auto compiled = SubgraphModel::compile(problem, graph, spec, 0, {}, {});
    // With nk = 1, three MatMuls need w = k = K (M13): the one rejection the generator allows.
    if (auto* v = std::get_if<RuleViolation>(&compiled); v && v->rule == "M13" && spec.granularity.k == sk.K &&
                                                         sk.matmuls == 3)
      continue;
    ASSERT_TRUE(std::holds_alternative<SubgraphModel>(compiled))
        << std::get<RuleViolation>(compiled).describe() << "\n" << sk.problem.dump();
    auto& model = std::get<SubgraphModel>(compiled);
    ASSERT_EQ(model.unhosted_accumulators(), static_cast<size_t>(sk.unhosted)) << "shape " << sk.shape;
    if (model.num_steps() > 20000) continue;
    if (rng() % 2) {
      ASSERT_FALSE(model.set_traversal(make_order(1 + rng() % 3, model.grid_rows(), model.grid_cols(), rng)));
    }
    const bool split = model.k_steps() > 1;
    int64_t checked_steps = 0;
    const SubgraphResult slow = model.simulate([&](const StepDetail& d) {
      int64_t tile_area = 0, d_terms = 0;
      for (const WorkingSetTerm& t : d.working_set.terms) {
        if (t.part == 'C') tile_area = t.region.area();
        if (t.part == 'D') ++d_terms;
      }
      EXPECT_EQ(d_terms, split ? sk.unhosted : 0);
      EXPECT_EQ(d.working_set.accumulators, (split ? sk.unhosted : 0) * tile_area);
      ++checked_steps;
    });
    const SubgraphResult fast = model.evaluate_fast();
    const SubgraphResult summary = model.evaluate_fast(SubgraphModel::Violations::Summarize);
    ASSERT_EQ(slow.violation.has_value(), fast.violation.has_value()) << sk.problem.dump();
    ASSERT_EQ(slow.violation.has_value(), summary.violation.has_value()) << sk.problem.dump();
    if (slow.violation) {
      ++infeasible;
      EXPECT_EQ(slow.violation->describe(), fast.violation->describe());
      if (slow.violation->working_set) {
        EXPECT_EQ(slow.violation->working_set->accumulators, fast.violation->working_set->accumulators);
      }
      continue;
    }
    ++compared;
    EXPECT_GT(checked_steps, 0);
    EXPECT_NEAR(slow.latency, fast.latency, 1e-9 * slow.latency) << sk.problem.dump();
    EXPECT_EQ(slow.peak_working_set, fast.peak_working_set) << sk.problem.dump();
    with_d += split && sk.unhosted > 0;
    single_k += !split;
    three += sk.matmuls == 3;
    retained += !sk.retain.empty();
    ++shapes[sk.shape];
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(infeasible, 100);
  EXPECT_GT(with_d, 500);
  EXPECT_GT(single_k, 30);
  EXPECT_GT(three, 400);
  EXPECT_GT(retained, 400);
  for (int shape = 0; shape < 6; ++shape) EXPECT_GT(shapes[shape], 100) << "shape " << shape;
}

TEST(FastPath, SetTraversalChecksM11LikeCompile) {
  // Example 4: a 2x2 grid at [64,64,128].
  const Loaded l =
      load(source_path("tests/golden/ex4_problem.json"), source_path("tests/golden/ex4B_solution.json"));
  SubgraphSpec spec{l.schedule.subgraphs[0].ops, l.schedule.subgraphs[0].granularity, {}, std::nullopt};
  auto compiled = SubgraphModel::compile(l.problem, l.graph, spec, 0, {}, {});
  auto& model = std::get<SubgraphModel>(compiled);
  const auto repeat = model.set_traversal(std::vector<int64_t>{0, 1, 1, 3});
  ASSERT_TRUE(repeat);
  EXPECT_EQ("M11", repeat->rule);
  spec.traversal = std::vector<int64_t>{0, 1, 1, 3};
  EXPECT_EQ(std::get<RuleViolation>(SubgraphModel::compile(l.problem, l.graph, spec, 0, {}, {})).describe(),
            repeat->describe());
  // Example 4B's order [0,1,3,2] gives 6548 (rule book section 7); raster gives 7096.
  ASSERT_FALSE(model.set_traversal(std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_NEAR(6548, model.simulate().latency, 1e-9);
  ASSERT_FALSE(model.set_traversal(std::nullopt));
  EXPECT_NEAR(7096, model.simulate().latency, 1e-9);
}

}  // namespace
}  // namespace mlsys::test
