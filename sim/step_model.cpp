#include "sim/step_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <sstream>
#include <tuple>

namespace mlsys {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Axis bounding(const Axis& a) {
  // Over all k-steps of a tile, a reduction range sweeps [0, extent) (M18 prologue rectangle).
  return a.kind == AxisKind::Reduction ? Axis{AxisKind::Full, a.extent} : a;
}
Form bounding(const Form& f) { return {bounding(f.rows), bounding(f.cols)}; }

const Form kTileForm{{AxisKind::TileRows, 0}, {AxisKind::TileCols, 0}};

std::string tensor_name(int t) { return "T" + std::to_string(t); }

// Union-find for M7 connectivity.
struct Components {
  std::vector<int> parent;
  explicit Components(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

}  // namespace

std::optional<std::string> SubgraphModel::traversal_error(const std::vector<int64_t>& order, int64_t rows,
                                                          int64_t cols) {
  const int64_t n = rows * cols;
  if (static_cast<int64_t>(order.size()) != n)
    return "traversal order has " + std::to_string(order.size()) + " entries, the grid has " +
           std::to_string(n) + " tiles (" + std::to_string(rows) + " rows x " + std::to_string(cols) +
           " cols)";
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t j = order[i];
    if (j < 0 || j >= n)
      return "traversal_orders entry " + std::to_string(i) + " = " + std::to_string(j) +
             " is out of range [0, " + std::to_string(n) + ")";
    if (seen[j]) return "traversal_orders entry " + std::to_string(i) + " repeats tile " + std::to_string(j);
    seen[j] = true;
  }
  return std::nullopt;
}

std::optional<RuleViolation> SubgraphModel::set_traversal(std::optional<std::vector<int64_t>> order) {
  if (order) {
    if (auto error = traversal_error(*order, nrows_, ncols_)) {
      RuleViolation v;
      v.rule = "M11";
      v.subgraph = index_;
      v.message = *error;
      return v;
    }
  }
  order_ = order ? std::move(*order) : std::vector<int64_t>{};
  return std::nullopt;
}

namespace {

RuleViolation rejection(int index, const char* rule, const std::string& message, int op = -1,
                        int tensor = -1) {
  RuleViolation v;
  v.rule = rule;
  v.subgraph = index;
  v.op = op;
  v.tensor = tensor;
  v.message = message;
  return v;
}

}  // namespace

std::optional<RuleViolation> SubgraphModel::granularity_limits(const Granularity& g,
                                                               const std::vector<MatmulDepth>& matmuls,
                                                               int64_t native_w, int64_t native_h,
                                                               bool allow_supernative_k, int index) {
  auto reject = [&](const std::string& message, int op = -1) { return rejection(index, "M6", message, op); };
  const int64_t n_k = native_w;
  if (g.w < 1 || g.w > native_w)
    return reject("granularity w = " + std::to_string(g.w) + " must be in [1, " + std::to_string(native_w) +
                  "] (native width)");
  if (g.h < 1 || g.h > native_h)
    return reject("granularity h = " + std::to_string(g.h) + " must be in [1, " + std::to_string(native_h) +
                  "] (native height)");
  if (g.k < 1) return reject("granularity k = " + std::to_string(g.k) + " must be >= 1");
  if (!matmuls.empty()) {
    if (g.k > n_k && !allow_supernative_k)
      return reject("granularity k = " + std::to_string(g.k) + " exceeds the native reduction depth n_k = " +
                    std::to_string(n_k) + " (--allow-supernative-k lifts this limit)");
    for (const MatmulDepth& mm : matmuls)
      if (g.k > mm.depth)
        return reject("granularity k = " + std::to_string(g.k) + " exceeds K = " + std::to_string(mm.depth) +
                          " of MatMul op " + std::to_string(mm.op),
                      mm.op);
  }
  return std::nullopt;
}

std::vector<SubgraphModel::MatmulDepth> SubgraphModel::matmuls_of(const Problem& p, const Graph& graph,
                                                                  const std::vector<int>& ops) {
  std::vector<MatmulDepth> matmuls;
  for (int o : ops)
    if (p.is_matmul(o) &&
        std::none_of(matmuls.begin(), matmuls.end(), [&](const MatmulDepth& m) { return m.op == o; }))
      matmuls.push_back({o, graph.reduction_depth[o]});
  return matmuls;
}

std::variant<SubgraphModel, RuleViolation> SubgraphModel::compile(const Problem& p, const Graph& graph,
                                                                  const SubgraphSpec& spec, int index,
                                                                  const std::vector<int>& retained_in,
                                                                  const ModelOptions& options) {
  // The rule book's order: M6 first, then the rules that do not depend on the granularity, then the rest.
  if (auto v = granularity_limits(spec.granularity, matmuls_of(p, graph, spec.ops), p.native_w, p.native_h,
                                  options.allow_supernative_k, index))
    return *v;
  auto structure = compile_structure(p, graph, spec.ops, spec.retain, index, retained_in, options);
  if (auto* v = std::get_if<RuleViolation>(&structure)) return std::move(*v);
  SubgraphModel& m = std::get<SubgraphModel>(structure);
  if (auto v = m.apply_granularity(spec.granularity, spec.traversal)) return *v;
  return structure;
}

std::variant<SubgraphModel, RuleViolation> SubgraphModel::with_granularity(
    const Granularity& g, std::optional<std::vector<int64_t>> traversal) const {
  SubgraphModel m = *this;
  if (auto v = m.set_granularity(g, std::move(traversal))) return *v;
  return m;
}

std::optional<RuleViolation> SubgraphModel::set_granularity(const Granularity& g,
                                                            std::optional<std::vector<int64_t>> traversal) {
  if (auto v =
          granularity_limits(g, facts_.matmuls, native_w_, native_h_, facts_.allow_supernative_k, index_))
    return v;
  return apply_granularity(g, std::move(traversal));
}

namespace {
// M20 D: hosts the partial sums of `guests` (MatMul ops) in the output tensors each reaches, one per output
// tile, as many as possible (Kuhn's augmenting paths: a handful of MatMuls per subgraph), and returns the
// output tensors of the guests left without a host.
std::vector<int> partial_sums_without_host(const Problem& p, const std::vector<int>& guests,
                                       const std::vector<std::vector<int>>& reaches) {
  std::vector<int> host_of_guest(guests.size(), -1);
  std::vector<int> guest_of_host(p.num_tensors(), -1);
  std::vector<bool> visited;
  std::function<bool(size_t)> place = [&](size_t g) {
    for (int h : reaches[g]) {
      if (visited[h]) continue;
      visited[h] = true;
      if (guest_of_host[h] == -1 || place(static_cast<size_t>(guest_of_host[h]))) {
        guest_of_host[h] = static_cast<int>(g);
        host_of_guest[g] = h;
        return true;
      }
    }
    return false;
  };
  std::vector<int> unhosted;
  for (size_t g = 0; g < guests.size(); ++g) {
    visited.assign(p.num_tensors(), false);
    place(g);
  }
  for (size_t g = 0; g < guests.size(); ++g)
    if (host_of_guest[g] == -1) unhosted.push_back(p.outputs[guests[g]][0]);
  return unhosted;
}
}  // namespace

std::variant<SubgraphModel, RuleViolation> SubgraphModel::compile_structure(
    const Problem& p, const Graph& graph, const std::vector<int>& ops, const std::vector<int>& spec_retain,
    int index, const std::vector<int>& retained_in, const ModelOptions& options) {
  auto reject = [&](const char* rule, const std::string& message, int op = -1, int tensor = -1) {
    return rejection(index, rule, message, op, tensor);
  };
  const std::vector<MatmulDepth> matmul_depths = matmuls_of(p, graph, ops);
  std::vector<int> matmuls;
  for (const MatmulDepth& mm : matmul_depths) matmuls.push_back(mm.op);

  // ---- M7 op list
  if (ops.empty()) return reject("M7", "the subgraph has no ops");
  std::vector<int> position(p.num_ops(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (position[ops[i]] != -1) return reject("M7", "op " + std::to_string(ops[i]) + " is listed twice", ops[i]);
    position[ops[i]] = static_cast<int>(i);
  }
  auto in_subgraph = [&](int op) { return op >= 0 && position[op] != -1; };
  for (int b : ops)
    for (int t : p.inputs[b]) {
      int a = graph.producer[t];
      if (in_subgraph(a) && position[a] > position[b])
        return reject("M7",
                      "op " + std::to_string(b) + " reads " + tensor_name(t) + ", produced by op " + std::to_string(a) +
                          " which is listed after it; the declared order must be topological",
                      b, t);
    }
  {
    Components comp(ops.size());
    std::vector<int> first_toucher(p.num_tensors(), -1);
    for (size_t i = 0; i < ops.size(); ++i) {
      auto touch = [&](int t) {
        if (first_toucher[t] == -1) first_toucher[t] = static_cast<int>(i);
        else comp.join(first_toucher[t], static_cast<int>(i));
      };
      for (int t : p.inputs[ops[i]]) touch(t);
      for (int t : p.outputs[ops[i]]) touch(t);
    }
    for (size_t i = 1; i < ops.size(); ++i)
      if (comp.find(static_cast<int>(i)) != comp.find(0))
        return reject("M7", "op " + std::to_string(ops[i]) + " shares no tensor path with op " + std::to_string(ops[0]) +
                                "; the ops of a subgraph must be connected",
                      ops[i]);
  }

  // ---- M8 tensor classes
  std::vector<int> retain;
  for (int t : spec_retain)
    if (std::find(retain.begin(), retain.end(), t) == retain.end()) retain.push_back(t);
  auto is_retained = [&](int t) { return std::find(retain.begin(), retain.end(), t) != retain.end(); };
  auto produced_here = [&](int t) { return in_subgraph(graph.producer[t]); };
  auto internal_consumers = [&](int t) {
    std::vector<Consumer> result;
    for (const Consumer& c : graph.consumers[t])
      if (in_subgraph(c.op)) result.push_back(c);
    // Declared order, so that regions are derived deterministically.
    std::sort(result.begin(), result.end(),
              [&](const Consumer& a, const Consumer& b) { return position[a.op] < position[b.op]; });
    return result;
  };
  auto is_ephemeral = [&](int t) { return produced_here(t) && !internal_consumers(t).empty() && !is_retained(t); };

  // ---- M9 retention list
  for (int t : retain) {
    if (graph.is_graph_input[t])
      return reject("M9", tensor_name(t) + ": graph inputs cannot be retained", -1, t);
    if (!produced_here(t))
      return reject("M9",
                    tensor_name(t) + " is not produced by this subgraph; only a tensor the subgraph produces can be "
                                     "retained (retention lasts one subgraph)",
                    -1, t);
    if (graph.is_graph_output[t])
      return reject("M9", tensor_name(t) + " is a graph output and cannot be retained; it must reach slow memory", -1,
                    t);
    for (const Consumer& c : internal_consumers(t))
      if (p.is_matmul(c.op))
        return reject("M9",
                      tensor_name(t) + " is read by MatMul op " + std::to_string(c.op) +
                          " of this subgraph; a tensor feeding a MatMul cannot be retained",
                      c.op, t);
  }

  SubgraphModel m;
  m.index_ = index;
  m.ops_ = ops;
  m.retained_ = retain;
  m.capacity_ = p.fast_memory_capacity;
  m.bandwidth_ = p.slow_memory_bandwidth;
  m.native_w_ = p.native_w;
  m.native_h_ = p.native_h;
  m.compute_model_ = options.matmul_compute;
  for (int t : retained_in)
    if (std::find(m.retained_in_.begin(), m.retained_in_.end(), t) == m.retained_in_.end()) {
      m.retained_in_.push_back(t);
      m.retained_in_regions_.push_back({0, p.heights[t], 0, p.widths[t]});
      m.retained_in_elements_ += p.size(t);
    }
  auto is_retained_in = [&](int t) {
    return std::find(m.retained_in_.begin(), m.retained_in_.end(), t) != m.retained_in_.end();
  };
  for (int o : ops)
    for (int t : p.outputs[o])
      if (!is_ephemeral(t)) {
        m.nonephemeral_.push_back(t);
        if (!is_retained(t)) m.evicted_.push_back(t);
      }
  for (int o : ops)
    for (int t : p.inputs[o])
      if (!produced_here(t) && std::none_of(m.external_inputs_.begin(), m.external_inputs_.end(),
                                            [&](const auto& e) { return e.first == t; }))
        m.external_inputs_.push_back({t, o});
  m.facts_.matmuls = matmul_depths;
  m.facts_.allow_supernative_k = options.allow_supernative_k;

  // ---- M10 unified grid: one output shape (the tile counts come with the granularity)
  const int ref = m.nonephemeral_.front();  // the last op's outputs have no internal consumer: never empty
  for (int t : m.nonephemeral_)
    if (p.widths[t] != p.widths[ref] || p.heights[t] != p.heights[ref]) {
      std::string list;
      for (int u : m.nonephemeral_)
        list += (list.empty() ? "" : ", ") + tensor_name(u) + " " + std::to_string(p.heights[u]) + "x" +
                std::to_string(p.widths[u]);
      return reject("M10", "non-ephemeral outputs have different shapes (rows x cols): " + list, -1, t);
    }
  m.grid_w_ = p.widths[ref];
  m.grid_h_ = p.heights[ref];

  // ---- M12 links, in-chain ops and the sliced reduction depth K_s
  // A link runs from MatMul `a` to MatMul `b`, directly or through Pointwise ops of the subgraph. A Pointwise
  // op lies on such a path when it both follows a MatMul (`after_matmul`: it reads, through Pointwise ops
  // only, a MatMul's output) and leads to one (`reaches_matmul`: a MatMul reads, through Pointwise ops only,
  // its output); those are the in-chain ops. Declared order is topological, so one pass each way decides
  // both.
  std::vector<bool> after_matmul(p.num_ops(), false), reaches_matmul(p.num_ops(), false);
  std::vector<bool> feeds_lhs(p.num_ops(), false);  // some path from the op ends at a MatMul's LHS
  for (int o : ops) {
    if (p.is_matmul(o)) continue;
    for (int t : p.inputs[o]) {
      const int a = graph.producer[t];
      if (in_subgraph(a) && (p.is_matmul(a) || after_matmul[a])) after_matmul[o] = true;
    }
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : internal_consumers(t)) {
        const bool matmul = p.is_matmul(c.op);
        if (matmul || reaches_matmul[c.op]) reaches_matmul[*it] = true;
        if ((matmul && c.position == 0) || (!matmul && feeds_lhs[c.op])) feeds_lhs[*it] = true;
      }
  std::vector<bool> in_chain(p.num_ops(), false);
  for (int o : ops) in_chain[o] = !p.is_matmul(o) && after_matmul[o] && reaches_matmul[o];
  // The MatMuls a tensor comes from through in-chain ops (the tensor's producer if it is a MatMul).
  auto heads_of = [&](int t) {
    std::vector<int> heads, stack{t};
    std::vector<bool> seen(p.num_tensors(), false);
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      const int a = graph.producer[u];
      if (!in_subgraph(a) || seen[u]) continue;
      seen[u] = true;
      if (p.is_matmul(a)) {
        if (std::find(heads.begin(), heads.end(), a) == heads.end()) heads.push_back(a);
      } else if (in_chain[a]) {
        for (int v : p.inputs[a]) stack.push_back(v);
      }
    }
    return heads;
  };
  struct Link {
    int head, tail, position;
  };
  std::vector<Link> links;
  std::vector<bool> is_head(p.num_ops(), false), is_tail(p.num_ops(), false);
  for (int b : matmuls)
    for (int pos = 0; pos < 2; ++pos)
      for (int a : heads_of(p.inputs[b][pos]))
        if (std::none_of(links.begin(), links.end(),
                         [&](const Link& l) { return l.head == a && l.tail == b && l.position == pos; })) {
          links.push_back({a, b, pos});
          is_head[a] = true;
          is_tail[b] = true;
        }
  for (int o : matmuls)
    if (links.empty() || (is_tail[o] && !is_head[o]))
      m.facts_.K_s = std::max(m.facts_.K_s, graph.reduction_depth[o]);
  m.facts_.links = links.size();

  // ---- M13 facts: a middle MatMul
  m.facts_.has_middle =
      std::any_of(matmuls.begin(), matmuls.end(), [&](int o) { return is_head[o] && is_tail[o]; });

  // ---- M20 D: split-K partial sums that need a buffer of their own
  // Every MatMul that is not a head reduces over Kr(ks) and keeps a partial sum of its tile from the first
  // k-step to the last. One with a non-ephemeral output accumulates in that output's tile (counted in C).
  // One with an ephemeral output (a split-K epilogue follows) "may accumulate in the tile of one
  // non-ephemeral output that is reached from it through Pointwise ops of the subgraph only", and "an output
  // tile hosts at most one accumulator": as many as possible are hosted (a maximum matching of these MatMuls
  // to the outputs they reach), and each one left over is D.
  {
    std::vector<int> guests;                // MatMuls whose partial sum needs a host
    std::vector<std::vector<int>> reaches;  // per guest: the non-ephemeral outputs it reaches
    for (int o : matmuls) {
      const int y = p.outputs[o][0];
      if (is_head[o] || !is_ephemeral(y)) continue;
      std::vector<int> hosts, stack{y};
      std::vector<bool> seen(p.num_tensors(), false);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (const Consumer& c : internal_consumers(u)) {
          if (p.is_matmul(c.op)) continue;  // through Pointwise ops only
          for (int v : p.outputs[c.op]) {
            if (seen[v]) continue;
            seen[v] = true;
            if (!is_ephemeral(v)) hosts.push_back(v);
            stack.push_back(v);
          }
        }
      }
      guests.push_back(o);
      reaches.push_back(hosts);
    }
    m.accumulators_ = partial_sums_without_host(p, guests, reaches);
  }

