#include "tests/brute_force.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>
#include <variant>

#include "sim/step_model.hpp"

namespace mlsys::testing {
namespace {

struct State {
  uint32_t covered = 0, in_slow = 0, retained = 0;
  auto key() const { return std::tuple(covered, in_slow, retained); }
  bool operator<(const State& o) const { return key() < o.key(); }
};

std::vector<int> bits(uint32_t mask) {
  std::vector<int> out;
  for (int i = 0; i < 32; ++i)
    if (mask >> i & 1u) out.push_back(i);
  return out;
}

struct Best {
  bool feasible = false;
  double latency = 0;
  SubgraphSpec spec;
};

// The cheapest configuration of one subgraph: every granularity, every traversal permutation.
Best best_configuration(const Problem& p, const Graph& g, const ModelOptions& options,
                        const std::vector<int>& ops, const std::vector<int>& retained_in,
                        const std::vector<int>& retain, int max_permuted, int64_t* evaluations,
                        bool* exhaustive) {
  Best best;
  auto structure = SubgraphModel::compile_structure(p, g, ops, retain, 0, retained_in, options);
  if (std::holds_alternative<RuleViolation>(structure)) return best;
  SubgraphModel model = std::get<SubgraphModel>(structure);
  const int64_t max_k = std::max<int64_t>(1, p.native_w);
  for (int64_t w = 1; w <= p.native_w; ++w)
    for (int64_t h = 1; h <= p.native_h; ++h)
      for (int64_t k = 1; k <= max_k; ++k) {
        const Granularity gran{w, h, k};
        if (model.set_granularity(gran, std::nullopt)) continue;
        const int64_t tiles = model.tiles();
        std::vector<int64_t> order(tiles);
        std::iota(order.begin(), order.end(), 0);
        const bool permute = tiles <= max_permuted;
        if (!permute) *exhaustive = false;
        do {
          if (model.set_traversal(order)) continue;
          ++*evaluations;
          const SubgraphResult r = model.simulate();
          if (r.violation) continue;
          if (!best.feasible || r.latency < best.latency) {
            best.feasible = true;
            best.latency = r.latency;
            best.spec = SubgraphSpec{ops, gran, retain, order};
          }
        } while (permute && std::next_permutation(order.begin(), order.end()));
      }
  return best;
}

}  // namespace

BruteForceResult brute_force_optimum(const Problem& p, const Graph& g, const ModelOptions& options,
                                     int max_permuted_tiles) {
  BruteForceResult result;
  const int n_ops = p.num_ops();
  const uint32_t all_ops = (1u << n_ops) - 1;
  uint32_t graph_outputs = 0;
  for (int t = 0; t < p.num_tensors(); ++t)
    if (g.is_graph_output[t]) graph_outputs |= 1u << t;

  // Per op set: reads, writes, and what may be retained (M9).
  struct Candidate {
    std::vector<int> ops;
    uint32_t reads = 0, writes = 0, read_inside = 0, retainable = 0;
  };
  std::vector<Candidate> candidates;
  for (uint32_t s = 1; s <= all_ops; ++s) {
    Candidate c;
    for (int o : g.topological_order)
      if (s >> o & 1u) c.ops.push_back(o);
    uint32_t matmul_reads = 0;
    for (int o : c.ops) {
      for (int t : p.inputs[o]) {
        c.reads |= 1u << t;
        if (p.is_matmul(o)) matmul_reads |= 1u << t;
      }
      for (int t : p.outputs[o]) c.writes |= 1u << t;
    }
    c.read_inside = c.reads & c.writes;
    c.retainable = c.writes & ~graph_outputs & ~matmul_reads;
    candidates.push_back(c);
  }

  std::map<std::tuple<int, uint32_t, uint32_t>, Best> cache;
  std::map<State, double> dist;
  std::map<State, std::pair<State, SubgraphSpec>> parent;
  using Entry = std::pair<double, State>;
  auto cmp = [](const Entry& a, const Entry& b) {
    return a.first > b.first || (a.first == b.first && b.second < a.second);
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(cmp)> queue(cmp);
  dist[State{}] = 0;
  queue.push({0, State{}});
  uint32_t graph_inputs = 0;
  for (int t = 0; t < p.num_tensors(); ++t)
    if (g.is_graph_input[t]) graph_inputs |= 1u << t;
  while (!queue.empty()) {
    const auto [d, state] = queue.top();
    queue.pop();
    if (d > dist[state]) continue;
    if (state.covered == all_ops && (state.in_slow & graph_outputs) == graph_outputs) {
      result.feasible = true;
      result.optimum = d;
      std::vector<SubgraphSpec> specs;
      for (State s = state; parent.count(s); s = parent[s].first) specs.push_back(parent[s].second);
      std::reverse(specs.begin(), specs.end());
      result.schedule.subgraphs = specs;
      return result;
    }
    for (size_t ci = 0; ci < candidates.size(); ++ci) {
      const Candidate& c = candidates[ci];
      const uint32_t external = c.reads & ~c.writes;
      if ((external & ~(graph_inputs | state.in_slow | state.retained)) != 0) continue;  // M15
      // Every subset of the retainable outputs.
      for (uint32_t retain = c.retainable;; retain = (retain - 1) & c.retainable) {
        auto key = std::tuple(static_cast<int>(ci), state.retained, retain);
        auto it = cache.find(key);
        if (it == cache.end()) {
          it = cache
                   .emplace(key,
                            best_configuration(p, g, options, c.ops, bits(state.retained), bits(retain),
                                               max_permuted_tiles, &result.evaluations, &result.exhaustive))
                   .first;
        }
        const Best& best = it->second;
        if (best.feasible) {
          State next;
          next.covered = state.covered;
          for (int o : c.ops) next.covered |= 1u << o;
          const uint32_t evicted = c.writes & ~c.read_inside & ~retain;
          next.in_slow = state.in_slow | evicted;
          next.retained = retain;
          const double nd = d + best.latency;
          auto known = dist.find(next);
          if (known == dist.end() || nd < known->second) {
            dist[next] = nd;
            parent[next] = {state, best.spec};
            queue.push({nd, next});
          }
        }
        if (retain == 0) break;
      }
    }
  }
  return result;
}

namespace {

// What both generators start from: a native granularity of 1 or 2 per side, and tensors added one by one.
struct TinyProblem {
  std::mt19937& rng;
  Problem p;
  explicit TinyProblem(std::mt19937& r) : rng(r) {
    p.native_w = pick(1, 2);
    p.native_h = pick(1, 2);
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  int add_tensor(int64_t rows, int64_t cols) {
    p.heights.push_back(rows);
    p.widths.push_back(cols);
    return static_cast<int>(p.widths.size()) - 1;
  }
  void add_op(OpType type, std::vector<int> inputs, int output, double base_cost) {
    p.inputs.push_back(std::move(inputs));
    p.outputs.push_back({output});
    p.op_types.push_back(type);
    p.base_costs.push_back(base_cost);
  }
};

}  // namespace

Problem random_diamond(std::mt19937& rng) {
  // x -> a = f(x) -> b = g(a) -> c = h(a, b) [-> d = k(c)]: the set {a's op, c's op} reads back, through b's
  // op, what its own first op made. f and g are MatMuls with a square weight or Pointwise ops.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int64_t rows = pick(1, 2), cols = pick(1, 3);
  auto stage = [&](int in) {
    const int out = tiny.add_tensor(rows, cols);
    if (pick(0, 1))
      tiny.add_op(OpType::MatMul, {in, tiny.add_tensor(cols, cols)}, out, pick(1, 40));
    else
      tiny.add_op(OpType::Pointwise, {in}, out, pick(1, 20));
    return out;
  };
  const int x = tiny.add_tensor(rows, cols);
  const int a = stage(x);
  const int b = stage(a);
  const int c = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::Pointwise, {a, b}, c, pick(1, 20));
  if (pick(0, 1)) stage(c);
  p.fast_memory_capacity = pick(3, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_retention_chain(std::mt19937& rng, int max_ops) {
  // x -> f1 -> f2 -> ... : MatMuls with a square weight or Pointwise ops over equal intermediates, in a
  // fast memory that holds one intermediate whole beside a step's slices but not two (benchmark 15's shape).
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int64_t rows = pick(1, 2), cols = rows == 1 ? pick(4, 6) : pick(2, 3);
  int current = tiny.add_tensor(rows, cols);
  const int ops = pick(3, std::max(3, max_ops));
  for (int o = 0; o < ops; ++o) {
    const int out = tiny.add_tensor(rows, cols);
    if (pick(0, 1))
      tiny.add_op(OpType::MatMul, {current, tiny.add_tensor(cols, cols)}, out, pick(1, 40));
    else
      tiny.add_op(OpType::Pointwise, {current}, out, pick(1, 20));
    current = out;
  }
  const int size = static_cast<int>(rows * cols);
  p.fast_memory_capacity = pick(size + 2, std::max(size + 2, 2 * size - 1));
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.2, 0.8)(rng);  // loads matter
  return p;
}

Problem random_deep_chain(std::mt19937& rng) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  // rows x K intermediates of at most 6 elements (the brute force permutes grids of up to 6 tiles), with
  // K deeper than either native side.
  const int deep = static_cast<int>(std::max(p.native_w, p.native_h)) + 1;  // 2 or 3
  const int64_t rows = pick(1, 2);
  const int64_t depth = rows == 2 ? 3 : pick(deep, 6);
  int current = tiny.add_tensor(rows, depth);
  const int matmuls = pick(2, 3);
  const bool side = pick(0, 2) == 0;
  int first_intermediate = -1;
  for (int i = 0; i < matmuls; ++i) {
    const int out = tiny.add_tensor(rows, depth);
    tiny.add_op(OpType::MatMul, {current, tiny.add_tensor(depth, depth)}, out, pick(2, 40));
    current = out;
    if (i + 1 == matmuls) break;
    const int joined = tiny.add_tensor(rows, depth);
    tiny.add_op(OpType::Pointwise, {current}, joined, pick(1, 20));
    current = joined;
    if (first_intermediate < 0) first_intermediate = joined;
  }
  // A second reader of the first intermediate, joining the last output or on its own (then it may share the
  // subgraph of the MatMul that reads the intermediate, as an epilogue).
  if (side) {
    std::vector<int> inputs{first_intermediate};
    if (pick(0, 1)) inputs.push_back(current);
    tiny.add_op(OpType::Pointwise, inputs, tiny.add_tensor(rows, depth), pick(1, 10));
  }
  const int size = static_cast<int>(rows * depth);
  // Mostly too small for two whole intermediates; sometimes large enough, so that a subgraph may keep one
  // beside another it received.
  p.fast_memory_capacity = pick(size + 2, pick(0, 2) ? std::max(size + 2, 2 * size - 1) : 2 * size + 4);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.1, 0.8)(rng);
  return p;
}

Problem random_epilogue_chain(std::mt19937& rng) {
  // MatMuls deeper than either native side joined by Pointwise ops whose compute is of the order of the
  // weights' traffic (Theorem 15's epilogues), sometimes beside a Pointwise op that reads the chain's graph
  // input and makes a graph output (first-time traffic that can hide an epilogue's compute).
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int deep = static_cast<int>(std::max(p.native_w, p.native_h)) + 1;
  const int64_t rows = pick(1, 2);
  const int64_t depth = rows == 2 ? 3 : pick(deep, 6);
  const int input = tiny.add_tensor(rows, depth);
  int current = input;
  const int matmuls = pick(2, 3);
  for (int i = 0; i < matmuls; ++i) {
    const int out = tiny.add_tensor(rows, depth);
    tiny.add_op(OpType::MatMul, {current, tiny.add_tensor(depth, depth)}, out, pick(2, 30));
    current = out;
    if (i + 1 == matmuls) break;
    const int joined = tiny.add_tensor(rows, depth);
    tiny.add_op(OpType::Pointwise, {current}, joined, pick(1, 60));
    current = joined;
  }
  if (pick(0, 2) == 0) tiny.add_op(OpType::Pointwise, {input}, tiny.add_tensor(rows, depth), pick(1, 10));
  const int size = static_cast<int>(rows * depth);
  p.fast_memory_capacity = pick(size + 2, pick(0, 2) ? std::max(size + 2, 2 * size - 1) : 3 * size + 4);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.05, 0.8)(rng);
  return p;
}

