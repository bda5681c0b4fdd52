// The fast path: a subgraph's latency and peak working set by tile classes (SubgraphModel::evaluate_fast),
// each class evaluated once through StepWalker::evaluate and counted, so that the cost of an answer does not
// grow with the number of steps. tests/fast_path_test.cpp pins it to the step-by-step walk.
#include <algorithm>
#include <array>

#include "sim/step_model.hpp"

namespace mlsys {

int64_t SubgraphModel::finished_before(int64_t position) const {
  // Raster order only: every earlier row is whole (h rows high), and the earlier tiles of this row are w
  // wide.
  const int64_t row = position / ncols_, col = position % ncols_;
  const auto [r0, r1] = row_range(row);
  return row * g_.h * grid_w_ + col * g_.w * (r1 - r0);
}

SubgraphResult SubgraphModel::violation_in_tile(int64_t position, int64_t finished,
                                                Violations violations) const {
  // The step that fails first within one tile: ks = 0, the first interior step (all interior steps are
  // alike), the last. Evaluated with the real finished area, so an OOM names every term; the previous step's
  // slices only decide loads, which a violation does not report.
  SubgraphResult result;
  StepWalker w(*this);
  w.summarize_oom_ = violations == Violations::Summarize;
  std::vector<StepWalker::NumSlice> prev, cur;
  std::vector<int64_t> ks_list{0};
  if (nk_ >= 3) ks_list.push_back(1);
  if (nk_ >= 2) ks_list.push_back(nk_ - 1);
  for (int64_t ks : ks_list) {
    if (!w.evaluate(w.coord(position, ks), prev, cur, finished, nullptr)) {
      result.violation = w.violation_;
      result.peak_working_set = w.last_ws_;
      return result;
    }
  }
  return result;  // no violation in this tile (callers only ask where one was found)
}

std::vector<std::pair<int64_t, int64_t>> SubgraphModel::axis_ranges(const Axis& a) const {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  switch (a.kind) {
    case AxisKind::TileRows:
      for (int64_t r = 0; r < nrows_; ++r) ranges.push_back(row_range(r));
      break;
    case AxisKind::TileCols:
      for (int64_t c = 0; c < ncols_; ++c) ranges.push_back(col_range(c));
      break;
    case AxisKind::Reduction:
      for (int64_t ks = 0; ks < nk_; ++ks) ranges.push_back(k_range(ks, a.extent));
      break;
    case AxisKind::Full:
      ranges.push_back({0, a.extent});
      break;
  }
  return ranges;
}

bool SubgraphModel::aliased_forms_can_coincide() const {
  // Two forms of one tensor give the same slice only where both axes give the same range. Checking each axis
  // on its own over all steps is conservative (the two coincidences may never fall on one step). An axis with
  // more ranges than listing is worth (a hostile grid) is assumed to coincide: the walk then decides.
  constexpr int64_t kMaxRanges = 1 << 20;
  auto count = [&](const Axis& a) {
    return a.kind == AxisKind::TileRows    ? nrows_
           : a.kind == AxisKind::TileCols  ? ncols_
           : a.kind == AxisKind::Reduction ? nk_
                                           : 1;
  };
  auto meet = [&](const Axis& a, const Axis& b) {
    if (a == b) return true;
    if (count(a) > kMaxRanges || count(b) > kMaxRanges) return true;
    std::vector<std::pair<int64_t, int64_t>> x = axis_ranges(a), y = axis_ranges(b);
    std::sort(x.begin(), x.end());
    return std::any_of(y.begin(), y.end(),
                       [&](const auto& r) { return std::binary_search(x.begin(), x.end(), r); });
  };
  for (size_t i = 0; i < forms_.size(); ++i)
    for (size_t j = i + 1; j < forms_.size(); ++j)
      if (forms_[i].tensor == forms_[j].tensor && meet(forms_[i].form.rows, forms_[j].form.rows) &&
          meet(forms_[i].form.cols, forms_[j].form.cols))
        return true;
  return false;
}

struct SubgraphModel::TileGroup {
  int64_t position, count;
  int64_t row0, col0,
      cols;  // raster representatives: the rectangle of tiles (count / cols rows) it stands for
  int64_t position_of(int64_t i, int64_t ncols) const { return (row0 + i / cols) * ncols + col0 + i % cols; }
};

void SubgraphModel::tile_groups(std::vector<TileGroup>& groups) const {
  // Which tiles to look at, and how many tiles each stands for. In raster order a tile's class depends only
  // on whether its row/column is the first, an interior one or a clipped last one: at most 9 representatives,
  // whatever the grid size. (A retained output grows with the tiles finished before, which in raster order
  // is a closed form, finished_before.) With a traversal order every tile is classified (a few integer
  // operations each; the order itself was read from the file) and only the class evaluation is shared.
  groups.clear();
  if (!order_.empty()) {
    groups.reserve(tiles());
    for (int64_t p = 0; p < tiles(); ++p) groups.push_back({p, 1, 0, 0, 0});
    return;
  }
  struct Representatives {  // (index, how many it stands for): the first, the interior, a clipped last
    std::array<std::pair<int64_t, int64_t>, 3> items;
    int count = 0;
  };
  auto representatives = [](int64_t n, bool clipped_last) {
    Representatives reps;
    reps.items[reps.count++] = {0, 1};
    const int64_t interior = n - 1 - (clipped_last && n > 1 ? 1 : 0);
    if (interior > 0) reps.items[reps.count++] = {1, interior};
    if (clipped_last && n > 1) reps.items[reps.count++] = {n - 1, 1};
    return reps;
  };
  const Representatives rows = representatives(nrows_, grid_h_ % g_.h != 0);
  const Representatives cols = representatives(ncols_, grid_w_ % g_.w != 0);
  for (int r = 0; r < rows.count; ++r)
    for (int c = 0; c < cols.count; ++c)
      groups.push_back({rows.items[r].first * ncols_ + cols.items[c].first,
                        rows.items[r].second * cols.items[c].second, rows.items[r].first, cols.items[c].first,
                        cols.items[c].second});
}

int64_t SubgraphModel::first_tile_over_capacity(const TileGroup& group, int64_t class_peak) const {
  // A raster group's tiles finish ever more area, so the first one over the capacity is found by bisection.
  const int64_t retained = static_cast<int64_t>(retained_.size());
  auto over = [&](int64_t i) {
    return static_cast<double>(class_peak + finished_before(group.position_of(i, ncols_)) * retained) >
           capacity_;
  };
  const int64_t last = group.count - 1;
  if (!over(last)) return -1;
  int64_t lo = 0, hi = last;  // the first i with over(i)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (over(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return group.position_of(lo, ncols_);
}

RuleViolation SubgraphModel::retained_growth_violation(int64_t failed_at) const {
  RuleViolation v;
  v.rule = "M20";
  v.subgraph = index_;
  v.capacity = capacity_;
  v.message = "out of memory: a retained output grows past the capacity at traversal position " +
              std::to_string(failed_at) + " (tile " + std::to_string(tile_of_position(failed_at)) + ")";
  return v;
}

SubgraphResult SubgraphModel::walk_within(int64_t walk_budget) const {
  if (num_steps() <= walk_budget) return simulate();
  SubgraphResult refused;
  refused.steps = num_steps();
  refused.walk_refused = true;
  return refused;
}

SubgraphResult SubgraphModel::evaluate_fast(Violations violations, int64_t walk_budget) const {
  // Without numeric M17 checks, and unless two forms of one tensor (aliasing) can give the same slice at this
  // granularity, a step's numbers depend only on the tile's clipped size, its k-step, and whether the
  // previous tile shares its row or column. Interior k-steps (0 < ks < nk-1) are all alike. So each tile
  // class is evaluated once, on its first real occurrence, and counted after that: the cost of an answer does
  // not grow with the number of steps. The randomized tests in tests/ pin this to simulate().
  if (!counts_tile_classes()) return walk_within(walk_budget);
  struct TileClass {
    bool known = false;
    double latency = 0, compute = 0, memory = 0, compute_bound = 0;
    int64_t max_ws = 0;
  };
  std::array<TileClass, 16> classes{};
  StepWalker w(*this);
  // Reused across calls (a search evaluates millions of candidates; allocating these each time showed up as
  // a sixth of its profile).
  thread_local std::vector<StepWalker::NumSlice> a, b;
  static const std::vector<StepWalker::NumSlice> no_previous;  // the step before a tile's predecessor: none
  thread_local std::vector<TileGroup> groups;
  tile_groups(groups);
  SubgraphResult result;
  const int64_t retained = static_cast<int64_t>(retained_.size());
  const bool raster = order_.empty();
  w.summarize_oom_ = violations == Violations::Summarize;
  // A search only needs to know that the subgraph does not fit: the class evaluation's own violation (its
  // working set already over the capacity) will do.
  auto summarized = [&] {
    result.violation = w.violation_;
    result.peak_working_set = std::max(result.peak_working_set, w.last_ws_);
    return result;
  };
  // The first position (traversal order) at which a step fails, with the area finished before it.
  int64_t failed_at = INT64_MAX, failed_finished = 0;
  auto fail = [&](int64_t position, int64_t finished) {
    if (position < failed_at) failed_at = position, failed_finished = finished;
  };
  int64_t finished = 0;  // traversal orders: area of the tiles before the current one
  for (const TileGroup& group : groups) {
    const int64_t p = group.position;
    if (p > failed_at) break;  // groups come in order of their first position
    const int64_t tile = tile_of_position(p);
    const int64_t row = tile / ncols_, col = tile % ncols_;
    const int64_t before = raster ? finished_before(p) : finished;
    int transition = 0;
    if (p > 0) {
      const int64_t prev = tile_of_position(p - 1);
      transition = prev / ncols_ == row ? 1 : prev % ncols_ == col ? 2 : 3;
    }
    const bool short_rows = (row + 1) * g_.h > grid_h_, short_cols = (col + 1) * g_.w > grid_w_;
    TileClass& cls = classes[(short_rows ? 1 : 0) | (short_cols ? 2 : 0) | (transition << 2)];
    if (!cls.known) {
      cls.known = true;
      a.clear();
      // A step that fails here fails at this position (finished tiles only add to its working set).
      if (p > 0 && !w.evaluate(w.coord(p - 1, nk_ - 1), no_previous, a, 0, nullptr)) {
        if (w.summarize_oom_) return summarized();
        fail(p - 1, raster ? finished_before(p - 1) : finished - tile_area_at(p - 1));
        break;
      }
      auto step = [&](int64_t ks, const std::vector<StepWalker::NumSlice>& prev,
                      std::vector<StepWalker::NumSlice>& cur, int64_t times) {
        if (!w.evaluate(w.coord(p, ks), prev, cur, 0, nullptr)) return false;
        cls.latency += w.last_latency_ * static_cast<double>(times);
        if (w.last_compute_ >= w.last_memory_)
          cls.compute_bound += w.last_latency_ * static_cast<double>(times);
        cls.compute += w.last_compute_ * static_cast<double>(times);
        cls.memory += w.last_memory_ * static_cast<double>(times);
        cls.max_ws = std::max(cls.max_ws, w.last_ws_);
        return true;
      };
      bool ok = step(0, a, b, 1);
      if (ok && nk_ >= 3)
        ok = step(1, b, a, nk_ - 2) && step(nk_ - 1, a, b, 1);
      else if (ok && nk_ == 2)
        ok = step(1, b, a, 1);
      if (!ok) {
        if (w.summarize_oom_) return summarized();
        fail(p, before);
        break;
      }
    }
    if (raster && retained > 0) {
      // The group's tiles in raster order finish ever more area: its peak is at its last tile.
      const int64_t last = group.position_of(group.count - 1, ncols_);
      result.peak_working_set =
          std::max(result.peak_working_set, cls.max_ws + finished_before(last) * retained);
      if (const int64_t over = first_tile_over_capacity(group, cls.max_ws); over >= 0) {
        fail(over, finished_before(over));
        continue;
      }
    } else {
      const int64_t peak = cls.max_ws + before * retained;
      result.peak_working_set = std::max(result.peak_working_set, peak);
      if (static_cast<double>(peak) > capacity_) {
        fail(p, before);
        break;  // positions come in order here
      }
    }
    result.latency += cls.latency * static_cast<double>(group.count);
    result.compute_bound_latency += cls.compute_bound * static_cast<double>(group.count);
    result.compute_time += cls.compute * static_cast<double>(group.count);
    result.memory_time += cls.memory * static_cast<double>(group.count);
    finished += tile_area_at(p);
  }
  if (failed_at != INT64_MAX) {
    if (violations == Violations::Summarize) {
      // A retained output grew past the capacity: the totals are enough for a search.
      result.violation = retained_growth_violation(failed_at);
      return result;
    }
    SubgraphResult failure = violation_in_tile(failed_at, failed_finished, violations);
    if (!failure.violation) return simulate();  // not expected: the class said this tile fails
    return failure;
  }
  result.steps = num_steps();
  return result;
}

}  // namespace mlsys