  // ---- M14 facts: prologues (Pointwise ops that are not in-chain) whose output a MatMul reads directly
  for (int o : ops) {
    if (p.is_matmul(o) || in_chain[o]) continue;
    for (int t : p.outputs[o])
      for (const Consumer& c : internal_consumers(t))
        if (p.is_matmul(c.op))
          m.facts_.prologues.push_back({o, t, c.op, c.position, graph.reduction_depth[c.op]});
  }

  // ---- M17 symbolic regions, in reverse declared order
  std::vector<Form> out_form(p.num_ops());
  std::vector<std::array<Form, 2>> mm_in_form(p.num_ops());
  auto input_form = [&](const Consumer& c) {
    return p.is_matmul(c.op) ? mm_in_form[c.op][c.position] : out_form[c.op];
  };
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const int o = *it;
    std::optional<Form> region;
    for (int t : p.outputs[o]) {
      std::vector<Form> demands;
      if (!is_ephemeral(t)) demands.push_back(kTileForm);
      for (const Consumer& c : internal_consumers(t)) demands.push_back(input_form(c));
      for (const Form& d : demands) {
        if (!region) region = d;
        else if (!(d == *region)) m.checks_.push_back({o, t, *region, d});
      }
    }
    out_form[o] = *region;
    if (p.is_matmul(o)) {
      const int64_t K = graph.reduction_depth[o];
      const Axis q = is_head[o] ? Axis{AxisKind::Full, K} : Axis{AxisKind::Reduction, K};
      mm_in_form[o] = {Form{region->rows, q}, Form{q, region->cols}};
    }
  }

  // ---- M18 which ops run when, M24 parameters
  for (int o : ops) {
    CompiledOp c{};
    c.op = o;
    c.matmul = p.is_matmul(o);
    c.base = p.base_costs[o];
    c.reduction_depth = graph.reduction_depth[o];
    c.producer = c.matmul && is_head[o];
    // A head and an in-chain op compute the streamed strip (M23, M24): the tail's reduction axis, which is
    // the columns for an LHS link and the rows for an RHS link.
    if (c.producer || in_chain[o]) c.streamed = feeds_lhs[o] ? 1 : 2;
    const bool prologue = !c.matmul && !in_chain[o] && reaches_matmul[o];
    c.runs_at = c.matmul || in_chain[o] ? kEveryStep : prologue ? kFirstKStep : kLastKStep;
    c.run_form = prologue ? bounding(out_form[o]) : out_form[o];
    m.compiled_.push_back(c);
    // ---- M19 slice forms of this op's external, not retained-in inputs
    for (int pos = 0; pos < static_cast<int>(p.inputs[o].size()); ++pos) {
      const int t = p.inputs[o][pos];
      if (produced_here(t) || is_retained_in(t)) continue;
      const Form f = c.matmul ? mm_in_form[o][pos] : c.run_form;
      auto same = std::find_if(m.forms_.begin(), m.forms_.end(),
                               [&](const SliceForm& s) { return s.tensor == t && s.form == f; });
      if (same != m.forms_.end()) same->runs_at |= c.runs_at;
      else m.forms_.push_back({t, f, c.runs_at, false});
    }
  }
  for (SliceForm& s : m.forms_) {
    s.may_alias = std::count_if(m.forms_.begin(), m.forms_.end(),
                                [&](const SliceForm& other) { return other.tensor == s.tensor; }) > 1;
    m.aliasing_ = m.aliasing_ || s.may_alias;
  }

  return m;
}