Problem random_fan_out(std::mt19937& rng) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int64_t rows = pick(1, 2), cols = pick(2, 3);
  const int x = tiny.add_tensor(rows, cols);
  std::vector<int> branches;
  for (int i = pick(2, 3); i > 0; --i) {
    branches.push_back(tiny.add_tensor(rows, cols));
    if (pick(0, 1))
      tiny.add_op(OpType::MatMul, {x, tiny.add_tensor(cols, cols)}, branches.back(), pick(1, 40));
    else
      tiny.add_op(OpType::Pointwise, {x}, branches.back(), pick(1, 20));
  }
  tiny.add_op(OpType::Pointwise, branches, tiny.add_tensor(rows, cols), pick(1, 20));
  const int size = static_cast<int>(rows * cols);
  p.fast_memory_capacity = pick(size + 1, 2 * size + 2);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.2, 0.8)(rng);
  return p;
}

Problem random_tiny_problem(std::mt19937& rng, int max_ops) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  auto add_tensor = [&](int64_t rows, int64_t cols) { return tiny.add_tensor(rows, cols); };
  // Output sides keep every grid within 6 tiles at w = h = 1, so every traversal permutation is tried.
  auto side_pair = [&]() {
    static const std::pair<int, int> shapes[] = {{1, 2}, {2, 1}, {2, 2}, {1, 3},
                                                 {3, 1}, {2, 3}, {3, 2}, {1, 1}};
    return shapes[pick(0, 7)];
  };
  std::vector<int> pool;
  const int first_inputs = pick(1, 2);
  for (int i = 0; i < first_inputs; ++i) {
    auto [r, c] = side_pair();
    pool.push_back(add_tensor(r, pick(0, 1) ? c : pick(1, 4)));
  }
  const int ops = pick(2, max_ops);
  for (int o = 0; o < ops; ++o) {
    const int a = pool[pick(0, static_cast<int>(pool.size()) - 1)];
    const bool matmul = pick(0, 1) == 1 && p.heights[a] <= 3;
    int out;
    if (matmul) {
      const int64_t K = p.widths[a];
      int rhs = -1;
      for (int t : pool)
        if (p.heights[t] == K && p.widths[t] <= 3 && pick(0, 1)) rhs = t;
      if (rhs < 0) rhs = add_tensor(K, pick(1, 6 / std::max<int64_t>(1, p.heights[a]) >= 3 ? 3 : 2));
      if (p.heights[a] * p.widths[rhs] > 6) rhs = add_tensor(K, 1);
      out = add_tensor(p.heights[a], p.widths[rhs]);
      tiny.add_op(OpType::MatMul, {a, rhs}, out, pick(1, 40));
    } else {
      if (p.heights[a] * p.widths[a] > 6) continue;
      std::vector<int> ins{a};
      if (pick(0, 2) == 0) {
        int other = add_tensor(p.heights[a], p.widths[a]);
        for (int t : pool)
          if (t != a && p.heights[t] == p.heights[a] && p.widths[t] == p.widths[a] && pick(0, 1)) other = t;
        ins.push_back(other);
      }
      out = add_tensor(p.heights[a], p.widths[a]);
      tiny.add_op(OpType::Pointwise, ins, out, pick(1, 20));
    }
    pool.push_back(out);
  }
  if (p.op_types.empty()) return random_tiny_problem(rng, max_ops);
  p.fast_memory_capacity = pick(4, 30);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
  return p;
}

