// The cover bound: floors of connected op sets from the step model, and the LP over them (GLPK). The proof
// is docs/bounds.md#theorem-6; tests/cover_bound_test.cpp checks it against the brute-force optimum.
#include "verifier/cover_bound.hpp"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <tuple>

#include "verifier/certified_rounding.hpp"

namespace mlsys {

namespace {

using Clock = std::chrono::steady_clock;

// Connected sets of ops (M7's neighbours: ops sharing a tensor), each once (Wernicke's ESU enumeration:
// the smallest op is the root, and a set grows only by ops beyond it that no earlier member neighbours).
class SetEnumerator {
 public:
  SetEnumerator(const Problem& p, const Graph& graph, int64_t limit) : limit_(limit), n_(p.num_ops()) {
    adjacent_.assign(n_, {});
    std::vector<std::vector<int>> touching(p.num_tensors());
    for (int o = 0; o < n_; ++o) {
      for (int t : p.inputs[o]) touching[t].push_back(o);
      for (int t : p.outputs[o]) touching[t].push_back(o);
    }
    for (const auto& ops : touching)
      for (int a : ops)
        for (int b : ops)
          if (a != b) adjacent_[a].push_back(b);
    for (auto& a : adjacent_) {
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
    }
    rank_.assign(n_, 0);
    for (size_t i = 0; i < graph.topological_order.size(); ++i)
      rank_[graph.topological_order[i]] = static_cast<int>(i);
  }

  // False when there are more than `limit` sets, or `expired` says so (asked every 4,096 sets).
  bool run(std::vector<std::vector<int>>& sets, const std::function<bool()>& expired) {
    sets_ = &sets;
    expired_ = &expired;
    std::vector<int> members;
    std::vector<char> in_set(n_, 0), near(n_, 0);
    for (int root = 0; root < n_; ++root) {
      std::vector<int> extension;
      for (int u : adjacent_[root])
        if (u > root) extension.push_back(u);
      members = {root};
      in_set[root] = 1;
      if (!grow(root, members, extension, in_set)) return false;
      in_set[root] = 0;
    }
    return true;
  }

 private:
  bool grow(int root, std::vector<int>& members, std::vector<int> extension, std::vector<char>& in_set) {
    if (static_cast<int64_t>(sets_->size()) >= limit_) return false;
    if ((sets_->size() & 4095) == 4095 && (*expired_)()) return false;
    std::vector<int> ordered = members;
    std::sort(ordered.begin(), ordered.end(), [&](int a, int b) { return rank_[a] < rank_[b]; });
    sets_->push_back(std::move(ordered));
    while (!extension.empty()) {
      const int v = extension.back();
      extension.pop_back();
      std::vector<int> next = extension;
      for (int u : adjacent_[v]) {
        if (u <= root || in_set[u]) continue;
        const bool neighbours_set = std::any_of(members.begin(), members.end(), [&](int m) {
          return std::binary_search(adjacent_[m].begin(), adjacent_[m].end(), u);
        });
        if (!neighbours_set && std::find(next.begin(), next.end(), u) == next.end()) next.push_back(u);
      }
      members.push_back(v);
      in_set[v] = 1;
      const bool ok = grow(root, members, std::move(next), in_set);
      in_set[v] = 0;
      members.pop_back();
      if (!ok) return false;
    }
    return true;
  }

