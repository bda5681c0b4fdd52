// The cover bound: floors of connected op sets from the step model, and the LP over them (GLPK). The proof
// is docs/bounds.md#theorem-6; tests/cover_bound_test.cpp checks it against the brute-force optimum.
#include "verifier/cover_bound.hpp"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

namespace mlsys {

namespace {

using Clock = std::chrono::steady_clock;

// Tile sizes of one axis grouped by the tile count they give, fewest tiles first. Within a count, only the
// smallest size (the least working set; compute and unavoidable traffic depend on the count alone) and the
// sizes a rule may demand (M13's w = K, M14's w or h >= K: the reduction depths, which may exceed the
// extent) are worth trying.
std::vector<std::vector<int64_t>> size_classes(int64_t extent, int64_t native,
                                               const std::vector<int64_t>& depths) {
  std::vector<std::vector<int64_t>> classes;
  std::vector<int64_t> counts;
  for (int64_t s = native; s >= 1; --s) {  // sizes above the extent are legal (M6) and give one tile
    const int64_t count = (extent + s - 1) / s;
    if (counts.empty() || counts.back() != count) {
      counts.push_back(count);
      classes.emplace_back();
    }
    classes.back().insert(classes.back().begin(), s);  // ascending: the smallest size of the count first
  }
  for (auto& sizes : classes) {
    std::vector<int64_t> kept{sizes.front()};
    for (int64_t d : depths)
      if (std::binary_search(sizes.begin(), sizes.end(), d) && d > kept.front()) kept.push_back(d);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    sizes = std::move(kept);
  }
  return classes;
}

// Tensors whose traffic no retention avoids: graph inputs (never retained, M9), graph outputs (never
// retained, M9) and tensors over the capacity (a retained tensor is whole in fast memory, M20).
bool must_move(const Problem& p, const Graph& graph, int t) {
  return graph.is_graph_input[t] || graph.is_graph_output[t] ||
         static_cast<double>(p.size(t)) > p.fast_memory_capacity;
}

// The traffic at the model's granularity that every order pays (loads_every_order_pays) for the inputs it
// loads, and the stores of outputs that cannot be retained. `loaded_anyway` are the inputs that could have
// been retained-in and are not in this model: they are charged too.
double unavoidable_memory_time(const Problem& p, const Graph& graph, const SubgraphModel& model,
                               const std::vector<int>& loaded_anyway) {
  double elements = 0;
  for (const auto& load : model.loads_every_order_pays())
    if (must_move(p, graph, load.tensor) ||
        std::find(loaded_anyway.begin(), loaded_anyway.end(), load.tensor) != loaded_anyway.end())
      elements += static_cast<double>(load.elements);
  for (int t : model.nonephemeral_outputs())
    if (must_move(p, graph, t)) elements += static_cast<double>(p.size(t));
  return elements / p.slow_memory_bandwidth;
}

struct FloorSearch {
  const Problem& p;
  const Graph& graph;
  const ModelOptions& options;
  const std::function<bool()>& expired;
  std::vector<int64_t> depths;  // the MatMuls' K: sizes M13 and M14 may demand
  double compute_floor_sum = 0;
  bool interrupted = false;  // the clock stopped the search over granularities
};

// The least legal size of each count on both axes at reduction step `k` (0: none legal), or two empty lists
// when no granularity with this k is legal.
std::pair<std::vector<int64_t>, std::vector<int64_t>> least_legal_sizes(
    SubgraphModel& model, const std::vector<std::vector<int64_t>>& rows,
    const std::vector<std::vector<int64_t>>& cols, int64_t k) {
  // The largest h is the most permissive (M14 asks h >= K), so some w is legal with it if any is at all.
  std::optional<Granularity> any;
  const int64_t h_max = rows.front().back();
  for (size_t ci = 0; ci < cols.size() && !any; ++ci)
    for (int64_t w : cols[ci])
      if (!model.set_granularity({w, h_max, k})) {
        any = Granularity{w, h_max, k};
        break;
      }
  if (!any) return {};
  std::vector<int64_t> legal_w(cols.size(), 0), legal_h(rows.size(), 0);
  for (size_t ci = 0; ci < cols.size(); ++ci)
    for (int64_t w : cols[ci])
      if (!model.set_granularity({w, any->h, k})) {
        legal_w[ci] = w;
        break;
      }
  for (size_t ri = 0; ri < rows.size(); ++ri)
    for (int64_t h : rows[ri])
      if (!model.set_granularity({any->w, h, k})) {
        legal_h[ri] = h;
        break;
      }
  return {legal_w, legal_h};
}

// The least floor over every granularity of one compiled structure (with its retained-in tensors), charging
// the loads of `loaded_anyway` as well as the unavoidable traffic.
std::optional<SubgraphFloor> least_over_granularities(FloorSearch& f, SubgraphModel& model,
                                                      const std::vector<int>& loaded_anyway) {
  const auto rows = size_classes(model.grid_height(), f.p.native_h, f.depths);
  const auto cols = size_classes(model.grid_width(), f.p.native_w, f.depths);
  // k: 1 stands for every split reduction (compute and unavoidable traffic do not depend on k once nk >= 2,
  // and k = 1 holds the least); K_s for the unsplit one.
  std::vector<int64_t> ks{1};
  const int64_t K_s = model.sliced_depth();
  if (K_s > 1 && (K_s <= f.p.native_w || f.options.allow_supernative_k)) ks.push_back(K_s);
  constexpr int64_t kWalkBudget = 4096;

  std::optional<SubgraphFloor> best;
  auto consider = [&](const Granularity& g, double compute) {
    const double memory = unavoidable_memory_time(f.p, f.graph, model, loaded_anyway);
    const double value = std::max(compute, memory);
    if (!best || value < best->value) best = SubgraphFloor{value, compute, memory, g};
  };
  for (int64_t k : ks) {
    // The granularity rules factor: M6 and M13 constrain w and k, M14 w or h alone (apply_granularity), so
    // the least legal size of each count is found once per axis, against one legal size of the other.
    const auto [legal_w, legal_h] = least_legal_sizes(model, rows, cols, k);
    if (legal_w.empty()) continue;
    // Most sets of a small fast memory fit at no granularity: the smallest tiles tell at once.
    if (legal_w.back() && legal_h.back() && !model.set_granularity({legal_w.back(), legal_h.back(), k})) {
      const SubgraphResult smallest = model.evaluate_fast(SubgraphModel::Violations::Summarize, kWalkBudget);
      if (smallest.violation && smallest.violation->rule == "M20") continue;
    }
    // Rows from the most tiles (smallest h) to the fewest. For each, the fewest column tiles that fit: more
    // tiles only cost more. `first_open` is the first column count not yet out of memory at a smaller h,
    // which stays out of memory at every larger one (the working set grows with h).
    size_t first_open = 0;
    for (size_t ri = rows.size(); ri-- > 0 && first_open < cols.size();) {
      if (!legal_h[ri]) continue;
      for (size_t ci = first_open; ci < cols.size(); ++ci) {
        if (!legal_w[ci]) continue;
        if (f.expired && f.expired()) {
          f.interrupted = true;
          return best;
        }
        const Granularity legal{legal_w[ci], legal_h[ri], k};
        if (model.set_granularity(legal)) continue;  // cannot happen while the rules factor
        const SubgraphResult r = model.evaluate_fast(SubgraphModel::Violations::Summarize, kWalkBudget);
        if (r.violation && r.violation->rule == "M20") {  // so is every larger size of this count
          if (ci == first_open) ++first_open;
          continue;
        }
        // Unpriced (a walk too long), or rejected by a rule that depends on the exact sizes (M17), which a
        // larger size of the same counts might pass: only every op's compute floor is certain.
        consider(legal, r.walk_refused || r.violation ? f.compute_floor_sum : r.compute_time);
        break;
      }
    }
  }
  return best;
}

}  // namespace

std::optional<SubgraphFloor> subgraph_floor(const Problem& p, const Graph& graph, const ModelOptions& options,
                                            const std::vector<int>& ops,
                                            const std::function<bool()>& expired) {
  FloorSearch f{p, graph, options, expired, {}, 0};
  for (int o : ops) {
    if (p.is_matmul(o)) f.depths.push_back(graph.reduction_depth[o]);
    f.compute_floor_sum += compute_floor(p, graph, o, options.matmul_compute);
  }
  // Inputs made outside that may arrive retained: each is either loaded (its unavoidable loads count) or
  // whole in fast memory at every step (M20 A), which shrinks the granularities that fit. Up to
  // kRetainedChoices of them are tried both ways; beyond that they are all taken as free, which is what a
  // retained tensor costs in traffic, with the least working set: still below every context.
  constexpr size_t kRetainedChoices = 4;
  std::vector<int> choices;
  for (int o : ops)
    for (int t : p.inputs[o])
      if (graph.producer[t] >= 0 && std::find(ops.begin(), ops.end(), graph.producer[t]) == ops.end() &&
          !must_move(p, graph, t) && std::find(choices.begin(), choices.end(), t) == choices.end())
        choices.push_back(t);
  const bool try_choices = choices.size() <= kRetainedChoices;
  std::optional<SubgraphFloor> best;
  for (uint32_t mask = 0; mask < (try_choices ? 1u << choices.size() : 1u); ++mask) {
    std::vector<int> retained_in, loaded_anyway;
    int64_t resident = 0;
    for (size_t i = 0; i < choices.size() && try_choices; ++i)
      if (mask >> i & 1) {
        retained_in.push_back(choices[i]);
        resident += p.size(choices[i]);
      } else {
        loaded_anyway.push_back(choices[i]);
      }
    if (static_cast<double>(resident) > p.fast_memory_capacity) continue;
    // Nothing retained out: the fewest tensors in fast memory and the fewest region checks, so a
    // granularity rejected here is rejected in every context with these retained-in tensors.
    auto compiled = SubgraphModel::compile_structure(p, graph, ops, {}, 0, retained_in, options);
    if (std::holds_alternative<RuleViolation>(compiled))
      return std::nullopt;  // the structure, in any context
    const auto floor = least_over_granularities(f, std::get<SubgraphModel>(compiled), loaded_anyway);
    if (f.interrupted) break;
    if (!floor && mask == 0) return std::nullopt;  // with more resident, nothing fits either
    if (floor && (!best || floor->value < best->value)) best = floor;
  }
  // Stopped before every granularity was priced: only the ops' compute floors are certain for the rest.
  if (f.interrupted && (!best || f.compute_floor_sum < best->value))
    best = SubgraphFloor{f.compute_floor_sum, f.compute_floor_sum, 0, {}};
  return best;
}

namespace {

// Connected sets of ops (M7's neighbours: ops sharing a tensor), each once (Wernicke's ESU enumeration:
// the smallest op is the root, and a set grows only by ops beyond it that no earlier member neighbours).
class SetEnumerator {
 public:
  SetEnumerator(const Problem& p, const Graph& graph, int64_t limit) : limit_(limit), n_(p.num_ops()) {
    adjacent_.assign(n_, {});
    std::vector<std::vector<int>> touching(p.num_tensors());
    for (int o = 0; o < n_; ++o) {
      for (int t : p.inputs[o]) touching[t].push_back(o);
      for (int t : p.outputs[o]) touching[t].push_back(o);
    }
    for (const auto& ops : touching)
      for (int a : ops)
        for (int b : ops)
          if (a != b) adjacent_[a].push_back(b);
    for (auto& a : adjacent_) {
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
    }
    rank_.assign(n_, 0);
    for (size_t i = 0; i < graph.topological_order.size(); ++i)
      rank_[graph.topological_order[i]] = static_cast<int>(i);
  }