Problem random_matmul_chain(std::mt19937& rng, int max_ops) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  auto add_tensor = [&](int64_t rows, int64_t cols) { return tiny.add_tensor(rows, cols); };
  // Reductions deeper than n_k, outputs wider or taller than native, tensors larger than the fast memory:
  // the cases Theorems 1 and 2 of docs/bounds.md speak about.
  const int64_t native = std::max(p.native_w, p.native_h);
  auto deep = [&]() { return pick(static_cast<int>(native) + 1, 4); };
  int64_t rows = pick(1, 3);
  int current = add_tensor(rows, deep());
  const int ops = pick(2, max_ops);
  for (int o = 0; o < ops; ++o) {
    const bool matmul = o == 0 || pick(0, 2) > 0;
    if (matmul) {
      const int64_t K = p.widths[current];
      const int64_t N = o + 1 < ops ? deep() : pick(1, static_cast<int>(6 / rows));
      const int64_t width = std::min<int64_t>(N, 6 / rows);
      int rhs = pick(0, 3) == 0 && K <= 3 && o > 0 ? current : add_tensor(K, width);
      if (rhs == current) rhs = add_tensor(K, width);
      const int out = add_tensor(rows, p.widths[rhs]);
      tiny.add_op(OpType::MatMul, {current, rhs}, out, pick(1, 30));
      current = out;
    } else {
      std::vector<int> ins{current};
      if (pick(0, 1)) ins.push_back(add_tensor(p.heights[current], p.widths[current]));
      const int out = add_tensor(p.heights[current], p.widths[current]);
      tiny.add_op(OpType::Pointwise, ins, out, pick(1, 10));
      current = out;
    }
    if (p.heights[current] * p.widths[current] > 6) break;
  }
  p.fast_memory_capacity = pick(2, 12);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_link_pair(std::mt19937& rng, bool made_kept) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int deep_min = static_cast<int>(std::max(p.native_w, p.native_h)) + 1;
  // a: Y0 = X @ W1 (rows x cols), its output reaching b's LHS (side 0) or RHS (side 1). Every grid stays
  // within 6 tiles at w = h = 1 so that the brute force tries every traversal.
  const bool rhs_link = pick(0, 1) == 1;
  int64_t K1, rows, cols, other;
  do {
    K1 = pick(deep_min, 3);
    rows = rhs_link ? pick(deep_min, 3) : pick(1, 3);  // an RHS link's tail reduces over a's rows
    cols = rhs_link ? pick(1, 3) : pick(deep_min, 3);  // an LHS link's tail reduces over a's columns
    other = pick(1, 3);                                // the tail's other output side
  } while (rows * cols > 6 || (rhs_link ? other * cols : rows * other) > 6 ||
           (made_kept && K1 * (rhs_link ? cols : rows) > 6));
  const int X = tiny.add_tensor(rows, K1), W1 = tiny.add_tensor(K1, cols), Y0 = tiny.add_tensor(rows, cols);
  if (made_kept) {  // the head's kept operand (X for an LHS link, W1 for an RHS link) made by a MatMul a0
    const int kept = rhs_link ? W1 : X;
    const int64_t K0 = pick(deep_min, 3);
    const int64_t kept_rows = p.heights[kept], kept_cols = p.widths[kept];
    const int A0 = tiny.add_tensor(kept_rows, K0), B0 = tiny.add_tensor(K0, kept_cols);
    int made = kept;
    const bool between = pick(0, 1) == 1;  // a Pointwise op between a0 and the head
    if (between) made = tiny.add_tensor(kept_rows, kept_cols);
    tiny.add_op(OpType::MatMul, {A0, B0}, made, pick(1, 30));
    if (between) tiny.add_op(OpType::Pointwise, {made}, kept, pick(1, 10));
  }
  tiny.add_op(OpType::MatMul, {X, W1}, Y0, pick(1, 30));
  int Y = Y0;
  if (pick(0, 1)) {  // a Pointwise op between them, sometimes with a second input
    std::vector<int> ins{Y0};
    if (pick(0, 2) == 0) ins.push_back(tiny.add_tensor(rows, cols));
    Y = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::Pointwise, ins, Y, pick(1, 10));
  }
  int Z;
  if (rhs_link) {
    const int V = tiny.add_tensor(other, rows);
    Z = tiny.add_tensor(other, cols);
    tiny.add_op(OpType::MatMul, {V, Y}, Z, pick(1, 30));
  } else {
    const int W2 = tiny.add_tensor(cols, other);
    Z = tiny.add_tensor(rows, other);
    tiny.add_op(OpType::MatMul, {Y, W2}, Z, pick(1, 30));
  }
  // A Pointwise op that reads one of the head's operands and reaches no MatMul (its grid within 6 tiles too).
  const int read = pick(0, 1) ? X : W1;
  if (pick(0, 2) == 0 && p.heights[read] * p.widths[read] <= 6 && p.num_ops() < 5) {
    tiny.add_op(OpType::Pointwise, {read}, tiny.add_tensor(p.heights[read], p.widths[read]), pick(1, 10));
  }
  if (pick(0, 2) == 0) {  // an epilogue
    tiny.add_op(OpType::Pointwise, {Z}, tiny.add_tensor(p.heights[Z], p.widths[Z]), pick(1, 10));
  }
  p.fast_memory_capacity = pick(2, 8);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_deep_island(std::mt19937& rng) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  // M: X @ W, reducing deeper than native, every grid within 6 tiles at w = h = 1.
  const int64_t K = pick(static_cast<int>(p.native_w) + 1, 3);
  int64_t rows, cols;
  do {
    rows = pick(1, 3);
    cols = pick(1, 3);
  } while (rows * cols > 6 || rows * K > 6 || K * cols > 6);
  const int X = tiny.add_tensor(rows, K), W = tiny.add_tensor(K, cols);
  int Y = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::MatMul, {X, W}, Y, pick(1, 6));
  if (pick(0, 1)) {  // an epilogue
    const int E = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::Pointwise, {Y}, E, pick(1, 20));
    Y = E;
  }
  // Compute-heavy Pointwise ops: elsewhere and of another shape, of M's output's shape, or reading it.
  const int kind = std::max(0, pick(-1, 2));  // elsewhere half of the time
  int64_t r2 = rows, c2 = cols;
  if (kind == 0)
    do {
      r2 = pick(1, 3);
      c2 = pick(1, 3);
    } while (r2 * c2 > 6);
  std::vector<int> ins{tiny.add_tensor(r2, c2)};
  if (kind == 2) ins.push_back(Y);
  int out = tiny.add_tensor(r2, c2);
  tiny.add_op(OpType::Pointwise, ins, out, pick(5, 60));
  if (pick(0, 1)) tiny.add_op(OpType::Pointwise, {out}, tiny.add_tensor(r2, c2), pick(5, 60));
  p.fast_memory_capacity = pick(3, 12);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_streamed_heads(std::mt19937& rng) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;  // n_k = 2: a streamed side of 1 or 3 is priced below its padded tiles
  const int64_t K = pick(static_cast<int>(std::max(p.native_w, p.native_h)) + 1, 3);
  const int64_t rows = pick(1, 2);
  const int heads = pick(1, 2);
  const int X0 = tiny.add_tensor(rows, K);
  int X = X0;
  if (pick(0, 2) > 0) {  // the shared LHS made by a Pointwise op
    X = tiny.add_tensor(rows, K);
    tiny.add_op(OpType::Pointwise, {X0}, X, pick(1, 12));
  }
  std::vector<int> tail_outputs;
  for (int h = 0; h < heads; ++h) {
    const bool rhs_link = pick(0, 1) == 1;
    const int64_t cols = rhs_link ? pick(1, 3) : (pick(0, 1) ? 1 : 3);  // an RHS link streams the rows
    if (rows * cols > 6) continue;
    int Y = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::MatMul, {X, tiny.add_tensor(K, cols)}, Y, pick(1, 12));
    if (pick(0, 2) == 0) {  // an in-chain op
      const int Y2 = tiny.add_tensor(rows, cols);
      tiny.add_op(OpType::Pointwise, {Y}, Y2, pick(1, 10));
      Y = Y2;
    }
    const int64_t other = pick(1, 2);
    int Z;
    if (rhs_link) {
      Z = tiny.add_tensor(other, cols);
      tiny.add_op(OpType::MatMul, {tiny.add_tensor(other, rows), Y}, Z, pick(1, 8));
    } else {
      Z = tiny.add_tensor(rows, other);
      tiny.add_op(OpType::MatMul, {Y, tiny.add_tensor(cols, other)}, Z, pick(1, 8));
    }
    tail_outputs.push_back(Z);
  }
  if (heads == 1 && X != X0 && pick(0, 1) == 0) {
    // Another head whose pool holds X's maker without reading X, so that its subgraph may make X and keep
    // it: d3 = A @ B3 -> Y3 heads t3 = Y3 @ V3 -> Z3, shaped like X, and R(Z3, X0) joins X's maker to it.
    const int64_t c3 = pick(0, 1) ? 1 : 3;
    const int Y3 = tiny.add_tensor(rows, c3), Z3 = tiny.add_tensor(rows, K);
    tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, K), tiny.add_tensor(K, c3)}, Y3, pick(1, 12));
    tiny.add_op(OpType::MatMul, {Y3, tiny.add_tensor(c3, K)}, Z3, pick(1, 8));
    tiny.add_op(OpType::Pointwise, {Z3, X0}, tiny.add_tensor(rows, K), pick(1, 10));
  }
  if (pick(0, 4) > 0 && p.num_ops() < 6) {  // compute-heavy: elsewhere, or reading a tail's output
    const int Z = tail_outputs[0];
    const bool reads_tail = pick(0, 3) == 0;
    const int in = reads_tail ? Z : tiny.add_tensor(p.heights[Z], p.widths[Z]);
    tiny.add_op(OpType::Pointwise, {in}, tiny.add_tensor(p.heights[Z], p.widths[Z]), pick(5, 60));
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_shared_tails(std::mt19937& rng) {
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;  // n_k = 2: a streamed side of 1 is priced at half its padded tile
  const bool rhs_link = pick(0, 1) == 1;
  const int64_t side = pick(1, 2);  // the heads' other side: their rows (LHS link) or columns (RHS link)
  const int heads = pick(1, 3);
  // Half of the time the tails and the join are cheap beside the heads: then a head's discount exceeds a
  // tail's run, and which ops every path passes decides the charge.
  const int cheap = pick(0, 1) == 1;
  const int shared =
      pick(0, 2) == 0 ? tiny.add_tensor(rhs_link ? 1 : side, 1) : -1;  // a common 1-deep operand
  std::vector<int> joined;
  for (int h = 0; h < heads; ++h) {
    const int64_t depth = pick(0, 3) == 0 ? 3 : 1;
    const int64_t rows = rhs_link ? 1 : side, cols = rhs_link ? side : 1;
    const int A = depth == 1 && shared >= 0 ? shared : tiny.add_tensor(rows, depth);
    int Y = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::MatMul, {A, tiny.add_tensor(depth, cols)}, Y, pick(1, cheap ? 20 : 12));
    if (pick(0, 3) == 0) {  // an in-chain op
      const int Y2 = tiny.add_tensor(rows, cols);
      tiny.add_op(OpType::Pointwise, {Y}, Y2, pick(1, cheap ? 6 : 10));
      Y = Y2;
    }
    joined.push_back(Y);
  }
  int S = joined[0];
  if (heads > 1 || pick(0, 1) == 0) {  // the join
    S = tiny.add_tensor(p.heights[joined[0]], p.widths[joined[0]]);
    tiny.add_op(OpType::Pointwise, joined, S, pick(1, cheap ? 2 : 10));
  }
  const int tails = p.num_ops() < 6 && pick(0, 3) == 0 ? 2 : 1;
  int Z = -1;
  for (int t = 0; t < tails; ++t) {
    const int64_t other = pick(1, 3);  // the tail's output columns (LHS link) or rows (RHS link)
    if (rhs_link) {
      Z = tiny.add_tensor(other, side);
      tiny.add_op(OpType::MatMul, {tiny.add_tensor(other, 1), S}, Z, pick(1, cheap ? 2 : 8));
    } else {
      Z = tiny.add_tensor(side, other);
      tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, other)}, Z, pick(1, cheap ? 2 : 8));
    }
  }
  if (p.num_ops() < 7 && pick(0, 2) == 0) {  // compute-heavy: elsewhere, or reading a tail's output
    const bool reads_tail = pick(0, 1) == 0;
    const int in = reads_tail ? Z : tiny.add_tensor(p.heights[Z], p.widths[Z]);
    tiny.add_op(OpType::Pointwise, {in}, tiny.add_tensor(p.heights[Z], p.widths[Z]), pick(5, 40));
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

Problem random_joined_heads(std::mt19937& rng) {
  // DenseNet's 3x3 convolution in miniature: two or three MatMuls of one depth (at most n_w = 2), each with a
  // streamed side below the native tile, summed by one Pointwise op whose output a tail reads at another depth;
  // then often a MatMul of the heads' depth after the tail, which no subgraph can share with a head whose
  // tail it is not (Theorem 14's shared price, Theorem 16's joins).
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;
  p.native_h = pick(1, 2);
  const int64_t depth = pick(1, 2), rows = pick(1, 2);
  const int heads = pick(2, 3);
  const bool cheap = pick(0, 1) == 1;
  std::vector<int> joined;
  for (int h = 0; h < heads; ++h) {
    const int Y = tiny.add_tensor(rows, 1);
    tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, depth), tiny.add_tensor(depth, 1)}, Y, pick(2, 16));
    joined.push_back(Y);
  }
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, joined, S, pick(1, cheap ? 2 : 8));
  const int64_t width = pick(1, 3);
  const int Z = tiny.add_tensor(rows, width);
  tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, width)}, Z, pick(1, cheap ? 2 : 8));
  if (pick(0, 2) > 0) {  // a MatMul of the heads' depth downstream, reading the tail's output or beside it
    const int64_t other = pick(1, 2);
    const int in = width == depth && pick(0, 1) == 0 ? Z : tiny.add_tensor(rows, depth);
    tiny.add_op(OpType::MatMul, {in, tiny.add_tensor(depth, other)}, tiny.add_tensor(rows, other), pick(1, 8));
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

// A head `depth` deep with a 1-wide output of `rows` (a strip of a native tile when n_w > 1), and in a quarter
// of the problems a Pointwise op after it: the tensor a Pointwise op under test reads.
int narrow_head(TinyProblem& tiny, int64_t rows, int64_t depth) {
  int Y = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, depth), tiny.add_tensor(depth, 1)}, Y, tiny.pick(2, 12));
  if (tiny.pick(0, 3) == 0) {
    const int Y2 = tiny.add_tensor(rows, 1);
    tiny.add_op(OpType::Pointwise, {Y}, Y2, tiny.pick(1, 6));
    Y = Y2;
  }
  return Y;
}

