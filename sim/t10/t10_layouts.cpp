// Layouts of a program's tensors between operators and the transfers between them (t10_layouts.hpp).
#include "sim/t10/t10_layouts.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace mlsys::t10 {
namespace {

struct Span {
  int64_t lo, hi;
};

// Part `i` of [lo, hi) cut into `parts` pieces of ceil(length / parts) (the last ones may be short or empty).
Span part(Span whole, int64_t parts, int64_t i) {
  const int64_t step = (whole.hi - whole.lo + parts - 1) / std::max<int64_t>(parts, 1);
  return {std::min(whole.hi, whole.lo + i * step), std::min(whole.hi, whole.lo + (i + 1) * step)};
}

// The rectangles of rows [m.lo, m.hi) in every batch of a batch part, columns [c.lo, c.hi).
void add_batched(Layout& out, int64_t core, Span batches, int64_t m, Span rows, Span cols) {
  for (int64_t b = batches.lo; b < batches.hi; ++b) {
    const Rect r{b * m + rows.lo, b * m + rows.hi, cols.lo, cols.hi};
    if (r.area() > 0) out.push_back({core, r});
  }
}

// A vector operator's partition: rows (and column parts) for a row-wise one, runs of elements otherwise.
Layout vector_layout(const TensorOperator& op, const OperatorOption& o) {
  Layout out;
  const int64_t rows = op.batch * op.m, cols = op.n, parts = std::max<int64_t>(o.plan.f_op[0], 1);
  if (op.type == OperatorType::RowWise) {
    const int64_t col_parts = std::max<int64_t>(o.plan.f_op[2], 1);
    for (int64_t p = 0; p < parts; ++p)
      for (int64_t c = 0; c < col_parts; ++c) {
        const Span r = part({0, rows}, parts, p), k = part({0, cols}, col_parts, c);
        const Rect rect{r.lo, r.hi, k.lo, k.hi};
        if (rect.area() > 0) out.push_back({p * col_parts + c, rect});
      }
    return out;
  }
  const Span all{0, rows * cols};
  for (int64_t p = 0; p < parts; ++p) {
    const Span e = part(all, parts, p);
    // A run of elements in row-major order: its first partial row, its whole rows, its last partial row.
    for (int64_t at = e.lo; at < e.hi;) {
      const int64_t row = at / cols, col = at % cols;
      const int64_t whole_rows = col == 0 ? (e.hi - at) / cols : 0;
      if (whole_rows > 0) {
        out.push_back({p, {row, row + whole_rows, 0, cols}});
        at += whole_rows * cols;
      } else {
        const int64_t end = std::min(e.hi, (row + 1) * cols);
        out.push_back({p, {row, row + 1, col, col + (end - at)}});
        at = end;
      }
    }
  }
  return out;
}

}  // namespace

std::pair<int64_t, int64_t> output_shape(const TensorOperator& op) {
  return {op.batch * op.m, op.reduces ? 1 : op.n};
}

std::pair<int64_t, int64_t> input_shape(const TensorOperator& op, int operand) {
  if (op.type != OperatorType::MatMul) return {op.batch * op.m, op.n};
  return operand == 0 ? std::pair{op.batch * op.m, op.k} : std::pair{op.batch * op.k, op.n};
}

Layout output_layout(const TensorOperator& op, const OperatorOption& o) {
  if (op.reduces) {  // each row's value on the core of its first column part, where the partials are reduced
    Layout out;
    for (const Placement& p : vector_layout(op, o))
      if (p.rect.c0 == 0) out.push_back({p.core, {p.rect.r0, p.rect.r1, 0, 1}});
    return out;
  }
  if (op.type != OperatorType::MatMul) return vector_layout(op, o);
  const Plan& p = o.plan;
  const auto [pm, pk, pn] = p.f_op;
  Layout out;
  for (int64_t bp = 0; bp < p.pb; ++bp)
    for (int64_t im = 0; im < pm; ++im)
      for (int64_t in = 0; in < pn; ++in) {
        const int64_t core =
            bp * pm * pk * pn + (im * pk + 0) * pn + in;  // the pk copies reduced onto i_k = 0
        add_batched(out, core, part({0, op.batch}, p.pb, bp), op.m, part({0, op.m}, pm, im),
                    part({0, op.n}, pn, in));
      }
  return out;
}

