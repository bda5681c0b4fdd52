// The exhaustive search as a branch and bound (solver/downset_search.cpp, docs/solver.md#exact-search): its
// pruning by rule-book floors and by the cover bound's certificate never changes what it returns, and what
// it proves when the clock cuts it short is below the optimum of its space (a deadline test: release pass
// only, scripts/test).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "sim/json_io.hpp"
#include "solver/search.hpp"
#include "support.hpp"
#include "tests/brute_force.hpp"

namespace mlsys {
namespace {

// mlsys --exhaustive on one thread, with or without the pruning by floors.
SolveStats exhaustive(const Problem& p, const Graph& g, bool prune, double seconds = 60) {
  SolveOptions options;
  options.exhaustive = true;
  options.threads = 1;
  options.timeout_seconds = seconds;
  options.prune_by_floors = prune;
  std::atomic<bool> stop{false};
  SolveStats stats;
  solve(p, g, options, stop, nullptr, &stats);
  return stats;
}

TEST(ExactSearch, PruningByFloorsNeverChangesTheResult) {
  // MLSYS_EXACT_TRIALS and MLSYS_EXACT_SEED run longer campaigns. The generators are the cover bound's
  // (tests/brute_force.hpp), retention chains among them: a pruned state or transition that could have led
  // below the incumbent would show as a dearer result than the unpruned search's, and the brute force over
  // every schedule the rule book accepts bounds both from below.
  const int trials = test::campaign_trials("MLSYS_EXACT_TRIALS", 150);
  std::mt19937 rng(test::campaign_seed("MLSYS_EXACT_SEED", 20261126u));
  int checked = 0, above_brute_force = 0, proved_by_search = 0;
  double seconds_pruned = 0, seconds_full = 0;
  while (checked < trials) {
    const int kind = checked % 4;
    const Problem p = kind == 0   ? testing::random_matmul_chain(rng, 5)
                      : kind == 1 ? testing::random_tiny_problem(rng, 5)
                      : kind == 2 ? testing::random_retention_chain(rng, 5)
                                  : testing::random_diamond(rng);
    const Graph g = analyze_graph(p, "tiny");
    const auto t0 = std::chrono::steady_clock::now();
    const SolveStats pruned = exhaustive(p, g, true);
    const auto t1 = std::chrono::steady_clock::now();
    const SolveStats full = exhaustive(p, g, false);
    const auto t2 = std::chrono::steady_clock::now();
    seconds_pruned += std::chrono::duration<double>(t1 - t0).count();
    seconds_full += std::chrono::duration<double>(t2 - t1).count();
    ASSERT_EQ(full.best_cost > 0, pruned.best_cost > 0) << problem_to_json(p).dump();
    if (full.best_cost == 0) continue;  // nothing fits
    // Each run ends by its proof: the exhaustive search complete, or a schedule at the certified bound.
    for (const SolveStats* s : {&pruned, &full})
      ASSERT_TRUE(s->exhaustive_complete || s->stopped_by == "certified bound") << s->stopped_by;
    ASSERT_NEAR(full.best_cost, pruned.best_cost, 1e-9 * full.best_cost)
        << "pruned " << pruned.best_cost << " against " << full.best_cost << " for "
        << problem_to_json(p).dump();
    if (pruned.exhaustive_complete) {
      ASSERT_NEAR(pruned.best_cost, pruned.exact_space_bound, 1e-9 * pruned.best_cost);
    }
    const testing::BruteForceResult exact = testing::brute_force_optimum(p, g, ModelOptions{});
    ASSERT_TRUE(exact.feasible);
    ASSERT_GE(pruned.best_cost, exact.optimum * (1 - 1e-9));
    above_brute_force += pruned.best_cost > exact.optimum * (1 + 1e-9);
    proved_by_search += pruned.exhaustive_complete && pruned.best_cost > pruned.certified_bound * (1 + 1e-9);
    ++checked;
  }
  // The pruning matters only where the certified bound leaves a gap: many problems must have one.
  test::expect_share(proved_by_search, checked, 10, "proved_by_search");
  std::cout << "[ exact    ] " << checked
            << " tiny problems: the pruned exhaustive search equalled the unpruned"
            << " one on each; " << proved_by_search
            << " were proved by the search, not by the certified bound; " << above_brute_force
            << " were above the rule book's optimum (its space leaves out recomputation and other orders); "
            << seconds_pruned << " s pruned, " << seconds_full << " s unpruned\n";
}

TEST(ExactSearch, WhatTheClockLeavesIsBelowTheOptimumOfTheSpace) {
  // Benchmark 8: the exhaustive search's space is worth 72,590 (docs/solver.md, the exhaustive table; every
  // grouping walked in 26-50 s of one thread). Cut after 5 s it cannot finish, and what it proves must be a
  // bound: at most 72,590, and at least the lambda bound (28,672, the rule book's I/O side), which holds in
  // its space too.
  const Problem p = load_problem(test::source_path("benchmarks/mlsys-2026-8.json"));
  const Graph g = analyze_graph(p, "benchmark 8");
  const SolveStats cut = exhaustive(p, g, true, 5);
  ASSERT_FALSE(cut.exhaustive_complete);
  ASSERT_GT(cut.exact_space_bound, 0) << "the exhaustive job did not start within the 5 s";
  EXPECT_GE(cut.exact_space_bound, 28672 * (1 - 1e-9));
  EXPECT_LE(cut.exact_space_bound, 72590.0 * (1 + 1e-9));
  EXPECT_GE(cut.best_cost, 72590.0 * (1 - 1e-9));
}

}  // namespace
}  // namespace mlsys