Problem random_shared_paths(std::mt19937& rng) {
  // A DenseNet chunk in miniature: one or two heads (summed when two) make S through a Pointwise op U; two or
  // three Pointwise readers of S each feed their own tail of depth 1, 1-wide strips against n_k = 2. The heads
  // reduce 2 deep, so no subgraph holds two readers in-chain (M13), and each served reader needs a run of U
  // (Theorem 18); sometimes the heads reduce 1 deep, a reader reads a graph input too, or two readers share a
  // tail, where the theorem must charge less or nothing.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;
  p.native_h = pick(1, 2);
  const int64_t rows = pick(1, 2), depth = pick(0, 4) == 0 ? 1 : 2;
  const int heads = pick(1, 2);
  std::vector<int> made;
  for (int h = 0; h < heads; ++h) {
    const int Y = tiny.add_tensor(rows, 1);
    tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, depth), tiny.add_tensor(depth, 1)}, Y, pick(2, 12));
    made.push_back(Y);
  }
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, made, S, pick(1, 8));
  const int readers = heads == 1 ? pick(2, 3) : 2;
  const bool share_tail = rows == 1 && pick(0, 4) == 0;  // the first tail reads the second reader as its RHS
  std::vector<int> read;
  for (int r = 0; r < readers; ++r) {
    std::vector<int> inputs{S};
    if (pick(0, 5) == 0) inputs.push_back(tiny.add_tensor(rows, 1));  // a graph input beside S
    read.push_back(tiny.add_tensor(rows, 1));
    tiny.add_op(OpType::Pointwise, inputs, read.back(), pick(1, 12));
  }
  for (int r = 0; r < readers; ++r) {
    if (share_tail && r == 1) continue;
    const int64_t width = share_tail && r == 0 ? 1 : pick(1, 3);
    const int V = share_tail && r == 0 ? read[1] : tiny.add_tensor(1, width);
    tiny.add_op(OpType::MatMul, {read[r], V}, tiny.add_tensor(rows, width), pick(1, 6));
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
  return p;
}