Layout input_layout(const TensorOperator& op, const OperatorOption& o, int operand) {
  if (op.type != OperatorType::MatMul) return vector_layout(op, o);
  const Plan& p = o.plan;
  const auto [pm, pk, pn] = p.f_op;
  // A's block (i_m, i_k) sits on the pn cores (i_m, i_k, *), B's block (i_k, i_n) on the pm cores (*, i_k,
  // i_n). In the hot plan's own layout an operand's ring of pieces (am x ak, or bk x bn) repeats on every
  // group of `ring` of those cores; without copies, the pieces are cut `copies` times finer along k and each
  // core holds a different one.
  const bool a = operand == 0;
  const int64_t sharers = a ? pn : pm, outer = a ? p.am : p.bn, ring_k = a ? p.ak : p.bk;
  const int64_t ring = outer * ring_k, copies = std::max<int64_t>(sharers / std::max<int64_t>(ring, 1), 1);
  const int64_t along_k = o.cold_is_hot ? ring_k : ring_k * copies;
  const int64_t rows_per_batch = a ? op.m : op.k, parts_rows = a ? pm : pk, parts_cols = a ? pk : pn;
  Layout out;
  for (int64_t bp = 0; bp < p.pb; ++bp)
    for (int64_t im = 0; im < pm; ++im)
      for (int64_t ik = 0; ik < pk; ++ik)
        for (int64_t in = 0; in < pn; ++in) {
          const int64_t sharer = a ? in : im;
          const int64_t piece = o.cold_is_hot ? sharer % ring : sharer % (outer * along_k);
          Span rows, cols;
          if (a) {  // rows of m cut am ways, columns of k cut along_k ways
            rows = part(part({0, op.m}, parts_rows, im), outer, piece / along_k);
            cols = part(part({0, op.k}, parts_cols, ik), along_k, piece % along_k);
          } else {  // rows of k cut along_k ways, columns of n cut bn ways
            rows = part(part({0, op.k}, parts_rows, ik), along_k, piece / outer);
            cols = part(part({0, op.n}, parts_cols, in), outer, piece % outer);
          }
          add_batched(out, bp * pm * pk * pn + (im * pk + ik) * pn + in, part({0, op.batch}, p.pb, bp),
                      rows_per_batch, rows, cols);
        }
  return out;
}

LayoutChange change_layout(const Layout& from, const Layout& to, int64_t rows, int64_t cols, int64_t dtype) {
  LayoutChange change;
  Layout sources = from;
  std::sort(sources.begin(), sources.end(),
            [](const Placement& a, const Placement& b) { return a.rect.r0 < b.rect.r0; });
  int64_t tallest = 0, held = 0;
  for (const Placement& s : sources)
    tallest = std::max(tallest, s.rect.r1 - s.rect.r0), held += s.rect.area();
  if (held != rows * cols)
    change.problem = "the producer's layout holds " + std::to_string(held) + " elements of a " +
                     std::to_string(rows) + " x " + std::to_string(cols) + " tensor";
  std::map<std::pair<int64_t, int64_t>, int64_t> moved;  // (from core, to core) -> elements
  std::map<int64_t, int64_t> received;
  for (const Placement& d : to) {
    auto first = std::lower_bound(sources.begin(), sources.end(), d.rect.r0 - tallest + 1,
                                  [](const Placement& s, int64_t r) { return s.rect.r0 < r; });
    int64_t covered = 0;
    for (auto s = first; s != sources.end() && s->rect.r0 < d.rect.r1; ++s) {
      const Rect overlap{std::max(s->rect.r0, d.rect.r0), std::min(s->rect.r1, d.rect.r1),
                         std::max(s->rect.c0, d.rect.c0), std::min(s->rect.c1, d.rect.c1)};
      const int64_t area = overlap.area();
      covered += area;
      if (area > 0 && s->core != d.core) moved[{s->core, d.core}] += area, received[d.core] += area;
    }
    if (covered != d.rect.area() && change.problem.empty())
      change.problem = "core " + std::to_string(d.core) + " needs rows " + std::to_string(d.rect.r0) + "-" +
                       std::to_string(d.rect.r1) + ", columns " + std::to_string(d.rect.c0) + "-" +
                       std::to_string(d.rect.c1) + ", of which the producer's layout holds " +
                       std::to_string(covered) + " of " + std::to_string(d.rect.area()) + " elements";
  }
  change.transfers = static_cast<int64_t>(moved.size());
  for (const auto& [pair, elements] : moved) change.bytes += elements * dtype;
  for (const auto& [core, elements] : received)
    change.max_core_bytes = std::max(change.max_core_bytes, elements * dtype);
  return change;
}

