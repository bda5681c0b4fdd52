// Fusing the best schedule's neighbours: a pair of subgraphs where the later one reads what the earlier one
// produces becomes one subgraph at the later one's place when the oracle prices it below the two. Orders
// put side by side only what their kind lines up; this asks about the pairs the data flow suggests. When
// no fusion gains, a small subgraph whose outputs only MatMuls read may instead run again in front of each
// of them, as a chain (streamed into each reader), which the orders cannot express.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "solver/search_internal.hpp"

namespace mlsys::search {
namespace {

// Subgraphs above this many ops are not merged: each question's price grows with its ops, and the pass
// asks one per producer of every subgraph.
constexpr size_t kLongestMerge = 32;
// A producer is looked for among this many subgraphs before its reader, so that a pass costs at most this
// many scans per input on any graph (an attention head's three ops lie a level of heads apart: 16 subgraphs
// on gpt2-medium).
constexpr size_t kMergeWindow = 256;
// Runs of consecutive subgraphs merged at once, when no pair gains: up to this many.
constexpr size_t kLongestRun = 5;
// The pass stops this many times the last whole-schedule verification before the deadline, so that what it
// merged so far is verified and offered in time (DenseNet-169's 34,338 ops: the pass takes about 20 s, and
// cut by a 10 s deadline it used to be discarded whole). Three times, for a verification slowed by load.
constexpr double kOfferReserve = 3.0;
// Streaming a subgraph into its readers: at most this many ops, read by at most this many MatMuls (each
// reader is a question, and each copy is paid again).
constexpr size_t kLongestStreamed = 4;
constexpr size_t kMostStreamReaders = 8;

class MergePass {
 public:
  MergePass(Incumbent& inc, OracleCache& cache, Schedule schedule)
      : inc_(inc),
        p_(inc.problem),
        g_(inc.graph),
        oracle_(inc.problem, inc.graph, inc.options.model, &inc.evaluations, &cache),
        s_(std::move(schedule)),
        latency_(s_.reported_latencies.value_or(std::vector<double>{})),
        stop_at_(inc.deadline - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                    kOfferReserve * inc.verify_seconds.load() + 0.01))) {
    oracle_.set_expired([this] { return over(); });
  }
  // Past the pass's own end (before the deadline) or the search's.
  bool over() const { return inc_.expired() || Clock::now() >= stop_at_; }

  // Merges until no pair gains; returns how many merges were made.
  int run() {
    int merges = 0;
    if (latency_.size() != s_.subgraphs.size()) return 0;  // only a verified schedule has them
    for (bool merged = true; merged && !over();) {
      merged = false;
      for (size_t j = 1; j < s_.subgraphs.size() && !over(); ++j)
        for (size_t i : producers_of(j))
          if (try_merge(i, j)) {
            ++merges;
            merged = true;
            break;  // subgraph j moved to j - 1: the next j is the subgraph after it
          }
      if (merged) continue;  // pairs first, until none gains: they are the cheap questions
      // No pair gains, but three to five in a row may: a sum of heads, its activation and the next layer's
      // MatMuls gain only together, where the activation becomes in-chain between heads and tails (M12).
      // The longest run first, since it holds the most of such a chain. Asked only once pairs are done: from
      // a first schedule of single ops, a pass cut by the deadline would otherwise merge fewer pairs
      // (EfficientNetV2-M at --timeout 10: 3,832,518 against 3,326,287).
      for (size_t j = 2; j < s_.subgraphs.size() && !over(); ++j)
        for (size_t length = std::min(kLongestRun, j + 1); length >= 3; --length)
          if (try_merge_run(j + 1 - length, j)) {
            ++merges;
            merged = true;
            break;
          }
      if (merged) continue;
      // Nothing merges any more: try running small subgraphs again inside each reader's chain.
      // A subgraph, or two where the first keeps what the second reads (a head kept for its epilogue).
      index_instances();
      for (size_t i = 0; i < s_.subgraphs.size() && !over(); ++i)
        if (try_stream_into_readers(i, i) || (i > 0 && try_stream_into_readers(i - 1, i))) {
          ++merges;
          merged = true;
          index_instances();
          i = i > 1 ? i - 2 : 0;  // the subgraphs from i - 1 on are new or were after it
        }
      if (merged) continue;
      // A Pointwise op read in several later subgraphs (squeeze-and-excite's activation, read by the pooling
      // MatMul and by the product) made again, in-chain, inside each of them.
      for (int op = 0; op < p_.num_ops() && !over(); ++op)
        if (try_stream_chain_into_readers(op)) {
          ++merges;
          merged = true;
          index_instances();
        }
    }
    return merges;
  }
  const Schedule& schedule() const { return s_; }

