// The certified lower bound (docs/bounds.md). Every step costs max(compute, memory), so for any lambda in
// [0, 1] a schedule costs at least lambda * (its compute) + (1 - lambda) * (its memory time). Both sums are
// bounded below term by term: each op's compute once (M23, M24), each graph input loaded and each graph
// output stored once (M21, M22), and the operand reloads that a MatMul whose reduction is deeper than n_k
// cannot avoid (Theorem 1 of docs/bounds.md), unless the operand is produced in the same subgraph, which
// makes its producer compute again for every tile (M24's head charge): a choice, priced at its cheapest for
// the lambda.
#include "verifier/bound.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "verifier/link_walks.hpp"
#include "verifier/verify.hpp"

namespace mlsys {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Which links an op's output can feed: the MatMul inputs it reaches through Pointwise ops only. Only whether
// that is exactly one input matters, so at most two are kept.
struct HeadRoles {
  bool lhs = false, rhs = false;
  std::set<std::pair<int, int>> tails;  // (MatMul, input position) reached; two means "two or more"
  void add(std::pair<int, int> tail) {
    if (tails.size() < 2) tails.insert(tail);
  }
};

// Every op's roles, consumers before producers, so that a long Pointwise chain is walked once, not once per
// MatMul that feeds it (a hostile graph would make that quadratic).
std::vector<HeadRoles> all_head_roles(const Problem& p, const Graph& g) {
  std::vector<HeadRoles> roles(p.num_ops());
  for (auto it = g.topological_order.rbegin(); it != g.topological_order.rend(); ++it) {
    HeadRoles& r = roles[*it];
    for (int t : p.outputs[*it])
      for (const Consumer& c : g.consumers[t]) {
        if (p.is_matmul(c.op)) {
          (c.position == 0 ? r.lhs : r.rhs) = true;
          r.add({c.op, c.position});
          continue;
        }
        r.lhs |= roles[c.op].lhs;
        r.rhs |= roles[c.op].rhs;
        for (const auto& tail : roles[c.op].tails) r.add(tail);
      }
  }
  return roles;
}

// Per tensor, the MatMuls from which it is reachable through Pointwise ops only (it may be their output): the
// possible heads of a link that would make it ephemeral in its reader's subgraph (M12). At most two are kept.
std::vector<std::set<int>> all_link_heads(const Problem& p, const Graph& g) {
  std::vector<std::set<int>> heads(p.num_tensors());
  for (int op : g.topological_order)
    for (int out : p.outputs[op]) {
      std::set<int>& h = heads[out];
      if (p.is_matmul(op)) {
        h.insert(op);
        continue;
      }
      for (int in : p.inputs[op])
        for (int head : heads[in])
          if (h.size() < 2) h.insert(head);
    }
  return heads;
}

// A choice between two ways of paying for one tensor: loading it (traffic) or making it in the reader's
// subgraph (the head's compute again). The mixed schedules lie on the line between the two, except that
// the head's compute already counted once in the base may absorb part of the recompute (the kink).
struct Choice {
  double load_traffic = 0;  // store + reloads, time units
  double per_coverage = 0;  // the head's compute if the tail covered everything through the link
  bool link_fits = true;    // some tile of a linked run fits the fast memory (Theorem 4)
  // Theorem 3 (docs/bounds.md), when the head can link to this tail only: the rows of the tensor that are
  // stored come from runs where the head is no head, so its kept operand (the LHS for an LHS link) is
  // reloaded there, f * kept_reloads in all, of which the base already counts kept_once; and the links make
  // the head stream its other operand again for every tile, (1 - f) * streamed_again.
  double kept_reloads = 0, kept_once = 0, streamed_again = 0;
  // Theorem 5: when the kept operand is itself made by a MatMul (an intermediate read by the head alone), the
  // share f of the head's work done where it is no head pays, beyond nested_from, nested_per for it: stored
  // and reloaded, or linked from its own producer at the cost of streaming that one's operand per tile.
  double nested_per = 0, nested_from = 0;
  double head_base = 0;  // the head's base compute (already in the sum)
  // The head's output once, unpadded, as a MatMul that heads no link pays for it (M24: ceil(r / n_h) and
  // ceil(c / n_w)). A head pays its streamed side at n_k = n_w instead, which is more per row than this when
  // an RHS link's head has n_w < n_h: per_coverage is priced that way, this one must not be.
  double own_unpadded = 0;
  // Fraction f of the tail's work done with the tensor loaded: traffic f * load, head compute at least
  // max(base, f * own_unpadded + (1 - f) * per_coverage) (docs/bounds.md, Theorem 2). Convex in f: the least
  // value is at f = 0, f = 1 or the kink. Returns the value at lambda and sets the compute and traffic it
  // charges.
  double value(double lambda, double* compute, double* traffic) const {
    double best = INFINITY;
    auto at = [&](double f) {
      const double head = std::max(head_base, f * own_unpadded + (1 - f) * per_coverage);
      const double c = head - head_base;
      const double m = f * load_traffic + std::max(0.0, f * kept_reloads - kept_once) +
                       (1 - f) * streamed_again + std::max(0.0, f - nested_from) * nested_per;
      const double v = lambda * c + (1 - lambda) * m;
      if (v < best) {
        best = v;
        *compute = c;
        *traffic = m;
      }
    };
    at(1);
    if (!link_fits) return best;
    at(0);
    if (per_coverage > own_unpadded) {
      const double kink = (per_coverage - head_base) / (per_coverage - own_unpadded);
      if (kink > 0 && kink < 1) at(kink);
    }
    if (kept_reloads > kept_once) at(kept_once / kept_reloads);
    if (nested_per > 0 && nested_from > 0 && nested_from < 1) at(nested_from);
    return best;
  }
};

struct TensorTerm {
  int tensor = -1;
  // Theorem 17: `partner` (the reader's other operand, a graph input) is loaded `crowded` (time) for the
  // reader's share of the fast memory where the tensor is held; the choice's load_traffic is the lesser of
  // that and `load_alone` (stored and reloaded). -1: no Theorem 17 term.
  int partner = -1;
  double crowded = 0, load_alone = 0;
  double rho = 1;   // reloads forced on each element
  int reader = -1;  // the MatMul that forces them
  int side = 0;     // the input position at which every reader reads it
  bool graph_input = false;
  int head = -1;            // the only MatMul that could make the tensor in its reader's subgraph, or -1
  double linked_tiles = 0;  // tiles of a run that links the head to the reader over all of its output
  Choice choice;
};

// Theorem 4 (docs/bounds.md): the largest tile `h x w` of a run where MatMul `a` heads a link into `b`'s
// input `side` that fits the fast memory beside what is surely in it at every step: the head's kept operand
// strip (`h x K_a` for an LHS link), a k-range of its streamed operand (at least `K_a`) and of the tail's
// other operand (at least `w` for an LHS link), each counted only when it is a graph input (so a slice, M19),
// and the tail's partial sum tile (`h x w`, M20 C or D). 0 if not even `1 x 1` fits.
double largest_linked_tile(const Problem& p, const Graph& g, int a, int b, int side) {
  const int kept = p.inputs[a][side], streamed = p.inputs[a][1 - side], other = p.inputs[b][1 - side];
  const int yb = p.outputs[b][0];
  const double h_max = std::min<double>(static_cast<double>(p.native_h), static_cast<double>(p.heights[yb]));
  const double w_max = std::min<double>(static_cast<double>(p.native_w), static_cast<double>(p.widths[yb]));
  // Beyond 4,096 rows a tile the search would cost more than it could tell: native tiles then.
  if (kept == streamed || kept == other || streamed == other || h_max > 4096) return h_max * w_max;
  const double Ka = static_cast<double>(g.reduction_depth[a]), cap = p.fast_memory_capacity;
  const double strip = g.is_graph_input[kept] ? Ka : 0;
  const double column = g.is_graph_input[streamed] ? Ka : 0;
  const double row = g.is_graph_input[other] ? 1 : 0;
  double best = 0;
  for (double h = 1; h <= h_max; ++h) {
    // LHS link: strip * h + column + row * w + h * w <= cap; RHS link: strip * w + column + row * h + h * w.
    const double fixed = side == 0 ? strip * h + column : column + row * h;
    const double per_w = side == 0 ? row + h : strip + h;
    const double w = std::min(w_max, std::floor((cap - fixed) / per_w));
    if (w >= 1) best = std::max(best, h * w);
  }
  return best;
}

// How many tiles a run that links `a` into `b` needs to cover all of `b`'s output (Theorem 4), or 0 when no
// tile of that link fits the fast memory.
double linked_tiles(const Problem& p, const Graph& g, int a, int b, int side) {
  const double tile = largest_linked_tile(p, g, a, b, side);
  return tile > 0 ? static_cast<double>(p.size(p.outputs[b][0])) / tile : 0;
}

// Theorem 1's reloads per element of MatMul o's operand on `side`, where o heads no link of that side: once
// per tile column for the LHS (N / n_w), once per tile row for the RHS (M / n_h).
double reloads_per_element(const Problem& p, int o, int side) {
  const int y = p.outputs[o][0];
  return side == 0 ? static_cast<double>(p.widths[y]) / static_cast<double>(p.native_w)
                   : static_cast<double>(p.heights[y]) / static_cast<double>(p.native_h);
}

// The base terms: each op's compute once (M23, M24), each graph input loaded and each graph output stored
// once (M21, M22).
struct BaseTerms {
  double compute = 0, traffic = 0;
  std::vector<BoundTerm> terms;
  std::vector<double> op_floor;  // each op's compute floor
};

BaseTerms base_terms(const Problem& p, const Graph& g, const ModelOptions& options) {
  const double B = p.slow_memory_bandwidth;
  BaseTerms base;
  base.op_floor.resize(p.num_ops());
  for (int o = 0; o < p.num_ops(); ++o) {
    base.op_floor[o] = compute_floor(p, g, o, options.matmul_compute);
    base.compute += base.op_floor[o];
    base.terms.push_back({"op " + std::to_string(o), p.is_matmul(o) ? "M24" : "M23", base.op_floor[o], 0,
                          "computes its output at least once, each native tile at least base"});
  }
  for (int t = 0; t < p.num_tensors(); ++t) {
    if (!g.is_graph_input[t] && !g.is_graph_output[t]) continue;
    const double v = static_cast<double>(p.size(t)) / B;
    base.traffic += v;
    base.terms.push_back({"tensor " + std::to_string(t), g.is_graph_input[t] ? "M21 M9" : "M22", 0, v,
                          g.is_graph_input[t]
                              ? "a graph input is loaded at least once (it can never be retained)"
                              : "a graph output is stored at least once"});
  }
  return base;
}

// Theorem 2's other side of the choice: the tensor made in its reader's subgraph by a link from MatMul `a`.
void price_link(const Problem& p, const Graph& g, const ModelOptions& options, int a,
                const std::vector<double>& op_floor, TensorTerm& term) {
  const double n_w = static_cast<double>(p.native_w), n_h = static_cast<double>(p.native_h);
  const int ya = p.outputs[a][0];
  const bool deep = options.matmul_compute == MatmulCompute::NativeK;
  const double depth = deep ? static_cast<double>(g.reduction_depth[a]) / n_w : 1.0;
  // The head's output once, unpadded, as a head pays for it (M24): base per native tile with the streamed
  // side at n_k = n_w (the columns of an LHS link, the rows of an RHS link); and as a MatMul that heads
  // nothing pays for it.
  const double rows = static_cast<double>(p.heights[ya]), cols = static_cast<double>(p.widths[ya]);
  term.head = a;
  term.choice.head_base = op_floor[a];
  term.choice.own_unpadded = p.base_costs[a] * depth * rows / n_h * cols / n_w;
  // Every tile of a linked run makes the head compute its output across the streamed side, at least one
  // native tile's worth of rows (M24's ceil), and tiles are no larger than the largest that fits.
  term.linked_tiles = linked_tiles(p, g, a, term.reader, term.side);
  term.choice.link_fits = term.linked_tiles > 0;
  term.choice.per_coverage =
      term.linked_tiles * head_compute_per_tail_tile(p, g, a, term.side, options.matmul_compute);
}

// Theorem 1's term for tensor t read on one side by MatMuls only, if one of them forces reloads; with
// Theorem 2's pricing of making it in the reader's subgraph instead when one MatMul could head that link.
std::optional<TensorTerm> reload_term(const Problem& p, const Graph& g, const ModelOptions& options, int t,
                                      int side, const std::vector<double>& op_floor,
                                      const std::vector<HeadRoles>& head_roles,
                                      const std::vector<std::set<int>>& link_heads) {
  const double B = p.slow_memory_bandwidth;
  const double n_w = static_cast<double>(p.native_w), n_h = static_cast<double>(p.native_h);
  TensorTerm term;
  term.tensor = t;
  term.side = side;
  term.graph_input = g.is_graph_input[t];
  for (const Consumer& c : g.consumers[t]) {
    const int o = c.op;
    const double K = static_cast<double>(g.reduction_depth[o]);
    const int y = p.outputs[o][0];
    const double M = static_cast<double>(p.heights[y]), N = static_cast<double>(p.widths[y]);
    // A non-head run has nk > 1 (k <= n_k < K, M6), and a prologue cannot make the operand (M14).
    if (!(K > n_w && K > n_h)) continue;
    const HeadRoles& roles = head_roles[o];
    // Unless o heads a link of the operand's side (a head keeps that strip across a tile row or column).
    if (side == 0 ? roles.lhs || (roles.rhs && !(M > n_w)) : roles.rhs || (roles.lhs && !(N > n_w))) continue;
    const double rho = reloads_per_element(p, o, side);
    if (rho > term.rho) {
      term.rho = rho;
      term.reader = o;
    }
  }
  if (term.reader < 0 || term.rho <= 1) return std::nullopt;
  const double size = static_cast<double>(p.size(t));
  if (term.graph_input) {
    term.choice.load_traffic = (term.rho - 1) * size / B;
  } else {
    term.choice.load_traffic = (1 + term.rho) * size / B;  // stored once, loaded rho times
    const std::set<int>& heads = link_heads[t];
    if (heads.size() > 1) return std::nullopt;  // which head would pay is unknown: no term
    if (heads.size() == 1) price_link(p, g, options, *heads.begin(), op_floor, term);
  }
  return term;
}

// Theorem 17's partners, each looked at once (a weight may have thousands of readers, each reading a tensor
// of its own): the least extent of a partner's readers along its tile rows (columns when they read it as
// LHS), or 0 when a reader could keep a slice from step to step (not a MatMul, on the other side, twice, or
// not reducing deeper than native).
class PartnerExtents {
 public:
  PartnerExtents(const Problem& p, const Graph& g) : p_(p), g_(g), cache_(2 * p.num_tensors(), -1) {}
  double least_extent(int Y, int position) {
    double& extent = cache_[2 * static_cast<size_t>(Y) + position];
    if (extent >= 0) return extent;
    const double n = static_cast<double>(std::max(p_.native_w, p_.native_h));
    extent = INFINITY;
    for (const Consumer& c : g_.consumers[Y]) {
      if (!p_.is_matmul(c.op) || c.position != position || p_.inputs[c.op][0] == p_.inputs[c.op][1] ||
          !(static_cast<double>(g_.reduction_depth[c.op]) > n))
        return extent = 0;
      const int y = p_.outputs[c.op][0];
      extent = std::min(extent, static_cast<double>(position == 1 ? p_.heights[y] : p_.widths[y]));
    }
    return extent;
  }

