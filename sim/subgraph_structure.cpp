// The static rules of one subgraph (M6-M14) and its symbolic regions (M17-M20 forms): SubgraphModel::compile,
// compile_structure and the granularity and traversal setters.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/step_model.hpp"
#include "sim/step_model_internal.hpp"

namespace mlsys {
namespace {

Axis bounding(const Axis& a) {
  // Over all k-steps of a tile, a reduction range sweeps [0, extent) (M18 prologue rectangle).
  return a.kind == AxisKind::Reduction ? Axis{AxisKind::Full, a.extent} : a;
}
Form bounding(const Form& f) {
  return {bounding(f.rows), bounding(f.cols)};
}

const Form kTileForm{{AxisKind::TileRows, 0}, {AxisKind::TileCols, 0}};

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
  // Keyed by the hosts reached, not sized to the problem: a batched subgraph has thousands of guests.
  std::vector<int> host_of_guest(guests.size(), -1);
  std::unordered_map<int, int> guest_of_host;
  std::unordered_set<int> visited;
  std::function<bool(size_t)> place = [&](size_t g) {
    for (int h : reaches[g]) {
      if (!visited.insert(h).second) continue;
      auto hosted = guest_of_host.find(h);
      if (hosted == guest_of_host.end() || place(static_cast<size_t>(hosted->second))) {
        guest_of_host[h] = static_cast<int>(g);
        host_of_guest[g] = h;
        return true;
      }
    }
    return false;
  };
  std::vector<int> unhosted;
  for (size_t g = 0; g < guests.size(); ++g) {
    visited.clear();
    place(g);
  }
  for (size_t g = 0; g < guests.size(); ++g)
    if (host_of_guest[g] == -1) unhosted.push_back(p.outputs[guests[g]][0]);
  return unhosted;
}
}  // namespace

// compile_structure, one method per rule group in the rule book's order. The builder holds what the groups
// share: the op list with its positions and the tensor classes (M8), the link roles (M12) and the symbolic
// regions (M17). All of it is indexed by position in the subgraph, never sized to the problem, so a
// question costs what its subgraph has, even on a graph of 50,000 ops.
class StructureCompiler {
 public:
  StructureCompiler(const Problem& p, const Graph& graph, const std::vector<int>& ops, int index)
      : p(p), graph(graph), ops(ops), index(index), matmul_depths(SubgraphModel::matmuls_of(p, graph, ops)) {
    for (const SubgraphModel::MatmulDepth& mm : matmul_depths) matmuls.push_back(mm.op);
  }

  std::optional<RuleViolation> check_op_list();                                       // M7
  std::optional<RuleViolation> check_retention(const std::vector<int>& spec_retain);  // M8, M9
  void classify_tensors(SubgraphModel& m, const std::vector<int>& retained_in, const ModelOptions& options);
  std::optional<RuleViolation> unify_grid(SubgraphModel& m);  // M10's shapes
  void find_links(SubgraphModel& m);                          // M12, M13
  void count_unhosted_partial_sums(SubgraphModel& m);         // M20 D
  void find_prologues(SubgraphModel& m);                      // M14
  void derive_regions(SubgraphModel& m);                      // M17
  void compile_ops(SubgraphModel& m);                         // M18, M19, M24

 private:
  RuleViolation reject(const char* rule, const std::string& message, int op = -1, int tensor = -1) const {
    return rejection(index, rule, message, op, tensor);
  }
  // The op's position in the declared list, -1 outside the subgraph.
  int position_of(int op) const {
    auto it = std::lower_bound(positions.begin(), positions.end(), std::make_pair(op, -1));
    return it != positions.end() && it->first == op ? it->second : -1;
  }
  bool in_subgraph(int op) const { return op >= 0 && position_of(op) != -1; }
  // The M12 roles and M17 forms of an op of the subgraph.
  struct OpRole {
    bool after_matmul = false, reaches_matmul = false, feeds_lhs = false, in_chain = false, is_head = false,
         is_tail = false;
    Form out_form{};
    std::array<Form, 2> mm_in_form{};
  };
  OpRole& role(int op) { return roles[position_of(op)]; }
  const OpRole& role(int op) const { return roles[position_of(op)]; }
  bool is_retained(int t) const { return std::find(retain.begin(), retain.end(), t) != retain.end(); }
  bool produced_here(int t) const { return in_subgraph(graph.producer[t]); }
  std::vector<Consumer> internal_consumers(int t) const;
  bool is_ephemeral(int t) const {
    return produced_here(t) && !internal_consumers(t).empty() && !is_retained(t);
  }
  std::vector<int> heads_of(int t) const;
  std::vector<int> hosts_reached(int y) const;
  Form input_form(const Consumer& c) const {
    return p.is_matmul(c.op) ? role(c.op).mm_in_form[c.position] : role(c.op).out_form;
  }

