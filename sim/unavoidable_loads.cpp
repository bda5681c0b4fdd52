// SubgraphModel::loads_every_order_pays: what the step model's M21 rule makes every traversal order load.
// The cover bound (verifier/cover_bound.cpp) asks for it instead of pricing orders one by one: the proof is
// in docs/bounds.md#theorem-6, and tests/cover_bound_test.cpp checks it against every order of small grids.
#include <algorithm>
#include <array>
#include <climits>

#include "sim/step_model.hpp"

namespace mlsys {

namespace {

enum Index { kRow = 0, kCol = 1, kStep = 2, kNone = 3 };

Index index_of(AxisKind kind) {
  switch (kind) {
    case AxisKind::TileRows:
      return kRow;
    case AxisKind::TileCols:
      return kCol;
    case AxisKind::Reduction:
      return kStep;
    case AxisKind::Full:
      break;
  }
  return kNone;
}

int64_t saturate(__int128 v) { return v > static_cast<__int128>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v); }

}  // namespace

std::vector<SubgraphModel::TensorLoads> SubgraphModel::loads_every_order_pays() const {
  // Lengths an axis takes at each value of the index it follows (one entry for a Full axis).
  auto lengths = [&](const Axis& a) {
    std::vector<int64_t> out;
    for (const auto& [first, last] : axis_ranges(a)) out.push_back(std::max<int64_t>(0, last - first));
    return out;
  };
  auto footprint = [&](const Form& f) {
    __int128 rows = 0, cols = 0;
    for (int64_t l : lengths(f.rows)) rows += l;  // the ranges of one axis are disjoint
    for (int64_t l : lengths(f.cols)) cols += l;
    return rows * cols;
  };
  // Sum over the steps where the form is active of its slice's area: the rows, columns and k-steps are
  // independent indices, and each axis follows at most one of them.
  auto every_activation = [&](const SliceForm& s) {
    std::vector<int64_t> active_ks;
    for (int64_t ks = 0; ks < nk_; ++ks) {
      const bool on = (s.runs_at & kEveryStep) || (ks == 0 && (s.runs_at & kFirstKStep)) ||
                      (ks == nk_ - 1 && (s.runs_at & kLastKStep));
      if (on) active_ks.push_back(ks);
    }
    const std::array<int64_t, 3> counts{nrows_, ncols_, static_cast<int64_t>(active_ks.size())};
    const Axis* axes[2] = {&s.form.rows, &s.form.cols};
    __int128 total = 1;
    for (int d = kRow; d <= kStep; ++d) {
      std::vector<__int128> per_value;  // product of the lengths of the axes following index d
      for (const Axis* a : axes) {
        if (index_of(a->kind) != d) continue;
        std::vector<int64_t> l = lengths(*a);
        if (d == kStep) {  // only the active k-steps
          std::vector<int64_t> active;
          for (int64_t ks : active_ks) active.push_back(l[ks]);
          l = std::move(active);
        }
        if (per_value.empty()) per_value.assign(l.size(), 1);
        for (size_t v = 0; v < l.size(); ++v) per_value[v] *= l[v];
      }
      __int128 sum = 0;
      if (per_value.empty())
        sum = counts[d];
      else
        for (__int128 x : per_value) sum += x;
      total *= sum;
    }
    for (const Axis* a : axes)
      if (index_of(a->kind) == kNone) total *= a->extent;
    return total;
  };

  std::vector<TensorLoads> out;
  for (const SliceForm& s : forms_) {
    __int128 elements = footprint(s.form);
    if (!s.may_alias && nk_ >= 2) {
      // With the reduction split, the previous step's slice of this form differs from this step's: its k-range
      // differs (a reduction axis), or the form is not active there at all (active at the first or at the
      // last k-step only). So every activation loads (M21).
      const bool reduction = s.form.rows.kind == AxisKind::Reduction || s.form.cols.kind == AxisKind::Reduction;
      const bool once_per_tile = s.runs_at == kFirstKStep || s.runs_at == kLastKStep;
      if (reduction || once_per_tile) elements = std::max(elements, every_activation(s));
    }
    auto same = std::find_if(out.begin(), out.end(), [&](const TensorLoads& t) { return t.tensor == s.tensor; });
    if (same == out.end())
      out.push_back({s.tensor, saturate(elements)});
    else  // a tensor read in several forms: each element at least once, whichever form reads it
      same->elements = std::max(same->elements, saturate(elements));
  }
  return out;
}

}  // namespace mlsys
