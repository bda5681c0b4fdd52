// Floors of connected sets of ops from the step model, in each retention context (docs/bounds.md#theorem-6
// and #theorem-7). tests/cover_bound_test.cpp checks them against the brute-force optimum.
#include "verifier/subgraph_floor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

namespace mlsys {

namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

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

// The traffic at the model's granularity that every order pays, in time: loads (loads_every_order_pays) of
// the inputs it loads, and stores of the outputs that cannot be retained (all at last k-steps, M22).
// `loaded_anyway` are the inputs that could have been retained-in and are not in this model: charged too.
struct UnavoidableTraffic {
  double loads = 0, stores = 0;
};
UnavoidableTraffic unavoidable_traffic(const Problem& p, const Graph& graph, const SubgraphModel& model,
                                       const std::vector<int>& loaded_anyway) {
  UnavoidableTraffic out;
  for (const auto& load : model.loads_every_order_pays())
    if (always_moves(p, graph, load.tensor) || contains(loaded_anyway, load.tensor))
      out.loads += static_cast<double>(load.elements) / p.slow_memory_bandwidth;
  for (int t : model.nonephemeral_outputs())
    if (always_moves(p, graph, t)) out.stores += static_cast<double>(p.size(t)) / p.slow_memory_bandwidth;
  return out;
}

// A priced granularity, with what its split reduction's last k-steps tell (Theorem 8): each tile's last
// k-step runs the epilogue's compute, which the memory of the tile's other steps cannot hide.
struct PricedGranularity {
  SubgraphFloor floor;                                       // max(compute, memory) alone
  bool split = false;                                        // nk >= 2: the terms below apply
  double last_only_compute = 0, every_step_compute_max = 0;  // at the last k-steps, all tiles
  double memory_max = 0, memory_certain = 0;                 // at the last k-steps: at most, at least
  size_t k_index = 0, row_class = 0, col_class = 0;          // where in GranularityClasses
  bool exact_sizes_unpriced = false;  // priced at the ops' compute floors: a walk too long, or M17
};

// The least cost of steps whose compute sums to C and memory to at least U, when the last k-steps compute P
// plus up to E, and move at least `certain` and at most `max` (time units): split the steps into the last
// k-steps and the others, each pays at least the larger of its sums (docs/bounds.md#theorem-8).
double floor_of(const PricedGranularity& g, double extra_memory) {
  const double C = g.floor.compute, U = g.floor.memory + extra_memory;
  if (!g.split) return std::max(C, U);
  const double P = g.last_only_compute;
  // With d = (memory of the last k-steps) - (every-step compute there), the cost is at least
  // max(C, U, U + P - d, C - P + d); d ranges over [certain - E, max].
  const double d = std::clamp((U + 2 * P - C) / 2, g.memory_certain - g.every_step_compute_max, g.memory_max);
  return std::max({C, U, U + P - d, C - P + d});
}

struct FloorSearch {
  const Problem& p;
  const Graph& graph;
  const ModelOptions& options;
  const std::function<bool()>& expired;
  std::vector<int64_t> depths;  // the MatMuls' K: sizes M13 and M14 may demand
  double compute_floor_sum = 0;
  bool interrupted = false;  // the clock stopped the search over granularities
  // The working set at hand may exceed every real context's (see subgraph_floors): a granularity out of
  // memory is then priced at the ops' compute floors instead of rejected.
  bool ignore_capacity = false;
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

// The size classes of both axes and, per k, the least legal size of each class: found once per compiled
// structure, and all that pricing a tile count needs.
struct GranularityClasses {
  std::vector<std::vector<int64_t>> rows, cols;
  struct AtK {
    int64_t k;
    std::vector<int64_t> legal_w, legal_h;  // 0: no legal size in that class
  };
  std::vector<AtK> ks;
  int64_t last_k = 0;  // any split k's last k-step is at most this long (k <= n_k, and k < K_s)
};

GranularityClasses granularity_classes(const FloorSearch& f, SubgraphModel& model) {
  GranularityClasses c;
  c.rows = size_classes(model.grid_height(), f.p.native_h, f.depths);
  c.cols = size_classes(model.grid_width(), f.p.native_w, f.depths);
  // k: 1 stands for every split reduction (compute and unavoidable traffic do not depend on k once nk >= 2,
  // and k = 1 holds the least); K_s for the unsplit one.
  std::vector<int64_t> ks{1};
  const int64_t K_s = model.sliced_depth();
  if (K_s > 1 && (K_s <= f.p.native_w || f.options.allow_supernative_k)) ks.push_back(K_s);
  c.last_k = f.options.allow_supernative_k ? K_s - 1 : std::min(f.p.native_w, K_s - 1);
  // The granularity rules factor: M6 and M13 constrain w and k, M14 w or h alone (apply_granularity), so
  // the least legal size of each count is found once per axis, against one legal size of the other.
  for (int64_t k : ks) {
    auto [legal_w, legal_h] = least_legal_sizes(model, c.rows, c.cols, k);
    if (!legal_w.empty()) c.ks.push_back({k, std::move(legal_w), std::move(legal_h)});
  }
  return c;
}

// Prices the least legal size of one k, row count and column count, with its compute and the unavoidable
// traffic plus the loads of `loaded_anyway`. Nullopt when the rules reject this pair of sizes (each is legal
// with some size of the other axis) or, `*out_of_memory` then true, it is out of memory, as is every larger
// size.
std::optional<PricedGranularity> price_class(FloorSearch& f, SubgraphModel& model,
                                             const GranularityClasses& c,
                                             const std::vector<int>& loaded_anyway, size_t ki, size_t ri,
                                             size_t ci, bool* out_of_memory = nullptr) {
  constexpr int64_t kWalkBudget = 4096;
  const Granularity g{c.ks[ki].legal_w[ci], c.ks[ki].legal_h[ri], c.ks[ki].k};
  if (out_of_memory) *out_of_memory = false;
  if (model.set_granularity(g)) return std::nullopt;  // each size legal with some other, not with this one
  const SubgraphResult r = model.evaluate_fast(SubgraphModel::Violations::Summarize, kWalkBudget);
  if (r.violation && r.violation->rule == "M20" && !f.ignore_capacity) {
    if (out_of_memory) *out_of_memory = true;
    return std::nullopt;
  }
  // Unpriced (a walk too long), or rejected by a rule that depends on the exact sizes (M17), which a larger
  // size of the same counts might pass: only every op's compute floor is certain.
  const double compute = r.walk_refused || r.violation ? f.compute_floor_sum : r.compute_time;
  const UnavoidableTraffic traffic = unavoidable_traffic(f.p, f.graph, model, loaded_anyway);
  const double memory = traffic.loads + traffic.stores;
  PricedGranularity priced{SubgraphFloor{std::max(compute, memory), compute, memory, g}};
  priced.k_index = ki;
  priced.row_class = ri;
  priced.col_class = ci;
  priced.exact_sizes_unpriced = r.walk_refused || r.violation.has_value();
  if (model.k_steps() >= 2) {
    const auto last = model.last_k_steps(c.last_k);
    priced.split = true;
    priced.last_only_compute = last.last_only_compute;
    priced.every_step_compute_max = last.every_step_compute_max;
    priced.memory_max = last.elements_max / f.p.slow_memory_bandwidth;
    priced.memory_certain = traffic.stores;
    priced.floor.value = floor_of(priced, 0);
  }
  return priced;
}

// The granularities worth pricing of one compiled structure (with its retained-in tensors): per k and row
// count, the fewest column tiles that fit. The least floor is among them whatever constant traffic a context
// adds; a context that keeps outputs may need more column tiles (kept_outputs_fit).
std::vector<PricedGranularity> granularity_floors(FloorSearch& f, SubgraphModel& model,
                                                  const GranularityClasses& c,
                                                  const std::vector<int>& loaded_anyway) {
  constexpr int64_t kWalkBudget = 4096;
  std::vector<PricedGranularity> priced;
  for (size_t ki = 0; ki < c.ks.size(); ++ki) {
    const auto& [k, legal_w, legal_h] = c.ks[ki];
    // Most sets of a small fast memory fit at no granularity: the smallest tiles tell at once.
    if (!f.ignore_capacity && legal_w.back() && legal_h.back() &&
        !model.set_granularity({legal_w.back(), legal_h.back(), k})) {
      const SubgraphResult smallest = model.evaluate_fast(SubgraphModel::Violations::Summarize, kWalkBudget);
      if (smallest.violation && smallest.violation->rule == "M20") continue;
    }
    // Rows from the most tiles (smallest h) to the fewest. For each, the fewest column tiles that fit: more
    // tiles only cost more. `first_open` is the first column count not yet out of memory at a smaller h,
    // which stays out of memory at every larger one (the working set grows with h).
    size_t first_open = 0;
    for (size_t ri = c.rows.size(); ri-- > 0 && first_open < c.cols.size();) {
      if (!legal_h[ri]) continue;
      for (size_t ci = first_open; ci < c.cols.size(); ++ci) {
        if (!legal_w[ci]) continue;
        if (f.expired && f.expired()) {
          f.interrupted = true;
          return priced;
        }
        bool out_of_memory = false;
        auto at = price_class(f, model, c, loaded_anyway, ki, ri, ci, &out_of_memory);
        if (!at) {
          if (out_of_memory && ci == first_open) ++first_open;
          continue;
        }
        priced.push_back(*at);
        break;
      }
    }
  }
  return priced;
}

// Whether some tile sizes of `rows` x `cols` tiles over an H x W grid could hold `kept` elements of whole
// outputs kept for the next subgraph (docs/bounds.md#theorem-9). Two steps of every run need room: the first
// step of any tile, where each of the `n_all` non-ephemeral outputs holds a tile of the full size h x w (the
// first tile of row and column 0 has it), and the steps of the tile the traversal ends with, where every kept
// output is whole (its finished tiles and the current one, M20 C) and each of the `n_other` others holds that
// tile, at least the grid's smallest: the last row's height times the last column's width. `room` is the
// capacity less what every step holds besides: the retained-in tensors and an element of each MatMul operand
// slice. Other slices and partial sums are left out: they only take more room.
bool kept_outputs_fit(int64_t H, int64_t W, int64_t native_h, int64_t native_w, int64_t rows, int64_t cols,
                      double room, double kept, int n_all, int n_other) {
  // Sizes s of one axis with ceil(extent / s) = count: [ceil(E / n), ceil(E / (n - 1)) - 1], within native.
  auto range = [](int64_t extent, int64_t native, int64_t count) {
    const int64_t lo = (extent + count - 1) / count;
    const int64_t hi =
        count == 1 ? std::max(native, lo) : std::min(native, (extent + count - 2) / (count - 1) - 1);
    return std::pair{lo, hi};
  };
  const auto [h_lo, h_hi] = range(H, native_h, rows);
  const auto [w_lo, w_hi] = range(W, native_w, cols);
  if (h_lo > h_hi || w_lo > w_hi) return true;  // not a count of this axis: nothing to prove
  for (int64_t h = h_lo; h <= h_hi; ++h) {
    const double full_h = static_cast<double>(std::min(h, H));
    const double last_h = static_cast<double>(rows == 1 ? H : H - (rows - 1) * h);
    // The widest w the first tile allows: the last column is then the widest it can be, which helps the end.
    int64_t w = w_hi;
    if (n_all > 0) {
      const double widest = std::floor(room / (n_all * full_h));
      if (widest < static_cast<double>(std::min(w_lo, W))) continue;
      if (widest < static_cast<double>(std::min(w_hi, W))) w = static_cast<int64_t>(widest);
    }
    const double last_w = static_cast<double>(cols == 1 ? W : W - (cols - 1) * w);
    if (kept + n_other * last_h * last_w <= room) return true;
  }
  return false;
}

// The capacity less what every step of the structure holds whatever its tiles: the retained-in tensors
// (M20 A), and, since a MatMul runs at every step (M18), a slice of each of its operands made outside and not
// received (M19, M20 B), at least one element each.
double room_beside_every_step(const Problem& p, const Graph& graph, const SubgraphModel& model,
                              int64_t resident) {
  std::vector<int> operands;
  for (int o : model.ops())
    if (p.is_matmul(o))
      for (int t : p.inputs[o]) {
        const int maker = graph.producer[t];
        if ((maker < 0 || !contains(model.ops(), maker)) && !contains(model.retained_in(), t) &&
            !contains(operands, t))
          operands.push_back(t);
      }
  return p.fast_memory_capacity - static_cast<double>(resident) - static_cast<double>(operands.size());
}

// The granularities a context that keeps `kept` elements of outputs (those of `kept_outputs` among the
// structure's non-ephemeral outputs, others made non-ephemeral by keeping them) may use, with `room` from
// room_beside_every_step: each priced one whose tile counts could hold them, else the next column counts of
// its k and row count that could and fit (priced through `cache`, one entry per class). Empty: nothing holds
// them.
std::vector<PricedGranularity> priced_for_keeping(
    FloorSearch& f, SubgraphModel& model, const GranularityClasses& c, const std::vector<int>& loaded_anyway,
    const std::vector<PricedGranularity>& priced, double room, double kept,
    const std::vector<int>& kept_outputs,
    std::map<std::tuple<size_t, size_t, size_t>, std::optional<PricedGranularity>>& cache) {
  int n_other = 0, n_all = static_cast<int>(kept_outputs.size());
  for (int t : model.nonephemeral_outputs())
    if (!contains(kept_outputs, t)) ++n_other, ++n_all;
  const int64_t H = model.grid_height(), W = model.grid_width();
  auto holds = [&](const Granularity& g) {
    return kept_outputs_fit(H, W, f.p.native_h, f.p.native_w, (H + g.h - 1) / g.h, (W + g.w - 1) / g.w, room,
                            kept, n_all, n_other);
  };
  std::vector<PricedGranularity> usable;
  for (const PricedGranularity& g : priced) {
    if (g.exact_sizes_unpriced || holds(g.floor.granularity)) {
      usable.push_back(g);
      continue;
    }
    const auto& legal_w = c.ks[g.k_index].legal_w;
    for (size_t ci = g.col_class + 1; ci < c.cols.size(); ++ci) {
      if (!legal_w[ci] || !holds({legal_w[ci], c.ks[g.k_index].legal_h[g.row_class], c.ks[g.k_index].k}))
        continue;
      const auto key = std::tuple{g.k_index, g.row_class, ci};
      auto it = cache.find(key);
      if (it == cache.end())
        it = cache.emplace(key, price_class(f, model, c, loaded_anyway, g.k_index, g.row_class, ci)).first;
      if (it->second) {
        usable.push_back(*it->second);
        break;
      }
    }
  }
  return usable;
}

// The least floor over the priced granularities once a context adds `extra` traffic (stores it pays).
std::optional<SubgraphFloor> least_with_extra(const std::vector<PricedGranularity>& priced, double extra) {
  std::optional<SubgraphFloor> best;
  for (const PricedGranularity& g : priced) {
    const double value = floor_of(g, extra);
    if (!best || value < best->value)
      best = SubgraphFloor{value, g.floor.compute, g.floor.memory + extra, g.floor.granularity};
  }
  return best;
}

bool subset(const std::vector<int>& a, const std::vector<int>& b) {
  return std::all_of(a.begin(), a.end(), [&](int x) { return contains(b, x); });
}

// `a` serves wherever `b` does: no higher floor, no more received, as much kept, no more surely loaded and
// as much possibly evicted (Theorem 10's rows count a column by what it may store and need not load).
bool dominates(const RetentionFloor& a, const RetentionFloor& b) {
  return a.floor.value <= b.floor.value && subset(a.retained_in, b.retained_in) &&
         subset(b.retained_out, a.retained_out) && subset(a.loaded, b.loaded) && subset(b.evicted, a.evicted);
}

void keep_undominated(std::vector<RetentionFloor>& contexts) {
  std::vector<RetentionFloor> kept;
  for (size_t i = 0; i < contexts.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < contexts.size() && !dominated; ++j)
      dominated = j != i && dominates(contexts[j], contexts[i]) &&
                  (!dominates(contexts[i], contexts[j]) || j < i);  // of equals, the first stays
    if (!dominated) kept.push_back(contexts[i]);
  }
  contexts = std::move(kept);
}

}  // namespace