 private:
  const Problem& p_;
  const Graph& g_;
  std::vector<double> cache_;  // per tensor and position; -1 until looked at
};

// Theorem 17 (docs/bounds.md#theorem-17): a tensor `t` made by the graph (small enough to be retained, or
// one whose reader may head a link, where Theorem 1 says nothing), read on `side` by one MatMul `o` reducing
// deeper than native, whose other operand `Y` is a graph input that every reader reads on the other side. A
// run of `o` either makes `t` (a link, priced as Theorem 2's), loads it with `o` no head (Theorem 1's
// reloads, after a store), or holds at least a tile-row strip of it at every step (retained-in whole, or
// kept by `o` heading a link of `t`'s side); then the strips of all such readers share the capacity, so the
// run's tiles are short and `Y` is loaded once per tile row: at least `M K / capacity` times `Y`'s size for
// each of them. Nullopt when a condition fails.
std::optional<TensorTerm> crowded_term(const Problem& p, const Graph& g, const ModelOptions& options, int t,
                                       int side, const std::vector<double>& op_floor,
                                       const std::vector<HeadRoles>& head_roles,
                                       const std::vector<std::set<int>>& link_heads, LinkWalker& walk,
                                       PartnerExtents& partners) {
  const double B = p.slow_memory_bandwidth, cap = p.fast_memory_capacity;
  const double n = static_cast<double>(std::max(p.native_w, p.native_h));
  if (g.consumers[t].size() != 1 || link_heads[t].size() > 1) return std::nullopt;
  const int o = g.consumers[t].front().op;
  const int Y = p.inputs[o][1 - side];
  const double K = static_cast<double>(g.reduction_depth[o]);
  const HeadRoles& roles = head_roles[o];
  // A link of the other side would stream t and keep Y; a link of t's side must split its tail's reduction
  // too, so that the head's slice of Y changes at every step.
  if (!(K > n) || Y == t || !g.is_graph_input[Y] || (side == 0 ? roles.rhs : roles.lhs)) return std::nullopt;
  for (int b : walk.tails(o))
    if (!(static_cast<double>(g.reduction_depth[b]) > n)) return std::nullopt;
  if (walk.out_of_budget()) return std::nullopt;
  const double extent = partners.least_extent(Y, 1 - side);
  if (extent <= 0) return std::nullopt;
  const double rho = reloads_per_element(p, o, side);
  if (rho <= 1) return std::nullopt;
  TensorTerm term;
  term.tensor = t;
  term.side = side;
  term.reader = o;
  term.rho = rho;
  term.partner = Y;
  term.load_alone = (1 + rho) * static_cast<double>(p.size(t)) / B;
  term.crowded = extent * K / cap * static_cast<double>(p.size(Y)) / B;
  term.choice.load_traffic = std::min(term.load_alone, term.crowded);
  if (!link_heads[t].empty()) price_link(p, g, options, *link_heads[t].begin(), op_floor, term);
  return term;
}

// Theorem 1 for every tensor whose readers are all MatMuls reading it on one side (Theorem 17 for those that
// fit the fast memory, and for larger ones Theorem 1 leaves out).
std::vector<TensorTerm> reload_terms(const Problem& p, const Graph& g, const ModelOptions& options,
                                     const std::vector<double>& op_floor,
                                     const std::vector<HeadRoles>& head_roles,
                                     const std::vector<std::set<int>>& link_heads) {
  std::vector<TensorTerm> terms;
  const std::function<bool()> never = [] { return false; };
  LinkWalker walk(p, g, 4'000'000, never);
  PartnerExtents partners(p, g);
  for (int t = 0; t < p.num_tensors(); ++t) {
    if (g.is_graph_output[t] || g.consumers[t].empty()) continue;
    const int side = g.consumers[t].front().position;
    bool one_side = true;
    for (const Consumer& c : g.consumers[t]) {
      if (!p.is_matmul(c.op) || c.position != side) one_side = false;
      if (p.is_matmul(c.op) && p.inputs[c.op][0] == p.inputs[c.op][1]) one_side = false;
    }
    if (!one_side) continue;
    // Retained-in needs the whole tensor in fast memory (M20 A); a tensor that fits may be retained, and then
    // only Theorem 17 prices it.
    if (!g.is_graph_input[t] && static_cast<double>(p.size(t)) <= p.fast_memory_capacity) {
      if (auto term = crowded_term(p, g, options, t, side, op_floor, head_roles, link_heads, walk, partners))
        terms.push_back(*term);
      continue;
    }
    if (auto term = reload_term(p, g, options, t, side, op_floor, head_roles, link_heads))
      terms.push_back(*term);
    else if (!g.is_graph_input[t])  // its reader may head a link: Theorem 17, not 1
      if (auto crowded =
              crowded_term(p, g, options, t, side, op_floor, head_roles, link_heads, walk, partners))
        terms.push_back(*crowded);
  }
  return terms;
}

// Theorems 3 and 5: a head that can link to one tail only pays for its own operands on both sides of the
// choice.
void add_head_operand_terms(const Problem& p, const Graph& g, std::vector<TensorTerm>& tensor_terms,
                            const std::vector<HeadRoles>& head_roles,
                            const std::vector<std::set<int>>& link_heads) {
  const double B = p.slow_memory_bandwidth;
  const double n_w = static_cast<double>(p.native_w), n_h = static_cast<double>(p.native_h);
  // A head's streamed operand read by it alone and reloaded by Theorem 1 for it: how many times (0 if not).
  std::vector<int> reload_index(p.num_tensors(), -1);
  for (size_t i = 0; i < tensor_terms.size(); ++i)
    if (tensor_terms[i].head < 0 && tensor_terms[i].partner < 0)  // Theorem 1's reloads, not Theorem 17's
      reload_index[tensor_terms[i].tensor] = static_cast<int>(i);
  // Theorem 5 prices a kept operand that no other term does; one with a Theorem 17 term is priced there.
  std::vector<char> crowded(p.num_tensors(), 0);
  for (const TensorTerm& term : tensor_terms)
    if (term.partner >= 0) crowded[term.tensor] = 1;
  auto streamed_rho = [&](int tensor, int head) {
    const int i = reload_index[tensor];
    if (g.consumers[tensor].size() != 1 || i < 0 || tensor_terms[i].reader != head) return 0.0;
    return tensor_terms[i].rho;
  };
  for (TensorTerm& term : tensor_terms) {
    if (term.head < 0) continue;
    const int a = term.head;
    if (head_roles[a].tails != std::set<std::pair<int, int>>{{term.reader, term.side}}) continue;
    const int kept = p.inputs[a][term.side], streamed = p.inputs[a][1 - term.side];
    if (kept == streamed) continue;
    const double Ka = static_cast<double>(g.reduction_depth[a]);
    const double rho_kept = reloads_per_element(p, a, term.side);
    const double kept_size = static_cast<double>(p.size(kept)) / B;
    if (g.consumers[kept].size() == 1 && Ka > n_w && Ka > n_h) {
      if (g.is_graph_input[kept]) {
        term.choice.kept_once = kept_size;
        term.choice.kept_reloads = rho_kept * kept_size;
      } else if (!g.is_graph_output[kept] && kept_size * B > p.fast_memory_capacity && !crowded[kept]) {
        // Theorem 5: made by one MatMul a0 that can link to a only; stored and reloaded where a is no
        // head, or linked from a0, whose tiles stream a0's other operand (Theorem 4's count). A graph
        // output is left out: its one store is a base term already.
        const std::set<int>& heads0 = link_heads[kept];
        const int a0 = heads0.size() == 1 ? *heads0.begin() : -1;
        if (a0 >= 0 && head_roles[a0].tails == std::set<std::pair<int, int>>{{a, term.side}}) {
          const double store_and_reload = (1 + rho_kept) * kept_size;
          const double tiles = linked_tiles(p, g, a0, a, term.side);
          if (tiles <= 0) {
            term.choice.nested_per = store_and_reload;
          } else {
            const int streamed0 = p.inputs[a0][1 - term.side];
            const double rho0 = streamed_rho(streamed0, a0);
            if (rho0 > 0 && streamed0 != kept) {
              term.choice.nested_from = rho0 / tiles;
              term.choice.nested_per =
                  std::min(store_and_reload, tiles * static_cast<double>(p.size(streamed0)) / B);
            }
          }
        }
      }
    }
    const double rho = streamed_rho(streamed, a);
    if (rho > 0)
      term.choice.streamed_again =
          std::max(0.0, term.linked_tiles - rho) * static_cast<double>(p.size(streamed)) / B;
  }
}

// Terms that share a head share its recompute: each group counts its largest member only. Theorem 17's
// terms that charge loads of one partner include the one load the base terms count: each partner gives it
// back once (`partner_refunds`, in time units of traffic).
struct Charge {
  int term;
  double compute, traffic;
};
struct PartnerRefund {
  int partner;
  double traffic;
};

double lagrangian(double lambda, const BaseTerms& base, const std::vector<TensorTerm>& tensor_terms,
                  std::vector<Charge>* charges, std::vector<PartnerRefund>* partner_refunds,
                  const Problem& p) {
  double total = lambda * base.compute + (1 - lambda) * base.traffic;
  std::map<int, std::pair<double, Charge>> by_head;  // head -> (value, charge)
  std::vector<std::pair<double, Charge>> counted;
  for (size_t i = 0; i < tensor_terms.size(); ++i) {
    const TensorTerm& term = tensor_terms[i];
    Charge charge{static_cast<int>(i), 0, term.choice.load_traffic};
    double v = (1 - lambda) * term.choice.load_traffic;
    if (term.head >= 0) v = term.choice.value(lambda, &charge.compute, &charge.traffic);
    if (term.head < 0) {
      counted.push_back({v, charge});
      continue;
    }
    auto it = by_head.find(term.head);
    if (it == by_head.end() || v > it->second.first) by_head[term.head] = {v, charge};
  }
  for (const auto& [head, slot] : by_head) counted.push_back(slot);
  // Per partner: how much its counted terms gain over charging nothing for the loads (Theorem 17's option
  // priced at 0); the refund is the lesser of that and the base's one load, so the sum stays below both.
  std::map<int, double> gain;
  for (const auto& [v, charge] : counted) {
    total += v;
    if (charges) charges->push_back(charge);
    const TensorTerm& term = tensor_terms[charge.term];
    if (term.partner < 0) continue;
    Choice free = term.choice;
    free.load_traffic = 0;
    double c = 0, m = 0;
    const double v_free = term.head >= 0 ? free.value(lambda, &c, &m) : 0;
    gain[term.partner] += v - v_free;
  }
  for (const auto& [partner, g] : gain) {
    const double once = (1 - lambda) * static_cast<double>(p.size(partner)) / p.slow_memory_bandwidth;
    const double refund = std::min(once, g);
    total -= refund;
    if (partner_refunds && refund > 0) partner_refunds->push_back({partner, -refund / (1 - lambda)});
  }
  return total;
}

// One sentence per charged term, a person can check.
void describe_terms(CertifiedBound& out, const std::vector<Charge>& charges,
                    const std::vector<PartnerRefund>& refunds, const std::vector<TensorTerm>& tensor_terms) {
  for (const Charge& charge : charges) {
    const TensorTerm& term = tensor_terms[charge.term];
    const std::string t = "tensor " + std::to_string(term.tensor);
    const std::string reload = "MatMul op " + std::to_string(term.reader) +
                               " reduces over more than n_k, so each of its steps loads a new slice of " + t +
                               ": it is loaded at least " + number(term.rho) + " times over (Theorem 1)";
    out.compute += charge.compute;
    out.traffic += charge.traffic;
    // Theorem 17's other way to pay for a tensor that fits: held where the reader runs, crowding its partner.
    const std::string crowded =
        term.partner < 0
            ? ""
            : " (" + number(term.load_alone) + "), or it is held whole or by tile-row strips where op " +
                  std::to_string(term.reader) + " runs, which then loads tensor " +
                  std::to_string(term.partner) + " once per tile row, its share at least " +
                  number(term.crowded) + " (Theorem 17), the lesser";
    if (term.head < 0) {
      out.terms.push_back(
          {t, term.partner < 0 ? "M21 M6 M14" : "M20 M21 M6 M14", 0, charge.traffic,
           reload + (term.graph_input ? ", beyond the once counted above" : ", after one store") + crowded});
      continue;
    }
    const Choice& choice = term.choice;
    const double full_link = std::max(0.0, choice.per_coverage - choice.head_base);
    const std::string head = "op " + std::to_string(term.head);
    const std::string kept = choice.kept_reloads > 0
                                 ? ", and " + head + ", no head then, loads its kept operand " +
                                       number(choice.kept_reloads / choice.kept_once) + " times (" +
                                       number(choice.kept_reloads - choice.kept_once) + " more)"
                                 : "";
    const std::string nested =
        choice.nested_per > 0
            ? ", and " + head +
                  ", no head then, reads its kept operand, made by another MatMul, stored and reloaded " +
                  "or linked from that one (" + number(choice.nested_per) +
                  " for all of it, beyond a share " + number(choice.nested_from) + ")"
            : "";
    const std::string streamed = choice.streamed_again > 0 ? " and streams its other operand again (" +
                                                                 number(choice.streamed_again) + ")"
                                                           : "";
    const std::string theorems =
        std::string(kept.empty() && streamed.empty() ? "2" : "2, 3") + ", 4" + (nested.empty() ? "" : ", 5");
    const std::string link =
        choice.link_fits ? ", or it is made in the subgraph of op " + std::to_string(term.reader) +
                               " by a link whose head " + head + " computes again for every tile, at least " +
                               number(term.linked_tiles) + " tiles as large as the fast memory allows (" +
                               number(full_link) + " of compute)" + streamed + ", or a mix (Theorem " +
                               theorems + "); charged at the cheapest for lambda"
                         : "; no tile of a link from " + head +
                               " fits the fast memory beside the head's operands (Theorem " + theorems + ")";
    out.terms.push_back({t, "M12 M20 M21 M22 M24", charge.compute, charge.traffic,
                         "either " + reload + ", after one store" + crowded + " (" +
                             number(choice.load_traffic) + " of traffic)" + kept + nested + link});
  }
  for (const PartnerRefund& refund : refunds) {
    out.traffic += refund.traffic;
    out.terms.push_back(
        {"tensor " + std::to_string(refund.partner), "M21", 0, refund.traffic,
         "its one load counted above is among those Theorem 17 charges its readers' terms for"});
  }
}

}  // namespace

