// Walks along MatMul links (M12) that several lower bounds take: from a MatMul's output through Pointwise ops
// to the MatMuls it can head a link to. The work is bounded, since the graphs may be anyone's: past a visit
// limit or the caller's deadline a walk stops, and the bound that asked makes no claim.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

// Marks with an epoch instead of clearing, for searches run once per op or per pair of ops.
struct EpochMarks {
  std::vector<int64_t> stamp;
  int64_t epoch = 0;
  explicit EpochMarks(int n) : stamp(n, -1) {}
  void next() { ++epoch; }
  bool has(int i) const { return stamp[i] == epoch; }
  bool add(int i) {
    if (has(i)) return false;
    stamp[i] = epoch;
    return true;
  }
};

class LinkWalker {
 public:
  LinkWalker(const Problem& problem, const Graph& graph, int64_t max_visits,
             const std::function<bool()>& expired);

  void visit() { ++visits_; }
  // Past the visit limit or the caller's deadline (asked every 65,536 visits): what was found may be partial.
  bool out_of_budget();
  // The MatMuls `head`'s output reaches through Pointwise ops only: the tails it can head a link to (M12),
  // sorted. With `limit`, a walk of more visits stops there and returns nullopt (a long Pointwise chain
  // below each of many ops would make their walks quadratic).
  std::vector<int> tails(int head);
  std::optional<std::vector<int>> tails(int head, int64_t limit);

 private:
  const Problem& p_;
  const Graph& g_;
  const std::function<bool()>& expired_;
  int64_t max_visits_, visits_ = 0, last_asked_ = 0;
  bool stopped_ = false;
  EpochMarks tensors_;
};

}  // namespace mlsys
