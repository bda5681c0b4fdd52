// SubgraphModel::loads_every_order_pays: what the step model's M21 rule makes every traversal order load.
// The cover bound (verifier/cover_bound.cpp) asks for it instead of pricing orders one by one: the proof is
// in docs/bounds.md#theorem-6, and tests/cover_bound_test.cpp checks it against every order of small grids.
#include <algorithm>
#include <climits>
#include <limits>

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

int64_t saturate(__int128 v) {
  return v > static_cast<__int128>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
}

}  // namespace

std::vector<SubgraphModel::TensorLoads> SubgraphModel::loads_every_order_pays() const {
  // Sums in closed form, never by listing tiles or k-steps: a grid may have 2^45 tiles and a reduction 2^30
  // k-steps. An axis's ranges are disjoint and cover [0, extent) up to the grid or the last k-step.
  auto total_length = [&](const Axis& a) -> __int128 {
    switch (a.kind) {
      case AxisKind::TileRows:
        return grid_h_;
      case AxisKind::TileCols:
        return grid_w_;
      case AxisKind::Reduction:
        return std::min<__int128>(a.extent, static_cast<__int128>(nk_) * k_);
      case AxisKind::Full:
        break;
    }
    return a.extent;
  };
  auto footprint = [&](const Form& f) { return total_length(f.rows) * total_length(f.cols); };
  // Length of a reduction axis at k-step ks (clipped at its extent, empty past it).
  auto k_length = [&](const Axis& a, int64_t ks) {
    return std::max<__int128>(0, std::min<__int128>(static_cast<__int128>(ks) * k_ + k_, a.extent) -
                                     static_cast<__int128>(ks) * k_);
  };
  // Sum over the steps where the form is active of its slice's area, leaving out the first `skip` k-steps
  // of every tile (0, 1 or 2; only for a form active at every step): rows, columns and k-steps are
  // independent indices and each axis follows at most one. Two axes on one index would need per-value
  // products: then only the footprint is claimed (-1).
  auto every_activation = [&](const SliceForm& s, int64_t skip) -> __int128 {
    const bool every = s.runs_at & kEveryStep;
    const bool first = every || (s.runs_at & kFirstKStep), last = every || (s.runs_at & kLastKStep);
    const __int128 active_steps = every ? nk_ - skip : (first ? 1 : 0) + (last && nk_ > 1 ? 1 : 0);
    const Axis* axes[2] = {&s.form.rows, &s.form.cols};
    if (index_of(axes[0]->kind) == index_of(axes[1]->kind) && index_of(axes[0]->kind) != kNone) return -1;
    __int128 total = 1;
    bool rows_seen = false, cols_seen = false, steps_seen = false;
    for (const Axis* a : axes) {
      switch (index_of(a->kind)) {
        case kRow:
          total *= grid_h_;
          rows_seen = true;
          break;
        case kCol:
          total *= grid_w_;
          cols_seen = true;
          break;
        case kStep: {
          __int128 skipped = 0;
          for (int64_t ks = 0; ks < skip && ks < nk_; ++ks) skipped += k_length(*a, ks);
          total *= every ? total_length(*a) - skipped
                         : (first ? k_length(*a, 0) : 0) + (last && nk_ > 1 ? k_length(*a, nk_ - 1) : 0);
          steps_seen = true;
          break;
        }
        case kNone:
          total *= a->extent;
          break;
      }
    }
    if (!rows_seen) total *= nrows_;
    if (!cols_seen) total *= ncols_;
    if (!steps_seen) total *= active_steps;
    return total;
  };

  std::vector<TensorLoads> out;
  for (const SliceForm& s : forms_) {
    __int128 elements = footprint(s.form);
    if (!s.may_alias && nk_ >= 2) {
      // With the reduction split, the previous step's slice of this form differs from this step's: its
      // k-range differs (a reduction axis), or the form is not active there at all (active at the first or at
      // the last k-step only). So every activation loads (M21).
      const bool reduction =
          s.form.rows.kind == AxisKind::Reduction || s.form.cols.kind == AxisKind::Reduction;
      const bool once_per_tile = s.runs_at == kFirstKStep || s.runs_at == kLastKStep;
      if (reduction || once_per_tile) elements = std::max(elements, every_activation(s, 0));  // -1: footprint
    } else if (nk_ >= 2 && (s.runs_at & kEveryStep) &&
               (s.form.rows.kind == AxisKind::Reduction || s.form.cols.kind == AxisKind::Reduction)) {
      // A tensor read in several forms: within a tile, k-step ks's slice of this form differs from the one
      // at ks - 1, and another form could hold it at ks - 1 only if active there. A form active at the last
      // k-step only never is (ks - 1 < nk - 1); one active at the first only is at ks = 1 alone. So unless
      // another form is active at every step, k-steps 1 (or 2) to nk - 1 of every tile load this slice.
      bool other_every = false, other_first = false;
      for (const SliceForm& o : forms_)
        if (&o != &s && o.tensor == s.tensor) {
          other_every = other_every || (o.runs_at & kEveryStep);
          other_first = other_first || (o.runs_at & kFirstKStep);
        }
      if (!other_every) elements = std::max(elements, every_activation(s, other_first ? 2 : 1));
    }
    auto same =
        std::find_if(out.begin(), out.end(), [&](const TensorLoads& t) { return t.tensor == s.tensor; });
    if (same == out.end())
      out.push_back({s.tensor, saturate(elements)});
    else  // a tensor read in several forms: each element at least once, whichever form reads it
      same->elements = std::max(same->elements, saturate(elements));
  }
  return out;
}

double SubgraphModel::last_k_step_elements_max(int64_t last_k) const {
  // Every form active at the last k-step, loaded at every tile with a k-range of at most last_k, and every
  // evicted output's tile stored (M22). Tile sizes of one count differ, but the rows (or columns) of all
  // tiles add up to the grid's whatever the size: the same sums as loads_every_order_pays.
  double elements = 0;
  for (const SliceForm& s : forms_) {
    if (!(s.runs_at & (kEveryStep | kLastKStep))) continue;
    const Axis* axes[2] = {&s.form.rows, &s.form.cols};
    if (index_of(axes[0]->kind) == index_of(axes[1]->kind) && index_of(axes[0]->kind) != kNone)
      return std::numeric_limits<double>::infinity();  // a product per tile: no closed form claimed
    double area = 1;
    bool rows_seen = false, cols_seen = false;
    for (const Axis* a : axes) switch (index_of(a->kind)) {
        case kRow:
          area *= static_cast<double>(grid_h_);
          rows_seen = true;
          break;
        case kCol:
          area *= static_cast<double>(grid_w_);
          cols_seen = true;
          break;
        case kStep:
          area *= static_cast<double>(std::min(last_k, a->extent));
          break;
        case kNone:
          area *= static_cast<double>(a->extent);
          break;
      }
    if (!rows_seen) area *= static_cast<double>(nrows_);
    if (!cols_seen) area *= static_cast<double>(ncols_);
    elements += area;
  }
  return elements +
         static_cast<double>(grid_h_) * static_cast<double>(grid_w_) * static_cast<double>(evicted_.size());
}

}  // namespace mlsys