std::optional<RuleViolation> SubgraphModel::apply_granularity(const Granularity& g,
                                                              std::optional<std::vector<int64_t>> traversal) {
  auto reject = [&](const char* rule, const std::string& message, int op = -1, int tensor = -1) {
    return rejection(index_, rule, message, op, tensor);
  };
  g_ = g;
  // ---- M10 unified grid (its shape rule is structural; the tile counts depend on [w, h])
  ncols_ = ceil_div(grid_w_, g.w);
  nrows_ = ceil_div(grid_h_, g.h);

  // ---- M11 traversal order
  if (traversal) {
    if (auto error = traversal_error(*traversal, nrows_, ncols_)) return reject("M11", *error);
    order_ = std::move(*traversal);
  } else {
    order_.clear();
  }

  // ---- M12 k-steps
  k_ = 1;
  nk_ = 1;
  if (!facts_.matmuls.empty()) {
    k_ = g.k;
    nk_ = ceil_div(facts_.K_s, g.k);
  }

  // ---- M13 MatMul structure
  if (nk_ > 1) {
    if (facts_.links == 0) {
      for (const MatmulDepth& mm : facts_.matmuls)
        if (mm.depth != facts_.K_s)
          return reject("M13",
                        "split-K (nk = " + std::to_string(nk_) +
                            ") needs every unlinked MatMul to share K = " + std::to_string(facts_.K_s) +
                            ", but MatMul op " + std::to_string(mm.op) +
                            " has K = " + std::to_string(mm.depth),
                        mm.op);
    } else if (facts_.matmuls.size() != 2 || facts_.links != 1) {
      return reject(
          "M13", "split-K (nk = " + std::to_string(nk_) +
                     ") allows either unlinked MatMuls of equal K or exactly two MatMuls joined by one "
                     "link (directly or through Pointwise ops); this subgraph has " +
                     std::to_string(facts_.matmuls.size()) + " MatMuls and " + std::to_string(facts_.links) +
                     " links");
    }
  } else if (facts_.matmuls.size() >= 3 || facts_.has_middle) {
    for (const MatmulDepth& mm : facts_.matmuls)
      if (g.w != g.k || mm.depth != g.k)
        return reject(
            "M13",
            "with three or more MatMuls or a middle MatMul, w = k = K is required for every MatMul; op " +
                std::to_string(mm.op) + " has K = " + std::to_string(mm.depth) +
                " with w = " + std::to_string(g.w) + ", k = " + std::to_string(g.k),
            mm.op);
  }

  // ---- M14 prologue geometry
  for (const PrologueFeed& f : facts_.prologues) {
    // An LHS feed is consumed along the tile's width, an RHS feed along its height.
    const bool lhs = f.position == 0;
    const int64_t extent = lhs ? g.w : g.h;
    if (extent < f.depth)
      return reject("M14",
                    "Pointwise op " + std::to_string(f.pointwise) + " feeds the " + (lhs ? "LHS" : "RHS") +
                        " of MatMul op " + std::to_string(f.matmul) + ": needs " + (lhs ? "w" : "h") +
                        " >= K = " + std::to_string(f.depth) + ", got " + (lhs ? "w" : "h") + " = " +
                        std::to_string(extent),
                    f.pointwise, f.tensor);
  }

  return std::nullopt;
}

