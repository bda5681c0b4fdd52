#include "sim/graph.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include "sim/violation.hpp"

namespace mlsys {

static std::string shape(const Problem& p, int t) {
  return "tensor " + std::to_string(t) + " (" + std::to_string(p.heights[t]) + "x" +
         std::to_string(p.widths[t]) + ")";
}

// Per op, how many of its inputs some op produces: Kahn's count of what it still waits for.
static std::vector<int> produced_input_counts(const Problem& p, const Graph& g) {
  std::vector<int> pending(p.num_ops(), 0);
  for (int o = 0; o < p.num_ops(); ++o)
    for (int t : p.inputs[o])
      if (g.producer[t] != -1) ++pending[o];
  return pending;
}

std::vector<int> topological_order(const Problem& p, const Graph& g,
                                   const std::function<size_t(const std::vector<int>& ready)>& pick) {
  std::vector<int> pending = produced_input_counts(p, g);
  std::vector<int> ready, order;
  for (int o = 0; o < p.num_ops(); ++o)
    if (pending[o] == 0) ready.push_back(o);
  while (!ready.empty()) {
    const size_t at = pick(ready);
    const int o = ready[at];
    ready.erase(ready.begin() + static_cast<long>(at));
    order.push_back(o);
    for (int t : p.outputs[o])
      for (const Consumer& c : g.consumers[t])
        if (--pending[c.op] == 0) ready.push_back(c.op);
  }
  return order;
}

std::vector<int> lowest_index_topological_order(const Problem& p, const Graph& g) {
  std::vector<int> pending = produced_input_counts(p, g);
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int o = 0; o < p.num_ops(); ++o)
    if (pending[o] == 0) ready.push(o);
  std::vector<int> order;
  while (!ready.empty()) {
    const int o = ready.top();
    ready.pop();
    order.push_back(o);
    for (int t : p.outputs[o])
      for (const Consumer& c : g.consumers[t])
        if (--pending[c.op] == 0) ready.push(c.op);
  }
  return order;
}

