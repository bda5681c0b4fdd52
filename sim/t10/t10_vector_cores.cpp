// A vector operator on every core of its partition (t10_vector_cores.hpp).
#include "sim/t10/t10_vector_cores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <systemc>

#include "sim/systemc/one_thread.hpp"
#include "sim/t10/t10_functional.hpp"

namespace mlsys::t10 {
namespace {

using namespace sc_core;

struct Block {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;  // rows and columns (an element run: one row of rows*cols columns)
  int64_t rows() const { return std::max<int64_t>(r1 - r0, 0); }
  int64_t cols() const { return std::max<int64_t>(c1 - c0, 0); }
};

// Part i of [0, length) in pieces of ceil(length / parts), as the model's ceilings cut it.
std::pair<int64_t, int64_t> part(int64_t length, int64_t parts, int64_t i) {
  const int64_t step = (length + parts - 1) / parts;
  return {std::min(length, i * step), std::min(length, (i + 1) * step)};
}

class VectorEngine {
 public:
  VectorEngine(const VectorOp& op, int64_t parts, int64_t col_parts, int64_t dtype, const CalibratedCost& cost,
               const VectorCoresOptions& options)
      : op_(op), parts_(parts), col_parts_(col_parts), dtype_(dtype), cost_(cost), o_(options) {}

  VectorCoresResult run() {
    const bool row_wise = op_.kind == VectorKind::RowWise;
    // Core p * col_parts + c holds rows part p, columns part c (the layout t10_layouts.hpp gives the
    // operator's inputs); an elementwise operator's core p its run of elements.
    for (int64_t p = 0; p < parts_; ++p)
      for (int64_t c = 0; c < col_parts_; ++c) {
        Block b;
        if (row_wise) {
          std::tie(b.r0, b.r1) = part(op_.rows, parts_, p);
          std::tie(b.c0, b.c1) = part(op_.cols, col_parts_, c);
        } else {
          b.r0 = 0, b.r1 = 1;
          std::tie(b.c0, b.c1) = part(op_.rows * op_.cols, parts_, p);
        }
        result_.empty_cores += b.rows() * b.cols() == 0;
        blocks_.push_back(b);
      }
    result_.cores = static_cast<int64_t>(blocks_.size());
    check_tiling();
    std::vector<VectorBlockCycles> own;
    for (const Block& b : blocks_) own.push_back(vector_block_cycles(op_.kind, b.rows(), b.cols()));
    auto busiest = [&](double VectorBlockCycles::*term) {
      double most = 0;
      for (const VectorBlockCycles& c : own) most = std::max(most, c.*term);
      return most;
    };
    const double statistics = busiest(&VectorBlockCycles::statistics), pass = busiest(&VectorBlockCycles::pass);
    if (o_.inputs) sum_inputs();
    if (row_wise) {
      phase("row statistics", statistics, 0);
      partial_statistics();
      if (col_parts_ > 1) {
        phase("gather partial statistics", cost_.gather, gathered_bytes_);
        phase("reduce partial statistics", cost_.reduce, 0);
        phase("return statistics (not priced)", 0, result_.unpriced_bytes);
      }
    }
    phase(row_wise ? "pass over the elements" : "compute", pass, 0);
    if (o_.output) write_output();
    phase("shuffle", cost_.shuffle, 0);
    // The model's order of the same terms, so that the two sums agree to the last bit.
    result_.makespan = (statistics + pass) + cost_.gather + cost_.reduce + cost_.shuffle;
    result_.model_total = cost_.total;
    if (!result_.violation && result_.makespan != cost_.total)
      result_.violation = CoreViolation{-1, {}, 'C',
                                        "the busiest core's block costs " + std::to_string(statistics + pass) +
                                            " cycles, the model's compute term " +
                                            std::to_string(cost_.compute_per_step)};
    return result_;
  }

 private:
  void phase(const std::string& name, double cycles, int64_t bytes) {
    result_.phases.push_back({name, cycles, {}, bytes});
    if (cycles > 0) wait(sc_time(cycles, SC_NS));
  }

  void fail(int64_t core, const std::string& message) {
    if (!result_.violation) result_.violation = CoreViolation{-1, {core, 0, 0}, 'C', message};
  }

  // Every element of the output in exactly one core's block: the blocks stay inside the output and their
  // areas add up to it (the parts are disjoint ranges by construction).
  void check_tiling() {
    const bool row_wise = op_.kind == VectorKind::RowWise;
    const int64_t rows = row_wise ? op_.rows : 1, cols = row_wise ? op_.cols : op_.rows * op_.cols;
    int64_t area = 0;
    for (size_t c = 0; c < blocks_.size(); ++c) {
      const Block& b = blocks_[c];
      if (b.rows() * b.cols() > 0 && (b.r0 < 0 || b.r1 > rows || b.c0 < 0 || b.c1 > cols))
        fail(static_cast<int64_t>(c), "core " + std::to_string(c) + "'s block lies outside the output");
      area += b.rows() * b.cols();
    }
    if (area != rows * cols)
      fail(-1, "the cores' blocks cover " + std::to_string(area) + " elements of " + std::to_string(rows * cols));
  }

  // Functional mode: each element's inputs summed, or their largest (every input is rows x cols).
  void sum_inputs() {
    const size_t total = static_cast<size_t>(op_.rows * op_.cols);
    x_.assign(total, 0);
    for (const std::vector<int64_t>& in : *o_.inputs) {
      if (in.size() != total)
        throw std::invalid_argument("an input of " + std::to_string(in.size()) + " elements, not " +
                                    std::to_string(total));
      const bool first = &in == &o_.inputs->front();
      for (size_t e = 0; e < total; ++e) x_[e] = o_.max ? (first ? in[e] : std::max(x_[e], in[e])) : x_[e] + in[e];
    }
  }

