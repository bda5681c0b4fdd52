#include "solver/t10_search.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "sim/t10/t10_calibrated.hpp"

namespace mlsys::t10 {
namespace {

std::vector<std::pair<int64_t, int64_t>> ordered_pairs(int64_t replication) {
  // (a, b) with a*b dividing R (E4 by construction).
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t delta = 1; delta <= replication; ++delta) {
    if (replication % delta) continue;
    for (int64_t a = 1; a <= delta; ++a)
      if (delta % a == 0) pairs.push_back({a, delta / a});
  }
  return pairs;
}

auto order_key(const RankedPlan& r) {
  const Plan& p = r.plan;
  return std::make_tuple(r.total, r.hot, p.f_op[0], p.f_op[1], p.f_op[2], p.am, p.ak, p.bk, p.bn, p.cm, p.cn);
}

}  // namespace

void check_searchable(const Problem& problem) {
  if (problem.chip.cores > kMaxSearchCores)
    throw std::invalid_argument("chip.cores = " + std::to_string(problem.chip.cores) +
                                ": the search enumerates every F_op, and refuses chips above " +
                                std::to_string(kMaxSearchCores) + " cores");
}

SearchResult search(const Problem& pr, Profile profile, size_t top_n, bool prune) {
  check_searchable(pr);
  SearchResult result;
  const int64_t cores = pr.chip.cores;
  struct Candidate {
    double bound;
    std::array<int64_t, 3> f_op;
  };
  std::vector<Candidate> candidates;
  for (int64_t pm = 1; pm <= cores; ++pm)
    for (int64_t pk = 1; pm * pk <= cores; ++pk)
      for (int64_t pn = 1; pm * pk * pn <= cores; ++pn) {
        if (profile == Profile::Strict && (pm > pr.m || pk > pr.k || pn > pr.n)) continue;
        const double ms = static_cast<double>((pr.m + pm - 1) / pm),
                     ks = static_cast<double>((pr.k + pk - 1) / pk),
                     ns = static_cast<double>((pr.n + pn - 1) / pn);
        candidates.push_back({2 * ms * ks * ns / pr.chip.flops_per_cycle, {pm, pk, pn}});
      }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.bound < b.bound; });
  double best = INFINITY;
  std::vector<RankedPlan> kept;
  const size_t keep = std::max<size_t>(top_n, 1);
  for (const Candidate& c : candidates) {
    if (prune && kept.size() >= keep && c.bound > kept.back().total) {
      ++result.pruned_fops;
      continue;
    }
    Plan plan;
    plan.f_op = c.f_op;
    // Spatial stage first (E1-E3 do not depend on temporal factors): one evaluation tells.
    const Evaluation spatial = evaluate(pr, plan, Profile::EngDesign, false);
    if (std::any_of(spatial.engdesign_violations.begin(), spatial.engdesign_violations.end(),
                    [](const auto& v) {
                      return v.code == "E_CORES_MAX" || v.code == "E_CORES_MIN" || v.code == "E_SPATIAL_PAD";
                    }))
      continue;
    const auto c_pairs = ordered_pairs(c.f_op[1]), a_pairs = ordered_pairs(c.f_op[2]),
               b_pairs = ordered_pairs(c.f_op[0]);
    for (auto [cm, cn] : c_pairs)
      for (auto [am, ak] : a_pairs)
        for (auto [bk, bn] : b_pairs) {
          plan.cm = cm, plan.cn = cn, plan.am = am, plan.ak = ak, plan.bk = bk, plan.bn = bn;
          const Evaluation e = evaluate(pr, plan, profile, false);
          ++result.evaluated;
          if (!e.accepted) continue;
          ++result.accepted;
          const RankedPlan r{plan, e.cost->total, e.derived.hot_bytes};
          if (r.total < best) {
            best = r.total;
            result.ties = 0;
          }
          if (r.total == best) ++result.ties;
          if (kept.size() < keep || order_key(r) < order_key(kept.back())) {
            kept.insert(
                std::upper_bound(kept.begin(), kept.end(), r,
                                 [](const auto& a, const auto& b) { return order_key(a) < order_key(b); }),
                r);
            if (kept.size() > keep) kept.pop_back();
          }
        }
  }
  kept.resize(std::min(kept.size(), top_n));
  result.top = kept;
  return result;
}

