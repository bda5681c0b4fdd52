// Theorem 15: the compute of Pointwise ops between deep MatMuls that no first-time graph traffic can hide
// (docs/bounds.md#theorem-15).
#include "verifier/exposed_epilogue_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "verifier/link_walks.hpp"

namespace mlsys {
namespace {

constexpr double kNoSuchRun = std::numeric_limits<double>::infinity();

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A Pointwise op between deep MatMuls: its inputs are one tensor that only it reads, made by a MatMul; its
// one output is read by MatMuls only, each reducing deeper than either native side (M14 then forbids it as
// their prologue, and M6 keeps their reductions split).
struct Candidate {
  int op = -1, producer = -1, input = -1, output = -1;
};

class Epilogues {
 public:
  Epilogues(const Problem& p, const Graph& g, LinkWalker& walk)
      : p_(p), g_(g), walk_(walk), below_(p.num_ops()), reached_(p.num_ops()), seen_(p.num_ops()) {
    deepest_native_ = std::max(p.native_w, p.native_h);
  }

  bool deep(int op) const { return p_.is_matmul(op) && g_.reduction_depth[op] > deepest_native_; }

  std::optional<Candidate> candidate(int op) const {
    if (p_.is_matmul(op) || p_.inputs[op].empty() || p_.outputs[op].size() != 1) return std::nullopt;
    const int y = p_.inputs[op][0];
    if (std::any_of(p_.inputs[op].begin(), p_.inputs[op].end(), [&](int t) { return t != y; }))
      return std::nullopt;
    const int a = g_.producer[y];
    if (a < 0 || !deep(a)) return std::nullopt;
    for (const Consumer& c : g_.consumers[y])
      if (c.op != op) return std::nullopt;
    const int x = p_.outputs[op][0];
    if (g_.consumers[x].empty()) return std::nullopt;
    for (const Consumer& c : g_.consumers[x])
      if (!deep(c.op)) return std::nullopt;
    return Candidate{op, a, y, x};
  }

  // The graph traffic one op's runs can move for the first time: its graph inputs and graph outputs.
  double first_io(int op) const {
    double moved = 0;
    std::vector<int> tensors;
    for (int t : p_.inputs[op])
      if (g_.is_graph_input[t]) tensors.push_back(t);
    for (int t : p_.outputs[op])
      if (g_.is_graph_output[t]) tensors.push_back(t);
    std::sort(tensors.begin(), tensors.end());
    tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
    for (int t : tensors) moved += static_cast<double>(p_.size(t)) / p_.slow_memory_bandwidth;
    return moved;
  }

  // The ops a subgraph can hold beside `c`'s producer and `c` when no MatMul of it is linked to another
  // (case "epilogue"): connected through shared tensors, never a descendant of `c` (its first run makes its
  // output), every MatMul of the producer's depth, and no edge from a tensor's producer to a MatMul reading
  // it (a link, or a Pointwise prologue that M14 forbids at that depth). Marks them in `reached_`.
  std::vector<int> epilogue_company(const Candidate& c) {
    below_.next();
    std::vector<int> stack{c.op};
    while (!stack.empty() && !walk_.out_of_budget()) {
      const int op = stack.back();
      stack.pop_back();
      for (int t : p_.outputs[op])
        for (const Consumer& r : g_.consumers[t]) {
          walk_.visit();
          if (below_.add(r.op)) stack.push_back(r.op);
        }
    }
    reached_.next();
    std::vector<int> company{c.producer, c.op};
    reached_.add(c.producer);
    reached_.add(c.op);
    const int64_t depth = g_.reduction_depth[c.producer];
    for (size_t i = 0; i < company.size() && !walk_.out_of_budget(); ++i) {
      const int op = company[i];
      auto join = [&](int other) {
        walk_.visit();
        if (below_.has(other) || reached_.has(other)) return;
        if (p_.is_matmul(other) && g_.reduction_depth[other] != depth) return;
        reached_.add(other);
        company.push_back(other);
      };
      for (size_t pos = 0; pos < p_.inputs[op].size(); ++pos) {
        const int t = p_.inputs[op][pos];
        // Co-readers share the tensor; the producer only if `op` is no MatMul reading it.
        for (const Consumer& r : g_.consumers[t]) join(r.op);
        if (g_.producer[t] >= 0 && !p_.is_matmul(op)) join(g_.producer[t]);
      }
      for (int t : p_.outputs[op])
        for (const Consumer& r : g_.consumers[t])
          if (!p_.is_matmul(r.op)) join(r.op);
    }
    return company;
  }

