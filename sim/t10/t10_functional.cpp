#include "sim/t10/t10_functional.hpp"

#include <random>
#include <stdexcept>

namespace mlsys::t10 {
namespace {

constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;

uint64_t mulmod(uint64_t x, uint64_t y) {
  const unsigned __int128 z = static_cast<unsigned __int128>(x) * y;
  uint64_t r = static_cast<uint64_t>(z & kPrime) + static_cast<uint64_t>(z >> 61);
  return r >= kPrime ? r - kPrime : r;
}
uint64_t addmod(uint64_t x, uint64_t y) {
  const uint64_t r = x + y;
  return r >= kPrime ? r - kPrime : r;
}
uint64_t residue(int64_t v) {
  return v >= 0 ? static_cast<uint64_t>(v) : kPrime - static_cast<uint64_t>(-v);
}

// SplitMix64: an element's value from its indices, so the operands need no memory.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

FunctionalOperands::FunctionalOperands(const Problem& p, uint64_t seed, bool projected)
    : p_(p), projected_(projected), seed_(seed) {
  std::mt19937_64 rng(seed);
  if (!projected_) {
    a_.resize(static_cast<size_t>(p.m * p.k));
    b_.resize(static_cast<size_t>(p.k * p.n));
    for (int64_t& v : a_) v = static_cast<int64_t>(rng() % 9) - 4;
    for (int64_t& v : b_) v = static_cast<int64_t>(rng() % 9) - 4;
    return;
  }
  r_.resize(static_cast<size_t>(p.n));
  for (uint64_t& v : r_) v = rng() % kPrime;
}

FunctionalOperands::FunctionalOperands(const Problem& p, std::vector<int64_t> a, std::vector<int64_t> b)
    : p_(p), projected_(false), seed_(0), a_(std::move(a)), b_(std::move(b)) {
  if (a_.size() != static_cast<size_t>(p.m * p.k) || b_.size() != static_cast<size_t>(p.k * p.n))
    throw std::invalid_argument("functional operands of " + std::to_string(a_.size()) + " and " +
                                std::to_string(b_.size()) + " elements for a " + std::to_string(p.m) + "x" +
                                std::to_string(p.k) + "x" + std::to_string(p.n) + " product");
}

int64_t FunctionalOperands::a(int64_t i, int64_t q) const {
  if (!projected_) return a_[static_cast<size_t>(i * p_.k + q)];
  return static_cast<int64_t>(mix(seed_ ^ mix(static_cast<uint64_t>(i * p_.k + q) * 2)) % 9) - 4;
}
int64_t FunctionalOperands::b(int64_t q, int64_t j) const {
  if (!projected_) return b_[static_cast<size_t>(q * p_.n + j)];
  return static_cast<int64_t>(mix(seed_ ^ mix(static_cast<uint64_t>(q * p_.n + j) * 2 + 1)) % 9) - 4;
}

void FunctionalOperands::multiply_into(const BlockProduct& bp, std::vector<int64_t>& sums) const {
  const int64_t M = p_.m, K = p_.k, N = p_.n;
  if (!projected_) {
    for (int64_t i = 0; i < bp.rows; ++i)
      for (int64_t j = 0; j < bp.cols; ++j) {
        const int64_t ar = bp.a_row + i, bc = bp.b_col + j, cr = bp.c_row + i, cc = bp.c_col + j;
        if (ar >= M || bc >= N || cr >= bp.piece_rows || cc >= bp.piece_cols) continue;  // outside: lost
        int64_t acc = 0;
        for (int64_t q = 0; q < bp.depth; ++q) {
          const int64_t ac = bp.a_col + q, br = bp.b_row + q;
          if (ac < K && br < K) acc += a(ar, ac) * b(br, bc);
        }
        sums[static_cast<size_t>(cr * bp.piece_cols + cc)] += acc;
      }
    return;
  }
  // Projected: t = B_block · r (over the C piece's columns the product lands in), then A_block · t.
  std::vector<uint64_t> t(static_cast<size_t>(bp.depth), 0);
  for (int64_t q = 0; q < bp.depth; ++q) {
    const int64_t ac = bp.a_col + q, br = bp.b_row + q;
    if (ac >= K || br >= K) continue;
    uint64_t acc = 0;
    for (int64_t j = 0; j < bp.cols; ++j) {
      const int64_t bc = bp.b_col + j, cc = bp.c_col + j;
      if (bc >= N || cc >= bp.piece_cols) continue;
      acc = addmod(acc, mulmod(residue(b(br, bc)), r_[static_cast<size_t>(bp.piece_col0 + cc)]));
    }
    t[static_cast<size_t>(q)] = acc;
  }
  for (int64_t i = 0; i < bp.rows; ++i) {
    const int64_t ar = bp.a_row + i, cr = bp.c_row + i;
    if (ar >= M || cr >= bp.piece_rows) continue;
    uint64_t acc = 0;
    for (int64_t q = 0; q < bp.depth; ++q)
      if (t[static_cast<size_t>(q)])
        acc = addmod(acc, mulmod(residue(a(ar, bp.a_col + q)), t[static_cast<size_t>(q)]));
    int64_t& s = sums[static_cast<size_t>(cr)];
    s = static_cast<int64_t>(addmod(static_cast<uint64_t>(s), acc));
  }
}

std::optional<std::pair<int64_t, std::string>> FunctionalOperands::compare(
    const std::vector<GatheredPiece>& pieces, std::vector<int64_t>* c_out) const {
  const int64_t M = p_.m, K = p_.k, N = p_.n;
  if (!projected_) {
    std::vector<int64_t> c(static_cast<size_t>(M * N), 0);
    for (const GatheredPiece& g : pieces)
      for (int64_t i = 0; i < g.rows; ++i)
        for (int64_t j = 0; j < g.cols; ++j)
          c[static_cast<size_t>((g.row0 + i) * N + g.col0 + j)] +=
              (*g.values)[static_cast<size_t>(i * g.cols + j)];
    if (c_out) *c_out = c;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t want = 0;
        for (int64_t q = 0; q < K; ++q) want += a(i, q) * b(q, j);
        const int64_t got = c[static_cast<size_t>(i * N + j)];
        if (got != want)
          return std::pair{i, "C[" + std::to_string(i) + "][" + std::to_string(j) +
                                  "] = " + std::to_string(got) + ", A·B gives " + std::to_string(want)};
      }
    return std::nullopt;
  }
  std::vector<uint64_t> y(static_cast<size_t>(M), 0), br(static_cast<size_t>(K), 0);
  for (const GatheredPiece& g : pieces)
    for (int64_t i = 0; i < g.rows; ++i)
      y[static_cast<size_t>(g.row0 + i)] = addmod(y[static_cast<size_t>(g.row0 + i)],
                                                  static_cast<uint64_t>((*g.values)[static_cast<size_t>(i)]));
  for (int64_t q = 0; q < K; ++q) {
    uint64_t acc = 0;
    for (int64_t j = 0; j < N; ++j) acc = addmod(acc, mulmod(residue(b(q, j)), r_[static_cast<size_t>(j)]));
    br[static_cast<size_t>(q)] = acc;
  }
  for (int64_t i = 0; i < M; ++i) {
    uint64_t want = 0;
    for (int64_t q = 0; q < K; ++q) want = addmod(want, mulmod(residue(a(i, q)), br[static_cast<size_t>(q)]));
    if (want != y[static_cast<size_t>(i)])
      return std::pair{i, "row " + std::to_string(i) + " of C·r = " +
                              std::to_string(y[static_cast<size_t>(i)]) + " (mod 2^61 - 1), A·(B·r) gives " +
                              std::to_string(want) + " (Freivalds' check: C differs from A·B in this row)"};
  }
  return std::nullopt;
}

}  // namespace mlsys::t10
