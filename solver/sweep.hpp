// Design-space sweep: the same problem solved at every (fast-memory capacity, bandwidth) point of a grid by
// the search mlsys runs, each best schedule verified and kept. A schedule found at (C, B) is valid at any
// larger capacity and costs no more at a larger bandwidth, so every point is also priced with the schedules
// of the points it dominates, and keeps the best: the reported curve never rises with more of either.
// The grid can be split into disjoint shards (--shard I/N) and the shards merged, which re-prices across
// them.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "solver/search.hpp"

namespace mlsys {

// "A:B:N": N values from A to B, geometrically spaced (N >= 2, 0 < A < B; N = 1 gives A) and rounded to 6
// significant digits (to whole numbers if `whole`); or a list "v1,v2,...". Values must be > 0; duplicates
// count once. Throws InputError naming `option` otherwise.
std::vector<double> parse_sweep_values(const std::string& text, const std::string& option,
                                       bool whole = false);

struct SweepPoint {
  double capacity = 0, bandwidth = 0;
  int capacity_index = 0, bandwidth_index = 0;  // position in the grid
  bool feasible = false;
  double total = 0, lower_bound = 0;
  double certified_bound = 0;  // verifier/bound.hpp at this capacity and bandwidth
  double compute_bound_share = 0;  // share of the latency spent in compute-bound steps
  int64_t peak_working_set = 0;
  double solve_seconds = 0;
  std::string schedule_file;  // relative to the sweep directory; empty when infeasible
  std::string
      found_at;  // "here", or the point whose schedule was re-priced here ("capacity=..;bandwidth=..")
  std::optional<Schedule> schedule;
};

struct SweepOptions {
  std::vector<double> capacities, bandwidths;
  int shard = 0, shards = 1;  // this run solves the points whose index (capacity-major) % shards == shard
  SolveOptions solve;         // timeout per point, threads, seed, order budget
  std::function<void(const std::string&)> on_progress;
};

// The problem with the point's capacity and bandwidth.
Problem problem_at(const Problem& base, double capacity, double bandwidth);

// Verifies `schedule` at the point's capacity and bandwidth; if valid, fills the point's numbers and keeps
// the schedule with its latencies at this point. The base problem's capacity and bandwidth are ignored.
bool price_at_point(const Problem& base, const Graph& graph, const ModelOptions& model,
                    const Schedule& schedule, SweepPoint& point);

// Solves this shard's points (in grid order) and returns them, priced at their own point only.
std::vector<SweepPoint> run_sweep(const Problem& problem, const Graph& graph, const SweepOptions& options,
                                  const std::atomic<bool>& stop);

// Every point priced with the schedules of every point it dominates (capacity and bandwidth both <=): keeps
// the cheapest valid one, with its latencies at this point. Returns how many points improved.
int reprice_dominated(const Problem& problem, const Graph& graph, const ModelOptions& model,
                      std::vector<SweepPoint>& points);

// The parsing the sweep's options and its CSV (traces/sweep_csv) share: a positive finite number (InputError
// naming `what` otherwise), and a line split at `sep` (a trailing separator gives an empty last field).
double parse_positive(const std::string& text, const std::string& what);
std::vector<std::string> split(const std::string& line, char sep);

}  // namespace mlsys