  // False when there are more than `limit` sets, or `expired` says so (asked every 4,096 sets).
  bool run(std::vector<std::vector<int>>& sets, const std::function<bool()>& expired) {
    sets_ = &sets;
    expired_ = &expired;
    std::vector<int> members;
    std::vector<char> in_set(n_, 0), near(n_, 0);
    for (int root = 0; root < n_; ++root) {
      std::vector<int> extension;
      for (int u : adjacent_[root])
        if (u > root) extension.push_back(u);
      members = {root};
      in_set[root] = 1;
      if (!grow(root, members, extension, in_set)) return false;
      in_set[root] = 0;
    }
    return true;
  }

 private:
  bool grow(int root, std::vector<int>& members, std::vector<int> extension, std::vector<char>& in_set) {
    if (static_cast<int64_t>(sets_->size()) >= limit_) return false;
    if ((sets_->size() & 4095) == 4095 && (*expired_)()) return false;
    std::vector<int> ordered = members;
    std::sort(ordered.begin(), ordered.end(), [&](int a, int b) { return rank_[a] < rank_[b]; });
    sets_->push_back(std::move(ordered));
    while (!extension.empty()) {
      const int v = extension.back();
      extension.pop_back();
      std::vector<int> next = extension;
      for (int u : adjacent_[v]) {
        if (u <= root || in_set[u]) continue;
        const bool neighbours_set = std::any_of(members.begin(), members.end(), [&](int m) {
          return std::binary_search(adjacent_[m].begin(), adjacent_[m].end(), u);
        });
        if (!neighbours_set && std::find(next.begin(), next.end(), u) == next.end()) next.push_back(u);
      }
      members.push_back(v);
      in_set[v] = 1;
      const bool ok = grow(root, members, std::move(next), in_set);
      in_set[v] = 0;
      members.pop_back();
      if (!ok) return false;
    }
    return true;
  }