// ------------------------------------------------------------------------------------------------------------

StepWalker::StepWalker(const SubgraphModel& model) : model_(model) {}

StepRef StepWalker::next_step() const {
  return {position_, done() ? -1 : model_.tile_of_position(position_), ks_};
}

StepWalker::Coord StepWalker::coord(int64_t position, int64_t ks) const {
  const SubgraphModel& m = model_;
  const int64_t tile = m.tile_of_position(position);
  const int64_t row = tile / m.ncols_, col = tile % m.ncols_;
  const auto [r0, r1] = m.row_range(row);
  const auto [c0, c1] = m.col_range(col);
  return {position, tile, ks, Region{r0, r1, c0, c1}};
}

inline Region StepWalker::numeric(const Form& f, const Coord& c) const {
  auto axis = [&](const Axis& a, int64_t& lo, int64_t& hi) {
    switch (a.kind) {
      case AxisKind::TileRows:
        lo = c.tile_region.r0, hi = c.tile_region.r1;
        break;
      case AxisKind::TileCols:
        lo = c.tile_region.c0, hi = c.tile_region.c1;
        break;
      case AxisKind::Reduction:
        std::tie(lo, hi) = model_.k_range(c.ks, a.extent);
        break;
      case AxisKind::Full:
        lo = 0, hi = a.extent;
        break;
    }
  };
  Region r;
  axis(f.rows, r.r0, r.r1);
  axis(f.cols, r.c0, r.c1);
  return r;
}