  const Problem& p;
  const Graph& graph;
  const std::vector<int>& ops;
  const int index;
  const std::vector<SubgraphModel::MatmulDepth> matmul_depths;
  std::vector<int> matmuls;
  std::vector<std::pair<int, int>> positions;  // (op, position in the declared list), sorted by op
  std::vector<int> retain;                     // R_i, deduplicated
  // By position. M12 roles: in-chain Pointwise ops (after a MatMul and leading to one), links' heads and
  // tails; M17: the region each op's output is computed over, and each MatMul's operand forms.
  std::vector<OpRole> roles;
};

std::vector<Consumer> StructureCompiler::internal_consumers(int t) const {
  std::vector<Consumer> result;
  for (const Consumer& c : graph.consumers[t])
    if (in_subgraph(c.op)) result.push_back(c);
  // Declared order, so that regions are derived deterministically.
  std::sort(result.begin(), result.end(),
            [&](const Consumer& a, const Consumer& b) { return position_of(a.op) < position_of(b.op); });
  return result;
}

std::optional<RuleViolation> StructureCompiler::check_op_list() {
  if (ops.empty()) return reject("M7", "the subgraph has no ops");
  for (size_t i = 0; i < ops.size(); ++i) positions.emplace_back(ops[i], static_cast<int>(i));
  std::sort(positions.begin(), positions.end());
  // The first repeat in declared order is the one named.
  int repeat = -1;
  for (size_t i = 1; i < positions.size(); ++i)
    if (positions[i].first == positions[i - 1].first && (repeat == -1 || positions[i].second < repeat))
      repeat = positions[i].second;
  if (repeat != -1)
    return reject("M7", "op " + std::to_string(ops[repeat]) + " is listed twice", ops[repeat]);
  roles.assign(ops.size(), OpRole{});
  for (int b : ops)
    for (int t : p.inputs[b]) {
      int a = graph.producer[t];
      if (in_subgraph(a) && position_of(a) > position_of(b))
        return reject("M7",
                      "op " + std::to_string(b) + " reads " + tensor_name(t) + ", produced by op " +
                          std::to_string(a) +
                          " which is listed after it; the declared order must be topological",
                      b, t);
    }
  // Ops touching one tensor are joined: (tensor, position) pairs sorted by tensor put them side by side.
  Components comp(ops.size());
  std::vector<std::pair<int, int>> touches;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int t : p.inputs[ops[i]]) touches.emplace_back(t, static_cast<int>(i));
    for (int t : p.outputs[ops[i]]) touches.emplace_back(t, static_cast<int>(i));
  }
  std::sort(touches.begin(), touches.end());
  for (size_t i = 1; i < touches.size(); ++i)
    if (touches[i].first == touches[i - 1].first) comp.join(touches[i - 1].second, touches[i].second);
  for (size_t i = 1; i < ops.size(); ++i)
    if (comp.find(static_cast<int>(i)) != comp.find(0))
      return reject("M7",
                    "op " + std::to_string(ops[i]) + " shares no tensor path with op " +
                        std::to_string(ops[0]) + "; the ops of a subgraph must be connected",
                    ops[i]);
  return std::nullopt;
}

std::optional<RuleViolation> StructureCompiler::check_retention(const std::vector<int>& spec_retain) {
  for (int t : spec_retain)
    if (std::find(retain.begin(), retain.end(), t) == retain.end()) retain.push_back(t);
  for (int t : retain) {
    if (graph.is_graph_input[t])
      return reject("M9", tensor_name(t) + ": graph inputs cannot be retained", -1, t);
    if (!produced_here(t))
      return reject("M9",
                    tensor_name(t) +
                        " is not produced by this subgraph; only a tensor the subgraph produces can be "
                        "retained (retention lasts one subgraph)",
                    -1, t);
    if (graph.is_graph_output[t])
      return reject("M9",
                    tensor_name(t) + " is a graph output and cannot be retained; it must reach slow memory",
                    -1, t);
    for (const Consumer& c : internal_consumers(t))
      if (p.is_matmul(c.op))
        return reject("M9",
                      tensor_name(t) + " is read by MatMul op " + std::to_string(c.op) +
                          " of this subgraph; a tensor feeding a MatMul cannot be retained",
                      c.op, t);
  }
  return std::nullopt;
}

void StructureCompiler::classify_tensors(SubgraphModel& m, const std::vector<int>& retained_in,
                                         const ModelOptions& options) {
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
}