Problem random_remade_ops(std::mt19937& rng) {
  // RegNet's ReLU ahead of a grouped convolution's offsets in miniature: a head (1 to 3 deep against n_k = 2,
  // a 1-wide output) feeds a Pointwise op P, sometimes through another one, and P is read by two or three
  // MatMuls (LHS or RHS, 1 deep, 1 to 3 wide), sometimes by a Pointwise op besides. In-chain, P's output
  // feeds a MatMul, so it is neither kept nor stored, and each reader makes it again (Theorem 19).
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = pick(2, 4);  // a 1-wide strip is a half to a quarter of a tile: discounts of 1 to 3 floors
  p.native_h = pick(1, 2);
  const int64_t rows = pick(1, 2), depth = pick(1, 3);
  const int Y = narrow_head(tiny, rows, depth);
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {Y}, S, pick(1, 12));
  const int readers = pick(2, 3);
  for (int r = 0; r < readers; ++r) {
    if (r == readers - 1 && pick(0, 5) == 0) {  // a Pointwise reader: P is then kept or stored where it runs
      tiny.add_op(OpType::Pointwise, {S}, tiny.add_tensor(rows, 1), pick(1, 6));
      continue;
    }
    if (rows == 1 && pick(0, 3) == 0) {  // S as an RHS, 1 deep: L[a x 1] @ S[1 x 1]
      const int64_t a = pick(1, 3);
      tiny.add_op(OpType::MatMul, {tiny.add_tensor(a, 1), S}, tiny.add_tensor(a, 1), pick(1, 6));
    } else {
      const int64_t width = pick(1, 3);
      tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, width)}, tiny.add_tensor(rows, width), pick(1, 6));
    }
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
  return p;
}