bool always_moves(const Problem& p, const Graph& graph, int t) {
  return graph.is_graph_input[t] || graph.is_graph_output[t] ||
         static_cast<double>(p.size(t)) > p.fast_memory_capacity;
}

std::vector<int> retainable_outputs(const Problem& p, const Graph& graph, const std::vector<int>& ops) {
  std::vector<int> out;
  for (int o : ops)
    for (int t : p.outputs[o]) {
      const bool matmul_reads =
          std::any_of(graph.consumers[t].begin(), graph.consumers[t].end(),
                      [&](const Consumer& c) { return p.is_matmul(c.op) && contains(ops, c.op); });
      if (!always_moves(p, graph, t) && !matmul_reads && !contains(out, t)) out.push_back(t);
    }
  return out;
}

namespace {

// Outputs a run of the set may write to slow memory (M22): read outside it and not inside (M8).
std::vector<int> evictable_outputs(const Problem& p, const Graph& graph, const std::vector<int>& ops) {
  std::vector<int> out;
  for (int o : ops)
    for (int t : p.outputs[o]) {
      const auto& readers = graph.consumers[t];
      if (!readers.empty() && std::none_of(readers.begin(), readers.end(),
                                           [&](const Consumer& c) { return contains(ops, c.op); }))
        out.push_back(t);
    }
  return out;
}

}  // namespace

