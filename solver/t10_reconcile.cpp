// The two reconciliations of t10_compile.hpp: the published greedy and the exact multiple-choice knapsack.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

#include "solver/t10_compile.hpp"

namespace mlsys::t10 {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

CompiledProgram assemble(const std::vector<const OperatorOption*>& choice, const char* how) {
  CompiledProgram c;
  for (const OperatorOption* o : choice) c.chosen.push_back(*o);
  c.reconciliation = how;
  summarize(c);
  return c;
}

// One operator's cold-hot table as the published planner keeps it: cold size -> hot size -> fastest option.
using ColdHotTable = std::map<int64_t, std::map<int64_t, size_t>>;
ColdHotTable cold_hot_table(const OperatorOptions& o) {
  ColdHotTable t;
  for (size_t i = 0; i < o.options.size(); ++i) {
    auto [it, fresh] = t[o.options[i].cold].try_emplace(o.options[i].hot, i);
    if (!fresh && o.options[i].time() < o.options[it->second].time()) it->second = i;
  }
  return t;
}

// get_best_hot_size_for_cold: the largest hot size within cold + max_extra, else the smallest hot size.
size_t best_hot_for_cold(const std::map<int64_t, size_t>& hots, int64_t cold, int64_t max_extra) {
  for (auto it = hots.rbegin(); it != hots.rend(); ++it)
    if (it->first <= cold + max_extra) return it->second;
  return hots.begin()->second;
}

// The options an extra bound allows, each operator's reduced to those no other beats on cold and time.
using Allowed = std::vector<std::vector<const OperatorOption*>>;
Allowed allowed_options(const std::vector<const OperatorOptions*>& ops, int64_t h) {
  Allowed allowed(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<const OperatorOption*> fit;
    for (const OperatorOption& x : ops[i]->options)
      if (x.extra() <= h) fit.push_back(&x);
    std::sort(fit.begin(), fit.end(), [](const OperatorOption* a, const OperatorOption* b) {
      return std::make_pair(a->cold, a->time()) < std::make_pair(b->cold, b->time());
    });
    for (const OperatorOption* x : fit)
      if (allowed[i].empty() || x->time() < allowed[i].back()->time()) allowed[i].push_back(x);
  }
  return allowed;
}

// The Lagrangian dual of choosing one option per operator with the cold bytes within `cap`: for any
// lambda >= 0, D(lambda) = sum_i min_o (t_o + lambda c_o) - lambda cap is below every such choice. The
// best lambda (D is concave) by golden section; returns {bound, lambda}.
std::pair<double, double> lagrangian_bound(const Allowed& allowed, double cap) {
  auto dual = [&](double lambda) {
    double sum = -lambda * cap;
    for (const auto& opts : allowed) {
      double best = kInf;
      for (const OperatorOption* o : opts)
        best = std::min(best, o->time() + lambda * static_cast<double>(o->cold));
      sum += best;
    }
    return sum;
  };
  double lo = 0, hi = 1e-6;
  while (dual(hi) > dual(hi / 2) && hi < 1e12) hi *= 2;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
    if (dual(a) < dual(b))
      lo = a;
    else
      hi = b;
  }
  const double lambda = (lo + hi) / 2;
  const double at0 = dual(0), at = dual(lambda);
  return at0 >= at ? std::pair{at0, 0.0} : std::pair{at, lambda};
}

// A fitting choice from the dual: each operator's argmin of t + lambda c for the least lambda (bisection)
// whose choice fits `cap`.
std::optional<std::vector<const OperatorOption*>> lagrangian_choice(const Allowed& allowed, int64_t cap,
                                                                    double lambda) {
  auto pick = [&](double l, std::vector<const OperatorOption*>& out) {
    int64_t cold = 0;
    out.clear();
    for (const auto& opts : allowed) {
      const OperatorOption* best = opts.front();
      for (const OperatorOption* o : opts)
        if (o->time() + l * static_cast<double>(o->cold) < best->time() + l * static_cast<double>(best->cold))
          best = o;
      out.push_back(best);
      cold += best->cold;
    }
    return cold <= cap;
  };
  std::vector<const OperatorOption*> choice;
  double lo = 0, hi = std::max(lambda, 1e-9);
  while (!pick(hi, choice) && hi < 1e15) hi *= 4;
  if (!pick(hi, choice)) return std::nullopt;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    std::vector<const OperatorOption*> tried;
    if (pick(mid, tried))
      hi = mid;
    else
      lo = mid;
  }
  pick(hi, choice);
  return choice;
}

}  // namespace