  int64_t limit_;
  int n_;
  std::vector<std::vector<int>> adjacent_;
  std::vector<int> rank_;
  std::vector<std::vector<int>>* sets_ = nullptr;
  const std::function<bool()>* expired_ = nullptr;
};

// A floor every set has without compiling it: each op's compute floor, and the traffic of graph inputs,
// graph outputs and tensors over the capacity that cross its boundary (each at least once).
double cheap_floor(const Problem& p, const Graph& graph, const ModelOptions& options,
                   const std::vector<int>& ops) {
  double compute = 0, elements = 0;
  auto inside = [&](int o) { return std::find(ops.begin(), ops.end(), o) != ops.end(); };
  std::vector<int> seen;
  for (int o : ops) {
    compute += compute_floor(p, graph, o, options.matmul_compute);
    for (int t : p.inputs[o])
      if ((graph.producer[t] < 0 || !inside(graph.producer[t])) && always_moves(p, graph, t) &&
          std::find(seen.begin(), seen.end(), t) == seen.end()) {
        seen.push_back(t);
        elements += static_cast<double>(p.size(t));
      }
    for (int t : p.outputs[o]) {
      const bool read_inside = std::any_of(graph.consumers[t].begin(), graph.consumers[t].end(),
                                           [&](const Consumer& c) { return inside(c.op); });
      if (!read_inside && always_moves(p, graph, t)) elements += static_cast<double>(p.size(t));
    }
  }
  return std::max(compute, elements / p.slow_memory_bandwidth);
}

struct GlpkDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

}  // namespace

namespace {

// The LP over the sets, solved in its covering form: minimize the floors of a fractional cover of the ops
// (one row per op, >= 1) in which every tensor is kept at least as often as it is received (one row per
// tensor, kept - received >= 0). The op rows' duals are the op prices, the tensor rows' the credits. One
// column per set and retention context; columns are generated: the LP holds only the contexts added so far,
// and the caller adds those whose floor is below their prices.
class CoverLp {
 public:
  CoverLp(int ops, int tensors, int store_rows)
      : lp_(glp_create_prob()), ops_(ops), tensors_(tensors), store_rows_(store_rows) {
    glp_set_obj_dir(lp_.get(), GLP_MIN);
    glp_add_rows(lp_.get(), ops + tensors + store_rows);
    for (int r = 1; r <= ops + tensors + store_rows; ++r)
      glp_set_row_bnds(lp_.get(), r, GLP_LO, r <= ops || r > ops + tensors ? 1 : 0, 0);
  }
  // `store_rows`: the Theorem 10 rows (StoreRow) the column counts in.
  void add(const std::vector<int>& ops, const RetentionFloor& context, const std::vector<int>& store_rows) {
    const int column = glp_add_cols(lp_.get(), 1);
    std::vector<int> rows{0};
    std::vector<double> coefficients{0};
    auto entry = [&](int row, double a) {
      rows.push_back(row);
      coefficients.push_back(a);
    };
    for (int o : ops) entry(o + 1, 1);
    for (int t : context.retained_out) entry(ops_ + t + 1, 1);
    for (int t : context.retained_in) entry(ops_ + t + 1, -1);
    for (int r : store_rows) entry(ops_ + tensors_ + r + 1, 1);
    glp_set_mat_col(lp_.get(), column, static_cast<int>(rows.size()) - 1, rows.data(), coefficients.data());
    glp_set_col_bnds(lp_.get(), column, GLP_LO, 0, 0);
    glp_set_obj_coef(lp_.get(), column, context.floor.value);
  }
  // False when the simplex fails, finds no cover, or runs out of `seconds`.
  bool solve(double seconds) {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    parm.tm_lim = static_cast<int>(std::clamp(seconds * 1000, 1.0, 2.0e9));
    return glp_simplex(lp_.get(), &parm) == 0 && glp_get_status(lp_.get()) == GLP_OPT;
  }
  int columns() const { return glp_get_num_cols(lp_.get()); }
  // A store row no column can meet is left out (a row left out only weakens the bound).
  void drop_store_row(int r) { glp_set_row_bnds(lp_.get(), ops_ + tensors_ + r + 1, GLP_FR, 0, 0); }
  // Row duals, clamped at 0 (a rounding error may leave them slightly negative): op prices, tensor credits,
  // store-row prices.
  std::tuple<std::vector<double>, std::vector<double>, std::vector<double>> duals() const {
    std::vector<double> y(ops_), credit(tensors_), store(store_rows_);
    for (int o = 0; o < ops_; ++o) y[o] = std::max(0.0, glp_get_row_dual(lp_.get(), o + 1));
    for (int t = 0; t < tensors_; ++t) credit[t] = std::max(0.0, glp_get_row_dual(lp_.get(), ops_ + t + 1));
    for (int r = 0; r < store_rows_; ++r)
      store[r] = std::max(0.0, glp_get_row_dual(lp_.get(), ops_ + tensors_ + r + 1));
    return {y, credit, store};
  }