 private:
  // The subgraphs before j that hold the nearest producer of one of j's inputs, nearest first.
  std::vector<size_t> producers_of(size_t j) const {
    std::vector<size_t> found;
    for (int op : s_.subgraphs[j].ops)
      for (int t : p_.inputs[op]) {
        const int producer = g_.producer[t];
        if (producer < 0) continue;
        for (size_t i = j; i-- > 0 && j - i <= kMergeWindow;)
          if (holds(i, producer)) {
            if (std::find(found.begin(), found.end(), i) == found.end()) found.push_back(i);
            break;
          }
      }
    std::sort(found.rbegin(), found.rend());
    return found;
  }
  bool holds(size_t i, int op) const {
    const std::vector<int>& ops = s_.subgraphs[i].ops;
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  }
  const std::vector<int>& retained_in(size_t i) const {
    static const std::vector<int> none;
    return i == 0 ? none : s_.subgraphs[i - 1].retain;
  }

  // What the pair receives retained and retains when i's ops run inside j, or nullopt if the merge would
  // change another subgraph. Neighbours merge in place: the pair receives what i received and keeps what j
  // kept, and what i kept for j becomes internal. Otherwise i's ops move to j's place, so i may neither
  // receive nor keep anything, and no subgraph between them may read what i produces. Either way every
  // tensor that becomes internal (i produces it, j reads it) may have no reader outside the pair, since an
  // internal tensor is never written back (M8).
  struct Retention {
    std::vector<int> in, out;
  };
  std::optional<Retention> mergeable(size_t i, size_t j) const {
    const SubgraphSpec& a = s_.subgraphs[i];
    const SubgraphSpec& b = s_.subgraphs[j];
    if (a.ops.size() + b.ops.size() > kLongestMerge) return std::nullopt;
    const bool neighbours = j == i + 1;
    if (!neighbours && (!a.retain.empty() || !retained_in(i).empty())) return std::nullopt;
    std::unordered_set<int> pair(a.ops.begin(), a.ops.end());
    for (int op : b.ops)
      if (!pair.insert(op).second) return std::nullopt;  // an op recomputed in both
    std::unordered_set<int> produced;
    for (int op : a.ops) produced.insert(p_.outputs[op].begin(), p_.outputs[op].end());
    for (size_t k = i + 1; k < j; ++k)
      for (int op : s_.subgraphs[k].ops)
        for (int t : p_.inputs[op])
          if (produced.count(t)) return std::nullopt;
    auto read_outside = [&](int t) {
      return std::any_of(g_.consumers[t].begin(), g_.consumers[t].end(),
                         [&](const Consumer& c) { return !pair.count(c.op); });
    };
    for (int op : b.ops)
      for (int t : p_.inputs[op])
        if (produced.count(t) && read_outside(t)) return std::nullopt;
    for (int t : a.retain)
      if (read_outside(t)) return std::nullopt;
    return Retention{neighbours ? retained_in(i) : retained_in(j), b.retain};
  }