Problem random_waiting_readers(std::mt19937& rng) {
  // Squeeze-and-excite in miniature: a head (sometimes through a Pointwise op) makes P's input; P is read by
  // a MatMul m and by a product q, whose other input comes from m through two MatMuls g1, g2 (the gate; now
  // and then g1 alone); sometimes a tail after q. g1 mostly reduces another depth than m, so m's first run cannot
  // hold q (M13) and P runs twice or padded (Theorem 20); when it does not, the theorem must charge nothing.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = pick(2, 3);
  p.native_h = pick(1, 2);
  const int64_t rows = pick(1, 2), depth = pick(1, 3);
  const int Y = narrow_head(tiny, rows, depth);
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {Y}, S, pick(1, 12));
  const int64_t width = pick(1, 3);  // m's output columns: g1's depth
  const int G = tiny.add_tensor(rows, width);
  tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, width)}, G, pick(1, 6));
  const int G1 = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::MatMul, {G, tiny.add_tensor(width, 1)}, G1, pick(1, 6));
  int G2 = G1;
  if (pick(0, 3) > 0) {  // else q reads g1's output: one MatMul between m and q, and m's run may hold q
    G2 = tiny.add_tensor(rows, 1);
    tiny.add_op(OpType::MatMul, {G1, tiny.add_tensor(1, 1)}, G2, pick(1, 6));
  }
  const int Z = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {S, G2}, Z, pick(1, 8));
  if (pick(0, 2) == 0) {
    const int64_t out = pick(1, 3);
    tiny.add_op(OpType::MatMul, {Z, tiny.add_tensor(1, out)}, tiny.add_tensor(rows, out), pick(1, 6));
  }
  p.fast_memory_capacity = pick(4, 16);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
  return p;
}

