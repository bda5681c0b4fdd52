// The two reconciliations of t10_compile.hpp: the published greedy and the exact multiple-choice knapsack.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "solver/t10_compile.hpp"

namespace mlsys::t10 {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

CompiledProgram assemble(const std::vector<const OperatorOptions*>& ops, const std::vector<size_t>& choice,
                         const char* how) {
  CompiledProgram c;
  for (size_t i = 0; i < ops.size(); ++i) c.chosen.push_back(ops[i]->options[choice[i]]);
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

// The Lagrangian bound for extra bound h and cold capacity cap: for any lambda >= 0,
// sum_i min_o (t_o + lambda c_o) - lambda cap is below every choice within cap. Maximised by golden section
// (the function is concave in lambda).
double lagrangian_bound(const std::vector<std::vector<const OperatorOption*>>& allowed, double cap) {
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
  double lo = 0, hi = 1;
  while (dual(hi) > dual(hi / 2) && hi < 1e12) hi *= 2;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 80; ++i) {
    const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
    (dual(a) < dual(b) ? lo : hi) = dual(a) < dual(b) ? a : b;
  }
  return std::max(dual(0), dual((lo + hi) / 2));
}

struct Entry {
  int64_t cold;
  double time;
  int32_t parent;  // index in the previous stage
  int32_t option;  // index into the operator's options
};

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
    CompiledProgram c = assemble(ops, choice, "heuristic");
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

std::optional<CompiledProgram> reconcile_exact(const std::vector<const OperatorOptions*>& ops, int64_t sram,
                                               const std::optional<CompiledProgram>& incumbent,
                                               int64_t max_frontier, CompileStats& stats) {
  std::optional<CompiledProgram> best = incumbent;
  if (best) best->reconciliation = "exact";
  double best_time = best ? best->total_cycles : kInf;
  double lower = kInf;  // min over the extra bounds of what each proves
  bool proven = true;
  std::vector<int64_t> extras;
  for (const OperatorOptions* o : ops)
    for (const OperatorOption& x : o->options) extras.push_back(x.extra());
  std::sort(extras.begin(), extras.end());
  extras.erase(std::unique(extras.begin(), extras.end()), extras.end());
  const size_t n = ops.size();
  for (int64_t h : extras) {
    if (h > sram) break;
    const int64_t cap = sram - h;
    std::vector<std::vector<const OperatorOption*>> allowed(n);
    std::vector<int64_t> min_cold(n + 1, 0);
    std::vector<double> min_time(n + 1, 0);
    bool every = true;
    for (size_t i = 0; i < n && every; ++i) {
      int64_t c = std::numeric_limits<int64_t>::max();
      double t = kInf;
      for (const OperatorOption& x : ops[i]->options)
        if (x.extra() <= h) allowed[i].push_back(&x), c = std::min(c, x.cold), t = std::min(t, x.time());
      every = !allowed[i].empty();
      min_cold[i] = c, min_time[i] = t;
    }
    if (!every) continue;
    for (size_t i = n; i-- > 0;) min_cold[i] += min_cold[i + 1], min_time[i] += min_time[i + 1];
    if (min_cold[0] > cap) continue;
    if (min_time[0] >= best_time) {
      lower = std::min(lower, min_time[0]);
      continue;
    }
    ++stats.extra_bounds_tried;
    // The frontier of (cold, time) over the first i operators, each entry with its parent for the choice.
    std::vector<std::vector<Entry>> stages(n + 1);
    stages[0].push_back({0, 0, -1, -1});
    bool thinned = false;
    for (size_t i = 0; i < n; ++i) {
      std::vector<Entry> next;
      const auto& prev = stages[i];
      for (size_t p = 0; p < prev.size(); ++p)
        for (const OperatorOption* o : allowed[i]) {
          const int64_t c = prev[p].cold + o->cold;
          const double t = prev[p].time + o->time();
          if (c + min_cold[i + 1] > cap || t + min_time[i + 1] >= best_time) continue;
          next.push_back({c, t, static_cast<int32_t>(p), static_cast<int32_t>(o - ops[i]->options.data())});
        }
      std::sort(next.begin(), next.end(), [](const Entry& a, const Entry& b) {
        return std::tie(a.cold, a.time) < std::tie(b.cold, b.time);
      });
      std::vector<Entry> front;
      for (const Entry& e : next)
        if (front.empty() || e.time < front.back().time) front.push_back(e);
      if (static_cast<int64_t>(front.size()) > max_frontier) {
        // Over the work limit: keep an even spread (still feasible choices); the bound comes from the dual.
        std::vector<Entry> thin;
        const double step = static_cast<double>(front.size()) / static_cast<double>(max_frontier);
        for (int64_t j = 0; j < max_frontier; ++j) thin.push_back(front[static_cast<size_t>(j * step)]);
        front = std::move(thin);
        thinned = true;
      }
      stats.frontier_peak = std::max<int64_t>(stats.frontier_peak, static_cast<int64_t>(front.size()));
      stages[i + 1] = std::move(front);
      if (stages[i + 1].empty()) break;
    }
    const auto& last = stages[n];
    if (thinned) {
      proven = false;
      lower = std::min(lower, lagrangian_bound(allowed, static_cast<double>(cap)));
    }
    if (last.empty()) continue;  // nothing below the incumbent within this bound
    const auto fastest = std::min_element(last.begin(), last.end(),
                                          [](const Entry& a, const Entry& b) { return a.time < b.time; });
    std::vector<size_t> choice(n);
    int32_t at = static_cast<int32_t>(fastest - last.begin());
    for (size_t i = n; i-- > 0;) {
      choice[i] = static_cast<size_t>(stages[i + 1][at].option);
      at = stages[i + 1][at].parent;
    }
    CompiledProgram c = assemble(ops, choice, "exact");
    if (c.total_cycles < best_time) {
      best_time = c.total_cycles;
      best = std::move(c);
    }
  }
  stats.proven = proven;
  if (best) best->lower_bound = std::min(lower, best->total_cycles);
  return best;
}

}  // namespace mlsys::t10