std::optional<CompiledProgram> reconcile_heuristic(const std::vector<const OperatorOptions*>& ops,
                                                   int64_t sram) {
  std::vector<ColdHotTable> tables;
  for (const OperatorOptions* o : ops) tables.push_back(cold_hot_table(*o));
  // Every operator at its largest cold size, with that size's largest hot size.
  std::vector<int64_t> cold;
  std::vector<size_t> choice;
  for (const ColdHotTable& t : tables) {
    cold.push_back(t.rbegin()->first);
    choice.push_back(t.rbegin()->second.rbegin()->second);
  }
  std::optional<CompiledProgram> best;
  auto consider = [&] {
    std::vector<const OperatorOption*> picked;
    for (size_t i = 0; i < ops.size(); ++i) picked.push_back(&ops[i]->options[choice[i]]);
    CompiledProgram c = assemble(picked, "heuristic");
    // The published code counts its own bound on the extra; a plan is kept only if it truly fits.
    if (c.peak_sram_bytes() <= sram && (!best || c.total_cycles < best->total_cycles)) best = std::move(c);
  };
  consider();
  auto time_of = [&](size_t i, int64_t cold_size) {  // the time of the size's largest hot entry
    return ops[i]->options[tables[i].at(cold_size).rbegin()->second].time();
  };
  while (true) {
    // get_best_op_to_advance: the operator whose next smaller cold size costs least time per byte freed.
    size_t pick = ops.size();
    double best_ratio = kInf;
    for (size_t i = 0; i < ops.size(); ++i) {
      auto it = tables[i].find(cold[i]);
      if (it == tables[i].begin()) continue;
      const int64_t next = std::prev(it)->first;
      const double increase = time_of(i, next) - time_of(i, cold[i]);
      if (increase <= 0) {
        pick = i;
        break;
      }
      const double ratio = increase / static_cast<double>(cold[i] - next);
      if (ratio < best_ratio) best_ratio = ratio, pick = i;
    }
    if (pick == ops.size()) break;
    cold[pick] = std::prev(tables[pick].find(cold[pick]))->first;
    int64_t cold_sum = 0;
    for (int64_t c : cold) cold_sum += c;
    const int64_t max_extra = std::max<int64_t>(0, sram - cold_sum);
    for (size_t i = 0; i < ops.size(); ++i)
      choice[i] = best_hot_for_cold(tables[i].at(cold[i]), cold[i], max_extra);
    consider();
  }
  return best;
}

namespace {

struct Entry {
  int64_t cold;
  double time;
  int32_t parent;  // index in the previous stage
  int32_t option;  // index into the operator's allowed options
};

// The frontier of (cold, time) over the operators in order, for one extra bound: an entry survives if its
// cold bytes can still fit and if the Lagrangian bound of its best completion beats the incumbent. Exact
// unless a stage outgrows max_frontier (then an even spread is kept: still fitting choices).
std::optional<std::vector<const OperatorOption*>> frontier_dp(const Allowed& allowed, int64_t cap,
                                                              double lambda, double incumbent,
                                                              int64_t max_frontier, bool& thinned,
                                                              CompileStats& stats) {
  const size_t n = allowed.size();
  std::vector<int64_t> min_cold(n + 1, 0);
  std::vector<double> relaxed(n + 1, 0);  // sum over the rest of min (t + lambda c)
  for (size_t i = n; i-- > 0;) {
    int64_t c = std::numeric_limits<int64_t>::max();
    double r = kInf;
    for (const OperatorOption* o : allowed[i]) {
      c = std::min(c, o->cold);
      r = std::min(r, o->time() + lambda * static_cast<double>(o->cold));
    }
    min_cold[i] = min_cold[i + 1] + c;
    relaxed[i] = relaxed[i + 1] + r;
  }
  std::vector<std::vector<Entry>> stages(n + 1);
  stages[0].push_back({0, 0, -1, -1});
  for (size_t i = 0; i < n; ++i) {
    std::vector<Entry> next;
    for (size_t p = 0; p < stages[i].size(); ++p)
      for (size_t j = 0; j < allowed[i].size(); ++j) {
        const OperatorOption* o = allowed[i][j];
        const int64_t c = stages[i][p].cold + o->cold;
        const double t = stages[i][p].time + o->time();
        if (c + min_cold[i + 1] > cap) continue;
        if (t + relaxed[i + 1] - lambda * static_cast<double>(cap - c) >= incumbent) continue;
        next.push_back({c, t, static_cast<int32_t>(p), static_cast<int32_t>(j)});
      }
    std::sort(next.begin(), next.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.cold, a.time) < std::tie(b.cold, b.time);
    });
    std::vector<Entry> front;
    for (const Entry& e : next)
      if (front.empty() || e.time < front.back().time) front.push_back(e);
    if (static_cast<int64_t>(front.size()) > max_frontier) {
      std::vector<Entry> thin;
      const double step = static_cast<double>(front.size()) / static_cast<double>(max_frontier);
      for (int64_t k = 0; k < max_frontier; ++k) thin.push_back(front[static_cast<size_t>(k * step)]);
      front = std::move(thin);
      thinned = true;
    }
    stats.frontier_peak = std::max<int64_t>(stats.frontier_peak, static_cast<int64_t>(front.size()));
    if (front.empty()) return std::nullopt;  // nothing beats the incumbent within this bound
    stages[i + 1] = std::move(front);
  }
  const auto& last = stages[n];
  int32_t at =
      static_cast<int32_t>(std::min_element(last.begin(), last.end(),
                                            [](const Entry& a, const Entry& b) { return a.time < b.time; }) -
                           last.begin());
  std::vector<const OperatorOption*> choice(n);
  for (size_t i = n; i-- > 0;) {
    choice[i] = allowed[i][static_cast<size_t>(stages[i + 1][at].option)];
    at = stages[i + 1][at].parent;
  }
  return choice;
}

}  // namespace