double proven_gap_percent(double cost, double bound) {
  if (!(bound > 0)) return INFINITY;
  const double gap = 100.0 * (cost / bound - 1.0);
  // A schedule's latency is a sum of thousands of step terms: a cost that meets the bound may fall below it
  // by rounding. Only that noise reads as 0; a real deficit stays negative, so it shows as the defect it is.
  return gap < 0 && gap > -1e-7 ? 0.0 : gap;
}

CertifiedBound certified_bound(const Problem& p, const Graph& g, const ModelOptions& options,
                               const std::function<bool()>& expired) {
  CertifiedBound out;
  const LowerBound rule_book = lower_bound(p, g);
  out.rule_book = rule_book.bound(options.matmul_compute);
  BaseTerms base = base_terms(p, g, options);
  std::vector<TensorTerm> all_terms;
  std::vector<HeadRoles> head_roles;
  std::vector<std::set<int>> link_heads;
  if (!options.allow_supernative_k) {
    head_roles = all_head_roles(p, g);
    link_heads = all_link_heads(p, g);
    all_terms = reload_terms(p, g, options, base.op_floor, head_roles, link_heads);  // Theorems 1, 2, 4, 17
  }
  // Theorem 17 on tensors larger than the fast memory takes them from Theorem 5: both ways are bounds, and
  // the larger stands.
  std::vector<TensorTerm> tensor_terms;
  double best = -1, best_lambda = 0;
  for (const bool crowd_larger : {false, true}) {
    std::vector<TensorTerm> terms;
    for (const TensorTerm& term : all_terms)
      if (crowd_larger || term.partner < 0 ||
          static_cast<double>(p.size(term.tensor)) <= p.fast_memory_capacity)
        terms.push_back(term);
    if (!options.allow_supernative_k) add_head_operand_terms(p, g, terms, head_roles, link_heads);  // 3, 5
    bool better = false;
    for (int i = 0; i <= 1000; ++i) {
      if (i > 0 && expired && expired()) break;
      const double lambda = i / 1000.0;
      const double v = lagrangian(lambda, base, terms, nullptr, nullptr, p);
      if (v > best) {
        best = v;
        best_lambda = lambda;
        better = true;
      }
    }
    if (better) tensor_terms = std::move(terms);
  }
  std::vector<Charge> charges;
  std::vector<PartnerRefund> refunds;
  out.bound = lagrangian(best_lambda, base, tensor_terms, &charges, &refunds, p);
  out.lambda = best_lambda;
  out.compute = base.compute;
  out.traffic = base.traffic;
  out.terms = std::move(base.terms);
  describe_terms(out, charges, refunds, tensor_terms);
  out.bound = std::max(out.bound, out.rule_book);
  out.lambda_bound = out.bound;
  out.inner_k_steps = inner_k_step_bound(p, g, options, expired);  // Theorem 11
  out.deep_weights = deep_weight_bound(p, g, options, base.op_floor);      // Theorem 12
  out.head_discounts = head_discount_bound(p, g, options, base.op_floor, expired);  // Theorem 13
  out.tail_runs = tail_run_bound(p, g, options, base.op_floor, expired);            // Theorem 14
  out.head_loads_beside_runs =
      head_loads_beside_tail_runs(p, g, options, base.op_floor, out.tail_runs, expired);  // Theorem 21
  out.exposed_epilogues = exposed_epilogue_bound(p, g, options, expired);           // Theorem 15
  out.rounding_ulps = certified_rounding_ulps(p);
  out.bound = round_down_certified(largest_bound_without_cover(out), out.rounding_ulps);
  return out;
}

