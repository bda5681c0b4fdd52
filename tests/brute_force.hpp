// The exact optimum of a tiny problem over every schedule the rule book accepts: any sequence of subgraphs
// (recomputation included), every retention, every granularity and every traversal permutation. The ground
// truth the certified bound is tested against (bound_test.cpp).
#pragma once

#include <cstdint>
#include <random>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys::testing {

struct BruteForceResult {
  bool feasible = false;
  double optimum = 0;
  Schedule schedule;        // one optimal schedule, to be checked by the verifier
  int64_t evaluations = 0;  // subgraph configurations walked
  bool exhaustive = true;   // false if a grid had more tiles than permutations were tried for
};

// Dijkstra over (ops covered, tensors in slow memory, tensors retained): a subgraph's cost depends only on
// its ops, what it receives retained and what it retains, so the cheapest path is the cheapest schedule.
// Every permutation of the tiles is tried for grids of at most `max_permuted_tiles` tiles.
BruteForceResult brute_force_optimum(const Problem& problem, const Graph& graph, const ModelOptions& options,
                                     int max_permuted_tiles = 6);

// A random tiny problem: 2 to `max_ops` MatMul and Pointwise ops over tensors of at most 3 x 3 outputs,
// native granularity 1 or 2 per side, reductions up to 4 deep, a small fast memory.
Problem random_tiny_problem(std::mt19937& rng, int max_ops = 4);

// A diamond: one op's output read by a second op and, with the second's output, by a third (and sometimes a
// fourth op after it). Sets holding the first and third op but not the second read back through an op
// outside them what they made: the cover bound's first-computation rule is about them.
Problem random_diamond(std::mt19937& rng);

// A chain of 3 to max(3, `max_ops`) MatMuls with square weights and Pointwise ops over equal intermediates,
// in a fast memory that can hold one of them whole beside a step's slices but not two: which subgraph may
// receive a tensor retained depends on what the one before it kept (the cover bound's Theorem 7).
Problem random_retention_chain(std::mt19937& rng, int max_ops = 4);
// x -> f1(x), f2(x)[, f3(x)] -> one op reading them all: sets of several outputs of one shape, any of which
// may be kept whole for the next subgraph beside the others' tiles, in a fast memory about two of them large.
Problem random_fan_out(std::mt19937& rng);

// MatMuls with square weights and reductions deeper than native, joined by Pointwise ops read by the next
// MatMul alone (sometimes a side Pointwise op reads an intermediate too), in a fast memory that mostly holds
// one intermediate whole beside a step's slices but not two: the links of Theorem 11 (docs/bounds.md).
Problem random_deep_chain(std::mt19937& rng);

// MatMuls deeper than native joined by Pointwise ops of compute comparable to the weights' traffic, sometimes
// beside a Pointwise op reading the graph input: the epilogues of Theorem 15 (docs/bounds.md).
Problem random_epilogue_chain(std::mt19937& rng);

// A random chain of MatMuls (and Pointwise ops between them) whose reductions are deeper than native and
// whose tensors exceed the fast memory: the structures the bound's reload and recompute terms are about.
Problem random_matmul_chain(std::mt19937& rng, int max_ops = 4);

// Two MatMuls joined through an optional Pointwise op, the first one's output the second one's LHS or RHS,
// reductions deeper than native: the head-and-tail pair of Theorems 2-4. Every operand is a graph input, or
// with `made_kept` the head's kept operand is made by a third MatMul (Theorem 5's chain).
Problem random_link_pair(std::mt19937& rng, bool made_kept = false);

// A MatMul reducing deeper than native over graph inputs (sometimes with an epilogue) beside compute-heavy
// Pointwise ops: of another shape and elsewhere, of its output's shape, or reading its output. Theorem 12
// prices the inputs' loads beyond what the ops that can share the MatMul's subgraph compute.
Problem random_deep_island(std::mt19937& rng);

// One or two MatMuls reducing deeper than native over one LHS (a graph input, or made by a Pointwise op),
// each with an output side that is not a multiple of n_k and reaching a second MatMul's LHS or RHS through
// an optional Pointwise op, beside a compute-heavy Pointwise op (elsewhere, or reading a tail's output): the
// heads of Theorem 13, which pay for their streamed price with their subgraph's loads.
Problem random_streamed_heads(std::mt19937& rng);

// One to three MatMuls (1 or 3 deep, against n_k = 2) whose 1-wide outputs (LHS) or 1-high outputs (RHS)
// meet in an optional Pointwise op read by one or two tails 1 deep, whose other side is 1 to 3: the heads of
// Theorem 14, streamed together only when the tail's output is no wider (higher) than 1, and otherwise each
// beside the tail alone. Sometimes with in-chain ops, a shared operand, or a compute-heavy Pointwise op.
Problem random_shared_tails(std::mt19937& rng);
// Theorem 16's: MatMuls summed by one Pointwise op ahead of a tail of another depth (DenseNet's 3x3 offsets).
Problem random_joined_heads(std::mt19937& rng);
// Theorem 18's: a Pointwise op made by one or two heads and read by two or three Pointwise ops, each feeding
// a tail of another depth than the heads' (a DenseNet chunk's per-layer ReLUs).
Problem random_shared_paths(std::mt19937& rng);
// Theorem 19's: a Pointwise op after a head, read by two or three MatMuls (a ReLU ahead of RegNet's offsets).
Problem random_remade_ops(std::mt19937& rng);
// Theorem 20's: a Pointwise op read by a MatMul and by a product that waits for it through two more MatMuls
// (squeeze-and-excite).
Problem random_waiting_readers(std::mt19937& rng);
// Theorem 20's with a second MatMul reader of P beside m (then m is not its only tail, and its first-run
// price must not apply).
Problem random_second_tail_readers(std::mt19937& rng);
// Theorem 20's ops above P: one or two Pointwise ops between a head and P, P read by a pooling MatMul deeper
// than n_w (EfficientNet's expand SiLU and depthwise convolution ahead of squeeze-and-excite).
Problem random_waiting_chains(std::mt19937& rng);
// Theorems 13 and 21's: a head 3 deep against n_w = 2, its Pointwise op read by two or three MatMuls whose
// outputs a sum sometimes merges (RegNet's 1x1 convolution ahead of a grouped convolution), beside a
// compute-heavy op apart.
Problem random_deep_head_readers(std::mt19937& rng);
// Theorem 17's: branches of deep MatMuls whose intermediates fit the fast memory about once, the second
// MatMul's other operand a weight the branches share (benchmark 13 in miniature).
Problem random_crowded_branches(std::mt19937& rng);

}  // namespace mlsys::testing
