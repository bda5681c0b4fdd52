// A certified lower bound on the latency of every schedule the rule book accepts (any grouping,
// recomputation, retention, granularity and traversal), with the terms it sums and the rule that forces each
// one. The proofs are in docs/bounds.md; tests/bound_test.cpp checks the bound against the exact optimum of
// random tiny problems.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"
#include "verifier/certified_rounding.hpp"
#include "verifier/cover_bound.hpp"
#include "verifier/deep_weight_bound.hpp"
#include "verifier/exposed_epilogue_bound.hpp"
#include "verifier/head_discount_bound.hpp"
#include "verifier/inner_k_step_bound.hpp"
#include "verifier/tail_run_bound.hpp"

namespace mlsys {

// One forced cost. `compute` and `traffic` are time units that every schedule pays on top of the other terms;
// a term with a choice (load a tensor again, or recompute its producer) carries the mix of the two that is
// cheapest at the certificate's lambda, and its reason states both.
struct BoundTerm {
  std::string subject;  // "op 3", "tensor 5"
  std::string rule;     // rule ids of docs/model.md, e.g. "M21 M6"
  double compute = 0, traffic = 0;
  std::string reason;  // one sentence a person can check
};

struct CertifiedBound {
  // The largest of the bounds below, stepped down by `rounding_ulps` (docs/bounds.md#rounding): the value
  // every program reports as certified. The bounds it is the largest of are kept as summed.
  double bound = 0;
  int64_t rounding_ulps = 0;
  double lambda = 0;  // every step costs max(compute, memory) >= lambda compute + (1 - lambda) memory
  double compute = 0, traffic = 0;  // the sums of the terms at that lambda
  double rule_book = 0;             // section 8's bound, for comparison (the certified one is never lower)
  std::vector<BoundTerm> terms;
  // `bound` is the largest of eight bounds, each valid on its own: the lambda combination (kept in
  // `lambda_bound`, which the terms above add up to), Theorem 11's compute plus unhidden inner k-steps
  // (docs/bounds.md#theorem-11), Theorem 12's compute plus the loads of inputs only deep MatMuls read beyond
  // what can hide them (docs/bounds.md#theorem-12), Theorem 13's compute plus what each deep head pays for
  // its streamed price (docs/bounds.md#theorem-13), Theorem 14's compute plus the tail runs heads streamed
  // one at a time need (docs/bounds.md#theorem-14), Theorem 15's graph traffic plus the compute of Pointwise
  // ops between deep MatMuls that it cannot hide (docs/bounds.md#theorem-15), Theorem 21's tail runs plus
  // Theorem 13's charges less what both may count (docs/bounds.md#theorem-21), and the cover bound
  // (docs/bounds.md#theorem-6) when asked for.
  double lambda_bound = 0;
  InnerKStepBound inner_k_steps;
  DeepWeightBound deep_weights;
  HeadDiscountBound head_discounts;
  TailRunBound tail_runs;
  HeadDiscountBound head_loads_beside_runs;  // Theorem 21: Theorem 13's charges on the tail-run bound
  ExposedEpilogueBound exposed_epilogues;
  std::optional<CoverBound> cover;
};

// The largest of the bounds without the cover bound, and its name: "lambda", "inner k-steps" (Theorem 11),
// "deep weights" (Theorem 12), "head discounts" (Theorem 13), "tail runs" (Theorem 14), "exposed epilogues"
// (Theorem 15) or "head loads beside tail runs" (Theorem 21).
double largest_bound_without_cover(const CertifiedBound& bound);
std::string largest_bound_name(const CertifiedBound& bound);

// Attaches a cover bound and keeps the larger of the two bounds (each is valid on its own).
void add_cover_bound(CertifiedBound& bound, CoverBound cover);

// What verify and the HTML report give the cover bound: a proven gap in passing must not slow them down, and
// the same files must give the same report on a loaded machine. So the limit that decides is the number of
// sets (those benchmarks take at most a second); the clock only guards against a hostile graph.
inline constexpr double kReportCoverSeconds = 10;
inline constexpr int64_t kReportCoverSets = 100'000;

// The certified bound the programs report in passing (verify, report, mlsys_sim's verify): the lambda bound,
// raised by the cover bound when it completes within `cover_seconds` on graphs of up to kCoverBoundMaxOps
// ops and kReportCoverSets connected sets.
CertifiedBound certified_bound_with_cover(const Problem& problem, const Graph& graph,
                                          const ModelOptions& options, double cover_seconds);

// `expired`, if given, is asked between values of lambda: once it says yes, the best lambda so far is kept
// (the bound stays valid, only less tight). The whole computation takes milliseconds on the 24 benchmarks.
CertifiedBound certified_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                               const std::function<bool()>& expired = nullptr);

// "within 12.30 % of optimal": how far `cost` can be from the best schedule, in percent of the bound.
double proven_gap_percent(double cost, double bound);

}  // namespace mlsys