  // The MatMuls whose output reaches an operand of `a` through Pointwise ops only (the heads `a` can be the
  // tail of), each with the side of the link: 0 for an LHS link, 1 for an RHS link.
  std::vector<std::pair<int, int>> heads_of(int a) {
    std::vector<std::pair<int, int>> heads;
    for (int side = 0; side < 2 && side < static_cast<int>(p_.inputs[a].size()); ++side) {
      seen_.next();
      std::vector<int> stack{p_.inputs[a][side]};
      while (!stack.empty() && !walk_.out_of_budget()) {
        const int t = stack.back();
        stack.pop_back();
        walk_.visit();
        const int op = g_.producer[t];
        if (op < 0 || !seen_.add(op)) continue;
        if (p_.is_matmul(op))
          heads.emplace_back(op, side);
        else
          stack.insert(stack.end(), p_.inputs[op].begin(), p_.inputs[op].end());
      }
    }
    return heads;
  }

 private:
  const Problem& p_;
  const Graph& g_;
  LinkWalker& walk_;
  int64_t deepest_native_ = 0;
  EpochMarks below_, reached_, seen_;
};

// The least exposed compute over the last k-steps of the producer's tiles, when `c` runs there as its
// epilogue: per tile of r x c (at most native) the epilogue costs its base and the producer base * k / K at
// least (M23, M24 full-k, the lesser of the two modes), while the first-time graph traffic there is at most
// the producer's graph-input slices, r x k and k x c. Linear in k, so k = 1 or the longest last step.
double last_k_step_exposure(const Problem& p, const Graph& g, const Candidate& c) {
  const int a = c.producer;
  const int64_t depth = g.reduction_depth[a];
  const bool lhs_moves = g.is_graph_input[p.inputs[a][0]], rhs_moves = g.is_graph_input[p.inputs[a][1]];
  const int64_t rows = p.heights[c.input], cols = p.widths[c.input];
  const int64_t longest = std::min<int64_t>(p.native_w, depth - 1);
  const double B = p.slow_memory_bandwidth;
  double least = kNoSuchRun;
  for (int64_t r = 1; r <= std::min(rows, p.native_h); ++r)
    for (int64_t w = 1; w <= std::min(cols, p.native_w); ++w) {
      const double tiles = static_cast<double>(ceil_div(rows, r) * ceil_div(cols, w));
      for (const int64_t k : {int64_t{1}, longest}) {
        const double compute = p.base_costs[c.op] + p.base_costs[a] * static_cast<double>(k) / depth;
        const double moved = static_cast<double>((lhs_moves ? r * k : 0) + (rhs_moves ? k * w : 0)) / B;
        least = std::min(least, tiles * std::max(0.0, compute - moved));
      }
    }
  return least;
}

}  // namespace

ExposedEpilogueBound exposed_epilogue_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                                            const std::function<bool()>& expired, int64_t max_visits) {
  ExposedEpilogueBound out;
  const double B = p.slow_memory_bandwidth;
  std::vector<bool> pointwise_moves(p.num_tensors(), false);
  for (int t = 0; t < p.num_tensors(); ++t) {
    if (!g.is_graph_input[t] && !g.is_graph_output[t]) continue;
    out.graph_traffic += static_cast<double>(p.size(t)) / B;
    const bool pointwise_reads = std::any_of(g.consumers[t].begin(), g.consumers[t].end(),
                                             [&](const Consumer& c) { return !p.is_matmul(c.op); });
    const bool pointwise_makes = g.producer[t] >= 0 && !p.is_matmul(g.producer[t]);
    if (pointwise_reads || pointwise_makes) out.pointwise_io += static_cast<double>(p.size(t)) / B;
  }
  out.bound = out.graph_traffic;
  if (options.allow_supernative_k) {
    out.status = "no claim with --allow-supernative-k";
    return out;
  }
  const std::function<bool()> never = [] { return false; };
  LinkWalker walk(p, g, max_visits, expired ? expired : never);
  Epilogues epilogues(p, g, walk);
  EpochMarks claimed(p.num_ops());  // the ops a charged epilogue's first run may share a subgraph with
  claimed.next();
  const double nk = static_cast<double>(p.native_w);  // the native reduction depth n_k = n_w (M24)
  for (int op : g.topological_order) {
    const std::optional<Candidate> c = epilogues.candidate(op);
    if (!c) continue;
    const int a = c->producer;
    const std::vector<int> together = epilogues.epilogue_company(*c);
    std::vector<int> company = together;
    for (const Consumer& r : g.consumers[c->output]) company.push_back(r.op);
    const std::vector<std::pair<int, int>> heads = epilogues.heads_of(a);
    if (walk.out_of_budget()) break;
    // Two epilogues whose first runs could share a subgraph would count its steps twice.
    if (std::any_of(company.begin(), company.end(), [&](int o) { return claimed.has(o); })) continue;

    ExposedEpilogueBound::Epilogue e{.op = op, .producer = a};
    const double epilogue_floor = p.base_costs[op] * static_cast<double>(p.native_tiles(c->output));
    const double producer_floor = p.base_costs[a] * static_cast<double>(p.native_tiles(c->input));
    e.alone = epilogue_floor;  // its only neighbours are its producer and its readers (M7)

    e.in_chain = kNoSuchRun;  // a link a -> op -> reader: exactly those two MatMuls (M13), op on every tile
    for (const Consumer& r : g.consumers[c->output]) {
      const double tiles = static_cast<double>(p.native_tiles(p.outputs[r.op][0]));
      const double strips = static_cast<double>(g.reduction_depth[r.op]) / nk * tiles;
      const double compute = (p.base_costs[op] + p.base_costs[a]) * strips + p.base_costs[r.op] * tiles;
      e.in_chain =
          std::min(e.in_chain, compute - epilogues.first_io(a) - epilogues.first_io(r.op) - out.pointwise_io);
    }

    const double last_steps = last_k_step_exposure(p, g, *c);
    double company_io = 0;
    for (int o : together)
      if (o != a) company_io += epilogues.first_io(o);
    e.epilogue = last_steps - company_io;

    e.beside_head = kNoSuchRun;  // exactly two MatMuls, the head and the producer as its tail
    for (const auto& [h, side] : heads) {
      const int hy = p.outputs[h][0];
      const double strip = static_cast<double>(side == 0 ? p.widths[hy] : p.heights[hy]) / nk;
      const double head_compute = p.base_costs[h] * strip * static_cast<double>(p.native_tiles(c->input));
      const double hidden = epilogues.first_io(h) + out.pointwise_io;
      const double by_steps = last_steps - hidden;
      const double by_run = epilogue_floor + producer_floor + head_compute - epilogues.first_io(a) - hidden;
      const double least = std::max(by_steps, by_run);
      if (least < e.beside_head) {
        e.beside_head = least;
        e.cheapest_head = h;
      }
    }
    e.exposed = std::max(0.0, std::min({e.alone, e.in_chain, e.epilogue, e.beside_head}));
    if (e.exposed <= 0) continue;
    for (int o : company) claimed.add(o);
    out.epilogues.push_back(e);
  }
  if (walk.out_of_budget()) {
    out.epilogues.clear();
    out.status = "stopped at the deadline or the visit limit";
    return out;
  }
  for (const auto& e : out.epilogues) out.bound += e.exposed;
  out.applies = !out.epilogues.empty();
  if (!out.applies) out.status = "no Pointwise op between deep MatMuls leaves compute exposed";
  return out;
}

}  // namespace mlsys