  int64_t limit_;
  int n_;
  std::vector<std::vector<int>> adjacent_;
  std::vector<int> rank_;
  std::vector<std::vector<int>>* sets_ = nullptr;
  const std::function<bool()>* expired_ = nullptr;
};

// A floor every set has without compiling it: each op's compute floor, and the traffic of graph inputs,
// graph outputs and tensors over the capacity that cross its boundary (each at least once).
double cheap_floor(const Problem& p, const Graph& graph, const ModelOptions& options,
                   const std::vector<int>& ops) {
  double compute = 0, elements = 0;
  auto inside = [&](int o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  std::vector<int> seen;
  for (int o : ops) {
    compute += compute_floor(p, graph, o, options.matmul_compute);
    for (int t : p.inputs[o])
      if ((graph.producer[t] < 0 || !inside(graph.producer[t])) && must_move(p, graph, t) &&
          std::find(seen.begin(), seen.end(), t) == seen.end()) {
        seen.push_back(t);
        elements += static_cast<double>(p.size(t));
      }
    for (int t : p.outputs[o]) {
      const bool read_inside = std::any_of(graph.consumers[t].begin(), graph.consumers[t].end(),
                                           [&](const Consumer& c) { return inside(c.op); });
      if (!read_inside && must_move(p, graph, t)) elements += static_cast<double>(p.size(t));
    }
  }
  return std::max(compute, elements / p.slow_memory_bandwidth);
}

struct GlpkDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

}  // namespace

namespace {

// The LP over the sets, solved in its covering form: minimize the floors of a fractional cover of the ops
// (one row per op, one column per set) whose row duals are the op prices. Columns are generated: the LP
// holds only the sets added so far, and the caller adds those whose floor is below their prices.
class CoverLp {
 public:
  explicit CoverLp(int ops) : lp_(glp_create_prob()), ops_(ops) {
    glp_set_obj_dir(lp_.get(), GLP_MIN);
    glp_add_rows(lp_.get(), ops);
    for (int o = 1; o <= ops; ++o) glp_set_row_bnds(lp_.get(), o, GLP_LO, 1, 0);
  }
  void add(int set, const std::vector<int>& ops, double value) {
    const int column = glp_add_cols(lp_.get(), 1);
    std::vector<int> rows{0};
    std::vector<double> ones{0};
    for (int o : ops) {
      rows.push_back(o + 1);
      ones.push_back(1);
    }
    glp_set_mat_col(lp_.get(), column, static_cast<int>(ops.size()), rows.data(), ones.data());
    glp_set_col_bnds(lp_.get(), column, GLP_LO, 0, 0);
    glp_set_obj_coef(lp_.get(), column, value);
    sets_.push_back(set);
  }
  // False when the simplex fails, finds no cover, or runs out of `seconds`.
  bool solve(double seconds) {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    parm.tm_lim = static_cast<int>(std::clamp(seconds * 1000, 1.0, 2.0e9));
    return glp_simplex(lp_.get(), &parm) == 0 && glp_get_status(lp_.get()) == GLP_OPT;
  }
  int columns() const { return static_cast<int>(sets_.size()); }
  int set_of(int column) const { return sets_[column]; }
  double weight(int column) const { return glp_get_col_prim(lp_.get(), column + 1); }
  void set_floor(int column, double value) { glp_set_obj_coef(lp_.get(), column + 1, value); }
  void drop(int column) { glp_set_col_bnds(lp_.get(), column + 1, GLP_FX, 0, 0); }
  std::vector<double> prices() const {
    std::vector<double> y(ops_);
    for (int o = 0; o < ops_; ++o) y[o] = std::max(0.0, glp_get_row_dual(lp_.get(), o + 1));
    return y;
  }

