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
// sizes a rule may demand (M13's w = K, M14's w or h >= K: the reduction depths) are worth trying.
std::vector<std::vector<int64_t>> size_classes(int64_t extent, int64_t native, const std::vector<int64_t>& depths) {
  std::vector<std::vector<int64_t>> classes;
  std::vector<int64_t> counts;
  for (int64_t s = std::min(native, extent); s >= 1; --s) {
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

// The traffic every order and every retention pays at the model's granularity (docs/bounds.md#theorem-6): the
// unavoidable loads of inputs that cannot be retained-in (graph inputs, M9; tensors over the capacity, M20)
// and the stores of outputs that cannot be retained (graph outputs, M9; over the capacity, M20).
double unavoidable_memory_time(const Problem& p, const Graph& graph, const SubgraphModel& model) {
  auto must_move = [&](int t) {
    return graph.is_graph_input[t] || graph.is_graph_output[t] ||
           static_cast<double>(p.size(t)) > p.fast_memory_capacity;
  };
  double elements = 0;
  for (const auto& load : model.loads_every_order_pays())
    if (must_move(load.tensor)) elements += static_cast<double>(load.elements);
  for (int t : model.nonephemeral_outputs())
    if (must_move(t)) elements += static_cast<double>(p.size(t));
  return elements / p.slow_memory_bandwidth;
}

}  // namespace

std::optional<SubgraphFloor> subgraph_floor(const Problem& p, const Graph& graph, const ModelOptions& options,
                                            const std::vector<int>& ops) {
  // Nothing retained in or out: the fewest tensors in fast memory and the fewest region checks, so a
  // granularity rejected here is rejected in every context.
  auto compiled = SubgraphModel::compile_structure(p, graph, ops, {}, 0, {}, options);
  if (std::holds_alternative<RuleViolation>(compiled)) return std::nullopt;
  SubgraphModel& model = std::get<SubgraphModel>(compiled);
  std::vector<int64_t> depths;
  double compute_floor_sum = 0;
  for (int o : ops) {
    if (p.is_matmul(o)) depths.push_back(graph.reduction_depth[o]);
    compute_floor_sum += compute_floor(p, graph, o, options.matmul_compute);
  }
  const auto rows = size_classes(model.grid_height(), p.native_h, depths);
  const auto cols = size_classes(model.grid_width(), p.native_w, depths);
  // k: 1 stands for every split reduction (compute and unavoidable traffic do not depend on k once nk >= 2,
  // and k = 1 holds the least); K_s for the unsplit one.
  std::vector<int64_t> ks{1};
  const int64_t K_s = model.sliced_depth();
  if (K_s > 1 && (K_s <= p.native_w || options.allow_supernative_k)) ks.push_back(K_s);
  constexpr int64_t kWalkBudget = 4096;

  std::optional<SubgraphFloor> best;
  auto consider = [&](const Granularity& g, double compute) {
    const double memory = unavoidable_memory_time(p, graph, model);
    const double value = std::max(compute, memory);
    if (!best || value < best->value) best = SubgraphFloor{value, compute, memory, g};
  };
  for (int64_t k : ks) {
    // Rows from the most tiles (smallest h) to the fewest. For each, the fewest column tiles that fit: more
    // tiles only cost more. `first_open` is the first column count not yet out of memory at a smaller h,
    // which stays out of memory at every larger one (the working set grows with h).
    size_t first_open = 0;
    for (size_t ri = rows.size(); ri-- > 0 && first_open < cols.size();) {
      for (size_t ci = first_open; ci < cols.size(); ++ci) {
        std::optional<Granularity> legal;  // the least legal sizes of these counts
        for (int64_t h : rows[ri]) {
          for (int64_t w : cols[ci])
            if (!model.set_granularity({w, h, k})) {
              legal = Granularity{w, h, k};
              break;
            }
          if (legal) break;
        }
        if (!legal) continue;
        const SubgraphResult r = model.evaluate_fast(SubgraphModel::Violations::Summarize, kWalkBudget);
        const Granularity& g = *legal;
        if (r.walk_refused) {  // unpriced: its compute is at least every op's floor
          consider(g, compute_floor_sum);
          break;
        }
        if (r.violation) {
          if (r.violation->rule == "M20" && ci == first_open) ++first_open;
          continue;
        }
        consider(g, r.compute_time);
        break;
      }
    }
  }
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
    for (size_t i = 0; i < graph.topological_order.size(); ++i) rank_[graph.topological_order[i]] = static_cast<int>(i);
  }

  // False when there are more than `limit` sets.
  bool run(std::vector<std::vector<int>>& sets) {
    sets_ = &sets;
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
};

// A floor every set has without compiling it: each op's compute floor, and the traffic of graph inputs,
// graph outputs and tensors over the capacity that cross its boundary (each at least once).
double cheap_floor(const Problem& p, const Graph& graph, const ModelOptions& options, const std::vector<int>& ops) {
  double compute = 0, elements = 0;
  auto inside = [&](int o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  auto must_move = [&](int t) {
    return graph.is_graph_input[t] || graph.is_graph_output[t] ||
           static_cast<double>(p.size(t)) > p.fast_memory_capacity;
  };
  std::vector<int> seen;
  for (int o : ops) {
    compute += compute_floor(p, graph, o, options.matmul_compute);
    for (int t : p.inputs[o])
      if ((graph.producer[t] < 0 || !inside(graph.producer[t])) && must_move(t) &&
          std::find(seen.begin(), seen.end(), t) == seen.end()) {
        seen.push_back(t);
        elements += static_cast<double>(p.size(t));
      }
    for (int t : p.outputs[o]) {
      const bool read_inside =
          std::any_of(graph.consumers[t].begin(), graph.consumers[t].end(), [&](const Consumer& c) { return inside(c.op); });
      if (!read_inside && must_move(t)) elements += static_cast<double>(p.size(t));
    }
  }
  return std::max(compute, elements / p.slow_memory_bandwidth);
}

struct GlpkDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

}  // namespace

namespace {

// The LP over the sets: maximize the sum of op prices y >= 0 subject to, for every set S, the sum of its
// prices <= its floor. Rows start at the cheap floor and are replaced by the exact one (or dropped, when the
// set never fits) as the LP leans on them; every value used is a valid floor, so every round's prices are a
// valid certificate.
class CoverLp {
 public:
  CoverLp(int ops, const std::vector<std::vector<int>>& sets, const std::vector<double>& values)
      : lp_(glp_create_prob()), ops_(ops) {
    glp_set_obj_dir(lp_.get(), GLP_MAX);
    glp_add_cols(lp_.get(), ops);
    for (int j = 1; j <= ops; ++j) {
      glp_set_col_bnds(lp_.get(), j, GLP_LO, 0, 0);
      glp_set_obj_coef(lp_.get(), j, 1);
    }
    glp_add_rows(lp_.get(), static_cast<int>(sets.size()));
    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0};
    for (size_t i = 0; i < sets.size(); ++i) {
      glp_set_row_bnds(lp_.get(), static_cast<int>(i + 1), GLP_UP, 0, values[i]);
      for (int o : sets[i]) {
        ia.push_back(static_cast<int>(i + 1));
        ja.push_back(o + 1);
        ar.push_back(1);
      }
    }
    glp_load_matrix(lp_.get(), static_cast<int>(ia.size() - 1), ia.data(), ja.data(), ar.data());
  }
  // False when the simplex fails or runs out of `seconds`.
  bool solve(double seconds) {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = static_cast<int>(std::clamp(seconds * 1000, 1.0, 2.0e9));
    return glp_simplex(lp_.get(), &parm) == 0 && glp_get_status(lp_.get()) == GLP_OPT;
  }
  void set_floor(int row, double value) { glp_set_row_bnds(lp_.get(), row + 1, GLP_UP, 0, value); }
  void drop(int row) { glp_set_row_bnds(lp_.get(), row + 1, GLP_FR, 0, 0); }
  double activity(int row) const { return glp_get_row_prim(lp_.get(), row + 1); }
  double dual(int row) const { return glp_get_row_dual(lp_.get(), row + 1); }
  std::vector<double> prices() const {
    std::vector<double> y(ops_);
    for (int j = 0; j < ops_; ++j) y[j] = std::max(0.0, glp_get_col_prim(lp_.get(), j + 1));
    return y;
  }

 private:
  std::unique_ptr<glp_prob, GlpkDeleter> lp_;
  int ops_;
};

}  // namespace