 private:
  std::unique_ptr<glp_prob, GlpkDeleter> lp_;
  int ops_, tensors_, store_rows_;
};

// Theorem 10 (docs/bounds.md#theorem-10): a tensor `tensor` made by one op and read by another, `reader`,
// neither a graph input nor larger than the fast memory. In every schedule some run writes it to slow memory,
// or the run that computes `reader` first does not load it (it makes or receives it): one LP row each,
// sum >= 1, over the columns that may evict the tensor and those that count `reader` without surely loading
// it.
struct StoreRow {
  int tensor, reader;
};

std::vector<StoreRow> store_rows(const Problem& p, const Graph& graph) {
  std::vector<StoreRow> rows;
  for (int t = 0; t < p.num_tensors(); ++t) {
    if (graph.producer[t] < 0 || always_moves(p, graph, t)) continue;
    for (const Consumer& c : graph.consumers[t])
      if (std::none_of(rows.begin(), rows.end(),
                       [&](const StoreRow& r) { return r.tensor == t && r.reader == c.op; }))
        rows.push_back({t, c.op});
  }
  return rows;
}

// The sets and their floors while the LP runs: cheap until priced by the step model.
// The ops a set can compute for the first time. If an op o of S has a descendant outside S that has a
// descendant in S, that outside op ran before S (S reads what it leads to), and so did o before it: S is
// not o's first computation. Every op's first computation is in a set where it counts, so covering only
// the counted ops is still a relaxation of every schedule (docs/bounds.md#theorem-6).
std::vector<std::vector<int>> first_computations(const Problem& p, const Graph& graph,
                                                 const std::vector<std::vector<int>>& sets) {
  const int n = p.num_ops();
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  using Bits = std::vector<uint64_t>;
  auto set_bit = [](Bits& b, int i) { b[i / 64] |= uint64_t{1} << (i % 64); };
  std::vector<Bits> below(n, Bits(words, 0)), above(n, Bits(words, 0));  // descendants, ancestors
  const std::vector<int>& order = graph.topological_order;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int t : p.outputs[*it])
      for (const Consumer& c : graph.consumers[t]) {
        set_bit(below[*it], c.op);
        for (size_t w = 0; w < words; ++w) below[*it][w] |= below[c.op][w];
      }
  for (int o : order)
    for (int t : p.inputs[o])
      if (const int q = graph.producer[t]; q >= 0) {
        set_bit(above[o], q);
        for (size_t w = 0; w < words; ++w) above[o][w] |= above[q][w];
      }
  std::vector<std::vector<int>> counted(sets.size());
  for (size_t i = 0; i < sets.size(); ++i) {
    Bits members(words, 0), gap(words, 0), down(words, 0), up(words, 0);
    for (int o : sets[i]) {
      set_bit(members, o);
      for (size_t w = 0; w < words; ++w) {
        down[w] |= below[o][w];
        up[w] |= above[o][w];
      }
    }
    bool any_gap = false;
    for (size_t w = 0; w < words; ++w) {
      gap[w] = down[w] & up[w] & ~members[w];
      any_gap = any_gap || gap[w];
    }
    for (int o : sets[i]) {
      bool reaches_gap = false;
      for (size_t w = 0; w < words && any_gap; ++w) reaches_gap = reaches_gap || (below[o][w] & gap[w]);
      if (!reaches_gap) counted[i].push_back(o);
    }
  }
  return counted;
}

struct Prices {
  std::vector<double> op, credit, store;  // the LP's duals
};

struct SetFloors {
  const Problem& p;
  const Graph& graph;
  const ModelOptions& options;
  std::vector<std::vector<int>> sets{};
  std::vector<std::vector<int>> counted{};           // first_computations: the ops each set's column covers
  std::vector<double> cheap{};                       // cheap_floor, below every context's floor
  std::vector<std::vector<int>> keepable{};          // retainable_outputs: credited to a set not yet priced
  std::vector<StoreRow> store_rows{};                // Theorem 10
  std::vector<std::vector<int>> store_candidates{};  // the store rows a context of each set may count in
  std::vector<char> store_row_met{};                 // some column in the LP counts in the row (or dropped)
  std::vector<std::vector<RetentionFloor>> contexts{};        // once priced by the step model
  std::vector<std::vector<std::vector<int>>> context_rows{};  // the store rows each context counts in
  std::vector<char> exact{}, never{}, in_lp{};
  CoverBound& out;
  std::function<bool()> expired;
  size_t retention_choices;