namespace {
struct StepNumbers {
  double compute = 0, memory = 0, latency = 0;
  int64_t ws = 0;
};
}  // namespace

bool StepWalker::evaluate(const Coord& c, const std::vector<NumSlice>& prev, std::vector<NumSlice>& cur,
                          int64_t finished_area, StepDetail* detail) {
  const SubgraphModel& m = model_;
  const StepRef ref{c.position, c.tile, c.ks};
  // M17: demands that are not symbolically identical must agree at this step.
  for (const auto& check : m.checks_) {
    const Region a = numeric(check.a, c), b = numeric(check.b, c);
    if (!(a == b)) {
      RuleViolation v;
      v.rule = "M17";
      v.subgraph = m.index_;
      v.step = ref;
      v.op = check.op;
      v.tensor = check.tensor;
      v.message = "op " + std::to_string(check.op) + " output " + tensor_name(check.tensor) +
                  " is demanded as two different regions: " + to_string(a) + " and " + to_string(b);
      violation_ = v;
      return false;
    }
  }
  const uint8_t active =
      kEveryStep | (c.ks == 0 ? kFirstKStep : 0) | (c.ks == m.nk_ - 1 ? kLastKStep : 0);
  // M19 slice set and M21 loads.
  cur.clear();
  int64_t load = 0, slice_area = 0;
  for (int f = 0; f < static_cast<int>(m.forms_.size()); ++f) {
    const auto& form = m.forms_[f];
    if (!(form.runs_at & active)) continue;
    const Region r = numeric(form.form, c);
    bool reused = false;
    if (form.may_alias) {
      bool duplicate = false;
      for (const NumSlice& s : cur) duplicate = duplicate || (s.tensor == form.tensor && s.region == r);
      if (duplicate) continue;
      for (const NumSlice& s : prev) reused = reused || (s.tensor == form.tensor && s.region == r);
    } else {
      for (const NumSlice& s : prev)
        if (s.form == f) {
          reused = s.region == r;
          break;
        }
    }
    cur.push_back({form.tensor, r, f});
    slice_area += r.area();
    if (!reused) load += r.area();
    if (detail) detail->slices.push_back({form.tensor, r, !reused});
  }
  // M23, M24 compute.
  double compute = 0;
  const int64_t n_k = m.native_w_;
  // Padded native-tile counts. Nearly every op runs on the tile itself, so its counts are divided once: a
  // 64-bit division per op per step was the largest single cost of a search.
  const int64_t tile_rows = c.tile_region.rows(), tile_cols = c.tile_region.cols();
  const int64_t tile_fr = ceil_div(tile_rows, m.native_h_), tile_fc = ceil_div(tile_cols, m.native_w_);
  auto padded_rows = [&](int64_t rows) { return rows == tile_rows ? tile_fr : ceil_div(rows, m.native_h_); };
  auto padded_cols = [&](int64_t cols) { return cols == tile_cols ? tile_fc : ceil_div(cols, m.native_w_); };
  for (const auto& op : m.compiled_) {
    if (!(op.runs_at & active)) continue;
    const Region r = numeric(op.run_form, c);
    // Spatial padding (M23, M24), except on the streamed axis of a head or an in-chain op: proportional.
    double f_r = static_cast<double>(padded_rows(r.rows()));
    double f_c = static_cast<double>(padded_cols(r.cols()));
    if (op.streamed == 1) f_c = static_cast<double>(r.cols()) / static_cast<double>(n_k);
    if (op.streamed == 2) f_r = static_cast<double>(r.rows()) / static_cast<double>(n_k);
    double cost;
    if (!op.matmul) {
      cost = op.base * f_r * f_c;
    } else {
      const int64_t K = op.reduction_depth;
      const int64_t q = op.producer ? K : std::min((c.ks + 1) * m.k_, K) - c.ks * m.k_;
      const double f_k = static_cast<double>(q) /
                         static_cast<double>(m.compute_model_ == MatmulCompute::FullK ? K : n_k);
      cost = op.base * f_r * f_c * f_k;
    }
    compute += cost;
    if (detail) detail->computes.push_back({op.op, r, cost});
  }
  // M22 stores.
  const int64_t tile_area = c.tile_region.area();
  const bool last = c.ks == m.nk_ - 1;
  const int64_t store = last ? tile_area * static_cast<int64_t>(m.evicted_.size()) : 0;
  if (detail && last)
    for (int t : m.evicted_) detail->stores.push_back({t, c.tile_region});
  // M20 working set.
  WorkingSet ws;
  ws.retained_in = m.retained_in_elements_;
  ws.slices = slice_area;
  ws.outputs = tile_area * static_cast<int64_t>(m.nonephemeral_.size()) +
               finished_area * static_cast<int64_t>(m.retained_.size());
  // D: a partial sum lives from ks = 0 to the last k-step; with nk = 1 there is none.
  const bool split_k = m.nk_ > 1;
  ws.accumulators = split_k ? tile_area * static_cast<int64_t>(m.accumulators_.size()) : 0;
  const int64_t total_ws = ws.total();
  // M25 latency.
  const double memory = static_cast<double>(load + store) / m.bandwidth_;
  last_compute_ = compute;
  last_memory_ = memory;
  last_latency_ = std::max(compute, memory);
  last_ws_ = total_ws;
  const bool oom = static_cast<double>(total_ws) > m.capacity_;
  if (detail || (oom && !summarize_oom_)) {
    // Terms are built only when someone will read them.
    for (size_t i = 0; i < m.retained_in_.size(); ++i)
      ws.terms.push_back({'A', m.retained_in_[i], m.retained_in_regions_[i], m.retained_in_regions_[i].area()});
    for (const NumSlice& s : cur) ws.terms.push_back({'B', s.tensor, s.region, s.region.area()});
    for (int t : m.nonephemeral_) {
      const bool grows = std::find(m.retained_.begin(), m.retained_.end(), t) != m.retained_.end();
      ws.terms.push_back({'C', t, c.tile_region, tile_area + (grows ? finished_area : 0)});
    }
    if (split_k)
      for (int t : m.accumulators_) ws.terms.push_back({'D', t, c.tile_region, tile_area});
  }
  if (detail) {
    detail->ref = ref;
    detail->load_elements = load;
    detail->store_elements = store;
    detail->compute = compute;
    detail->memory_time = memory;
    detail->latency = last_latency_;
    detail->working_set = ws;
  }
  if (oom) {
    RuleViolation v;  // its sentence is rendered from the terms when someone reads it
    v.rule = "M20";
    v.subgraph = m.index_;
    v.step = ref;
    v.working_set = ws;
    v.capacity = m.capacity_;
    violation_ = v;
    return false;
  }
  return true;
}