  bool try_merge(size_t i, size_t j) {
    const std::optional<Retention> retention = mergeable(i, j);
    if (!retention) return false;
    std::vector<int> ops = s_.subgraphs[i].ops;
    ops.insert(ops.end(), s_.subgraphs[j].ops.begin(), s_.subgraphs[j].ops.end());
    if (!replace_if_cheaper(j, ops, retention->in, retention->out, latency_[i] + latency_[j])) return false;
    s_.subgraphs.erase(s_.subgraphs.begin() + static_cast<long>(i));
    latency_.erase(latency_.begin() + static_cast<long>(i));
    return true;
  }

  // Asks the oracle for `ops` as one subgraph; if it costs less than `apart`, it becomes subgraph `at`.
  bool replace_if_cheaper(size_t at, const std::vector<int>& ops, const std::vector<int>& in,
                          const std::vector<int>& out, double apart) {
    if (oracle_.lower_bound(ops, in, out) >= apart) return false;
    const std::optional<SubgraphChoice> best = oracle_.best(ops, in, out);
    if (!best || best->latency >= apart * (1 - 1e-12)) return false;
    s_.subgraphs[at] = {ops, best->granularity, out, best->traversal_order()};
    latency_[at] = best->latency;
    return true;
  }

  // Subgraphs first..last (consecutive, each reading what the one before it produces) as one at last's
  // place: it receives what first received and keeps what last kept; what the others kept becomes internal,
  // and so may have no reader outside the run, nor may any tensor the run both makes and reads.
  bool try_merge_run(size_t first, size_t last) {
    std::vector<int> ops;
    std::unordered_set<int> run, produced;
    for (size_t k = first; k <= last; ++k) {
      const SubgraphSpec& sg = s_.subgraphs[k];
      if (k > first && !reads_from(k, produced)) return false;
      for (int op : sg.ops) {
        if (!run.insert(op).second) return false;  // an op recomputed twice in the run
        ops.push_back(op);
      }
      for (int op : sg.ops) produced.insert(p_.outputs[op].begin(), p_.outputs[op].end());
    }
    if (ops.size() > kLongestMerge) return false;
    auto read_outside = [&](int t) {
      return std::any_of(g_.consumers[t].begin(), g_.consumers[t].end(),
                         [&](const Consumer& c) { return !run.count(c.op); });
    };
    for (int op : ops)
      for (int t : p_.inputs[op])
        if (produced.count(t) && read_outside(t)) return false;
    double apart = 0;
    for (size_t k = first; k <= last; ++k) apart += latency_[k];
    const std::vector<int> out = s_.subgraphs[last].retain;  // a copy: the subgraph it lives in is replaced
    if (!replace_if_cheaper(last, ops, retained_in(first), out, apart)) return false;
    s_.subgraphs.erase(s_.subgraphs.begin() + static_cast<long>(first),
                       s_.subgraphs.begin() + static_cast<long>(last));
    latency_.erase(latency_.begin() + static_cast<long>(first), latency_.begin() + static_cast<long>(last));
    return true;
  }
  bool reads_from(size_t k, const std::unordered_set<int>& produced) const {
    for (int op : s_.subgraphs[k].ops)
      for (int t : p_.inputs[op])
        if (produced.count(t)) return true;
    return false;
  }

  // Where each op runs: the subgraphs holding it (an op recomputed runs in several).
  void index_instances() {
    instances_.assign(p_.num_ops(), {});
    for (size_t k = 0; k < s_.subgraphs.size(); ++k)
      for (int op : s_.subgraphs[k].ops) instances_[op].push_back(k);
  }
  // The first subgraph of the run of subgraphs, each keeping tensors for the next, that ends at j: a subgraph
  // placed before it breaks no hand-over (M26).
  size_t start_of_retention_run(size_t j) const {
    while (j > 0 && !retained_in(j).empty()) --j;
    return j;
  }

