#include "verifier/link_walks.hpp"

#include <algorithm>

namespace mlsys {

LinkWalker::LinkWalker(const Problem& problem, const Graph& graph, int64_t max_visits,
                       const std::function<bool()>& expired)
    : p_(problem), g_(graph), expired_(expired), max_visits_(max_visits), tensors_(problem.num_tensors()) {}

bool LinkWalker::out_of_budget() {
  if (!stopped_ && visits_ > max_visits_) stopped_ = true;
  if (!stopped_ && expired_ && visits_ - last_asked_ >= 65'536) {
    last_asked_ = visits_;
    stopped_ = expired_();
  }
  return stopped_;
}

std::vector<int> LinkWalker::tails(int head) { return *tails(head, -1); }

std::optional<std::vector<int>> LinkWalker::tails(int head, int64_t limit) {
  tensors_.next();
  const int64_t start = visits_;
  std::vector<int> found, stack(p_.outputs[head].begin(), p_.outputs[head].end());
  while (!stack.empty() && !out_of_budget()) {
    const int t = stack.back();
    stack.pop_back();
    if (!tensors_.add(t)) continue;
    for (const Consumer& c : g_.consumers[t]) {
      visit();
      if (limit >= 0 && visits_ - start > limit) return std::nullopt;
      if (p_.is_matmul(c.op))
        found.push_back(c.op);
      else
        stack.insert(stack.end(), p_.outputs[c.op].begin(), p_.outputs[c.op].end());
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace mlsys