bool StepWalker::advance(StepDetail* detail) {
  if (detail) *detail = StepDetail{};
  if (prev_.capacity() == 0) {  // here, not in the constructor: evaluate_fast's walker never advances
    prev_.reserve(model_.forms_.size());
    cur_.reserve(model_.forms_.size());
  }
  const Coord c = coord(position_, ks_);
  if (!evaluate(c, prev_, cur_, finished_area_, detail)) return false;
  std::swap(prev_, cur_);
  if (++ks_ == model_.nk_) {
    ks_ = 0;
    finished_area_ += c.tile_region.area();
    ++position_;
  }
  return true;
}

double compute_floor(const Problem& problem, const Graph& graph, int op, MatmulCompute model) {
  // Native tiles of the output, padded on both axes (M23, M24). A chain head or an in-chain op may instead be
  // proportional on the tail's reduction axis: the columns for an LHS link, the rows for an RHS link (section
  // 8's caveat). Which one it is depends on the schedule, so the floor takes the least of the three counts;
  // they agree whenever the output's sides are multiples of n_k and n_h = n_w (all 24 benchmarks).
  const int y = problem.outputs[op][0];
  const double rows = static_cast<double>(problem.heights[y]), cols = static_cast<double>(problem.widths[y]);
  const double n_k = static_cast<double>(problem.native_w);
  const double padded_rows = std::ceil(rows / static_cast<double>(problem.native_h));
  const double padded_cols = std::ceil(cols / n_k);
  const double tiles =
      std::min({padded_rows * padded_cols, padded_rows * (cols / n_k), (rows / n_k) * padded_cols});
  const bool deep = problem.is_matmul(op) && model == MatmulCompute::NativeK;
  const double depth = deep ? static_cast<double>(graph.reduction_depth[op]) / problem.native_w : 1.0;
  return problem.base_costs[op] * depth * tiles;
}

SubgraphResult SubgraphModel::simulate(const std::function<void(const StepDetail&)>& on_step) const {
  SubgraphResult result;
  StepWalker walker(*this);
  StepDetail detail;
  while (!walker.done()) {
    const bool ok = walker.advance(on_step ? &detail : nullptr);
    result.peak_working_set = std::max(result.peak_working_set, walker.last_working_set());
    if (!ok) {
      result.violation = walker.violation();
      return result;
    }
    if (on_step) on_step(detail);
    result.latency += walker.last_latency();
    if (walker.last_compute() >= walker.last_memory_time())
      result.compute_bound_latency += walker.last_latency();
    result.compute_time += walker.last_compute();
    result.memory_time += walker.last_memory_time();
    ++result.steps;
  }
  return result;
}

int64_t SubgraphModel::num_steps() const {
  int64_t steps = 0;
  return __builtin_mul_overflow(tiles(), nk_, &steps) ? INT64_MAX : steps;
}