std::string views_unmappable(const std::vector<int64_t>& from_shape, int64_t produced,
                             const std::vector<ViewStep>& steps, int64_t total) {
  for (const ViewStep& step : steps)
    if (!step.unmapped.empty()) return step.op + ": " + step.unmapped;
  if (from_shape.empty()) return "the producer's shape before the views is not given";
  if (shape_elements(from_shape) != produced)
    return "the producer's operator writes " + std::to_string(produced) + " elements, its tensor has " +
           std::to_string(shape_elements(from_shape));
  if (shape_elements(from_shape) > kMaxMappedElements) return "more than 2^24 elements to map one by one";
  const std::vector<int64_t>* in = &from_shape;
  for (const ViewStep& step : steps) {
    if (step.op == "Im2col") {
      if (in->size() != 4 || step.shape.size() != 3 || step.kernel.size() != 2 || step.strides.size() != 2 ||
          step.pads.size() != 2 || step.dilations.size() != 2 || step.out.size() != 2 || step.shape[0] < 1)
        return "Im2col: not a 2-D convolution's read of a 4-D input";
      const int64_t groups = step.shape[0];
      if ((*in)[1] % groups != 0 || step.shape[1] != (*in)[0] * step.out[0] * step.out[1] ||
          step.shape[2] != (*in)[1] / groups * step.kernel[0] * step.kernel[1])
        return "Im2col: shapes disagree";
      if (&step != &steps.back()) return "Im2col: another view after it";
    } else if (step.op == "Window") {
      if (in->size() != 4 || step.shape.size() != 5 || step.kernel.size() != 2 || step.strides.size() != 2 ||
          step.pads.size() != 2 || step.dilations.size() != 2 || step.out.size() != 2)
        return "Window: not a 2-D pooling's read of a 4-D input";
      if (step.shape[0] != step.kernel[0] * step.kernel[1] || step.shape[1] != (*in)[0] ||
          step.shape[2] != (*in)[1] || step.shape[3] != step.out[0] || step.shape[4] != step.out[1])
        return "Window: shapes disagree";
      if (&step != &steps.back()) return "Window: another view after it";
    } else if (step.op == "Transpose") {
      if (step.perm.size() != in->size() || step.shape.size() != in->size())
        return "Transpose: ranks disagree";
      for (size_t a = 0; a < step.perm.size(); ++a)
        if (step.perm[a] < 0 || step.perm[a] >= static_cast<int64_t>(in->size()) ||
            (*in)[step.perm[a]] != step.shape[a])
          return "Transpose: shapes disagree";
    } else if (step.op == "Concat") {  // the input is the part [start, end) of the output along one axis
      if (step.shape.size() != in->size() || step.slices.size() != 1)
        return "Concat: one part of a same-rank output";
      const auto [axis, start, end] = step.slices[0];
      if (axis < 0 || axis >= static_cast<int64_t>(in->size()) || end > step.shape[axis] ||
          end - start != (*in)[axis])
        return "Concat: the part does not fit its axis";
      for (size_t a = 0; a < in->size(); ++a)
        if (static_cast<int64_t>(a) != axis && (*in)[a] != step.shape[a]) return "Concat: shapes disagree";
    } else if (!step.slices.empty()) {
      if (step.shape.size() != in->size()) return step.op + ": ranks disagree";
      std::vector<int64_t> kept = *in;
      for (const auto& [axis, start, end] : step.slices) {
        if (axis < 0 || axis >= static_cast<int64_t>(kept.size()) || end > (*in)[axis])
          return step.op + ": out of range";
        kept[axis] = end - start;
      }
      if (kept != step.shape) return step.op + ": shapes disagree";
    } else if (shape_elements(step.shape) != shape_elements(*in)) {
      return step.op + ": " + std::to_string(shape_elements(*in)) + " elements become " +
             std::to_string(shape_elements(step.shape));
    }
    in = &step.shape;
  }
  if (shape_elements(*in) != total)
    return "the views end with " + std::to_string(shape_elements(*in)) + " elements, the operand has " +
           std::to_string(total);
  return "";
}