  // A subgraph the oracle priced, and a change to the schedule made of them: subgraphs replaced (nullopt:
  // dropped), and new ones placed before or after a subgraph.
  struct Priced {
    SubgraphSpec spec;
    double latency;
  };
  struct Edit {
    std::map<size_t, std::optional<Priced>> replaced;
    std::map<size_t, std::vector<Priced>> before, after;
  };
  std::optional<Priced> price(const std::vector<int>& ops, const std::vector<int>& in,
                              const std::vector<int>& out) {
    const std::optional<SubgraphChoice> best = oracle_.best(ops, in, out);
    if (!best) return std::nullopt;
    return Priced{{ops, best->granularity, out, best->traversal_order()}, best->latency};
  }
  void apply(Edit& edit) {
    std::vector<SubgraphSpec> subgraphs;
    std::vector<double> latency;
    auto add = [&](Priced& x) {
      subgraphs.push_back(std::move(x.spec));
      latency.push_back(x.latency);
    };
    for (size_t k = 0; k < s_.subgraphs.size(); ++k) {
      for (Priced& x : edit.before[k]) add(x);
      if (auto it = edit.replaced.find(k); it == edit.replaced.end()) {
        subgraphs.push_back(std::move(s_.subgraphs[k]));
        latency.push_back(latency_[k]);
      } else if (it->second) {
        add(*it->second);
      }
      for (Priced& x : edit.after[k]) add(x);
    }
    s_.subgraphs = std::move(subgraphs);
    latency_ = std::move(latency);
  }

  // The ops outside `ops` that read what they make, each once; nullopt when one of those tensors is a graph
  // output (it must be stored where it is made).
  std::optional<std::vector<int>> readers_outside(const std::vector<int>& ops) const {
    std::vector<int> readers;
    for (int op : ops)
      for (int t : p_.outputs[op]) {
        if (g_.is_graph_output[t]) return std::nullopt;
        for (const Consumer& c : g_.consumers[t])
          if (std::find(ops.begin(), ops.end(), c.op) == ops.end() &&
              std::find(readers.begin(), readers.end(), c.op) == readers.end())
            readers.push_back(c.op);
      }
    return readers;
  }

  // Whether tensor t is in slow memory before subgraph k: a graph input, or written back by the one subgraph
  // that makes it (not read there, not kept), before k.
  bool stored_before(int t, size_t k) const {
    const int producer = g_.producer[t];
    if (producer < 0) return true;
    if (instances_[producer].size() != 1 || instances_[producer][0] >= k) return false;
    const SubgraphSpec& maker = s_.subgraphs[instances_[producer][0]];
    if (std::find(maker.retain.begin(), maker.retain.end(), t) != maker.retain.end()) return false;
    return std::none_of(g_.consumers[t].begin(), g_.consumers[t].end(), [&](const Consumer& c) {
      return std::find(maker.ops.begin(), maker.ops.end(), c.op) != maker.ops.end();
    });
  }