int64_t SubgraphModel::finished_before(int64_t position) const {
  // Raster order only: every earlier row is whole (h rows high), and the earlier tiles of this row are w
  // wide.
  const int64_t row = position / ncols_, col = position % ncols_;
  const auto [r0, r1] = row_range(row);
  return row * g_.h * grid_w_ + col * g_.w * (r1 - r0);
}

SubgraphResult SubgraphModel::violation_in_tile(int64_t position, int64_t finished,
                                                Violations violations) const {
  // The step that fails first within one tile: ks = 0, the first interior step (all interior steps are
  // alike), the last. Evaluated with the real finished area, so an OOM names every term; the previous step's
  // slices only decide loads, which a violation does not report.
  SubgraphResult result;
  StepWalker w(*this);
  w.summarize_oom_ = violations == Violations::Summarize;
  std::vector<StepWalker::NumSlice> prev, cur;
  std::vector<int64_t> ks_list{0};
  if (nk_ >= 3) ks_list.push_back(1);
  if (nk_ >= 2) ks_list.push_back(nk_ - 1);
  for (int64_t ks : ks_list) {
    if (!w.evaluate(w.coord(position, ks), prev, cur, finished, nullptr)) {
      result.violation = w.violation_;
      result.peak_working_set = w.last_ws_;
      return result;
    }
  }
  return result;  // no violation in this tile (callers only ask where one was found)
}

std::vector<std::pair<int64_t, int64_t>> SubgraphModel::axis_ranges(const Axis& a) const {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  switch (a.kind) {
    case AxisKind::TileRows:
      for (int64_t r = 0; r < nrows_; ++r) ranges.push_back(row_range(r));
      break;
    case AxisKind::TileCols:
      for (int64_t c = 0; c < ncols_; ++c) ranges.push_back(col_range(c));
      break;
    case AxisKind::Reduction:
      for (int64_t ks = 0; ks < nk_; ++ks) ranges.push_back(k_range(ks, a.extent));
      break;
    case AxisKind::Full:
      ranges.push_back({0, a.extent});
      break;
  }
  return ranges;
}

bool SubgraphModel::aliased_forms_can_coincide() const {
  // Two forms of one tensor give the same slice only where both axes give the same range. Checking each axis
  // on its own over all steps is conservative (the two coincidences may never fall on one step). An axis with
  // more ranges than listing is worth (a hostile grid) is assumed to coincide: the walk then decides.
  constexpr int64_t kMaxRanges = 1 << 20;
  auto count = [&](const Axis& a) {
    return a.kind == AxisKind::TileRows    ? nrows_
           : a.kind == AxisKind::TileCols  ? ncols_
           : a.kind == AxisKind::Reduction ? nk_
                                           : 1;
  };
  auto meet = [&](const Axis& a, const Axis& b) {
    if (a == b) return true;
    if (count(a) > kMaxRanges || count(b) > kMaxRanges) return true;
    std::vector<std::pair<int64_t, int64_t>> x = axis_ranges(a), y = axis_ranges(b);
    std::sort(x.begin(), x.end());
    return std::any_of(y.begin(), y.end(),
                       [&](const auto& r) { return std::binary_search(x.begin(), x.end(), r); });
  };
  for (size_t i = 0; i < forms_.size(); ++i)
    for (size_t j = i + 1; j < forms_.size(); ++j)
      if (forms_[i].tensor == forms_[j].tensor && meet(forms_[i].form.rows, forms_[j].form.rows) &&
          meet(forms_[i].form.cols, forms_[j].form.cols))
        return true;
  return false;
}

