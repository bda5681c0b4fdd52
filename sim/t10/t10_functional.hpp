// T10's functional check: the all-cores engine multiplies real integer matrices with the pieces each core
// holds, and the gathered C must equal A·B. Two ways to check it:
// - exact (small products): A and B held in memory, every C element compared;
// - projected (larger ones, Freivalds' check): A and B are never stored, each element is a hash of its
//   indices; each core accumulates its partial sums projected on a random vector r (C·r, one number per
//   row), and the gathered C·r must equal A·(B·r), all modulo the prime p = 2^61 - 1. A wrong C passes only
//   when (C - AB)·r = 0 mod p: probability at most 1/p (about 4.3e-19), since C and AB differ by less than
//   p in every element (Schwartz-Zippel on one nonzero row).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

// Each operand of the exact check holds at most this many elements, and its work (the engine's products and
// the reference A·B, each M·K·N multiply-adds) stays below kMaxExactWork; `auto` picks the exact check only
// below kAutoExactWork (a fraction of a second).
constexpr int64_t kMaxExactElements = int64_t{1} << 24;
constexpr int64_t kMaxExactWork = int64_t{1} << 32;
constexpr int64_t kAutoExactWork = int64_t{1} << 28;
// The projected check's work, A·(B·r) plus every core's share, is refused above this many multiply-adds.
constexpr int64_t kMaxProjectedWork = int64_t{1} << 31;  // about 15 s

// One core's product at one step: its A rows and columns, its B rows and columns (k and n ranges) read
// through the pieces it holds, and where the result lands in the C piece it holds (rows, columns), with the
// C piece's own extent and origin.
struct BlockProduct {
  int64_t rows = 0, depth = 0, cols = 0;
  int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;
  int64_t c_row = 0, c_col = 0;  // within the C piece
  int64_t piece_rows = 0, piece_cols = 0;
  int64_t piece_col0 = 0;  // the C piece's first column in C
};

// A C piece's partial sums with its place in C, for the final comparison.
struct GatheredPiece {
  int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  const std::vector<int64_t>* values = nullptr;
};

class FunctionalOperands {
 public:
  FunctionalOperands(const Problem& problem, uint64_t seed, bool projected);
  // Exact check on given operands (row-major, m x k and k x n).
  FunctionalOperands(const Problem& problem, std::vector<int64_t> a, std::vector<int64_t> b);
  bool projected() const { return projected_; }
  // Elements of a C piece's partial sums: rows x cols, or rows when projected.
  size_t sums_size(int64_t rows, int64_t cols) const {
    return static_cast<size_t>(projected_ ? rows : rows * cols);
  }
  void multiply_into(const BlockProduct& b, std::vector<int64_t>& sums) const;
  // The first element (exact) or row (projected) where the gathered C disagrees with A·B, as a sentence with
  // the row and column; nullopt when C = A·B.
  // The exact check copies the gathered C to `c_out` when given.
  std::optional<std::pair<int64_t, std::string>> compare(const std::vector<GatheredPiece>& pieces,
                                                         std::vector<int64_t>* c_out = nullptr) const;

 private:
  int64_t a(int64_t i, int64_t q) const;
  int64_t b(int64_t q, int64_t j) const;
  const Problem& p_;
  bool projected_;
  uint64_t seed_;
  std::vector<int64_t> a_, b_;  // exact: row-major
  std::vector<uint64_t> r_;     // projected: the random vector over C's columns, in [0, p)
};

}  // namespace mlsys::t10