std::optional<RuleViolation> StructureCompiler::unify_grid(SubgraphModel& m) {
  // One output shape; the tile counts come with the granularity.
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
  return std::nullopt;
}

// The MatMuls a tensor comes from through in-chain ops (the tensor's producer if it is a MatMul).
std::vector<int> StructureCompiler::heads_of(int t) const {
  std::vector<int> heads, stack{t};
  std::unordered_set<int> seen;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    const int a = graph.producer[u];
    if (!in_subgraph(a) || !seen.insert(u).second) continue;
    if (p.is_matmul(a)) {
      if (std::find(heads.begin(), heads.end(), a) == heads.end()) heads.push_back(a);
    } else if (role(a).in_chain) {
      for (int v : p.inputs[a]) stack.push_back(v);
    }
  }
  return heads;
}

void StructureCompiler::find_links(SubgraphModel& m) {
  // A link runs from MatMul `a` to MatMul `b`, directly or through Pointwise ops of the subgraph. A Pointwise
  // op lies on such a path when it both follows a MatMul (`after_matmul`: it reads, through Pointwise ops
  // only, a MatMul's output) and leads to one (`reaches_matmul`: a MatMul reads, through Pointwise ops only,
  // its output); those are the in-chain ops. Declared order is topological, so one pass each way decides
  // both.
  // `feeds_lhs`: some path from the op ends at a MatMul's LHS.
  for (int o : ops) {
    if (p.is_matmul(o)) continue;
    for (int t : p.inputs[o]) {
      const int a = graph.producer[t];
      if (in_subgraph(a) && (p.is_matmul(a) || role(a).after_matmul)) role(o).after_matmul = true;
    }
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : internal_consumers(t)) {
        const bool matmul = p.is_matmul(c.op);
        if (matmul || role(c.op).reaches_matmul) role(*it).reaches_matmul = true;
        if ((matmul && c.position == 0) || (!matmul && role(c.op).feeds_lhs)) role(*it).feeds_lhs = true;
      }
  for (int o : ops) role(o).in_chain = !p.is_matmul(o) && role(o).after_matmul && role(o).reaches_matmul;
  // Each (head, tail, position) once: sorted and deduplicated, since a search asks about subgraphs of
  // thousands of chained MatMuls (a batched layer of an imported network).
  std::vector<std::tuple<int, int, int>> links;
  for (int b : matmuls)
    for (int pos = 0; pos < 2; ++pos)
      for (int a : heads_of(p.inputs[b][pos])) {
        links.emplace_back(a, b, pos);
        role(a).is_head = true;
        role(b).is_tail = true;
      }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  // The sliced reduction depth K_s.
  for (int o : matmuls)
    if (links.empty() || (role(o).is_tail && !role(o).is_head))
      m.facts_.K_s = std::max(m.facts_.K_s, graph.reduction_depth[o]);
  m.facts_.links = links.size();
  // M13: a middle MatMul.
  m.facts_.has_middle =
      std::any_of(matmuls.begin(), matmuls.end(), [&](int o) { return role(o).is_head && role(o).is_tail; });
}

// The non-ephemeral outputs reached from tensor `y` through Pointwise ops of the subgraph only.
std::vector<int> StructureCompiler::hosts_reached(int y) const {
  std::vector<int> hosts, stack{y};
  std::unordered_set<int> seen;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (const Consumer& c : internal_consumers(u)) {
      if (p.is_matmul(c.op)) continue;  // through Pointwise ops only
      for (int v : p.outputs[c.op]) {
        if (!seen.insert(v).second) continue;
        if (!is_ephemeral(v)) hosts.push_back(v);
        stack.push_back(v);
      }
    }
  }
  return hosts;
}

void StructureCompiler::count_unhosted_partial_sums(SubgraphModel& m) {
  // Every MatMul that is not a head reduces over Kr(ks) and keeps a partial sum of its tile from the first
  // k-step to the last. One with a non-ephemeral output accumulates in that output's tile (counted in C).
  // One with an ephemeral output (a split-K epilogue follows) "may accumulate in the tile of one
  // non-ephemeral output that is reached from it through Pointwise ops of the subgraph only", and "an output
  // tile hosts at most one accumulator": as many as possible are hosted (a maximum matching of these MatMuls
  // to the outputs they reach), and each one left over is D.
  std::vector<int> guests;                // MatMuls whose partial sum needs a host
  std::vector<std::vector<int>> reaches;  // per guest: the non-ephemeral outputs it reaches
  for (int o : matmuls) {
    const int y = p.outputs[o][0];
    if (role(o).is_head || !is_ephemeral(y)) continue;
    guests.push_back(o);
    reaches.push_back(hosts_reached(y));
  }
  m.accumulators_ = partial_sums_without_host(p, guests, reaches);
}