Graph analyze_graph(const Problem& p, const std::string& file) {
  const int T = p.num_tensors(), N = p.num_ops();
  auto fail = [&](int op, const std::string& message) -> void {
    throw InputError(file, "op " + std::to_string(op), "M2", message);
  };
  Graph g;
  g.producer.assign(T, -1);
  g.consumers.assign(T, {});
  g.reduction_depth.assign(N, 0);
  for (int o = 0; o < N; ++o) {
    const auto& in = p.inputs[o];
    const auto& out = p.outputs[o];
    if (p.is_matmul(o)) {
      if (in.size() != 2)
        fail(o, "a MatMul needs exactly 2 inputs [LHS, RHS], got " + std::to_string(in.size()));
      if (out.size() != 1) fail(o, "a MatMul needs exactly 1 output, got " + std::to_string(out.size()));
      int lhs = in[0], rhs = in[1], y = out[0];
      if (p.widths[lhs] != p.heights[rhs])
        fail(o, "MatMul shape mismatch: LHS " + shape(p, lhs) + " width != RHS " + shape(p, rhs) + " height");
      if (p.heights[y] != p.heights[lhs] || p.widths[y] != p.widths[rhs])
        fail(o, "MatMul shape mismatch: output " + shape(p, y) + " must be " +
                    std::to_string(p.heights[lhs]) + "x" + std::to_string(p.widths[rhs]));
      g.reduction_depth[o] = p.widths[lhs];
    } else {
      if (in.empty()) fail(o, "a Pointwise op needs at least 1 input");
      if (out.empty()) fail(o, "a Pointwise op needs at least 1 output");
      int ref = out[0];
      for (int t : in)
        if (p.widths[t] != p.widths[ref] || p.heights[t] != p.heights[ref])
          fail(o, "Pointwise shape mismatch: input " + shape(p, t) + " vs output " + shape(p, ref));
      for (int t : out)
        if (p.widths[t] != p.widths[ref] || p.heights[t] != p.heights[ref])
          fail(o, "Pointwise shape mismatch: output " + shape(p, t) + " vs output " + shape(p, ref));
    }
    for (int t : out) {
      if (g.producer[t] != -1)
        fail(o,
             "tensor " + std::to_string(t) + " is already produced by op " + std::to_string(g.producer[t]));
      g.producer[t] = o;
    }
    for (int i = 0; i < static_cast<int>(in.size()); ++i) g.consumers[in[i]].push_back({o, i});
  }
  // Ops left out of a topological order lie on a cycle. The canonical order takes the lowest ready index.
  g.topological_order = lowest_index_topological_order(p, g);
  if (static_cast<int>(g.topological_order.size()) != N) {
    std::vector<bool> ordered(N, false);
    for (int o : g.topological_order) ordered[o] = true;
    for (int o = 0; o < N; ++o)
      if (!ordered[o]) fail(o, "the graph has a cycle through this op");
  }
  // Heads and in-chain ops (M12): fed by a MatMul through Pointwise ops, and feeding a MatMul's LHS (RHS)
  // through Pointwise ops.
  std::vector<bool> fed_by_matmul(N, false);
  for (int o : g.topological_order) {
    fed_by_matmul[o] = p.is_matmul(o);
    for (int t : p.inputs[o])
      if (g.producer[t] != -1 && fed_by_matmul[g.producer[t]]) fed_by_matmul[o] = true;
  }
  std::vector<uint8_t> feeds(N, 0);
  for (auto it = g.topological_order.rbegin(); it != g.topological_order.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : g.consumers[t])
        feeds[*it] |= p.is_matmul(c.op) ? (c.position == 0 ? kStreamsColumns : kStreamsRows) : feeds[c.op];
  g.streamable_axes.assign(N, 0);
  for (int o = 0; o < N; ++o) g.streamable_axes[o] = fed_by_matmul[o] ? feeds[o] : 0;
  // A link's head and in-chain ops run at every tile of the grid. A non-producer tail's output is the grid,
  // at most n_w wide per tile; a middle's LHS output is at most n_w wide (w = k = K <= n_w, M13) and its RHS
  // output as wide as the grid. So the grid has at least ceil(W / n) columns, n = max(n_w, n_h), for the
  // MatMul an LHS path enters; likewise rows for an RHS path.
  const int64_t n = std::max(p.native_w, p.native_h);
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  g.lhs_tail_columns.assign(N, kNone);
  g.rhs_tail_rows.assign(N, kNone);
  for (auto it = g.topological_order.rbegin(); it != g.topological_order.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : g.consumers[t]) {
        int64_t& columns = g.lhs_tail_columns[*it];
        int64_t& rows = g.rhs_tail_rows[*it];
        if (!p.is_matmul(c.op)) {
          columns = std::min(columns, g.lhs_tail_columns[c.op]);
          rows = std::min(rows, g.rhs_tail_rows[c.op]);
        } else if (const int y = p.outputs[c.op][0]; c.position == 0) {
          columns = std::min(columns, (p.widths[y] + n - 1) / n);
        } else {
          rows = std::min(rows, (p.heights[y] + n - 1) / n);
        }
      }
  for (int o = 0; o < N; ++o) {
    if (g.lhs_tail_columns[o] == kNone) g.lhs_tail_columns[o] = 1;
    if (g.rhs_tail_rows[o] == kNone) g.rhs_tail_rows[o] = 1;
  }
  g.is_graph_input.assign(T, false);
  g.is_graph_output.assign(T, false);
  for (int t = 0; t < T; ++t) {
    g.is_graph_input[t] = g.producer[t] == -1 && !g.consumers[t].empty();
    g.is_graph_output[t] = g.producer[t] != -1 && g.consumers[t].empty();
  }
  return g;
}

bool reads_only(const Problem& problem, const Graph& graph, int op, int reader) {
  for (int t : problem.outputs[op])
    for (const Consumer& c : graph.consumers[t])
      if (c.op != reader) return false;
  return true;
}

}  // namespace mlsys