 private:
  std::unique_ptr<glp_prob, GlpkDeleter> lp_;
  int ops_;
  std::vector<int> sets_;  // per column
};

// The sets and their floors while the LP runs: cheap until priced by the step model.
// The ops a set can compute for the first time. If an op o of S has a descendant outside S that has a
// descendant in S, that outside op ran before S (S reads what it leads to), and so did o before it: S is
// not o's first computation. Every op's first computation is in a set where it counts, so covering only
// the counted ops is still a relaxation of every schedule (docs/bounds.md#theorem-6).
std::vector<std::vector<int>> first_computations(const Problem& p, const Graph& graph,
                                                 const std::vector<std::vector<int>>& sets) {
  const int n = p.num_ops();
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  using Bits = std::vector<uint64_t>;
  auto set_bit = [](Bits& b, int i) { b[i / 64] |= uint64_t{1} << (i % 64); };
  std::vector<Bits> below(n, Bits(words, 0)), above(n, Bits(words, 0));  // descendants, ancestors
  const std::vector<int>& order = graph.topological_order;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : graph.consumers[t]) {
        set_bit(below[*it], c.op);
        for (size_t w = 0; w < words; ++w) below[*it][w] |= below[c.op][w];
      }
  for (int o : order)
    for (int t : p.inputs[o])
      if (const int q = graph.producer[t]; q >= 0) {
        set_bit(above[o], q);
        for (size_t w = 0; w < words; ++w) above[o][w] |= above[q][w];
      }
  std::vector<std::vector<int>> counted(sets.size());
  for (size_t i = 0; i < sets.size(); ++i) {
    Bits members(words, 0), gap(words, 0), down(words, 0), up(words, 0);
    for (int o : sets[i]) {
      set_bit(members, o);
      for (size_t w = 0; w < words; ++w) {
        down[w] |= below[o][w];
        up[w] |= above[o][w];
      }
    }
    bool any_gap = false;
    for (size_t w = 0; w < words; ++w) {
      gap[w] = down[w] & up[w] & ~members[w];
      any_gap = any_gap || gap[w];
    }
    for (int o : sets[i]) {
      bool reaches_gap = false;
      for (size_t w = 0; w < words && any_gap; ++w) reaches_gap = reaches_gap || (below[o][w] & gap[w]);
      if (!reaches_gap) counted[i].push_back(o);
    }
  }
  return counted;
}

struct SetFloors {
  const Problem& p;
  const Graph& graph;
  const ModelOptions& options;
  std::vector<std::vector<int>> sets;
  std::vector<std::vector<int>> counted;  // first_computations: the ops each set's column covers
  std::vector<double> value;
  std::vector<char> exact, never, in_lp;
  std::vector<SubgraphFloor> floors;
  CoverBound& out;
  std::function<bool()> expired;