std::pair<int64_t, int64_t> for_each_calibrated_plan(
    const Problem& pr, const std::function<void(const Plan&, const CalibratedCost&)>& visit) {
  check_searchable(pr);
  int64_t fops = 0, evaluated = 0;
  const int64_t cores = pr.chip.cores;
  // Plans whose ring factors do not form a chain in some dimension are rejected by the model
  // (ring_factors_chain), so they are counted as priced without being built. The pairs of each replication
  // are the same for every F_op that has it.
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> pairs_of;
  auto pairs = [&](int64_t r) -> const std::vector<std::pair<int64_t, int64_t>>& {
    auto it = pairs_of.find(r);
    if (it == pairs_of.end()) it = pairs_of.emplace(r, ordered_pairs(r)).first;
    return it->second;
  };
  for (int64_t pb = 1; pb <= std::min(cores, pr.batch); ++pb)
    for (int64_t pm = 1; pm <= pr.m && pb * pm <= cores; ++pm)
      for (int64_t pk = 1; pk <= pr.k && pb * pm * pk <= cores; ++pk)
        for (int64_t pn = 1; pn <= pr.n && pb * pm * pk * pn <= cores; ++pn) {
          if (!calibrated_spatial_accepts(pr, {pm, pk, pn}, pb)) continue;
          ++fops;
          Plan plan;
          plan.f_op = {pm, pk, pn};
          plan.pb = pb;
          const auto &c_pairs = pairs(pk), &a_pairs = pairs(pn), &b_pairs = pairs(pm);
          for (auto [cm, cn] : c_pairs)
            for (auto [am, ak] : a_pairs) {
              if (!ring_factors_chain({cm, am, 1})) {  // dimension m
                evaluated += static_cast<int64_t>(b_pairs.size());
                continue;
              }
              for (auto [bk, bn] : b_pairs) {
                ++evaluated;
                if (!ring_factors_chain({cn, 1, bn}) || !ring_factors_chain({1, ak, bk})) continue;  // n and k
                plan.cm = cm, plan.cn = cn, plan.am = am, plan.ak = ak, plan.bk = bk, plan.bn = bn;
                const CalibratedCost c = calibrated_cost(pr, plan, false);
                if (c.accepted()) visit(plan, c);
              }
            }
        }
  return {fops, evaluated};
}

CalibratedSearchResult search_calibrated(const Problem& pr, size_t top_n) {
  CalibratedSearchResult result;
  const size_t keep = std::max<size_t>(top_n, 1);
  auto key = [](const CalibratedRankedPlan& r) {
    const Plan& p = r.plan;
    return std::make_tuple(r.total, r.hot, p.pb, p.f_op[0], p.f_op[1], p.f_op[2], p.am, p.ak, p.bk, p.bn,
                           p.cm, p.cn);
  };
  std::vector<CalibratedRankedPlan> kept;
  std::tie(result.fops, result.evaluated) =
      for_each_calibrated_plan(pr, [&](const Plan& plan, const CalibratedCost& c) {
        ++result.accepted;
        const CalibratedRankedPlan r{plan, c.total, c.hot_bytes, c.cold_bytes};
        if (kept.size() < keep || key(r) < key(kept.back())) {
          kept.insert(std::upper_bound(kept.begin(), kept.end(), r,
                                       [&](const auto& a, const auto& b) { return key(a) < key(b); }),
                      r);
          if (kept.size() > keep) kept.pop_back();
        }
      });
  kept.resize(std::min(kept.size(), top_n));
  result.top = kept;
  return result;
}

}  // namespace mlsys::t10