  // Subgraphs first..last (one, or two where the first keeps what the second reads) run again in front of
  // each MatMul that reads what they make, each copy with that reader as its one subgraph, and are dropped:
  // the readers leave their subgraphs, which then load the readers' outputs. A head computed once and read by
  // a few MatMuls then pays its streamed price per reader instead of its padded one (M24), with its epilogue
  // in-chain: RegNet's stride-2 1x1 convolution and its ReLU, read by one to four of the grouped
  // convolution's offsets. Only where nothing else changes: the run receives and keeps nothing outside
  // itself, its ops and their readers run once, and no reader's output is kept for the subgraph after its
  // host.
  bool try_stream_into_readers(size_t first, size_t last) {
    if (!retained_in(first).empty() || !s_.subgraphs[last].retain.empty()) return false;
    std::vector<int> made;  // the run's ops, in order
    for (size_t k = first; k <= last; ++k) {
      if (k < last && s_.subgraphs[k].retain.empty()) return false;
      made.insert(made.end(), s_.subgraphs[k].ops.begin(), s_.subgraphs[k].ops.end());
    }
    if (made.size() > kLongestStreamed) return false;
    if (std::none_of(made.begin(), made.end(), [&](int op) { return p_.is_matmul(op); })) return false;
    if (std::any_of(made.begin(), made.end(), [&](int op) { return instances_[op].size() != 1; })) return false;
    const std::unordered_set<int> own(made.begin(), made.end());
    const std::optional<std::vector<int>> found = readers_outside(made);
    if (!found || found->empty() || found->size() > kMostStreamReaders) return false;
    const std::vector<int>& readers = *found;
    std::map<size_t, std::vector<int>> hosts;  // host subgraph -> the readers leaving it
    for (int r : readers) {
      if (!p_.is_matmul(r) || instances_[r].size() != 1) return false;
      const size_t host = instances_[r][0];
      if (host <= last || start_of_retention_run(host) <= last) return false;
      for (int t : p_.outputs[r])
        if (std::find(s_.subgraphs[host].retain.begin(), s_.subgraphs[host].retain.end(), t) !=
            s_.subgraphs[host].retain.end())
          return false;
      for (int t : p_.inputs[r])
        if (!own.count(g_.producer[t]) && !stored_before(t, start_of_retention_run(host))) return false;
      hosts[host].push_back(r);
    }
    // Price the copies and what is left of each host; keep the change only if the whole costs less.
    double before = 0, after = 0;
    Edit edit;
    for (size_t k = first; k <= last; ++k) {
      before += latency_[k];
      edit.replaced[k] = std::nullopt;
    }
    for (const auto& [host, leaving] : hosts) {
      before += latency_[host];
      for (int r : leaving) {
        std::vector<int> ops = made;
        ops.push_back(r);
        std::optional<Priced> copy = price(ops, {}, {});
        if (!copy) return false;
        after += copy->latency;
        edit.before[start_of_retention_run(host)].push_back(std::move(*copy));
      }
      std::vector<int> left;
      for (int op : s_.subgraphs[host].ops)
        if (std::find(leaving.begin(), leaving.end(), op) == leaving.end()) left.push_back(op);
      edit.replaced[host] = std::nullopt;
      if (left.empty()) continue;
      edit.replaced[host] = price(left, retained_in(host), s_.subgraphs[host].retain);
      if (!edit.replaced[host]) return false;
      after += edit.replaced[host]->latency;
      if (after >= before) return false;
    }
    if (after >= before * (1 - 1e-12)) return false;
    apply(edit);
    return true;
  }

  // The ops a chain into P's readers carries: a MatMul head, then the Pointwise ops down to P, each read by
  // the next alone and the only maker of what the next reads; the head is a maker of what the top one reads,
  // read by it alone. Empty when P has no such chain.
  std::vector<int> chain_above(int pointwise) const {
    std::vector<int> chain{pointwise};
    for (int x = pointwise; chain.size() <= kLongestStreamed;) {
      std::vector<int> makers;
      for (int t : p_.inputs[x])
        if (g_.producer[t] >= 0) makers.push_back(g_.producer[t]);
      if (makers.size() == 1 && !p_.is_matmul(makers[0]) && reads_only(p_, g_, makers[0], x)) {
        chain.insert(chain.begin(), makers[0]);
        x = makers[0];
        continue;
      }
      for (int maker : makers)
        if (p_.is_matmul(maker) && reads_only(p_, g_, maker, x)) {
          chain.insert(chain.begin(), maker);
          return chain;
        }
      return {};
    }
    return {};
  }