std::vector<RetentionFloor> subgraph_floors(const Problem& p, const Graph& graph, const ModelOptions& options,
                                            const std::vector<int>& ops, const std::function<bool()>& expired,
                                            size_t tried) {
  FloorSearch f{p, graph, options, expired, {}, 0};
  for (int o : ops) {
    if (p.is_matmul(o)) f.depths.push_back(graph.reduction_depth[o]);
    f.compute_floor_sum += compute_floor(p, graph, o, options.matmul_compute);
  }
  // Inputs made outside that may arrive retained: each is either loaded (its unavoidable loads count) or
  // whole in fast memory at every step (M20 A), which shrinks the granularities that fit. Up to `tried` of
  // them are tried both ways; beyond that they are all taken as free and not received, which is what a
  // retained tensor costs in traffic, with no more working set (unless read in several forms, below).
  std::vector<int> choices;
  for (int o : ops)
    for (int t : p.inputs[o])
      if (graph.producer[t] >= 0 && !contains(ops, graph.producer[t]) && !always_moves(p, graph, t) &&
          !contains(choices, t))
        choices.push_back(t);
  const bool try_choices = choices.size() <= tried;
  // A tensor read in several forms may have slices at one step that add up to more than its size, so
  // receiving it retained (whole, M20 A) can shrink the working set. Then a context that loads it may not
  // fit where one receiving it does: "nothing fits with nothing retained-in" proves nothing, and the free
  // inputs beyond `tried` must not be charged their slices' room.
  const bool several_forms = std::any_of(choices.begin(), choices.end(), [&](int t) {
    return std::count_if(graph.consumers[t].begin(), graph.consumers[t].end(),
                         [&](const Consumer& c) { return contains(ops, c.op); }) >= 2;
  });
  // Outputs read outside: each is kept for the next subgraph (whole in fast memory at the last step, M20 C)
  // or, if no op of the set reads it, stored (M22). Up to `tried` are tried both ways; the others, and
  // outputs only the set reads, count as kept, as far as the room left allows (below).
  const std::vector<int> retainable = retainable_outputs(p, graph, ops);
  std::vector<int> kept_free, decisions;
  for (int t : retainable) {
    const bool read_outside = std::any_of(graph.consumers[t].begin(), graph.consumers[t].end(),
                                          [&](const Consumer& c) { return !contains(ops, c.op); });
    (read_outside && decisions.size() < tried ? decisions : kept_free).push_back(t);
  }
  const std::vector<int> evictable = evictable_outputs(p, graph, ops);
  std::vector<RetentionFloor> contexts;
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
    if (std::holds_alternative<RuleViolation>(compiled)) return {};  // the structure, in any context
    SubgraphModel& model = std::get<SubgraphModel>(compiled);
    f.ignore_capacity = several_forms && !try_choices;
    // Two forms of one tensor count once where their slices coincide, which a larger size can bring about:
    // the working set is taken as each tensor's largest form, so that out of memory at one size is out of
    // memory at every larger one, as the shortcuts below and k = 1 standing for every split k assume.
    model.count_each_tensors_largest_form_only(true);
    const GranularityClasses classes = granularity_classes(f, model);
    const auto priced = granularity_floors(f, model, classes, loaded_anyway);
    if (f.interrupted) break;
    if (priced.empty()) {
      if (mask == 0 && !several_forms) return {};  // with more resident, nothing fits either
      continue;
    }
    std::map<std::tuple<size_t, size_t, size_t>, std::optional<PricedGranularity>> more_columns;
    const double room_for_keeping = room_beside_every_step(p, graph, model, resident);
    for (uint32_t keep = 0; keep < 1u << decisions.size(); ++keep) {
      RetentionFloor context{{}, retained_in, kept_free, loaded_anyway, {}};
      int64_t kept_size = 0;
      double stored = 0;
      std::vector<int> kept;
      for (size_t i = 0; i < decisions.size(); ++i) {
        const int t = decisions[i];
        if (keep >> i & 1) {
          context.retained_out.push_back(t);
          kept.push_back(t);
          kept_size += p.size(t);
        } else if (contains(model.nonephemeral_outputs(), t)) {
          stored += static_cast<double>(p.size(t));
        }
      }
      for (int t : evictable)
        if (!contains(kept, t)) context.evicted.push_back(t);
      // At the last step a kept output is whole beside every retained-in tensor (M20 A and C).
      const double room = p.fast_memory_capacity - static_cast<double>(resident + kept_size);
      if (room < 0) continue;
      // And beside the other outputs' tiles: the tile counts must leave room for them (Theorem 9).
      const auto usable = kept.empty() || f.ignore_capacity
                              ? priced
                              : priced_for_keeping(f, model, classes, loaded_anyway, priced, room_for_keeping,
                                                   static_cast<double>(kept_size), kept, more_columns);
      if (usable.empty()) continue;
      // The outputs not tried both ways are counted as kept, but only `room` of them fit: those stored
      // instead (not read inside, so not ephemeral) pay at least the excess.
      double untried = 0;
      for (int t : kept_free)
        if (contains(model.nonephemeral_outputs(), t)) untried += static_cast<double>(p.size(t));
      stored += std::max(0.0, untried - room);
      context.floor = *least_with_extra(usable, stored / p.slow_memory_bandwidth);
      contexts.push_back(std::move(context));
    }
  }
  // Stopped before every granularity was priced: only the ops' compute floors are certain.
  if (f.interrupted)
    return {RetentionFloor{{f.compute_floor_sum, f.compute_floor_sum, 0, {}}, {}, retainable, {}, evictable}};
  keep_undominated(contexts);
  return contexts;
}

std::optional<SubgraphFloor> subgraph_floor(const Problem& p, const Graph& graph, const ModelOptions& options,
                                            const std::vector<int>& ops,
                                            const std::function<bool()>& expired) {
  std::optional<SubgraphFloor> best;
  for (const RetentionFloor& c : subgraph_floors(p, graph, options, ops, expired))
    if (!best || c.floor.value < best->value) best = c.floor;
  return best;
}

}  // namespace mlsys
