// Errors as data. A RuleViolation is a schedule breaking a rule of the rule book (exit 1); an InputError is
// a file that cannot be read as a problem or solution at all (exit 2). Both carry their terms so that callers
// (CLI, solver, replay) can print, serialize or act on them.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlsys {

// Where in a subgraph's step sequence something happened.
struct StepRef {
  int64_t position = 0;  // index in the traversal order
  int64_t tile = 0;      // raster tile index j
  int64_t k_step = 0;    // ks
};

struct Region {
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;  // rows [r0,r1) x cols [c0,c1)
  int64_t rows() const { return r1 - r0; }
  int64_t cols() const { return c1 - c0; }
  int64_t area() const { return rows() * cols(); }
  bool operator==(const Region&) const = default;
};

std::string to_string(const Region& r);

// One term of a working set (M20): which part, which tensor, which region, how many elements.
struct WorkingSetTerm {
  // A retained-in, B slice, C output tile(s) (a hosted split-K accumulator is its tile), D a split-K partial
  // sum without a host (its tensor is the MatMul's output).
  char part = 'B';
  int tensor = -1;
  Region region;
  int64_t elements = 0;
};

struct WorkingSet {
  int64_t retained_in = 0, slices = 0, outputs = 0, accumulators = 0;
  std::vector<WorkingSetTerm> terms;
  int64_t total() const { return retained_in + slices + outputs + accumulators; }
};

struct RuleViolation {
  std::string rule;  // "M20"
  int subgraph = -1;
  std::optional<StepRef> step;
  int op = -1;
  int tensor = -1;
  std::string message;                     // human sentence, without the [Mx] tag (empty: see sentence())
  std::optional<WorkingSet> working_set;   // for OOM
  double capacity = 0;                     // for OOM

  // The human sentence: `message`, or for an OOM found by a search (which leaves `message` empty, because
  // formatting text for every rejected candidate was a tenth of the search's time) one rendered from the
  // terms.
  std::string sentence() const;
  // "[M20] subgraph 0, step 3 (tile 3, k-step 0): ..."
  std::string describe() const;
};

// Malformed or unreadable input (rule M1-M4, a missing file). Thrown at the parsing boundary only.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string rule, const std::string& message);
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string file_, field_, rule_;
};

}  // namespace mlsys