  // A Pointwise op P read in two or more later subgraphs runs again, in-chain, inside each of them, with the
  // ops above it down from a MatMul head (chain_above), and leaves its own subgraphs. Made once, P and the ops
  // above it pay their padded price (M23); in each reader's subgraph they stream towards its tail. A reader's
  // subgraph may hold another MatMul that the chain's head would make a third (M13): it then runs alone just
  // before. RegNet's squeeze-and-excite: the sum of a grouped convolution's offsets and its ReLU run once
  // towards the pooling MatMul and once towards the 1x1 convolution after the product.
  bool try_stream_chain_into_readers(int pointwise) {
    if (p_.is_matmul(pointwise)) return false;
    const std::optional<std::vector<int>> found = readers_outside({pointwise});
    if (!found || found->size() < 2 || found->size() > kMostStreamReaders) return false;
    const std::vector<int>& readers = *found;
    const std::vector<int> chain = chain_above(pointwise);
    if (chain.empty()) return false;
    // Where the chain's ops run now, each once, in subgraphs that receive and keep only what chain ops make
    // (the one-op segments of a head, its epilogue and P hand each other their outputs), and whose successor
    // is one of them or a host when they keep something.
    std::unordered_set<int> made;
    for (int op : chain) made.insert(p_.outputs[op].begin(), p_.outputs[op].end());
    auto only_made = [&](const std::vector<int>& tensors) {
      return std::all_of(tensors.begin(), tensors.end(), [&](int t) { return made.count(t) > 0; });
    };
    std::set<size_t> makers;
    for (int op : chain) {
      if (instances_[op].size() != 1) return false;
      const size_t k = instances_[op][0];
      if (!only_made(retained_in(k)) || !only_made(s_.subgraphs[k].retain)) return false;
      makers.insert(k);
    }
    std::map<size_t, std::vector<int>> hosts;  // host -> the readers in it
    for (int r : readers) {
      if (instances_[r].size() != 1 || instances_[r][0] <= *makers.rbegin()) return false;
      hosts[instances_[r][0]].push_back(r);
    }
    if (hosts.size() < 2) return false;
    for (size_t k : makers)
      if (!s_.subgraphs[k].retain.empty() && !makers.count(k + 1) && !hosts.count(k + 1)) return false;
    // What the chain reads besides its own ops must be in slow memory before the first host: stored there
    // already, or made beside a chain op that read it, and then read by nothing else there (with the chain
    // gone it is written back).
    const std::unordered_set<int> own(chain.begin(), chain.end());
    for (int op : chain)
      for (int t : p_.inputs[op]) {
        const int maker = g_.producer[t];
        if (own.count(maker) || stored_before(t, hosts.begin()->first)) continue;
        if (maker < 0 || instances_[maker].size() != 1 || !makers.count(instances_[maker][0])) return false;
        if (std::any_of(g_.consumers[t].begin(), g_.consumers[t].end(), [&](const Consumer& c) {
              return !own.count(c.op) && instances_[c.op] == instances_[maker];
            }))
          return false;
      }
    double before = 0, after = 0;
    Edit edit;
    for (size_t k : makers) {
      before += latency_[k];
      std::vector<int> left;
      for (int op : s_.subgraphs[k].ops)
        if (!own.count(op)) left.push_back(op);
      edit.replaced[k] = std::nullopt;
      if (left.empty()) continue;
      edit.replaced[k] = price(left, {}, {});
      if (!edit.replaced[k]) return false;
      after += edit.replaced[k]->latency;
    }
    for (const auto& [host, in_host] : hosts) {
      before += latency_[host];
      const std::optional<double> placed = after < before ? place_chain(chain, made, host, in_host, edit)
                                                          : std::nullopt;
      if (!placed) return false;
      after += *placed;
    }
    if (after >= before * (1 - 1e-12)) return false;
    apply(edit);
    return true;
  }

