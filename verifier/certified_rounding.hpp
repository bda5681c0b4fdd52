// Certified bounds are sums of floating-point terms, and a schedule's cost is another such sum in another
// order: where the two are equal in exact arithmetic, the bound may come out a few ulps above the cost
// (docs/bounds.md#rounding). Every value reported as certified is therefore stepped down by a stated number
// of ulps, enough to cover the rounding of a sum of as many terms as the problem has ops and tensors, both
// for the bound's sum and for the cost's.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/problem.hpp"

namespace mlsys {

// Twice the terms a bound or a cost can sum (one per op and per tensor), plus a constant for the products
// and quotients each term is made of.
inline int64_t certified_rounding_ulps(const Problem& p) {
  return 2 * (static_cast<int64_t>(p.num_ops()) + static_cast<int64_t>(p.num_tensors())) + 16;
}

// `value` less `ulps` units in its last place (relative 2^-52 each), and one more step towards zero so that
// the result is strictly below any value the step was meant to cover. 0 and non-finite values stay as they
// are: a bound of 0 is exact, and an infinite one is no bound at all.
inline double round_down_certified(double value, int64_t ulps) {
  if (!(value > 0) || !std::isfinite(value)) return value;
  const double stepped = value - value * (static_cast<double>(ulps) * 0x1p-52);
  return std::nextafter(stepped, 0.0);
}

}  // namespace mlsys