SubgraphResult SubgraphModel::evaluate_fast(Violations violations, int64_t walk_budget) const {
  // Without numeric M17 checks, and unless two forms of one tensor (aliasing) can give the same slice at this
  // granularity, a step's numbers depend only on the tile's clipped size, its k-step, and whether the
  // previous tile shares its row or column. Interior k-steps (0 < ks < nk-1) are all alike. So each tile
  // class is evaluated once, on its first real occurrence, and counted after that: the cost of an answer does
  // not grow with the number of steps. The randomized tests in tests/ pin this to simulate().
  if (!counts_tile_classes()) {
    if (num_steps() > walk_budget) {
      SubgraphResult refused;
      refused.steps = num_steps();
      refused.walk_refused = true;
      return refused;
    }
    return simulate();
  }
  struct TileClass {
    bool known = false;
    double latency = 0, compute = 0, memory = 0, compute_bound = 0;
    int64_t max_ws = 0;
  };
  std::array<TileClass, 16> classes{};
  StepWalker w(*this);
  // Reused across calls (a search evaluates millions of candidates; allocating these each time showed up as
  // a sixth of its profile).
  thread_local std::vector<StepWalker::NumSlice> a, b;
  static const std::vector<StepWalker::NumSlice> no_previous;  // the step before a tile's predecessor: none
  struct Group {
    int64_t position, count;
    int64_t row0, col0, cols;  // raster representatives: the rectangle of tiles (count / cols rows) it stands for
  };
  thread_local std::vector<Group> groups;
  groups.clear();
  SubgraphResult result;
  const int64_t retained = static_cast<int64_t>(retained_.size());
  // Which tiles to look at, and how many tiles each stands for. In raster order a tile's class depends only
  // on whether its row/column is the first, an interior one or a clipped last one: at most 9 representatives,
  // whatever the grid size. (A retained output grows with the tiles finished before, which in raster order
  // is a closed form, finished_before.) With a traversal order every tile is classified (a few integer
  // operations each; the order itself was read from the file) and only the class evaluation is shared.
  const bool raster = order_.empty();
  if (raster) {
    struct Representatives {  // (index, how many it stands for): the first, the interior, a clipped last
      std::array<std::pair<int64_t, int64_t>, 3> items;
      int count = 0;
    };
    auto representatives = [](int64_t n, bool clipped_last) {
      Representatives reps;
      reps.items[reps.count++] = {0, 1};
      const int64_t interior = n - 1 - (clipped_last && n > 1 ? 1 : 0);
      if (interior > 0) reps.items[reps.count++] = {1, interior};
      if (clipped_last && n > 1) reps.items[reps.count++] = {n - 1, 1};
      return reps;
    };
    const Representatives rows = representatives(nrows_, grid_h_ % g_.h != 0);
    const Representatives cols = representatives(ncols_, grid_w_ % g_.w != 0);
    for (int r = 0; r < rows.count; ++r)
      for (int c = 0; c < cols.count; ++c)
        groups.push_back({rows.items[r].first * ncols_ + cols.items[c].first,
                          rows.items[r].second * cols.items[c].second, rows.items[r].first,
                          cols.items[c].first, cols.items[c].second});
  } else {
    groups.reserve(tiles());
    for (int64_t p = 0; p < tiles(); ++p) groups.push_back({p, 1, 0, 0, 0});
  }
  w.summarize_oom_ = violations == Violations::Summarize;
  // A search only needs to know that the subgraph does not fit: the class evaluation's own violation (its
  // working set already over the capacity) will do.
  auto summarized = [&] {
    result.violation = w.violation_;
    result.peak_working_set = std::max(result.peak_working_set, w.last_ws_);
    return result;
  };
  // The first position (traversal order) at which a step fails, with the area finished before it.
  int64_t failed_at = INT64_MAX, failed_finished = 0;
  auto fail = [&](int64_t position, int64_t finished) {
    if (position < failed_at) failed_at = position, failed_finished = finished;
  };
  int64_t finished = 0;  // traversal orders: area of the tiles before the current one
  for (const Group& group : groups) {
    const int64_t p = group.position;
    if (p > failed_at) break;  // groups come in order of their first position
    const int64_t tile = tile_of_position(p);
    const int64_t row = tile / ncols_, col = tile % ncols_;
    const int64_t before = raster ? finished_before(p) : finished;
    int transition = 0;
    if (p > 0) {
      const int64_t prev = tile_of_position(p - 1);
      transition = prev / ncols_ == row ? 1 : prev % ncols_ == col ? 2 : 3;
    }
    const bool short_rows = (row + 1) * g_.h > grid_h_, short_cols = (col + 1) * g_.w > grid_w_;
    TileClass& cls = classes[(short_rows ? 1 : 0) | (short_cols ? 2 : 0) | (transition << 2)];
    if (!cls.known) {
      cls.known = true;
      a.clear();
      // A step that fails here fails at this position (finished tiles only add to its working set).
      if (p > 0 && !w.evaluate(w.coord(p - 1, nk_ - 1), no_previous, a, 0, nullptr)) {
        if (w.summarize_oom_) return summarized();
        fail(p - 1, raster ? finished_before(p - 1) : finished - tile_area_at(p - 1));
        break;
      }
      auto step = [&](int64_t ks, const std::vector<StepWalker::NumSlice>& prev,
                      std::vector<StepWalker::NumSlice>& cur, int64_t times) {
        if (!w.evaluate(w.coord(p, ks), prev, cur, 0, nullptr)) return false;
        cls.latency += w.last_latency_ * static_cast<double>(times);
        if (w.last_compute_ >= w.last_memory_)
          cls.compute_bound += w.last_latency_ * static_cast<double>(times);
        cls.compute += w.last_compute_ * static_cast<double>(times);
        cls.memory += w.last_memory_ * static_cast<double>(times);
        cls.max_ws = std::max(cls.max_ws, w.last_ws_);
        return true;
      };
      bool ok = step(0, a, b, 1);
      if (ok && nk_ >= 3)
        ok = step(1, b, a, nk_ - 2) && step(nk_ - 1, a, b, 1);
      else if (ok && nk_ == 2)
        ok = step(1, b, a, 1);
      if (!ok) {
        if (w.summarize_oom_) return summarized();
        fail(p, before);
        break;
      }
    }
    if (raster && retained > 0) {
      // The group's tiles in raster order finish ever more area: its peak is at its last tile, and its first
      // failing tile is found by bisection over the rectangle.
      auto position_of = [&](int64_t i) {
        return (group.row0 + i / group.cols) * ncols_ + group.col0 + i % group.cols;
      };
      auto over = [&](int64_t i) {
        return static_cast<double>(cls.max_ws + finished_before(position_of(i)) * retained) > capacity_;
      };
      const int64_t last = group.count - 1;
      result.peak_working_set =
          std::max(result.peak_working_set, cls.max_ws + finished_before(position_of(last)) * retained);
      if (over(last)) {
        int64_t lo = 0, hi = last;  // the first i with over(i)
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (over(mid))
            hi = mid;
          else
            lo = mid + 1;
        }
        fail(position_of(lo), finished_before(position_of(lo)));
        continue;
      }
    } else {
      const int64_t peak = cls.max_ws + before * retained;
      result.peak_working_set = std::max(result.peak_working_set, peak);
      if (static_cast<double>(peak) > capacity_) {
        fail(p, before);
        break;  // positions come in order here
      }
    }
    result.latency += cls.latency * static_cast<double>(group.count);
    result.compute_bound_latency += cls.compute_bound * static_cast<double>(group.count);
    result.compute_time += cls.compute * static_cast<double>(group.count);
    result.memory_time += cls.memory * static_cast<double>(group.count);
    finished += tile_area_at(p);
  }
  if (failed_at != INT64_MAX) {
    if (violations == Violations::Summarize) {
      // A retained output grew past the capacity: the totals are enough for a search.
      RuleViolation v;
      v.rule = "M20";
      v.subgraph = index_;
      v.capacity = capacity_;
      v.message = "out of memory: a retained output grows past the capacity at traversal position " +
                  std::to_string(failed_at) + " (tile " + std::to_string(tile_of_position(failed_at)) + ")";
      result.violation = v;
      return result;
    }
    SubgraphResult failure = violation_in_tile(failed_at, failed_finished, violations);
    if (!failure.violation) return simulate();  // not expected: the class said this tile fails
    return failure;
  }
  result.steps = num_steps();
  return result;
}

}  // namespace mlsys