  // The chain's copy inside `host` (which holds `in_host`, the chain's readers there), into `edit`: the host's
  // ops after the chain's, or, if cheaper, with one MatMul that is no reader run alone, just before the host
  // when the host reads what it makes, just after when it reads what the host makes (nothing kept across).
  // Returns what it costs, or nullopt when no form of it works.
  std::optional<double> place_chain(const std::vector<int>& chain, const std::unordered_set<int>& made, size_t host,
                   const std::vector<int>& in_host, Edit& edit) {
    const SubgraphSpec& h = s_.subgraphs[host];
    std::vector<int> in;  // what it receives, but what the chain now makes inside it
    for (int t : retained_in(host))
      if (!made.count(t)) in.push_back(t);
    std::vector<int> ops = chain;
    ops.insert(ops.end(), h.ops.begin(), h.ops.end());
    std::optional<Priced> best = price(ops, in, h.retain), alone;
    bool alone_after = false;
    auto in_h = [&](int op) { return std::find(h.ops.begin(), h.ops.end(), op) != h.ops.end(); };
    auto kept = [&](int t) { return std::find(h.retain.begin(), h.retain.end(), t) != h.retain.end(); };
    for (int x : h.ops) {
      if (!p_.is_matmul(x) || std::count(in_host.begin(), in_host.end(), x)) continue;
      const bool after_host = std::any_of(p_.inputs[x].begin(), p_.inputs[x].end(), [&](int t) {
        return g_.producer[t] >= 0 && g_.producer[t] != x && in_h(g_.producer[t]);
      });
      const size_t at = start_of_retention_run(host);
      if (after_host ? !h.retain.empty()
                     : !std::all_of(p_.inputs[x].begin(), p_.inputs[x].end(),
                                    [&](int t) { return stored_before(t, at); }))
        continue;
      if (std::any_of(p_.outputs[x].begin(), p_.outputs[x].end(), [&](int t) {
            return kept(t) || (after_host && std::any_of(g_.consumers[t].begin(), g_.consumers[t].end(),
                                                         [&](const Consumer& c) { return in_h(c.op); }));
          }))
        continue;
      std::optional<Priced> first = price({x}, {}, {});
      if (!first) continue;
      std::vector<int> rest = chain;
      for (int op : h.ops)
        if (op != x) rest.push_back(op);
      std::optional<Priced> second = price(rest, in, h.retain);
      if (!second || (best && first->latency + second->latency >= best->latency)) continue;
      best = std::move(second);
      alone = std::move(first);
      alone_after = after_host;
    }
    if (!best) return std::nullopt;
    const double cost = best->latency + (alone ? alone->latency : 0);
    if (alone) (alone_after ? edit.after[host] : edit.before[start_of_retention_run(host)]).push_back(*alone);
    edit.replaced[host] = std::move(best);
    return cost;
  }

  Incumbent& inc_;
  const Problem& p_;
  const Graph& g_;
  SubgraphOracle oracle_;
  Schedule s_;
  std::vector<double> latency_;
  std::vector<std::vector<size_t>> instances_;  // per op, the subgraphs that run it
  Clock::time_point stop_at_;
};

}  // namespace

void run_merge_search(Incumbent& inc, OracleCache& cache) {
  Schedule start;
  std::vector<int> recompute;
  {
    std::lock_guard lock(inc.mutex);
    start = *inc.best;
    recompute = inc.best_recompute;
  }
  MergePass pass(inc, cache, std::move(start));
  const int merges = pass.run();
  // Cut short by its own end, the merges made so far are offered; past the deadline (or stopped), verifying a
  // whole schedule would overrun it.
  if (merges == 0 || inc.expired()) return;
  // The order the local search walks from: the merged schedule's ops, first instances only.
  std::vector<int> order;
  std::vector<bool> seen(inc.problem.num_ops(), false);
  for (const SubgraphSpec& sg : pass.schedule().subgraphs)
    for (int op : sg.ops)
      if (!seen[op]) order.push_back(op), seen[op] = true;
  Schedule merged = pass.schedule();
  merged.reported_latencies.reset();
  inc.offer(std::move(merged), order, recompute, "merge(" + std::to_string(merges) + " pairs)");
}

}  // namespace mlsys::search