void StructureCompiler::find_prologues(SubgraphModel& m) {
  // Pointwise ops that are not in-chain whose output a MatMul reads directly.
  for (int o : ops) {
    if (p.is_matmul(o) || role(o).in_chain) continue;
    for (int t : p.outputs[o])
      for (const Consumer& c : internal_consumers(t))
        if (p.is_matmul(c.op))
          m.facts_.prologues.push_back({o, t, c.op, c.position, graph.reduction_depth[c.op]});
  }
}

void StructureCompiler::derive_regions(SubgraphModel& m) {
  // Symbolic regions, in reverse declared order.
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const int o = *it;
    std::optional<Form> region;
    for (int t : p.outputs[o]) {
      std::vector<Form> demands;
      if (!is_ephemeral(t)) demands.push_back(kTileForm);
      for (const Consumer& c : internal_consumers(t)) demands.push_back(input_form(c));
      for (const Form& d : demands) {
        if (!region)
          region = d;
        else if (!(d == *region))
          m.checks_.push_back({o, t, *region, d});
      }
    }
    OpRole& r = role(o);
    r.out_form = *region;
    if (p.is_matmul(o)) {
      const int64_t K = graph.reduction_depth[o];
      const Axis q = r.is_head ? Axis{AxisKind::Full, K} : Axis{AxisKind::Reduction, K};
      r.mm_in_form = {Form{region->rows, q}, Form{q, region->cols}};
    }
  }
}

void StructureCompiler::compile_ops(SubgraphModel& m) {
  // M18 which ops run when, M24 parameters.
  for (int o : ops) {
    SubgraphModel::CompiledOp c{};
    c.op = o;
    c.matmul = p.is_matmul(o);
    c.base = p.base_costs[o];
    c.reduction_depth = graph.reduction_depth[o];
    const OpRole& r = role(o);
    c.producer = c.matmul && r.is_head;
    // A head and an in-chain op compute the streamed strip (M23, M24): the tail's reduction axis, which is
    // the columns for an LHS link and the rows for an RHS link.
    if (c.producer || r.in_chain) c.streamed = r.feeds_lhs ? 1 : 2;
    const bool prologue = !c.matmul && !r.in_chain && r.reaches_matmul;
    c.runs_at = c.matmul || r.in_chain ? kEveryStep : prologue ? kFirstKStep : kLastKStep;
    c.run_form = prologue ? bounding(r.out_form) : r.out_form;
    m.compiled_.push_back(c);
    // M19 slice forms of this op's external, not retained-in inputs.
    for (int pos = 0; pos < static_cast<int>(p.inputs[o].size()); ++pos) {
      const int t = p.inputs[o][pos];
      if (produced_here(t) ||
          std::find(m.retained_in_.begin(), m.retained_in_.end(), t) != m.retained_in_.end())
        continue;
      const Form f = c.matmul ? r.mm_in_form[pos] : c.run_form;
      auto same = std::find_if(m.forms_.begin(), m.forms_.end(), [&](const SubgraphModel::SliceForm& s) {
        return s.tensor == t && s.form == f;
      });
      if (same != m.forms_.end())
        same->runs_at |= c.runs_at;
      else
        m.forms_.push_back({t, f, c.runs_at, false});
    }
  }
  for (SubgraphModel::SliceForm& s : m.forms_) {
    s.may_alias = std::count_if(m.forms_.begin(), m.forms_.end(), [&](const SubgraphModel::SliceForm& other) {
                    return other.tensor == s.tensor;
                  }) > 1;
    m.aliasing_ = m.aliasing_ || s.may_alias;
  }
}

std::variant<SubgraphModel, RuleViolation> SubgraphModel::compile_structure(
    const Problem& p, const Graph& graph, const std::vector<int>& ops, const std::vector<int>& spec_retain,
    int index, const std::vector<int>& retained_in, const ModelOptions& options) {
  StructureCompiler compiler(p, graph, ops, index);
  if (auto v = compiler.check_op_list()) return *v;
  if (auto v = compiler.check_retention(spec_retain)) return *v;
  SubgraphModel m;
  compiler.classify_tensors(m, retained_in, options);
  if (auto v = compiler.unify_grid(m)) return *v;
  compiler.find_links(m);
  compiler.count_unhosted_partial_sums(m);
  compiler.find_prologues(m);
  compiler.derive_regions(m);
  compiler.compile_ops(m);
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

}  // namespace mlsys
