// What Theorems 18-20 (docs/bounds.md#theorem-18 to #theorem-20) share about the runs of Pointwise ops: their
// in-chain discount, who reads what they make, and which ops an earlier theorem already charged.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "sim/step_model.hpp"
#include "verifier/link_walks.hpp"
#include "verifier/tail_run_bound.hpp"

namespace mlsys {

// Each reader's walk to its tails stops after this many visits: a reader whose walk is longer is not
// counted (a long Pointwise chain below many readers would otherwise make the walks quadratic).
constexpr int64_t kReaderWalk = 512;

// A Pointwise op's in-chain discount below its padded price (M23), with its padded price; 0 when there is none
// worth charging.
struct Discount {
  double padded = 0, value = 0;
};
inline Discount in_chain_discount(const Problem& p, const Graph& g, const std::vector<double>& floors, int op,
                           MatmulCompute model) {
  Discount d;
  d.padded = padded_compute_floor(p, g, op, model);
  d.value = d.padded - floors[op];
  if (d.value <= 1e-12 * d.padded) d.value = 0;
  return d;
}

// The ops whose runs Theorems 18 and 19 already charged: each op's runs are counted by one theorem only.
inline std::vector<bool> charged_ops(const Problem& p, const TailRunBound& out) {
  std::vector<bool> charged(p.num_ops(), false);
  for (const TailRunBound::SharedPath& path : out.shared_paths) {
    charged[path.op] = true;
    for (int r : path.readers) charged[r] = true;
  }
  for (const TailRunBound::RemadeOp& r : out.remade_ops) charged[r.op] = true;
  return charged;
}

// Theorem 20 (docs/bounds.md#theorem-20): charges each Pointwise op read by a MatMul and by an op that waits
// for that MatMul, into `out` (waiting_ops, waiting_charges). False when the work limit stopped it.
bool charge_waiting_readers(const Problem& p, const Graph& g, LinkWalker& walk, const std::vector<double>& floors,
                            MatmulCompute model, TailRunBound& out);

}  // namespace mlsys
