#include "solver/t10_exchange_search.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "sim/t10/t10_cores.hpp"
#include "solver/t10_search.hpp"

namespace mlsys::t10 {
namespace {

std::vector<std::pair<int64_t, int64_t>> factor_pairs(int64_t replication) {
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (a, b) with a*b dividing R (E4 by construction, T39)
  for (int64_t delta = 1; delta <= replication; ++delta) {
    if (replication % delta) continue;
    for (int64_t a = 1; a <= delta; ++a)
      if (delta % a == 0) pairs.push_back({a, delta / a});
  }
  return pairs;
}

struct Candidate {
  double bound;
  Plan plan;
};

}  // namespace

ExchangeSearchResult search_exchange(const Problem& pr, Profile profile, size_t top_n,
                                     int64_t max_simulations) {
  check_searchable(pr);
  ExchangeSearchResult result;
  std::vector<Candidate> candidates;
  const double amp = pr.chip.amp_macs_per_cycle, sync = pr.chip.sync_cycles;
  for (int64_t pm = 1; pm <= pr.chip.cores; ++pm)
    for (int64_t pk = 1; pm * pk <= pr.chip.cores; ++pk)
      for (int64_t pn = 1; pm * pk * pn <= pr.chip.cores; ++pn) {
        if (profile == Profile::Strict && (pm > pr.m || pk > pr.k || pn > pr.n)) continue;
        Plan plan;
        plan.f_op = {pm, pk, pn};
        const Evaluation spatial = evaluate(pr, plan, Profile::EngDesign, false);
        if (std::any_of(
                spatial.engdesign_violations.begin(), spatial.engdesign_violations.end(), [](const auto& v) {
                  return v.code == "E_CORES_MAX" || v.code == "E_CORES_MIN" || v.code == "E_SPATIAL_PAD";
                }))
          continue;
        for (auto [cm, cn] : factor_pairs(pk))
          for (auto [am, ak] : factor_pairs(pn))
            for (auto [bk, bn] : factor_pairs(pm)) {
              plan.cm = cm, plan.cn = cn, plan.am = am, plan.ak = ak, plan.bk = bk, plan.bn = bn;
              const Evaluation e = evaluate(pr, plan, profile, false);
              if (!e.accepted) continue;
              ++result.accepted;
              // Core (0, 0, 0) holds a whole ms x ks x ns block and computes it over the steps; every compute
              // step and every shift (steps - 1 of them when aligned) is a superstep ending with a sync.
              const Derived& d = e.derived;
              const double compute = static_cast<double>(d.spatial[0]) * static_cast<double>(d.spatial[1]) *
                                     static_cast<double>(d.spatial[2]) / amp;
              const double supersteps = static_cast<double>(d.misaligned ? d.steps : 2 * d.steps - 1);
              // The first piece of every block is at least the rule book's partition size (T9), and some core
              // holds it at every moment: each shift event, that core sends it (the level's largest such
              // piece bounds the superstep); the reduction over the n holders of a C piece sends (n-1)/n of
              // it.
              const double e_bytes = static_cast<double>(pr.dtype_bytes),
                           bw = pr.chip.exchange_bytes_per_cycle;
              double exchange = 0;
              for (const ShiftLevel& l : d.levels) {
                int64_t largest = 0;
                for (char t : l.tensors) largest = std::max(largest, d.elems[tensor_index(t)]);
                exchange += static_cast<double>(l.events) * e_bytes * static_cast<double>(largest) / bw;
              }
              // The broadcast: core (0, 0, 0) is the home of its A and B pieces and sends them to every other
              // ring copy, one transfer after another.
              double broadcast = 0;
              for (int x : {A, B})
                broadcast += static_cast<double>(d.replication[x] / d.ring_products[x] - 1) * e_bytes *
                             static_cast<double>(d.elems[x]) / bw;
              if (broadcast > 0) exchange += broadcast + sync;
              const double holders = static_cast<double>(d.replication[C] / d.ring_products[C]);
              if (holders > 1)
                exchange += e_bytes * static_cast<double>(d.elems[C]) * (holders - 1) / holders / bw + sync;
              candidates.push_back({compute + exchange + supersteps * sync, plan});
            }
      }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bound < b.bound; });
  CoreSimOptions options;
  options.timing = CoreTiming::Exchange;
  std::vector<ExchangeRankedPlan> kept;
  const size_t keep = std::max<size_t>(top_n, 1);
  size_t next = 0;
  for (; next < candidates.size(); ++next) {
    const Candidate& c = candidates[next];
    if (kept.size() >= keep && c.bound >= kept.back().exchange_total) break;
    if (result.simulated >= max_simulations) break;
    CoresResult r;
    try {
      r = simulate_cores(pr, c.plan, options);
    } catch (const std::invalid_argument&) {
      continue;  // beyond what the engine simulates (a hostile chip file): not ranked
    }
    ++result.simulated;
    if (r.violation) continue;  // a misaligned plan: its operands never reach the cores that need them
    const ExchangeRankedPlan ranked{c.plan, r.exchange_total, r.total};
    kept.insert(
        std::upper_bound(kept.begin(), kept.end(), ranked,
                         [](const auto& a, const auto& b) { return a.exchange_total < b.exchange_total; }),
        ranked);
    if (kept.size() > keep) kept.pop_back();
  }
  result.proven = next == candidates.size() ||
                  (kept.size() >= keep && candidates[next].bound >= kept.back().exchange_total);
  kept.resize(std::min(kept.size(), top_n));
  result.top = kept;
  return result;
}

std::vector<ChipVariantPoint> sweep_chip(const Problem& problem, Profile profile,
                                         const std::vector<double>& exchange_bytes_per_cycle,
                                         const std::vector<int64_t>& sram_bytes_per_core,
                                         int64_t max_simulations,
                                         const std::function<void(const ChipVariantPoint&)>& on_point,
                                         CoreTiming timing) {
  std::vector<ChipVariantPoint> points;
  if (timing == CoreTiming::Calibrated) {
    for (int64_t sram : sram_bytes_per_core) {
      const auto start = std::chrono::steady_clock::now();
      Problem variant = problem;
      variant.chip.sram_bytes_per_core = sram;
      const CalibratedSearchResult r = search_calibrated(variant, 1);
      ChipVariantPoint point{timing, variant.chip.exchange_bytes_per_cycle, sram, std::nullopt, true, 0, 0};
      if (!r.top.empty()) {
        const Evaluation e = evaluate(variant, r.top[0].plan, profile, false);
        point.best = ExchangeRankedPlan{r.top[0].plan, 0, e.cost ? e.cost->total : 0, r.top[0].total};
      }
      point.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (on_point) on_point(point);
      points.push_back(point);
    }
    return points;
  }
  for (int64_t sram : sram_bytes_per_core)
    for (double bandwidth : exchange_bytes_per_cycle) {
      const auto start = std::chrono::steady_clock::now();
      Problem variant = problem;
      variant.chip.exchange_bytes_per_cycle = bandwidth;
      variant.chip.sram_bytes_per_core = sram;
      const ExchangeSearchResult r = search_exchange(variant, profile, 1, max_simulations);
      ChipVariantPoint point{timing, bandwidth, sram, std::nullopt, r.proven, r.simulated, 0};
      if (!r.top.empty()) point.best = r.top.front();
      point.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (on_point) on_point(point);
      points.push_back(point);
    }
  return points;
}

}  // namespace mlsys::t10