Problem random_second_tail_readers(std::mt19937& rng) {
  // Theorem 20's first-run price assumes m is P's only MatMul reader. Here P also feeds a second MatMul t
  // of one column tile beside m, whose grid has two or three: a run before m's first can hold P in-chain
  // towards t at one pass and keep it for m, so pricing P's run towards m's grid would be unsound. The rest is
  // squeeze-and-excite as in random_waiting_readers: q reads P and the gate that m makes through g1 and g2.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  // P's one column pads to three, so its padded price is three times its in-chain one, and m's four to six
  // columns need two grid columns at the native width: its first run streams P twice.
  p.native_w = 3;
  p.native_h = pick(1, 2);
  const int64_t rows = 1, depth = pick(1, 3);
  const int Y = narrow_head(tiny, rows, depth);
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {Y}, S, pick(12, 48));  // P, the dearest op
  const int64_t width = pick(4, 6);
  const int G = tiny.add_tensor(rows, width);
  tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, width)}, G, pick(1, 2));
  tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, 1)}, tiny.add_tensor(rows, 1), pick(1, 2));  // t
  const int G1 = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::MatMul, {G, tiny.add_tensor(width, 1)}, G1, pick(1, 2));
  const int G2 = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::MatMul, {G1, tiny.add_tensor(1, 1)}, G2, pick(1, 2));
  const int Z = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {S, G2}, Z, pick(1, 3));
  // q's tail: P may run in-chain again beside q, so two in-chain runs (towards t, then q's tail) can be the
  // optimum, and P's charge beyond its floor is then one in-chain price, not m's two.
  tiny.add_op(OpType::MatMul, {Z, tiny.add_tensor(1, 1)}, tiny.add_tensor(rows, 1), pick(1, 2));
  p.fast_memory_capacity = pick(6, 20);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(8.0, 64.0)(rng);  // traffic nearly free: compute decides
  return p;
}

Problem random_waiting_chains(std::mt19937& rng) {
  // EfficientNet's squeeze-and-excite in miniature: a head makes the input of one or two Pointwise ops above
  // P (the expand convolution's SiLU and the depthwise convolution), read by nothing else or sometimes by a
  // MatMul too; P is read by a pooling MatMul m, and by a product q whose gate comes from m through two
  // MatMuls. P is [d x c] and m reads it as an RHS, or P is [1 x d] and m reads it as an LHS. m is d = 3 deep
  // (deeper than n_w = 2, so m shares a subgraph with one head only, M13), or 2 deep like RegNet's pooling
  // (one k-step, and its output has another shape than P's, M10). Sometimes a third reader of P, d deep or
  // shallow (one k-step: a subgraph where P is in-chain beside it may keep what the ops above make, M17), or
  // a tail after q (sometimes on P's other side).
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;
  p.native_h = pick(1, 2);
  const bool rhs = pick(0, 1) == 0;
  const int64_t d = pick(2, 3);
  const int64_t rows = rhs ? d : 1, cols = rhs ? pick(1, 2) : d, depth = pick(1, 3);
  int Y = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, depth), tiny.add_tensor(depth, cols)}, Y, pick(2, 12));
  const int above = pick(1, 2);
  for (int u = 0; u < above; ++u) {
    const int next = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::Pointwise, {Y}, next, pick(1, 16));
    if (pick(0, 4) == 0)  // a MatMul reading it beside: it may be in-chain where P is not
      tiny.add_op(OpType::MatMul, {next, tiny.add_tensor(cols, 1)}, tiny.add_tensor(rows, 1), pick(1, 4));
    Y = next;
  }
  const int S = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::Pointwise, {Y}, S, pick(1, 12));
  int G = tiny.add_tensor(1, rhs ? cols : 1);
  if (rhs)
    tiny.add_op(OpType::MatMul, {tiny.add_tensor(1, rows), S}, G, pick(1, 6));
  else
    tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(cols, 1)}, G, pick(1, 6));
  // The gate back to P's shape: a broadcast (1 deep), then a MatMul of another depth than m's.
  const int G1 = tiny.add_tensor(rows, cols);
  if (rhs)
    tiny.add_op(OpType::MatMul, {tiny.add_tensor(rows, 1), G}, G1, pick(1, 6));
  else
    tiny.add_op(OpType::MatMul, {G, tiny.add_tensor(1, cols)}, G1, pick(1, 6));
  const int G2 = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::MatMul, {G1, tiny.add_tensor(cols, cols)}, G2, pick(1, 6));
  const int Z = tiny.add_tensor(rows, cols);
  tiny.add_op(OpType::Pointwise, {S, G2}, Z, pick(1, 8));
  const int third = pick(0, 3);
  if (third == 1) {  // a third reader of P, d deep
    const int64_t other = rhs ? 2 * pick(0, 1) + 1 : pick(1, d);
    if (rhs)
      tiny.add_op(OpType::MatMul, {tiny.add_tensor(other, rows), S}, tiny.add_tensor(other, cols), pick(1, 6));
    else
      tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(cols, other)}, tiny.add_tensor(rows, other), pick(1, 6));
  } else if (third == 2) {  // a shallow one (P's other side): in one k-step beside it, with an output of P's
                            // shape or not, a subgraph where P is in-chain may keep what the ops above make
    const int64_t other = pick(1, 2);
    if (rhs)
      tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(cols, other)}, tiny.add_tensor(rows, other), pick(1, 6));
    else
      tiny.add_op(OpType::MatMul, {tiny.add_tensor(other, rows), S}, tiny.add_tensor(other, cols), pick(1, 6));
  }
  // A tail after q reading Z as its LHS: on P's other side when m reads an RHS, so P's cheapest stream is not
  // the one it has beside m's first run. At most 6 output elements, so every traversal is tried.
  if (pick(0, 2) == 0) {
    const int64_t out = rhs ? pick(1, 2) : pick(1, 3);
    tiny.add_op(OpType::MatMul, {Z, tiny.add_tensor(cols, out)}, tiny.add_tensor(rows, out), pick(1, 6));
  }
  p.fast_memory_capacity = pick(6, 24);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.5, 4.0)(rng);
  return p;
}

