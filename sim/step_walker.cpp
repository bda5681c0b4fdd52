// The step walker: one step's slices, loads, compute, stores, working set and latency (M16-M25), and the
// step-by-step walk of a subgraph (SubgraphModel::simulate) that the verifier's --steps, the SystemC replay
// and the fast path's tile classes all evaluate through StepWalker::evaluate.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "sim/step_model.hpp"
#include "sim/step_model_internal.hpp"

namespace mlsys {

StepWalker::StepWalker(const SubgraphModel& model) : model_(model) {}

StepRef StepWalker::next_step() const {
  return {position_, done() ? -1 : model_.tile_of_position(position_), ks_};
}

StepWalker::Coord StepWalker::coord(int64_t position, int64_t ks) const {
  const SubgraphModel& m = model_;
  const int64_t tile = m.tile_of_position(position);
  const int64_t row = tile / m.ncols_, col = tile % m.ncols_;
  const auto [r0, r1] = m.row_range(row);
  const auto [c0, c1] = m.col_range(col);
  return {position, tile, ks, Region{r0, r1, c0, c1}};
}

inline Region StepWalker::numeric(const Form& f, const Coord& c) const {
  auto axis = [&](const Axis& a, int64_t& lo, int64_t& hi) {
    switch (a.kind) {
      case AxisKind::TileRows:
        lo = c.tile_region.r0, hi = c.tile_region.r1;
        break;
      case AxisKind::TileCols:
        lo = c.tile_region.c0, hi = c.tile_region.c1;
        break;
      case AxisKind::Reduction:
        std::tie(lo, hi) = model_.k_range(c.ks, a.extent);
        break;
      case AxisKind::Full:
        lo = 0, hi = a.extent;
        break;
    }
  };
  Region r;
  axis(f.rows, r.r0, r.r1);
  axis(f.cols, r.c0, r.c1);
  return r;
}

inline bool StepWalker::regions_agree(const Coord& c) {
  // M17: demands that are not symbolically identical must agree at this step.
  const SubgraphModel& m = model_;
  for (const auto& check : m.checks_) {
    const Region a = numeric(check.a, c), b = numeric(check.b, c);
    if (!(a == b)) {
      RuleViolation v;
      v.rule = "M17";
      v.subgraph = m.index_;
      v.step = StepRef{c.position, c.tile, c.ks};
      v.op = check.op;
      v.tensor = check.tensor;
      v.message = "op " + std::to_string(check.op) + " output " + tensor_name(check.tensor) +
                  " is demanded as two different regions: " + to_string(a) + " and " + to_string(b);
      violation_ = v;
      return false;
    }
  }
  return true;
}

inline double StepWalker::compute_time(const Coord& c, uint8_t active, StepDetail* detail) const {
  const SubgraphModel& m = model_;
  double compute = 0;
  const int64_t n_k = m.native_w_;
  // Padded native-tile counts. Nearly every op runs on the tile itself, so its counts are divided once: a
  // 64-bit division per op per step was the largest single cost of a search.
  const int64_t tile_rows = c.tile_region.rows(), tile_cols = c.tile_region.cols();
  const int64_t tile_fr = ceil_div(tile_rows, m.native_h_), tile_fc = ceil_div(tile_cols, m.native_w_);
  auto padded_rows = [&](int64_t rows) { return rows == tile_rows ? tile_fr : ceil_div(rows, m.native_h_); };
  auto padded_cols = [&](int64_t cols) { return cols == tile_cols ? tile_fc : ceil_div(cols, m.native_w_); };
  for (const auto& op : m.compiled_) {
    if (!(op.runs_at & active)) continue;
    const Region r = numeric(op.run_form, c);
    // Spatial padding (M23, M24), except on the streamed axis of a head or an in-chain op: proportional.
    double f_r = static_cast<double>(padded_rows(r.rows()));
    double f_c = static_cast<double>(padded_cols(r.cols()));
    if (op.streamed == 1) f_c = static_cast<double>(r.cols()) / static_cast<double>(n_k);
    if (op.streamed == 2) f_r = static_cast<double>(r.rows()) / static_cast<double>(n_k);
    double cost;
    if (!op.matmul) {
      cost = op.base * f_r * f_c;
    } else {
      const int64_t K = op.reduction_depth;
      const int64_t q = op.producer ? K : std::min((c.ks + 1) * m.k_, K) - c.ks * m.k_;
      const double f_k =
          static_cast<double>(q) / static_cast<double>(m.compute_model_ == MatmulCompute::FullK ? K : n_k);
      cost = op.base * f_r * f_c * f_k;
    }
    compute += cost;
    if (detail) detail->computes.push_back({op.op, r, cost});
  }
  return compute;
}

namespace {

// Tiles of one size compute alike: every row but the last has the full height, and so for columns.
// (representative, how many) per class.
std::vector<std::pair<int64_t, int64_t>> tile_classes(int64_t count) {
  std::vector<std::pair<int64_t, int64_t>> c;
  if (count >= 2) c.push_back({0, count - 1});
  c.push_back({count - 1, 1});
  return c;
}

}  // namespace

SubgraphModel::LastKSteps SubgraphModel::last_k_steps(int64_t last_k) const {
  LastKSteps out;
  out.elements_max = last_k_step_elements_max(last_k);
  const int64_t ks = nk_ - 1;
  const auto [q0, q1] = k_range(ks, facts_.K_s);
  // Every-step ops compute in proportion to the k-range (M24's q, or a streamed axis): scaled up to last_k.
  const double scale = q1 > q0 ? static_cast<double>(last_k) / static_cast<double>(q1 - q0)
                               : std::numeric_limits<double>::infinity();
  const StepWalker walker(*this);
  for (const auto& [row, rows] : tile_classes(nrows_))
    for (const auto& [col, cols] : tile_classes(ncols_)) {
      const auto [r0, r1] = row_range(row);
      const auto [c0, c1] = col_range(col);
      const StepWalker::Coord c{row * ncols_ + col, row * ncols_ + col, ks, Region{r0, r1, c0, c1}};
      const double tiles = static_cast<double>(rows) * static_cast<double>(cols);
      out.last_only_compute += tiles * walker.compute_time(c, kLastKStep, nullptr);
      const double every = walker.compute_time(c, kEveryStep, nullptr);
      out.every_step_compute_max += every > 0 ? tiles * every * scale : 0;
    }
  return out;
}

SubgraphModel::InnerKSteps SubgraphModel::inner_k_steps(bool skip_first) const {
  InnerKSteps out;
  if (nk_ < 2) return out;
  const int64_t first = skip_first ? 1 : 0;
  const StepWalker walker(*this);
  // Every k-step but the last spans a whole k (M12), so its compute and slices are those of k-step 1, except
  // that k-step 0 also runs the prologues (M18).
  auto loaded_elements = [&](const StepWalker::Coord& c) {
    double elements = 0;
    for (const SliceForm& f : forms_) {
      const bool follows = f.form.rows.kind == AxisKind::Reduction || f.form.cols.kind == AxisKind::Reduction;
      if ((f.runs_at & kEveryStep) && follows && !f.may_alias)
        elements += static_cast<double>(walker.numeric(f.form, c).area());
    }
    return elements;
  };
  for (const auto& [row, rows] : tile_classes(nrows_))
    for (const auto& [col, cols] : tile_classes(ncols_)) {
      const auto [r0, r1] = row_range(row);
      const auto [c0, c1] = col_range(col);
      const Region tile{r0, r1, c0, c1};
      const int64_t j = row * ncols_ + col;
      const double tiles = static_cast<double>(rows) * static_cast<double>(cols);
      const StepWalker::Coord step0{j, j, 0, tile}, step1{j, j, 1, tile};
      const double compute0 = walker.compute_time(step0, kEveryStep | kFirstKStep, nullptr);
      const double compute1 = walker.compute_time(step1, kEveryStep, nullptr);
      const double elements0 = loaded_elements(step0), elements1 = loaded_elements(step1);
      const double middle = static_cast<double>(nk_ - 2);  // k-steps 1 .. nk - 2
      if (first == 0) {
        out.compute += tiles * compute0;
        out.elements += tiles * elements0;
      }
      out.compute += tiles * middle * compute1;
      out.elements += tiles * middle * elements1;
      const StepWalker::Coord last_step{j, j, nk_ - 1, tile};
      const double last = walker.compute_time(last_step, kEveryStep | kLastKStep, nullptr);
      out.all_steps_compute += tiles * (compute0 + middle * compute1 + last);
      const double stores = static_cast<double>(tile.area()) * static_cast<double>(evicted_.size());
      const double last_memory = (loaded_elements(last_step) + stores) / bandwidth_;
      out.last_excess += tiles * std::max(0.0, last_memory - last);
    }
  return out;
}

void StepWalker::add_terms(WorkingSet& ws, const std::vector<NumSlice>& cur, const Coord& c,
                           int64_t finished_area) const {
  const SubgraphModel& m = model_;
  const int64_t tile_area = c.tile_region.area();
  for (size_t i = 0; i < m.retained_in_.size(); ++i)
    ws.terms.push_back({'A', m.retained_in_[i], m.retained_in_regions_[i], m.retained_in_regions_[i].area()});
  for (const NumSlice& s : cur) ws.terms.push_back({'B', s.tensor, s.region, s.region.area()});
  for (int t : m.nonephemeral_) {
    const bool grows = std::find(m.retained_.begin(), m.retained_.end(), t) != m.retained_.end();
    ws.terms.push_back({'C', t, c.tile_region, tile_area + (grows ? finished_area : 0)});
  }
  if (m.nk_ > 1)  // a partial sum lives from ks = 0 to the last k-step
    for (int t : m.accumulators_) ws.terms.push_back({'D', t, c.tile_region, tile_area});
}

bool StepWalker::evaluate(const Coord& c, const std::vector<NumSlice>& prev, std::vector<NumSlice>& cur,
                          int64_t finished_area, StepDetail* detail) {
  const SubgraphModel& m = model_;
  const StepRef ref{c.position, c.tile, c.ks};
  if (!regions_agree(c)) return false;
  const uint8_t active = kEveryStep | (c.ks == 0 ? kFirstKStep : 0) | (c.ks == m.nk_ - 1 ? kLastKStep : 0);
  // M19 slice set and M21 loads.
  cur.clear();
  int64_t load = 0, slice_area = 0;
  std::vector<std::pair<int, int64_t>> largest_form;  // count_each_tensors_largest_form_only: per tensor
  for (int f = 0; f < static_cast<int>(m.forms_.size()); ++f) {
    const auto& form = m.forms_[f];
    if (!(form.runs_at & active)) continue;
    const Region r = numeric(form.form, c);
    bool reused = false;
    if (form.may_alias) {
      bool duplicate = false;
      for (const NumSlice& s : cur) duplicate = duplicate || (s.tensor == form.tensor && s.region == r);
      if (duplicate) continue;
      for (const NumSlice& s : prev) reused = reused || (s.tensor == form.tensor && s.region == r);
    } else {
      for (const NumSlice& s : prev)
        if (s.form == f) {
          reused = s.region == r;
          break;
        }
    }
    cur.push_back({form.tensor, r, f});
    if (m.aliased_once_ && form.may_alias) {
      auto it = std::find_if(largest_form.begin(), largest_form.end(),
                             [&](const auto& e) { return e.first == form.tensor; });
      if (it == largest_form.end()) {
        largest_form.push_back({form.tensor, r.area()});
        slice_area += r.area();
      } else if (r.area() > it->second) {
        slice_area += r.area() - it->second;
        it->second = r.area();
      }
    } else {
      slice_area += r.area();
    }
    if (!reused) load += r.area();
    if (detail) detail->slices.push_back({form.tensor, r, !reused});
  }
  // M23, M24 compute.
  const double compute = compute_time(c, active, detail);
  // M22 stores.
  const int64_t tile_area = c.tile_region.area();
  const bool last = c.ks == m.nk_ - 1;
  const int64_t store = last ? tile_area * static_cast<int64_t>(m.evicted_.size()) : 0;
  if (detail && last)
    for (int t : m.evicted_) detail->stores.push_back({t, c.tile_region});
  // M20 working set.
  WorkingSet ws;
  ws.retained_in = m.retained_in_elements_;
  ws.slices = slice_area;
  ws.outputs = tile_area * static_cast<int64_t>(m.nonephemeral_.size()) +
               finished_area * static_cast<int64_t>(m.retained_.size());
  // D: a partial sum lives from ks = 0 to the last k-step; with nk = 1 there is none.
  const bool split_k = m.nk_ > 1;
  ws.accumulators = split_k ? tile_area * static_cast<int64_t>(m.accumulators_.size()) : 0;
  const int64_t total_ws = ws.total();
  // M25 latency.
  const double memory = static_cast<double>(load + store) / m.bandwidth_;
  last_compute_ = compute;
  last_memory_ = memory;
  last_latency_ = std::max(compute, memory);
  last_ws_ = total_ws;
  const bool oom = static_cast<double>(total_ws) > m.capacity_;
  if (detail || (oom && !summarize_oom_))
    add_terms(ws, cur, c, finished_area);  // only when someone reads them
  if (detail) {
    detail->ref = ref;
    detail->load_elements = load;
    detail->store_elements = store;
    detail->compute = compute;
    detail->memory_time = memory;
    detail->latency = last_latency_;
    detail->working_set = ws;
  }
  if (oom) {
    RuleViolation v;  // its sentence is rendered from the terms when someone reads it
    v.rule = "M20";
    v.subgraph = m.index_;
    v.step = ref;
    v.working_set = ws;
    v.capacity = m.capacity_;
    violation_ = v;
    return false;
  }
  return true;
}

bool StepWalker::advance(StepDetail* detail) {
  if (detail) *detail = StepDetail{};
  if (prev_.capacity() == 0) {  // here, not in the constructor: evaluate_fast's walker never advances
    prev_.reserve(model_.forms_.size());
    cur_.reserve(model_.forms_.size());
  }
  const Coord c = coord(position_, ks_);
  if (!evaluate(c, prev_, cur_, finished_area_, detail)) return false;
  std::swap(prev_, cur_);
  if (++ks_ == model_.nk_) {
    ks_ = 0;
    finished_area_ += c.tile_region.area();
    ++position_;
  }
  return true;
}

std::vector<double> compute_floors(const Problem& problem, const Graph& graph, MatmulCompute model) {
  std::vector<double> floors(problem.num_ops());
  for (int o = 0; o < problem.num_ops(); ++o) floors[o] = compute_floor(problem, graph, o, model);
  return floors;
}

namespace {

// An op's output padded to native tiles, and the price of one such tile (base, times K/n_k under native-k).
struct PaddedOutput {
  double rows, cols, padded_rows, padded_cols, per_tile;
};

PaddedOutput padded_output(const Problem& problem, const Graph& graph, int op, MatmulCompute model) {
  const int y = problem.outputs[op][0];
  PaddedOutput out;
  out.rows = static_cast<double>(problem.heights[y]);
  out.cols = static_cast<double>(problem.widths[y]);
  out.padded_rows = std::ceil(out.rows / static_cast<double>(problem.native_h));
  out.padded_cols = std::ceil(out.cols / static_cast<double>(problem.native_w));
  const bool deep = problem.is_matmul(op) && model == MatmulCompute::NativeK;
  const double depth = deep ? static_cast<double>(graph.reduction_depth[op]) / problem.native_w : 1.0;
  out.per_tile = problem.base_costs[op] * depth;
  return out;
}

// Native tiles an op pays streamed on one side of a link (0: its columns, into an LHS; 1: its rows, into an
// RHS), proportional on that axis, once per column (row) of the tail's grid.
double streamed_tiles(const Problem& problem, const PaddedOutput& o, int side, double grid) {
  const double n_k = static_cast<double>(problem.native_w);
  return side == 0 ? o.padded_rows * (o.cols / n_k) * grid : (o.rows / n_k) * o.padded_cols * grid;
}

}  // namespace

double padded_compute_floor(const Problem& problem, const Graph& graph, int op, MatmulCompute model) {
  const PaddedOutput o = padded_output(problem, graph, op, model);
  return o.per_tile * (o.padded_rows * o.padded_cols);
}

double compute_floor(const Problem& problem, const Graph& graph, int op, MatmulCompute model) {
  // Native tiles of the output, padded on both axes (M23, M24). A chain head or an in-chain op may instead be
  // proportional on the tail's reduction axis: the columns for an LHS link, the rows for an RHS link (section
  // 8's caveat). Whether it is one depends on the schedule, so the floor takes the least count among the
  // roles the graph allows it (Graph::streamable_axes); they agree whenever the output's sides are multiples
  // of n_k and n_h = n_w (all 24 benchmarks).
  const PaddedOutput o = padded_output(problem, graph, op, model);
  double tiles = o.padded_rows * o.padded_cols;
  const uint8_t axes = graph.streamable_axes[op];
  // Streamed, it runs again on every column (row) of the tail's grid (M24).
  if (axes & kStreamsColumns)
    tiles = std::min(tiles, streamed_tiles(problem, o, 0, static_cast<double>(graph.lhs_tail_columns[op])));
  if (axes & kStreamsRows)
    tiles = std::min(tiles, streamed_tiles(problem, o, 1, static_cast<double>(graph.rhs_tail_rows[op])));
  return o.per_tile * tiles;
}

double compute_toward_tail(const Problem& problem, const Graph& graph, int op, int tail, int side,
                           MatmulCompute model) {
  const PaddedOutput o = padded_output(problem, graph, op, model);
  // The tail's grid has at least ceil(W / n) columns for an LHS path, ceil(H / n) rows for an RHS one (see
  // Graph::lhs_tail_columns).
  const int y = problem.outputs[tail][0];
  const int64_t n = std::max(problem.native_w, problem.native_h);
  const int64_t grid = side == 0 ? (problem.widths[y] + n - 1) / n : (problem.heights[y] + n - 1) / n;
  const double tiles =
      std::min(o.padded_rows * o.padded_cols, streamed_tiles(problem, o, side, static_cast<double>(grid)));
  return std::max(compute_floor(problem, graph, op, model), o.per_tile * tiles);
}

double head_compute_per_tail_tile(const Problem& problem, const Graph& graph, int head, int side,
                                  MatmulCompute model) {
  const int y = problem.outputs[head][0];
  const double n_k = static_cast<double>(problem.native_w);
  const double depth =
      model == MatmulCompute::NativeK ? static_cast<double>(graph.reduction_depth[head]) / n_k : 1.0;
  const double streamed = static_cast<double>(side == 0 ? problem.widths[y] : problem.heights[y]);
  return problem.base_costs[head] * depth * streamed / n_k;
}

SubgraphResult SubgraphModel::simulate(const std::function<void(const StepDetail&)>& on_step) const {
  SubgraphResult result;
  StepWalker walker(*this);
  StepDetail detail;
  while (!walker.done()) {
    const bool ok = walker.advance(on_step ? &detail : nullptr);
    result.peak_working_set = std::max(result.peak_working_set, walker.last_working_set());
    if (!ok) {
      result.violation = walker.violation();
      return result;
    }
    if (on_step) on_step(detail);
    result.latency += walker.last_latency();
    if (walker.last_compute() >= walker.last_memory_time())
      result.compute_bound_latency += walker.last_latency();
    result.compute_time += walker.last_compute();
    result.memory_time += walker.last_memory_time();
    ++result.steps;
  }
  return result;
}

int64_t SubgraphModel::num_steps() const {
  int64_t steps = 0;
  return __builtin_mul_overflow(tiles(), nk_, &steps) ? INT64_MAX : steps;
}

}  // namespace mlsys