  // Prices set `i` by the step model; false if it never fits.
  bool price(int i) {
    if (exact[i] || never[i]) return !never[i];
    contexts[i] = subgraph_floors(p, graph, options, sets[i], expired, retention_choices);
    ++out.priced_exactly;
    if (contexts[i].empty()) {
      never[i] = 1;
      ++out.never_fit;
      return false;
    }
    exact[i] = 1;
    context_rows[i].clear();
    for (const RetentionFloor& c : contexts[i]) context_rows[i].push_back(rows_counting(i, c));
    return true;
  }
  // The store rows a column of set i in `context` counts in: it may evict the tensor, or it counts the
  // reader without surely loading the tensor.
  std::vector<int> rows_counting(int i, const RetentionFloor& context) const {
    auto has = [](const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    std::vector<int> rows;
    for (int r : store_candidates[i])
      if (has(context.evicted, store_rows[r].tensor) ||
          (has(counted[i], store_rows[r].reader) && !has(context.loaded, store_rows[r].tensor)))
        rows.push_back(r);
    return rows;
  }
  // What a column of set i is charged at the duals: the prices of the ops it can compute first, plus the
  // credits of what it keeps, minus those of what it receives, plus the prices of its store rows.
  double charged(int i, const std::vector<int>& kept, const std::vector<int>& received, const Prices& y,
                 const std::vector<int>& rows) const {
    double sum = 0;
    for (int o : counted[i]) sum += y.op[o];
    for (int t : kept) sum += y.credit[t];
    for (int t : received) sum -= y.credit[t];
    for (int r : rows) sum += y.store[r];
    return sum;
  }
  // The least floor minus charge over set i's contexts (before pricing: the cheap floor, receiving nothing,
  // keeping all it could and counting in every store row it might, which is below every context).
  double reduced_cost(int i, const Prices& y) const {
    if (!exact[i]) return cheap[i] - charged(i, keepable[i], {}, y, store_candidates[i]);
    double least = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < contexts[i].size(); ++c) {
      const RetentionFloor& r = contexts[i][c];
      least =
          std::min(least, r.floor.value - charged(i, r.retained_out, r.retained_in, y, context_rows[i][c]));
    }
    return least;
  }
  void add_to(CoverLp& lp, int i) {
    in_lp[i] = 1;
    for (size_t c = 0; c < contexts[i].size(); ++c) {
      const std::vector<int>& rows = context_rows[i][c];
      if (contexts[i][c].retained_in.empty())  // a column that receives needs one that keeps to meet a row
        for (int r : rows) store_row_met[r] = 1;
      lp.add(counted[i], contexts[i][c], rows);
    }
  }
};

// One round of column generation after an LP solve: the sets whose floor is below their prices in some
// context are priced and added with all their contexts (false when there are none: the LP optimum is then
// the optimum over every set).
bool next_round(SetFloors& f, CoverLp& lp, const Prices& y, const std::function<double()>& left) {
  constexpr size_t kSetsPerRound = 256;
  std::vector<std::pair<double, int>> violated;
  for (int i = 0; i < static_cast<int>(f.sets.size()); ++i)
    if (!f.in_lp[i] && !f.never[i]) {  // a set that computes nothing first may still keep a tensor
      const double rc = f.reduced_cost(i, y);
      if (rc < -1e-9 * std::max(1.0, f.cheap[i])) violated.push_back({rc, i});
    }
  if (violated.empty()) return false;
  std::sort(violated.begin(), violated.end());
  size_t added = 0;
  for (const auto& [rc, i] : violated) {
    if (added >= kSetsPerRound || left() <= 0) break;
    // Priced before it enters: most sets of a small fast memory never fit, and keeping them out keeps the
    // LP small.
    if (!f.price(i) || f.reduced_cost(i, y) >= 0) continue;
    f.add_to(lp, i);
    ++added;
  }
  return true;
}

// Before a solve, every op needs a column that fits: the first set holding it (its singleton, as the sets are
// enumerated) that the step model does not reject. Returns an op no set can hold.
std::optional<int> cover_every_op(SetFloors& f, CoverLp& lp) {
  std::vector<char> covered(f.p.num_ops(), 0);
  for (int i = 0; i < static_cast<int>(f.sets.size()); ++i)
    if (f.in_lp[i])
      for (int o : f.counted[i]) covered[o] = 1;
  for (int o = 0; o < f.p.num_ops(); ++o) {
    for (int i = 0; i < static_cast<int>(f.sets.size()) && !covered[o]; ++i) {
      const auto& set = f.counted[i];
      if (f.in_lp[i] || std::find(set.begin(), set.end(), o) == set.end() || !f.price(i)) continue;
      f.add_to(lp, i);
      for (int member : set) covered[member] = 1;
    }
    if (!covered[o]) return o;
  }
  return std::nullopt;
}

// Likewise every store row needs a column that counts in it, or the LP has no solution: the singleton of the
// op that makes the tensor (which may evict it) or of its reader, else the first set with a context that
// does while receiving nothing (a column that receives needs another that keeps). A row no set meets so is
// dropped.
void meet_every_store_row(SetFloors& f, CoverLp& lp) {
  const int m = static_cast<int>(f.sets.size());
  std::vector<int> singleton(f.p.num_ops(), -1);
  for (int i = 0; i < m; ++i)
    if (f.sets[i].size() == 1) singleton[f.sets[i][0]] = i;
  auto meets = [&](int i, int r) {
    if (i < 0 || f.in_lp[i] || f.never[i]) return false;
    const auto& candidates = f.store_candidates[i];
    if (std::find(candidates.begin(), candidates.end(), r) == candidates.end() || !f.price(i)) return false;
    for (size_t c = 0; c < f.contexts[i].size(); ++c) {
      if (!f.contexts[i][c].retained_in.empty()) continue;  // a column that receives needs one that keeps
      const std::vector<int>& rows = f.context_rows[i][c];
      if (std::find(rows.begin(), rows.end(), r) != rows.end()) return true;
    }
    return false;
  };
  for (int r = 0; r < static_cast<int>(f.store_rows.size()); ++r) {
    if (f.store_row_met[r]) continue;
    const StoreRow& row = f.store_rows[r];
    for (int i : {singleton[f.graph.producer[row.tensor]], singleton[row.reader]})
      if (!f.store_row_met[r] && meets(i, r)) f.add_to(lp, i);
    for (int i = 0; i < m && !f.store_row_met[r]; ++i)
      if (meets(i, r)) f.add_to(lp, i);
    if (!f.store_row_met[r]) {
      lp.drop_store_row(r);
      f.store_row_met[r] = 1;
    }
  }
}

// Duals from a floating-point simplex may break a set's constraint by a rounding error: scale them until
// none does, then report the prices, credits and the tightest sets.
void certify(const SetFloors& f, Prices& y, CoverBound& out) {
  struct Tight {
    double charged;
    int set, context;  // context -1: the cheap floor of a set never priced
  };
  std::vector<Tight> columns;
  double scale = 1;
  for (int i = 0; i < static_cast<int>(f.sets.size()); ++i) {
    if (f.never[i]) continue;
    auto check = [&](double floor, double charged, int context) {
      if (charged > floor) scale = std::min(scale, floor / charged);
      columns.push_back({charged, i, context});
    };
    if (!f.exact[i]) check(f.cheap[i], f.charged(i, f.keepable[i], {}, y, f.store_candidates[i]), -1);
    for (size_t c = 0; c < f.contexts[i].size(); ++c) {
      const RetentionFloor& r = f.contexts[i][c];
      check(r.floor.value, f.charged(i, r.retained_out, r.retained_in, y, f.context_rows[i][c]),
            static_cast<int>(c));
    }
  }
  for (double& price : y.op) price *= scale;
  for (double& credit : y.credit) credit *= scale;
  for (double& price : y.store) price *= scale;
  out.op_prices = y.op;
  out.tensor_credits = y.credit;
  out.store_terms.clear();
  for (size_t r = 0; r < y.store.size(); ++r)
    if (y.store[r] > 0)
      out.store_terms.push_back({f.store_rows[r].tensor, f.store_rows[r].reader, y.store[r]});
  out.bound = round_down_certified(
      std::accumulate(y.op.begin(), y.op.end(), 0.0) + std::accumulate(y.store.begin(), y.store.end(), 0.0),
      certified_rounding_ulps(f.p));
  out.attempted = true;
  out.status = out.complete ? "complete" : "time limit";
  std::vector<std::pair<double, size_t>> tight;
  for (size_t k = 0; k < columns.size(); ++k) {
    const Tight& t = columns[k];
    const double floor = t.context < 0 ? f.cheap[t.set] : f.contexts[t.set][t.context].floor.value;
    const double sum = t.charged * scale;
    if (sum >= floor * (1 - 1e-6) && sum > 0) tight.push_back({sum, k});
  }
  std::sort(tight.rbegin(), tight.rend());
  for (size_t k = 0; k < tight.size() && k < 12; ++k) {
    const Tight& t = columns[tight[k].second];
    CoverBound::Binding b{f.sets[t.set],
                          f.counted[t.set],
                          {},
                          f.keepable[t.set],
                          false,
                          SubgraphFloor{f.cheap[t.set], 0, 0, {}}};
    if (t.context >= 0) {
      const RetentionFloor& r = f.contexts[t.set][t.context];
      b = {f.sets[t.set], f.counted[t.set], r.retained_in, r.retained_out, true, r.floor};
    }
    out.binding.push_back(std::move(b));
  }
}

}  // namespace