Problem random_deep_head_readers(std::mt19937& rng) {
  // RegNet's 1x1 convolution ahead of a grouped convolution in miniature. The head d reduces 3 deep against
  // n_w = 2, so a subgraph where it heads a link holds one tail (M13); it reads graph inputs, or a tensor a
  // Pointwise op makes. Its Pointwise op r is read by two or three 1-deep MatMuls t_i (r runs again or
  // padded, Theorem 19). Sometimes a Pointwise sum merges the t_i's outputs (no first run of d holds it), with
  // a tail after it now and then; sometimes a compute-heavy Pointwise op stands apart, so that d's loads, not
  // the compute, are what a schedule must hide.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  p.native_w = 2;
  p.native_h = pick(1, 2);
  const int64_t rows = pick(1, 2);
  int X = tiny.add_tensor(rows, 3);
  if (pick(0, 3) == 0) {
    const int made = tiny.add_tensor(rows, 3);
    tiny.add_op(OpType::Pointwise, {X}, made, pick(1, 8));
    X = made;
  }
  const int Y = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::MatMul, {X, tiny.add_tensor(3, 1)}, Y, pick(2, 12));
  const int S = tiny.add_tensor(rows, 1);
  tiny.add_op(OpType::Pointwise, {Y}, S, pick(1, 12));
  std::vector<int> outputs;
  for (int r = pick(2, 3); r > 0; --r) {
    outputs.push_back(tiny.add_tensor(rows, 1));
    tiny.add_op(OpType::MatMul, {S, tiny.add_tensor(1, 1)}, outputs.back(), pick(1, 6));
  }
  if (pick(0, 1) == 0) {
    const int Z = tiny.add_tensor(rows, 1);
    tiny.add_op(OpType::Pointwise, outputs, Z, pick(1, 12));
    if (pick(0, 2) == 0) {
      const int64_t width = pick(1, 2);
      tiny.add_op(OpType::MatMul, {Z, tiny.add_tensor(1, width)}, tiny.add_tensor(rows, width), pick(1, 6));
    }
  }
  if (pick(0, 1) == 0) tiny.add_op(OpType::Pointwise, {tiny.add_tensor(1, 1)}, tiny.add_tensor(1, 1), pick(20, 60));
  p.fast_memory_capacity = pick(6, 24);
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.15, 1.0)(rng);
  return p;
}

Problem crowded_branches_once(std::mt19937& rng);

Problem random_crowded_branches(std::mt19937& rng) {
  // Outputs of at most 6 elements: every granularity's grid (1 x 1 tiles too) is permuted exhaustively.
  for (;;) {
    Problem p = crowded_branches_once(rng);
    bool small = true;
    for (const auto& outputs : p.outputs)
      for (int y : outputs) small &= p.heights[y] * p.widths[y] <= 6;
    if (small) return p;
  }
}

Problem crowded_branches_once(std::mt19937& rng) {
  // Benchmark 13 in miniature: one to three branches x_i -> A_i -> B_i [-> C_i], each step a MatMul reducing
  // deeper than native, the second one's other operand a weight shared by the branches (sometimes one per
  // branch), in a fast memory about one A_i large: A_i is stored and reloaded, made by a link, or held where
  // its reader runs, which crowds the shared weight's slices into short tiles (Theorem 17). Sometimes A_i is
  // a Pointwise op's output (no head), or the branch reads A_i as an RHS, or the last MatMul is shallow.
  TinyProblem tiny(rng);
  Problem& p = tiny.p;
  auto pick = [&](int lo, int hi) { return tiny.pick(lo, hi); };
  const int n = static_cast<int>(std::max(p.native_w, p.native_h));
  auto deep = [&] { return static_cast<int64_t>(pick(n + 1, n + 2)); };
  const bool rhs = pick(0, 3) == 0, pointwise_made = pick(0, 4) == 0, shared = pick(0, 3) > 0;
  const int branches = pick(1, 3);
  const bool third = branches < 3 && pick(0, 1) == 0;
  const int64_t rows = pick(1, 2), K0 = deep(), K1 = deep(),
                cols = third && pick(0, 1) == 0 ? deep() : pick(1, 3);
  // LHS form: A [rows x K1] @ W1 [K1 x cols]; RHS form: W1 [rows x K1] @ A [K1 x cols].
  const int W0 = tiny.add_tensor(rhs ? K1 : K0, rhs ? K0 : K1);
  int W1 = rhs ? tiny.add_tensor(rows, K1) : tiny.add_tensor(K1, cols);
  for (int b = 0; b < branches; ++b) {
    const int A = rhs ? tiny.add_tensor(K1, cols) : tiny.add_tensor(rows, K1);
    if (pointwise_made) {
      tiny.add_op(OpType::Pointwise, {tiny.add_tensor(p.heights[A], p.widths[A])}, A, pick(1, 4));
    } else {
      const int x = rhs ? tiny.add_tensor(K0, cols) : tiny.add_tensor(rows, K0);
      tiny.add_op(OpType::MatMul, rhs ? std::vector<int>{W0, x} : std::vector<int>{x, W0}, A, pick(2, 12));
    }
    if (!shared && b > 0) W1 = rhs ? tiny.add_tensor(rows, K1) : tiny.add_tensor(K1, cols);
    const int Bt = tiny.add_tensor(rows, cols);
    tiny.add_op(OpType::MatMul, rhs ? std::vector<int>{W1, A} : std::vector<int>{A, W1}, Bt, pick(1, 8));
    if (third) {
      const int64_t other = pick(1, 2);
      if (rhs)
        tiny.add_op(OpType::MatMul, {tiny.add_tensor(other, rows), Bt}, tiny.add_tensor(other, cols),
                    pick(1, 4));
      else
        tiny.add_op(OpType::MatMul, {Bt, tiny.add_tensor(cols, other)}, tiny.add_tensor(rows, other),
                    pick(1, 4));
    }
  }
  const int a_size = static_cast<int>(rhs ? K1 * cols : rows * K1);
  p.fast_memory_capacity = pick(std::max(2, a_size - 2), 2 * a_size + 4);  // sometimes below A_i's size
  p.slow_memory_bandwidth = std::uniform_real_distribution<double>(0.25, 2.0)(rng);
  return p;
}

}  // namespace mlsys::testing
