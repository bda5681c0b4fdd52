// Theorem 14 (docs/bounds.md#theorem-14): a MatMul priced on its streamed axis (M24) is a link's head. Among
// three or more MatMuls a subgraph has nk = 1 and w = k = K for all of them (M13), so it cuts the tail's
// output into columns K wide and runs the head once per tile; where that costs at least the padded price,
// the head gets its streamed price only as the one head beside one tail. Then every head so priced needs a
// run of its tail of its own (and of the Pointwise ops every path to that tail passes), and the bound
// charges each head the cheaper of the two, but for one head per tail that the tail's first run serves.
// Theorem 16 (docs/bounds.md#theorem-16): heads that merge at one Pointwise op before any MatMul are streamed
// at most one per first run of that op, so all of them but one pay their discount in full.
// Theorem 18 (docs/bounds.md#theorem-18): a Pointwise op in-chain in a run brings the op it reads into that
// run; readers of one op that can never share a run each make that op again, or forgo their discount.
// Theorem 19 (docs/bounds.md#theorem-19): a Pointwise op read by MatMuls only is neither kept nor stored where
// it is in-chain, so each of its readers makes it again, or some run makes it at its padded price.
// Theorem 20 (docs/bounds.md#theorem-20): a Pointwise op read by a MatMul and by an op that waits for that
// MatMul (a squeeze-and-excite product) runs twice in-chain, or once at its padded price.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

struct TailRunBound {
  bool applies = false;      // some head is charged
  std::string status;        // why not, when it does not apply
  double compute_floor = 0;  // every op's compute floor (M23, M24), heads at their streamed price
  struct Head {
    int op = -1;
    double discount = 0;      // its least price anywhere but as the one head beside a tail, minus its floor
    double shared_price = 0;  // the least it pays as a head among three or more MatMuls (infinite: never)
    std::vector<int> tails;   // the MatMuls its output reaches through Pointwise ops only
    double rerun = 0;         // the cheapest extra run of one of those tails (Tail::rerun)
    double charge = 0;        // min(discount, rerun)
  };
  struct Tail {
    int op = -1;
    std::vector<int> heads;   // the charged heads whose output reaches it through Pointwise ops only
    std::vector<int> passed;  // the Pointwise ops on every such path: every run with one of them holds them
    double rerun = 0;         // its compute floor and theirs: what one more run with a head costs at least
  };
  // Theorem 16: heads whose only way to a MatMul is one Pointwise op that merges them (nine shifted MatMuls
  // summed): before that op first runs, all of them but one must already be made, where none is a head.
  struct Join {
    int op = -1;             // the Pointwise op where their paths first merge
    std::vector<int> heads;  // the discounted heads that reach it through single-consumer Pointwise paths
    double charge = 0;       // their discounts but the largest
  };
  std::vector<Join> joins;
  double join_charges = 0;  // the joins' charges; their heads take no part in Theorem 14's charges
  // Theorem 18: a Pointwise op whose readers are Pointwise ops that read nothing else made, each discounted
  // only in a run of its own (tails apart, and of a depth no head of the op has).
  struct SharedPath {
    int op = -1;               // the op every in-chain run of its readers holds
    std::vector<int> readers;  // the discounted readers that never share a run
    double rerun = 0;          // its compute floor: what each run beyond the first costs at least
    double charge = 0;         // sum of min(discount, rerun) over the readers, less the largest such term
  };
  std::vector<SharedPath> shared_paths;  // filled when the variant with them is the larger
  double shared_path_charges = 0;
  // Theorem 19: a Pointwise op read by MatMuls only is made again for each reader it serves in-chain.
  struct RemadeOp {
    int op = -1;
    std::vector<int> readers;  // the MatMuls reading it: each first run makes it again, or it runs padded
    double charge = 0;         // min(its discount, its floor per reader beyond the first)
  };
  std::vector<RemadeOp> remade_ops;  // with shared_paths
  double remade_charges = 0;
  // Theorem 20: a Pointwise op read by a MatMul and by an op that waits for that MatMul (a squeeze-and-excite
  // product) runs twice in-chain, or once padded.
  struct WaitingOp {
    int op = -1;
    int reader = -1;         // a MatMul reading it
    int waiting = -1;        // a reader that waits for that MatMul's first run
    std::vector<int> above;  // the Pointwise ops above it that alone make what it reads: in-chain with it
    int read_alone = 0;      // how many of `above`, from it up, are read by the op below alone
    int never_kept = 0;      // how many of those no subgraph where it runs in-chain can keep (M10, M13, M17)
    double charge = 0;       // the least of: its floor and theirs (twice in-chain); its discount and
                             // those read alone (never); its floor, discount and those never kept (both)
  };
  std::vector<WaitingOp> waiting_ops;  // with shared_paths
  double waiting_charges = 0;
  std::vector<Head> heads;  // those charged by Theorem 14 (heads in no join of two or more)
  std::vector<Tail> tails;
  double first_runs = 0;  // per group of heads joined by tails, what the heads that take each tail's first
                          // run save (at most the largest charge per tail, and one tail per head)
  double bound = 0;  // compute_floor + join_charges + either the heads' charges - first_runs, or
                     // shared_path_charges + remade_charges + waiting_charges
};

// No claim with --allow-supernative-k (the brute-force campaigns that test the bound do not lift k <= n_k).
// `op_floors`: compute_floor of every op. The work is bounded: once `expired` says yes, or past `max_visits`
// ops visited, the bound makes no claim and says so.
TailRunBound tail_run_bound(const Problem& problem, const Graph& graph, const ModelOptions& options,
                            const std::vector<double>& op_floors,
                            const std::function<bool()>& expired = nullptr, int64_t max_visits = 50'000'000);

}  // namespace mlsys