// A branch and bound over the bound H on the largest extra (one of the options' extras): an interval of
// H values is bounded by the Lagrangian dual with the options its largest H allows and the cold capacity its
// smallest leaves (a relaxation of every H inside), split while its bound beats the incumbent; a single H is
// solved by the frontier DP. Intervals are taken best bound first; at the deadline the smallest open bound is
// the proven lower bound.
std::optional<CompiledProgram> reconcile_exact(const std::vector<const OperatorOptions*>& ops, int64_t sram,
                                               const std::optional<CompiledProgram>& incumbent,
                                               int64_t max_frontier, CompileStats& stats, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<CompiledProgram> best = incumbent;
  if (best) best->reconciliation = "exact";
  auto best_time = [&] { return best ? best->total_cycles : kInf; };
  std::vector<int64_t> extras;
  for (const OperatorOptions* o : ops)
    for (const OperatorOption& x : o->options)
      if (x.extra() <= sram) extras.push_back(x.extra());
  std::sort(extras.begin(), extras.end());
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  struct Interval {
    size_t lo, hi;
    double bound, lambda;
    bool operator>(const Interval& o) const { return bound > o.bound; }
  };
  std::priority_queue<Interval, std::vector<Interval>, std::greater<>> open;
  auto consider = [&](size_t lo, size_t hi) {
    const Allowed allowed = allowed_options(ops, extras[hi]);
    int64_t min_cold = 0;
    for (const auto& a : allowed) {
      if (a.empty()) return;  // some operator needs a larger extra
      min_cold += a.front()->cold;
    }
    if (min_cold > sram - extras[lo]) return;
    const auto [bound, lambda] = lagrangian_bound(allowed, static_cast<double>(sram - extras[lo]));
    if (bound >= best_time()) return;
    if (auto choice = lagrangian_choice(allowed, sram - extras[hi], lambda)) {
      CompiledProgram c = assemble(*choice, "exact");
      if (c.total_cycles < best_time()) best = std::move(c);
    }
    open.push({lo, hi, bound, lambda});
  };
  const size_t first_split = std::min<size_t>(extras.size(), 32);
  for (size_t k = 0; k < first_split; ++k)
    consider(k * extras.size() / first_split, (k + 1) * extras.size() / first_split - 1);
  double lower = kInf;  // of what was given up (thinned, or open at the deadline)
  bool proven = true;
  while (!open.empty()) {
    const Interval top = open.top();
    if (top.bound >= best_time()) break;  // every open interval is at least as slow as the incumbent
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) {
      lower = std::min(lower, top.bound);
      proven = false;
      break;
    }
    open.pop();
    ++stats.extra_bounds_tried;
    if (top.lo < top.hi) {
      const size_t mid = (top.lo + top.hi) / 2;
      consider(top.lo, mid);
      consider(mid + 1, top.hi);
      continue;
    }
    bool thinned = false;
    const int64_t cap = sram - extras[top.lo];
    const auto choice = frontier_dp(allowed_options(ops, extras[top.lo]), cap, top.lambda, best_time(),
                                    max_frontier, thinned, stats);
    if (thinned) lower = std::min(lower, top.bound), proven = false;
    if (choice) {
      CompiledProgram c = assemble(*choice, "exact");
      if (c.total_cycles < best_time()) best = std::move(c);
    }
  }
  stats.proven = proven;
  if (best) best->lower_bound = std::min(lower, best->total_cycles);
  return best;
}

}  // namespace mlsys::t10
