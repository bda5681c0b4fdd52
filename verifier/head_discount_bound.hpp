// Theorem 13 (docs/bounds.md#theorem-13): a deep MatMul is priced on its streamed axis (M24) only as a link's
// head. A subgraph where it heads a link holds just it, its tail and some Pointwise ops (M13, M10, M14), and
// loads every graph input the head reads, and its other operand unless the subgraph before made it. So each
// head either pays its full padded price or a subgraph whose loads that small pool of ops must hide; the
// bound charges every head the cheaper of the two on top of the compute floor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "verifier/tail_run_bound.hpp"

namespace mlsys {

struct HeadDiscountBound {
  bool applies = false;      // some head is charged
  std::string status;        // why not, when it does not apply
  double compute_floor = 0;  // every op's compute floor (M23, M24), heads at their streamed price
  struct Head {
    int op = -1;
    double discount = 0;      // its padded floor minus its streamed one: what running as a head saves
    double loads = 0;         // the graph inputs it reads, over the bandwidth: its head subgraph loads them
    int made_operand = -1;    // its one operand that an op makes (-1: none, or both are made)
    double made_loads = 0;    // that operand over the bandwidth: loaded unless the subgraph before made it
    double remake = 0;        // the cheapest extra run that hands it over: of its maker, or of a head
                              // whose subgraph can make and keep it
    std::vector<int> tails;   // the MatMuls its output reaches through Pointwise ops only
    std::vector<int> pool;    // the ops a subgraph where it heads its heaviest tail can hold
    double pool_compute = 0;  // their compute floors (other deep heads padded): the most such a subgraph
                              // computes, with any tail; plus runs_beside
    double runs_beside = 0;   // Theorem 21: the tail-run charges its pool's runs may take (less from the
                              // discount too)
    double charge = 0;        // what the bound adds for this head
  };
  std::vector<Head> heads;   // those charged
  double free_operands = 0;  // per made operand, the readers that may get it without a load or extra run
  double base = 0;           // compute_floor (Theorem 13), or the tail-run bound (Theorem 21)
  double bound = 0;          // base + the charges - free_operands
};

// No claim with --allow-supernative-k (k may then exceed n_k, and a deep MatMul may sit among many).
// `op_floors`: compute_floor of every op. The work is bounded: once `expired` says yes, or past `max_visits`
// ops visited, the bound makes no claim and says so.
HeadDiscountBound head_discount_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                                      const std::vector<double>& op_floors,
                                      const std::function<bool()>& expired = nullptr,
                                      int64_t max_visits = 50'000'000);

// Theorem 21 (docs/bounds.md#theorem-21): the same charges on top of the tail-run bound (Theorems 16,
// 18-20), each head less the charges that runs of the ops its first head subgraph may hold could take. No
// claim when that bound charges Theorem 14's heads.
HeadDiscountBound head_loads_beside_tail_runs(const Problem& problem, const Graph& graph,
                                              const ModelOptions& options, const std::vector<double>& op_floors,
                                              const TailRunBound& tail_runs,
                                              const std::function<bool()>& expired = nullptr,
                                              int64_t max_visits = 50'000'000);

}  // namespace mlsys