ViewMap::ViewMap(const std::vector<int64_t>& from_shape, const std::vector<ViewStep>& steps,
                 bool channels_last)
    : from_shape_(from_shape), steps_(steps), channels_last_(channels_last && from_shape.size() == 4) {
  const std::vector<int64_t>* in = &from_shape_;
  for (const ViewStep& step : steps_) {
    input_of_.push_back(in), in = &step.shape;
    kinds_.push_back(step.op == "Im2col"      ? kIm2col
                     : step.op == "Window"    ? kWindow
                     : step.op == "Concat"    ? kPlace
                     : step.op == "Transpose" ? kTranspose
                     : !step.slices.empty()   ? kSlice
                                              : kReshape);
  }
  last_ = in;
}

void ViewMap::to_coord(int64_t flat, const std::vector<int64_t>& shape) {
  coord_.assign(shape.size(), 0);
  for (size_t a = shape.size(); a-- > 0;) coord_[a] = flat % shape[a], flat /= shape[a];
}

int64_t ViewMap::to_flat(const std::vector<int64_t>& c, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t a = 0; a < shape.size(); ++a) flat = flat * shape[a] + c[a];
  return flat;
}

int64_t ViewMap::source(int64_t flat) {
  to_coord(flat, *last_);
  for (size_t i = steps_.size(); i-- > 0;) {  // back through the views
    const ViewStep& step = steps_[i];
    if (kinds_[i] == kIm2col) {  // (group, row n ho wo, column c i j) -> input (n, c, h, w), or padding
      const std::vector<int64_t>& x = *input_of_[i];
      const int64_t ho_wo = step.out[0] * step.out[1], kk = step.kernel[0] * step.kernel[1];
      const int64_t row = coord_[1], col = coord_[2];
      const int64_t n = row / ho_wo, ho = row / step.out[1] % step.out[0], wo = row % step.out[1];
      const int64_t ch = coord_[0] * (x[1] / step.shape[0]) + col / kk;
      const int64_t h =
          ho * step.strides[0] - step.pads[0] + col / step.kernel[1] % step.kernel[0] * step.dilations[0];
      const int64_t w = wo * step.strides[1] - step.pads[1] + col % step.kernel[1] * step.dilations[1];
      if (h < 0 || h >= x[2] || w < 0 || w >= x[3]) return -1;  // a zero of the convolution's padding
      coord_.assign({n, ch, h, w});
    } else if (kinds_[i] == kWindow) {  // (position i*kw + j, n, c, ho, wo) -> input (n, c, h, w), or padding
      const std::vector<int64_t>& x = *input_of_[i];
      const int64_t at = coord_[0],
                    h = coord_[3] * step.strides[0] - step.pads[0] + at / step.kernel[1] * step.dilations[0];
      const int64_t w = coord_[4] * step.strides[1] - step.pads[1] + at % step.kernel[1] * step.dilations[1];
      if (h < 0 || h >= x[2] || w < 0 || w >= x[3]) return -1;  // the padding: the pooling skips it
      coord_.assign({coord_[1], coord_[2], h, w});
    } else if (kinds_[i] == kPlace) {  // another input's part of the concatenation: not this operand's
      const auto [axis, start, end] = step.slices[0];
      int64_t& c = coord_[static_cast<size_t>(axis)];
      if (c < start || c >= end) return -1;
      c -= start;
    } else if (kinds_[i] == kTranspose) {
      back_.assign(coord_.size(), 0);
      for (size_t a = 0; a < coord_.size(); ++a) back_[static_cast<size_t>(step.perm[a])] = coord_[a];
      coord_.swap(back_);
    } else if (kinds_[i] == kSlice) {
      for (const auto& [axis, start, end] : step.slices) coord_[static_cast<size_t>(axis)] += start;
    } else {
      to_coord(to_flat(coord_, step.shape), *input_of_[i]);
    }
  }
  const std::vector<int64_t>& f = from_shape_;
  return channels_last_ ? ((coord_[0] * f[2] + coord_[2]) * f[3] + coord_[3]) * f[1] + coord_[1]
                        : to_flat(coord_, f);
}