CoverBound cover_bound(const Problem& p, const Graph& graph, const ModelOptions& options,
                       const CoverLimits& limits, const std::function<void(const std::string&)>& progress) {
  CoverBound out;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.seconds));
  std::function<double()> left = [&] {
    if (limits.cancel && limits.cancel->load()) return 0.0;
    return std::chrono::duration<double>(deadline - Clock::now()).count();
  };
  SetFloors f{.p = p,
              .graph = graph,
              .options = options,
              .out = out,
              .expired = [&] { return left() <= 0; },
              .retention_choices = limits.retention_choices};
  // Tile sizes are tried one count at a time: with a native tile of thousands, that is too many to price.
  if (p.native_w > kCoverMaxNative || p.native_h > kCoverMaxNative) {
    out.status = "native granularity above " + std::to_string(kCoverMaxNative) + ": not attempted";
    return out;
  }
  if (p.num_ops() > kCoverMaxOps) {
    out.status = "more than " + std::to_string(kCoverMaxOps) +
                 " ops: the ancestry of every op would not fit the memory it is given; not attempted";
    return out;
  }
  if (!SetEnumerator(p, graph, limits.max_subgraphs).run(f.sets, [&] { return left() <= 0; })) {
    out.status = left() <= 0 ? "the time limit came before every connected set of ops was listed"
                             : "more than " + std::to_string(limits.max_subgraphs) +
                                   " connected sets of ops: not attempted";
    return out;
  }
  const int m = static_cast<int>(f.sets.size());
  out.subgraphs = m;
  f.counted = first_computations(p, graph, f.sets);
  for (int i = 0; i < m; ++i) out.reentrant += f.counted[i].size() < f.sets[i].size();
  f.cheap.resize(m);
  f.keepable.resize(m);
  f.contexts.resize(m);
  f.exact.assign(m, 0);
  f.never.assign(m, 0);
  f.in_lp.assign(m, 0);
  for (int i = 0; i < m; ++i) {
    f.cheap[i] = cheap_floor(p, graph, options, f.sets[i]);
    f.keepable[i] = retainable_outputs(p, graph, f.sets[i]);
  }
  if (limits.store_rows) f.store_rows = store_rows(p, graph);
  // A set may count in the rows of the tensors its ops make and of the readers it computes first.
  std::vector<std::vector<int>> rows_made(p.num_ops()), rows_read(p.num_ops());
  for (int r = 0; r < static_cast<int>(f.store_rows.size()); ++r) {
    rows_made[graph.producer[f.store_rows[r].tensor]].push_back(r);
    rows_read[f.store_rows[r].reader].push_back(r);
  }
  f.store_candidates.resize(m);
  f.context_rows.resize(m);
  for (int i = 0; i < m; ++i) {
    std::vector<int>& rows = f.store_candidates[i];
    for (int o : f.sets[i]) rows.insert(rows.end(), rows_made[o].begin(), rows_made[o].end());
    for (int o : f.counted[i]) rows.insert(rows.end(), rows_read[o].begin(), rows_read[o].end());
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  }
  f.store_row_met.assign(f.store_rows.size(), 0);
  CoverLp lp(p.num_ops(), p.num_tensors(), static_cast<int>(f.store_rows.size()));
  Prices y;
  while (left() > 0) {
    if (const auto uncovered = cover_every_op(f, lp)) {
      out.status = "op " + std::to_string(*uncovered) +
                   " fits in no subgraph at any granularity: no schedule exists (M20)";
      return out;
    }
    meet_every_store_row(f, lp);
    if (!lp.solve(left())) break;
    ++out.lp_rounds;
    std::tie(y.op, y.credit, y.store) = lp.duals();
    if (!next_round(f, lp, y, left)) {
      out.complete = true;
      break;
    }
    if (progress && out.lp_rounds % 50 == 0)
      progress("cover bound: round " + std::to_string(out.lp_rounds) + ", " +
               std::to_string(out.priced_exactly) + " of " + std::to_string(m) + " sets priced, " +
               std::to_string(lp.columns()) + " columns in the LP");
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (y.op.empty()) {
    out.status = "the LP was not solved within the time limit";
    return out;
  }
  certify(f, y, out);
  return out;
}

}  // namespace mlsys