  // Each core's partial statistic per row of its block (functional: the row's maximum, or its sum when the
  // operator reduces), sent to the row part's first core; that core reduces the col_parts partials (each
  // must arrive once) and, unless the operator reduces, returns the statistic to the others.
  void partial_statistics() {
    const bool values = !x_.empty();
    if (values) statistic_.assign(static_cast<size_t>(op_.rows), 0);
    std::vector<int64_t> arrived(blocks_.size(), 0);
    for (int64_t p = 0; p < parts_; ++p) {
      const size_t first = static_cast<size_t>(p * col_parts_);
      for (int64_t c = 0; c < col_parts_; ++c) {
        const size_t core = first + static_cast<size_t>(c);
        const Block& b = blocks_[core];
        bool lost = false;
        if (c > 0 && b.rows() * b.cols() > 0) {  // a transfer to the first core of the row part
          lost = result_.transfers == o_.drop_partial;
          ++result_.transfers;
          result_.bytes_moved += b.rows() * dtype_;
          gathered_bytes_ += b.rows() * dtype_;
          if (!o_.reduces) ++result_.unpriced_transfers, result_.unpriced_bytes += b.rows() * dtype_;
        }
        if (lost) continue;
        if (b.rows() * b.cols() > 0) ++arrived[core];
        for (int64_t r = b.r0; values && r < b.r1; ++r) {
          int64_t partial = o_.reduces ? 0 : std::numeric_limits<int64_t>::min();
          for (int64_t col = b.c0; col < b.c1; ++col) {
            const int64_t v = x_[static_cast<size_t>(r * op_.cols + col)];
            partial = o_.reduces ? partial + v : std::max(partial, v);
          }
          int64_t& s = statistic_[static_cast<size_t>(r)];
          s = c == 0 ? partial : o_.reduces ? s + partial : std::max(s, partial);
        }
      }
    }
    for (size_t core = 0; core < blocks_.size(); ++core) {
      const Block& b = blocks_[core];
      if (b.rows() * b.cols() > 0 && arrived[core] != 1)
        fail(static_cast<int64_t>(core), "rows " + std::to_string(b.r0) + ".." + std::to_string(b.r1) +
                                             ": core " + std::to_string(core) + "'s partial statistics arrived " +
                                             std::to_string(arrived[core]) + " times");
    }
  }

  // Functional mode: each core writes its block (a reducing operator: the row part's first core its rows'
  // sums), and every output element must be written exactly once.
  void write_output() {
    const bool reduces = op_.kind == VectorKind::RowWise && o_.reduces;
    const int64_t size = reduces ? op_.rows : op_.rows * op_.cols;
    std::vector<int64_t>& out = *o_.output;
    out.assign(static_cast<size_t>(size), 0);
    std::vector<uint8_t> written(static_cast<size_t>(size), 0);
    for (size_t core = 0; core < blocks_.size(); ++core) {
      const Block& b = blocks_[core];
      for (int64_t r = b.r0; r < b.r1; ++r) {
        if (reduces) {
          if (core % static_cast<size_t>(col_parts_) != 0) break;
          out[static_cast<size_t>(r)] = statistic_[static_cast<size_t>(r)];
          ++written[static_cast<size_t>(r)];
          continue;
        }
        for (int64_t col = b.c0; col < b.c1; ++col) {
          const size_t e = static_cast<size_t>(op_.kind == VectorKind::RowWise ? r * op_.cols + col : col);
          const int64_t v = x_[e];
          out[e] = op_.kind == VectorKind::Relu || (o_.clamp && op_.kind == VectorKind::Elementwise)
                       ? std::max<int64_t>(v, 0)
                   : op_.kind == VectorKind::Elementwise ? v
                                                         : v - statistic_[static_cast<size_t>(r)];
          ++written[e];
        }
      }
    }
    for (size_t e = 0; e < written.size(); ++e)
      if (written[e] != 1)
        return fail(-1, "output element " + std::to_string(e) + " written " + std::to_string(written[e]) + " times");
  }

  const VectorOp op_;
  const int64_t parts_, col_parts_, dtype_;
  const CalibratedCost cost_;
  const VectorCoresOptions o_;
  std::vector<Block> blocks_;
  std::vector<int64_t> x_, statistic_;
  int64_t gathered_bytes_ = 0;
  VectorCoresResult result_;
};

}  // namespace

VectorCoresResult simulate_vector_cores(const VectorOp& op, int64_t parts, int64_t col_parts, int64_t dtype_bytes,
                                        const Chip& chip, const VectorCoresOptions& options) {
  if (op.kind != VectorKind::RowWise) col_parts = 1;
  const CalibratedCost cost = calibrated_vector_cost(op, parts, dtype_bytes, chip, col_parts);
  if (!cost.accepted()) throw std::invalid_argument("the vector operator's partition: " + cost.rejections.front());
  if (parts * col_parts > kMaxSimulatedCores)
    throw std::invalid_argument("the partition has " + std::to_string(parts * col_parts) +
                                " cores; the engine simulates at most " + std::to_string(kMaxSimulatedCores));
  if ((options.inputs || options.output) &&
      static_cast<double>(op.rows) * static_cast<double>(op.cols) > static_cast<double>(kMaxExactElements))
    throw std::invalid_argument("functional mode holds the operator's " + std::to_string(op.rows) + " x " +
                                std::to_string(op.cols) + " elements; at most " +
                                std::to_string(kMaxExactElements));
  VectorEngine engine(op, parts, col_parts, dtype_bytes, cost, options);
  return run_as_one_thread<VectorCoresResult>("t10_vector_cores", [&] { return engine.run(); });
}

}  // namespace mlsys::t10