CoverBound cover_bound(const Problem& p, const Graph& graph, const ModelOptions& options, const CoverLimits& limits,
                       const std::function<void(const std::string&)>& progress) {
  CoverBound out;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.seconds));
  auto left = [&] { return std::chrono::duration<double>(deadline - Clock::now()).count(); };
  std::vector<std::vector<int>> sets;
  if (!SetEnumerator(p, graph, limits.max_subgraphs).run(sets)) {
    out.status = "more than " + std::to_string(limits.max_subgraphs) + " connected sets of ops: not attempted";
    return out;
  }
  const int m = static_cast<int>(sets.size());
  out.subgraphs = m;
  std::vector<double> value(m);
  std::vector<char> exact(m, 0), never(m, 0);
  std::vector<SubgraphFloor> floors(m);
  for (int i = 0; i < m; ++i) value[i] = cheap_floor(p, graph, options, sets[i]);
  CoverLp lp(p.num_ops(), sets, value);
  std::vector<double> y;
  while (left() > 0 && lp.solve(left())) {
    ++out.lp_rounds;
    y = lp.prices();
    std::vector<std::pair<double, int>> leaned_on;  // (dual, row) of the cheap rows the optimum meets
    for (int i = 0; i < m; ++i)
      if (!exact[i] && !never[i] && lp.activity(i) >= value[i] * (1 - 1e-9) - 1e-12)
        leaned_on.push_back({lp.dual(i), i});
    if (leaned_on.empty()) {
      out.complete = true;
      break;
    }
    std::sort(leaned_on.rbegin(), leaned_on.rend());
    for (const auto& [dual, i] : leaned_on) {
      if (left() <= 0) break;
      const auto f = subgraph_floor(p, graph, options, sets[i]);
      ++out.priced_exactly;
      if (!f) {
        never[i] = 1;
        ++out.never_fit;
        lp.drop(i);
        continue;
      }
      exact[i] = 1;
      floors[i] = *f;
      value[i] = std::max(value[i], f->value);
      lp.set_floor(i, value[i]);
    }
    if (progress)
      progress("cover bound: round " + std::to_string(out.lp_rounds) + ", " + std::to_string(out.priced_exactly) +
               " of " + std::to_string(m) + " sets priced");
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (y.empty()) {
    out.status = "the LP was not solved within the time limit";
    return out;
  }
  // Prices from a floating-point simplex may exceed a floor by a rounding error: scale them until none does.
  double scale = 1;
  for (int i = 0; i < m; ++i) {
    if (never[i]) continue;
    double sum = 0;
    for (int o : sets[i]) sum += y[o];
    if (sum > value[i]) scale = std::min(scale, value[i] / sum);
  }
  for (double& price : y) price *= scale;
  out.op_prices = y;
  out.bound = std::accumulate(y.begin(), y.end(), 0.0);
  out.attempted = true;
  out.status = out.complete ? "complete" : "time limit";
  std::vector<std::pair<double, int>> tight;
  for (int i = 0; i < m; ++i) {
    if (never[i]) continue;
    double sum = 0;
    for (int o : sets[i]) sum += y[o];
    if (sum >= value[i] * (1 - 1e-6) && sum > 0) tight.push_back({sum, i});
  }
  std::sort(tight.rbegin(), tight.rend());
  for (size_t k = 0; k < tight.size() && k < 12; ++k) {
    const int i = tight[k].second;
    out.binding.push_back({sets[i], exact[i] != 0, exact[i] ? floors[i] : SubgraphFloor{value[i], 0, 0, {}}});
  }
  return out;
}

}  // namespace mlsys