  // Prices set `i` by the step model; false if it never fits.
  bool price(int i) {
    if (exact[i] || never[i]) return !never[i];
    const auto f = subgraph_floor(p, graph, options, sets[i], expired);
    ++out.priced_exactly;
    if (!f) {
      never[i] = 1;
      ++out.never_fit;
      return false;
    }
    exact[i] = 1;
    floors[i] = *f;
    value[i] = std::max(value[i], f->value);
    return true;
  }
  // What set i's column is charged at prices y: the prices of the ops it can compute first.
  double charged(int i, const std::vector<double>& y) const {
    double sum = 0;
    for (int o : counted[i]) sum += y[o];
    return sum;
  }
  double reduced_cost(int i, const std::vector<double>& y) const { return value[i] - charged(i, y); }
};

// One round of column generation after an LP solve: the sets of the cover that are still cheap are priced
// (true if any was), or else the sets whose floor is below their prices are priced and the violated ones
// added (false when there are none: the LP optimum is then the optimum over every set).
bool next_round(SetFloors& f, CoverLp& lp, const std::vector<double>& y,
                const std::function<double()>& left) {
  bool repriced = false;
  for (int c = 0; c < lp.columns(); ++c) {
    const int i = lp.set_of(c);
    if (lp.weight(c) <= 1e-12 || f.exact[i] || f.never[i]) continue;
    if (left() <= 0) return true;
    repriced = true;
    if (f.price(i))
      lp.set_floor(c, f.value[i]);
    else
      lp.drop(c);
  }
  if (repriced) return true;
  constexpr size_t kColumnsPerRound = 256;
  std::vector<std::pair<double, int>> violated;
  for (int i = 0; i < static_cast<int>(f.sets.size()); ++i)
    if (!f.in_lp[i] && !f.never[i] && !f.counted[i].empty()) {
      const double rc = f.reduced_cost(i, y);
      if (rc < -1e-9 * std::max(1.0, f.value[i])) violated.push_back({rc, i});
    }
  if (violated.empty()) return false;
  std::sort(violated.begin(), violated.end());
  size_t added = 0;
  for (const auto& [rc, i] : violated) {
    if (added >= kColumnsPerRound || left() <= 0) break;
    // Priced before it enters: most sets of a small fast memory never fit, and keeping them out keeps the
    // LP small.
    if (!f.price(i) || f.reduced_cost(i, y) >= 0) continue;
    f.in_lp[i] = 1;
    lp.add(i, f.counted[i], f.value[i]);
    ++added;
  }
  return true;
}

// Before a solve, every op needs a column that fits: the first set holding it (its singleton, as the sets are
// enumerated) that the step model does not reject. Returns an op no set can hold.
std::optional<int> cover_every_op(SetFloors& f, CoverLp& lp) {
  std::vector<char> covered(f.p.num_ops(), 0);
  for (int c = 0; c < lp.columns(); ++c)
    if (!f.never[lp.set_of(c)])
      for (int o : f.counted[lp.set_of(c)]) covered[o] = 1;
  for (int o = 0; o < f.p.num_ops(); ++o) {
    for (int i = 0; i < static_cast<int>(f.sets.size()) && !covered[o]; ++i) {
      const auto& set = f.counted[i];
      if (f.in_lp[i] || std::find(set.begin(), set.end(), o) == set.end() || !f.price(i)) continue;
      f.in_lp[i] = 1;
      lp.add(i, set, f.value[i]);
      for (int member : set) covered[member] = 1;
    }
    if (!covered[o]) return o;
  }
  return std::nullopt;
}

}  // namespace

CoverBound cover_bound(const Problem& p, const Graph& graph, const ModelOptions& options,
                       const CoverLimits& limits, const std::function<void(const std::string&)>& progress) {
  CoverBound out;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.seconds));
  std::function<double()> left = [&] {
    if (limits.cancel && limits.cancel->load()) return 0.0;
    return std::chrono::duration<double>(deadline - Clock::now()).count();
  };
  SetFloors f{p, graph, options, {}, {}, {}, {}, {}, {}, {}, out, [&] { return left() <= 0; }};
  // Tile sizes are tried one count at a time: with a native tile of thousands, that is too many to price.
  if (p.native_w > kCoverMaxNative || p.native_h > kCoverMaxNative) {
    out.status = "native granularity above " + std::to_string(kCoverMaxNative) + ": not attempted";
    return out;
  }
  if (!SetEnumerator(p, graph, limits.max_subgraphs).run(f.sets, [&] { return left() <= 0; })) {
    out.status = left() <= 0 ? "the time limit came before every connected set of ops was listed"
                             : "more than " + std::to_string(limits.max_subgraphs) +
                                   " connected sets of ops: not attempted";
    return out;
  }
  const int m = static_cast<int>(f.sets.size());
  out.subgraphs = m;
  f.counted = first_computations(p, graph, f.sets);
  for (int i = 0; i < m; ++i) out.reentrant += f.counted[i].size() < f.sets[i].size();
  f.value.resize(m);
  f.exact.assign(m, 0);
  f.never.assign(m, 0);
  f.in_lp.assign(m, 0);
  f.floors.resize(m);
  for (int i = 0; i < m; ++i) f.value[i] = cheap_floor(p, graph, options, f.sets[i]);
  CoverLp lp(p.num_ops());
  std::vector<double> y;
  while (left() > 0) {
    if (const auto uncovered = cover_every_op(f, lp)) {
      out.status = "op " + std::to_string(*uncovered) +
                   " fits in no subgraph at any granularity: no schedule exists (M20)";
      return out;
    }
    if (!lp.solve(left())) break;
    ++out.lp_rounds;
    y = lp.prices();
    if (!next_round(f, lp, y, left)) {
      out.complete = true;
      break;
    }
    if (progress && out.lp_rounds % 50 == 0)
      progress("cover bound: round " + std::to_string(out.lp_rounds) + ", " +
               std::to_string(out.priced_exactly) + " of " + std::to_string(m) + " sets priced, " +
               std::to_string(lp.columns()) + " in the LP");
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (y.empty()) {
    out.status = "the LP was not solved within the time limit";
    return out;
  }
  // Prices from a floating-point simplex may exceed a floor by a rounding error: scale them until none does.
  std::vector<double> charged(m, 0);
  double scale = 1;
  for (int i = 0; i < m; ++i) {
    if (f.never[i]) continue;
    charged[i] = f.charged(i, y);
    if (charged[i] > f.value[i]) scale = std::min(scale, f.value[i] / charged[i]);
  }
  for (double& price : y) price *= scale;
  out.op_prices = y;
  out.bound = std::accumulate(y.begin(), y.end(), 0.0);
  out.attempted = true;
  out.status = out.complete ? "complete" : "time limit";
  std::vector<std::pair<double, int>> tight;
  for (int i = 0; i < m; ++i) {
    const double sum = charged[i] * scale;
    if (!f.never[i] && sum >= f.value[i] * (1 - 1e-6) && sum > 0) tight.push_back({sum, i});
  }
  std::sort(tight.rbegin(), tight.rend());
  for (size_t k = 0; k < tight.size() && k < 12; ++k) {
    const int i = tight[k].second;
    out.binding.push_back({f.sets[i], f.counted[i], f.exact[i] != 0,
                           f.exact[i] ? f.floors[i] : SubgraphFloor{f.value[i], 0, 0, {}}});
  }
  return out;
}

}  // namespace mlsys
