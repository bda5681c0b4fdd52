// What a segment of an order may retain into the next one, and which tensors later readers may recompute.
#include <algorithm>

#include "solver/search_internal.hpp"

namespace mlsys::search {
// Which optional tensors to retain besides the required ones: every subset when there are few (benchmark 4
// needs two of three retained: all three overflow the next segment, one alone costs a store and a load), else
// none, all, each alone and all but each (the exhaustive search takes every subset of up to 12). Each option
// is sorted.
std::vector<std::vector<int>> retention_options(const RetentionNeeds& needs, int every_subset_up_to) {
  const std::vector<int>& opt = needs.optional;
  const int n = static_cast<int>(opt.size());
  std::vector<std::vector<int>> options;
  auto add = [&](auto&& keep) {
    std::vector<int> r = needs.required;
    for (int i = 0; i < n; ++i)
      if (keep(i)) r.push_back(opt[i]);
    std::sort(r.begin(), r.end());
    if (std::find(options.begin(), options.end(), r) == options.end()) options.push_back(std::move(r));
  };
  if (n <= every_subset_up_to) {
    for (unsigned mask = 0; mask < (1u << n); ++mask) add([mask](int i) { return (mask >> i) & 1u; });
    return options;
  }
  add([](int) { return false; });
  add([](int) { return true; });
  for (int j = 0; j < n; ++j) {
    add([j](int i) { return i == j; });
    add([j](int i) { return i != j; });
  }
  return options;
}

// Recomputation (M5: an op may run in several subgraphs). A tensor that a Pointwise op produces and several
// ops read need not be kept for all of them: the first reader can receive it retained (or fused), and the
// later ones run its producer again in their own subgraph (tests/solver_test.cpp has a graph where this wins;
// on the benchmarks, only 15 gains, docs/solver.md).
std::vector<int> recomputable_tensors(const Problem& p, const Graph& g) {
  std::vector<int> tensors;
  for (int t = 0; t < p.num_tensors(); ++t) {
    const int producer = g.producer[t];
    if (producer < 0 || p.is_matmul(producer)) continue;
    std::vector<int> readers;
    for (const Consumer& c : g.consumers[t]) readers.push_back(c.op);
    std::sort(readers.begin(), readers.end());
    if (std::unique(readers.begin(), readers.end()) - readers.begin() >= 2) tensors.push_back(t);
  }
  return tensors;
}

// Those whose producer reads only graph inputs: recomputing them loads what loading them would, no more.
std::vector<int> recomputable_from_graph_inputs(const Problem& p, const Graph& g) {
  std::vector<int> tensors;
  for (int t : recomputable_tensors(p, g)) {
    const std::vector<int>& in = p.inputs[g.producer[t]];
    if (std::all_of(in.begin(), in.end(), [&](int x) { return g.producer[x] < 0; })) tensors.push_back(t);
  }
  return tensors;
}

// The tensors an op reads, each once (`T1 = T0 @ T0` reads T0 once).
std::vector<int> distinct_inputs(const Problem& p, int op) {
  std::vector<int> reads = p.inputs[op];
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  return reads;
}

// The order with a copy of each recomputed tensor's producer placed just before the tensor's second reader;
// that copy serves every later reader (a reader is served by the nearest instance of the producer before it).
std::vector<int> with_recomputation(const std::vector<int>& order, const std::vector<int>& recompute,
                                    const Problem& p, const Graph& g) {
  if (recompute.empty()) return order;
  std::vector<int> items;
  std::vector<int> readers_seen(p.num_tensors(), 0);
  for (int op : order) {
    for (int t : distinct_inputs(p, op))
      if (std::find(recompute.begin(), recompute.end(), t) != recompute.end() && ++readers_seen[t] == 2)
        items.push_back(g.producer[t]);
    items.push_back(op);
  }
  return items;
}

}  // namespace mlsys::search