namespace {

// The bounds besides the cover bound, each with its name, in the order that breaks ties: a later one is the
// largest only if it beats every earlier one.
std::array<std::pair<const char*, double>, 7> named_bounds(const CertifiedBound& b) {
  return {{{"lambda", b.lambda_bound},
           {"inner k-steps", b.inner_k_steps.bound},
           {"deep weights", b.deep_weights.bound},
           {"head discounts", b.head_discounts.bound},
           {"tail runs", b.tail_runs.bound},
           {"exposed epilogues", b.exposed_epilogues.bound},
           {"head loads beside tail runs", b.head_loads_beside_runs.bound}}};
}

}  // namespace

double largest_bound_without_cover(const CertifiedBound& b) {
  double largest = b.lambda_bound;
  for (const auto& [name, value] : named_bounds(b)) largest = std::max(largest, value);
  return largest;
}

std::string largest_bound_name(const CertifiedBound& b) {
  const auto bounds = named_bounds(b);
  const auto* largest = &bounds[0];
  for (const auto& named : bounds)
    if (named.second > largest->second) largest = &named;
  return largest->first;
}

void add_cover_bound(CertifiedBound& bound, CoverBound cover) {
  // The cover bound arrives stepped down already (cover_bound rounds its own sum).
  if (cover.attempted)
    bound.bound = std::max(round_down_certified(largest_bound_without_cover(bound), bound.rounding_ulps),
                           cover.bound);
  bound.cover = std::move(cover);
}

CertifiedBound certified_bound_with_cover(const Problem& problem, const Graph& graph,
                                          const ModelOptions& options, double cover_seconds) {
  CertifiedBound bound = certified_bound(problem, graph, options);
  if (cover_seconds <= 0 || problem.num_ops() > kCoverBoundMaxOps) return bound;
  // Only a complete cover bound counts here, so that the same files give the same report: a partial one
  // depends on how far the clock let it go.
  CoverBound cover = cover_bound(problem, graph, options, CoverLimits{cover_seconds, kReportCoverSets});
  if (cover.complete) add_cover_bound(bound, std::move(cover));
  return bound;
}

}  // namespace mlsys