LayoutChange change_layout_through(const Layout& from, int64_t from_rows, int64_t from_cols,
                                   const std::vector<int64_t>& from_shape, const std::vector<ViewStep>& steps,
                                   const Layout& to, int64_t rows, int64_t cols, int64_t dtype,
                                   bool channels_last) {
  LayoutChange change;
  if (std::string why = views_unmappable(from_shape, from_rows * from_cols, steps, rows * cols);
      !why.empty()) {
    change.problem = why;
    return change;
  }
  // Which core holds each element of the producer's output.
  std::vector<int32_t> owner(static_cast<size_t>(from_rows * from_cols), -1);
  for (const Placement& p : from)
    for (int64_t r = p.rect.r0; r < p.rect.r1; ++r)
      for (int64_t c = p.rect.c0; c < p.rect.c1; ++c)
        owner[static_cast<size_t>(r * from_cols + c)] = static_cast<int32_t>(p.core);
  ViewMap view(from_shape, steps, channels_last);
  std::map<std::pair<int64_t, int64_t>, int64_t> moved;
  std::map<int64_t, int64_t> received;
  // Per distinct destination rectangle (copies of a piece repeat it on many cores): how many of its elements
  // each producing core holds.
  std::map<std::array<int64_t, 4>, std::vector<std::pair<int32_t, int64_t>>> histograms;
  for (const Placement& d : to) {
    const std::array<int64_t, 4> key{d.rect.r0, d.rect.r1, d.rect.c0, d.rect.c1};
    auto [entry, fresh] = histograms.try_emplace(key);
    std::vector<std::pair<int32_t, int64_t>>& sources = entry->second;
    for (int64_t r = d.rect.r0; fresh && r < d.rect.r1; ++r)
      for (int64_t c = d.rect.c0; c < d.rect.c1; ++c) {
        const int64_t at = view.source(r * cols + c);
        if (at < 0) continue;  // padding: nothing to fetch
        const int32_t core = owner[static_cast<size_t>(at)];
        if (core < 0) {
          if (change.problem.empty())
            change.problem =
                "core " + std::to_string(d.core) + " needs an element the producer's layout does not hold";
          continue;
        }
        auto it =
            std::find_if(sources.begin(), sources.end(), [&](const auto& s) { return s.first == core; });
        if (it == sources.end())
          sources.push_back({core, 1});
        else
          ++it->second;
      }
    for (const auto& [core, n] : sources)
      if (core != d.core) moved[{core, d.core}] += n, received[d.core] += n;
  }
  change.transfers = static_cast<int64_t>(moved.size());
  for (const auto& [pair, n] : moved) change.bytes += n * dtype;
  for (const auto& [core, n] : received) change.max_core_bytes = std::max(change.max_core_bytes, n * dtype);
  return change;
}

}  // namespace mlsys::t10
