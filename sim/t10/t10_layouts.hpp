// Where a whole-model program's tensors lie between operators, core by core, and the transfers that change
// one operator's output layout into the next operator's input layout (docs/t10-programs.md#simulation).
// A layout is a list of rectangles of the tensor (rows x columns, a batch folded into the rows), each held by
// one core; the layout change intersects the two lists and checks that the new one is covered exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_program.hpp"

namespace mlsys::t10 {

struct Rect {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  int64_t area() const { return r1 > r0 && c1 > c0 ? (r1 - r0) * (c1 - c0) : 0; }
};
struct Placement {
  int64_t core = 0;
  Rect rect;
};
using Layout = std::vector<Placement>;

// The output after the operator's shuffle (a MatMul's C blocks reduced onto one core of their pk copies; a
// reducing row-wise operator's one value per row on the core of the row's first column part).
Layout output_layout(const TensorOperator& op, const OperatorOption& option);
// The layout an input waits in: a MatMul's A (operand 0) or B (operand 1) in the option's cold layout (its
// hot pieces, or the layout without copies), a vector operator's inputs in its own partition.
Layout input_layout(const TensorOperator& op, const OperatorOption& option, int operand = 0);
// Rows x columns of those tensors (a batch folded into the rows).
std::pair<int64_t, int64_t> output_shape(const TensorOperator& op);
std::pair<int64_t, int64_t> input_shape(const TensorOperator& op, int operand = 0);

struct LayoutChange {
  int64_t transfers = 0;       // (sending core, receiving core) pairs with data between them
  int64_t bytes = 0;           // moved between different cores
  int64_t max_core_bytes = 0;  // received by the busiest core
  std::string problem;         // empty, or where the new layout is not covered exactly once by the old
};
LayoutChange change_layout(const Layout& from, const Layout& to, int64_t rows, int64_t cols,
                           int64_t dtype_bytes);

// The same through views (a reshape into heads, a transpose, a split): the producer's tensor of `from_shape`
// (row-major; its matrix is `from_rows` x `from_cols`) passes `steps`, and the last step's tensor, row-major,
// is the consumer's rows x cols matrix. Every element each consuming core needs is mapped back through the
// steps and found on the producing core that holds it. Refused (`problem`) above kMaxMappedElements or when a
// step is unmapped or its shapes disagree.
constexpr int64_t kMaxMappedElements = int64_t{1} << 24;
// Why views cannot be replayed as an index map from the producer's tensor (`from_shape`, which must hold the
// `produced` elements of its operator's output) to `total` elements, or "" when they can.
std::string views_unmappable(const std::vector<int64_t>& from_shape, int64_t produced,
                             const std::vector<ViewStep>& steps, int64_t total);
// The index map of views (checked first by views_unmappable): which element of the producer's matrix each
// element of the consumer's row-major operand reads. `channels_last`: the producer's matrix is N*H*W x C of
// its N x C x H x W tensor (a convolution's output). Holds references to its arguments.
class ViewMap {
 public:
  ViewMap(const std::vector<int64_t>& from_shape, const std::vector<ViewStep>& steps, bool channels_last);
  // The producer matrix's row-major index for the operand's element `flat`, or -1 where it reads nothing: a
  // convolution's or a pooling's padding, another input's part of a concatenation.
  int64_t source(int64_t flat);

 private:
  enum Kind { kTranspose, kSlice, kReshape, kIm2col, kWindow, kPlace };  // decided once, not per element
  void to_coord(int64_t flat, const std::vector<int64_t>& shape);
  static int64_t to_flat(const std::vector<int64_t>& c, const std::vector<int64_t>& shape);
  const std::vector<int64_t>& from_shape_;
  const std::vector<ViewStep>& steps_;
  const bool channels_last_;
  std::vector<const std::vector<int64_t>*> input_of_;  // the shape into each step
  const std::vector<int64_t>* last_ = nullptr;
  std::vector<Kind> kinds_;
  std::vector<int64_t> coord_, back_;
};

// `channels_last`: the producer's matrix is N*H*W x C of its N x C x H x W tensor (a convolution's output).
LayoutChange change_layout_through(const Layout& from, int64_t from_rows, int64_t from_cols,
                                   const std::vector<int64_t>& from_shape, const std::vector<ViewStep>& steps,
                                   const Layout& to, int64_t rows, int64_t cols, int64_t dtype_bytes,
                                   bool channels_last = false);

}  // namespace mlsys::t10
