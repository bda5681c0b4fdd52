#include "sim/t10/t10_cores.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <systemc>

#include "sim/systemc/one_thread.hpp"
#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_functional.hpp"
#include "sim/t10/t10_link_sim.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys::t10 {
namespace {

using namespace sc_core;

// The two dimensions of each tensor (m = 0, k = 1, n = 2) and the one it lacks, along which it is replicated
// (T7: R_C = pk, R_A = pn, R_B = pm).
constexpr int kDims[3][2] = {{0, 2}, {0, 1}, {1, 2}};
constexpr int kLacking[3] = {1, 2, 0};
constexpr char kName[3] = {'C', 'A', 'B'};
constexpr char kDimName[3] = {'m', 'k', 'n'};

struct Range {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi > lo ? hi - lo : 0; }
};

// A piece of one tensor: the block it belongs to (the two coordinates of the tensor's dimensions) and its
// position on each of the tensor's rings (one digit per level that holds the tensor, in level order).
struct Piece {
  std::array<int64_t, 2> block{};
  std::vector<int64_t> digits;
  int buffer = -1;  // C only: the partial sums it carries
};

struct CoreState {
  std::array<int64_t, 3> at{};  // (i_m, i_k, i_n)
  std::array<Piece, 3> holds;   // C, A, B
  std::vector<int64_t> start;   // per level: the skew, the digit this core starts at (mod g)
};

// A C piece's partial sums, as they travel with the piece, and (for the reduction check) which k blocks
// reached each of its output blocks.
struct PartialSums {
  std::array<int64_t, 2> block{};
  std::vector<int64_t> digits;
  int64_t copy = 0;             // ring copy along k
  std::vector<int64_t> values;  // functional mode: rows x cols of the piece (projected: rows)
};

class Engine {
 public:
  Engine(const Problem& p, const Plan& plan, const CoreSimOptions& o, TraceObserver* trace)
      : p_(p),
        o_(o),
        trace_(trace),
        d_(derive(p, plan)),
        cost_(cost_of(p, plan, d_)),
        durations_(event_cycles(p, d_)),
        calibrated_(calibrated_cost(p, plan)) {
    procs_ = plan.f_op;
    extent_ = {p.m, p.k, p.n};
    factor_[C] = {plan.cm, 1, plan.cn};
    factor_[A] = {plan.am, plan.ak, 1};
    factor_[B] = {1, plan.bk, plan.bn};
    for (size_t j = 0; j < d_.levels.size(); ++j)
      for (char t : d_.levels[j].tensors) levels_of_[tensor_index(t)].push_back(static_cast<int>(j));
    for (int x = 0; x < 3; ++x) {
      ring_[x] = 1;
      for (int j : levels_of_[x]) ring_[x] *= d_.levels[j].g;
    }
  }

  CoresResult run();

 private:
  // ---- geometry
  int64_t core_id(const std::array<int64_t, 3>& c) const {
    return (c[0] * procs_[1] + c[1]) * procs_[2] + c[2];
  }
  Range block_range(int dim, int64_t i) const {
    return {i * d_.spatial[dim], std::min((i + 1) * d_.spatial[dim], extent_[dim])};
  }
  Range sub_block(int dim, int64_t i, int64_t b) const {
    const Range r = block_range(dim, i);
    return {r.lo + b * d_.sub_task[dim], std::min(r.lo + (b + 1) * d_.sub_task[dim], r.hi)};
  }
  // Sub-blocks per piece of tensor x along dim: t_d / f (the pieces group whole sub-blocks).
  int64_t per_piece(int x, int dim) const { return d_.steps_per_dim[dim] / factor_[x][dim]; }
  Range piece_range(int x, int dim, int64_t i, int64_t q) const {
    const Range r = block_range(dim, i);
    const int64_t len = per_piece(x, dim) * d_.sub_task[dim];
    return {std::min(r.lo + q * len, r.hi), std::min(r.lo + (q + 1) * len, r.hi)};
  }
  // The piece index of `digits` (levels of tensor x) on `dim`: mixed radix over the dim's levels, joint
  // first.
  int64_t piece_index(int x, int dim, const std::vector<int64_t>& digits) const {
    int64_t q = 0;
    for (size_t i = 0; i < levels_of_[x].size(); ++i) {
      const ShiftLevel& l = d_.levels[levels_of_[x][i]];
      if (l.dim == kDimName[dim]) q = q * l.g + digits[i];
    }
    return q;
  }
  // Ring position digits of a core in tensor x's rings (mixed radix of its index within its ring copy).
  std::vector<int64_t> ring_digits(int x, int64_t coordinate) const {
    int64_t local = coordinate % ring_[x];
    std::vector<int64_t> digits(levels_of_[x].size());
    for (size_t i = digits.size(); i-- > 0;) {
      const int64_t g = d_.levels[levels_of_[x][i]].g;
      digits[i] = local % g;
      local /= g;
    }
    return digits;
  }
  // Where level `level` sits among tensor x's levels, and the weight of its digit in the ring index.
  std::pair<size_t, int64_t> ring_place(int x, size_t level) const {
    size_t pos = 0;
    int64_t weight = 1;
    for (size_t i = 0; i < levels_of_[x].size(); ++i)
      if (static_cast<size_t>(levels_of_[x][i]) == level) pos = i;
    for (size_t i = pos + 1; i < levels_of_[x].size(); ++i) weight *= d_.levels[levels_of_[x][i]].g;
    return {pos, weight};
  }
  int64_t piece_bytes(int x, const Piece& piece) const {
    const Range a = piece_range(x, kDims[x][0], piece.block[0], piece_index(x, kDims[x][0], piece.digits));
    const Range b = piece_range(x, kDims[x][1], piece.block[1], piece_index(x, kDims[x][1], piece.digits));
    return p_.dtype_bytes * a.size() * b.size();
  }

  void place_initial_pieces();
  void broadcast();
  void compute_step(int64_t step, const std::vector<int64_t>& gray);
  void shift(size_t level, int64_t dir);
  void reduce_and_gather();
  void fail(int64_t step, const CoreState& core, int x, const std::string& message) {
    if (result_.violation) return;
    result_.violation = CoreViolation{step, core.at, kName[x], message};
  }
  // A phase of linked chips also sends `crossing` over the links beside its on-chip part: simulated time
  // waits for both, the charge is `grader_cycles` as the model's.
  void phase(const std::string& name, double grader_cycles, const std::vector<double>& send,
             const std::vector<double>& recv, const std::vector<double>& busy, int64_t bytes,
             LinkPhase crossing = {});

  const Problem& p_;
  const CoreSimOptions& o_;
  TraceObserver* trace_;
  Derived d_;
  Cost cost_;
  EventCycles durations_;  // the grader's per-event durations (T33, T34)
  CalibratedCost calibrated_;
  void price_calibrated_events();
  std::vector<double> calibrated_events_;  // per level: one event's calibrated cycles
  std::vector<LinkPhase> calibrated_crossings_;  // per level: one event's on-chip part and link bytes
  std::optional<LinkFabric> links_;              // linked chips, calibrated timing
  double* calibrated_term_ = nullptr;      // the result's calibrated term the next phases add to
  std::array<int64_t, 3> procs_{}, extent_{}, ring_{};
  std::array<std::array<int64_t, 3>, 3> factor_{};
  std::array<std::vector<int>, 3> levels_of_;
  std::vector<CoreState> cores_;
  std::vector<PartialSums> sums_;
  std::vector<uint8_t> computed_;  // per core and block: computed (exactly once)
  std::vector<uint64_t> reduced_;  // per output block: bitset of the k blocks that reached it
  int64_t k_blocks_ = 0, words_ = 0;
  std::optional<FunctionalOperands> operands_;  // functional mode
  int64_t shift_events_ = 0;
  double calibrated_clock_ = 0;
  int track_ = 0;
  std::vector<int> core_tracks_;
  CoresResult result_;
};

void Engine::place_initial_pieces() {
  cores_.resize(static_cast<size_t>(d_.cores));
  for (int64_t im = 0; im < procs_[0]; ++im)
    for (int64_t ik = 0; ik < procs_[1]; ++ik)
      for (int64_t in = 0; in < procs_[2]; ++in) {
        CoreState& core = cores_[core_id({im, ik, in})];
        core.at = {im, ik, in};
      }
  // The skew: on level j every core starts at the sum of its ring positions in the rings of the level's
  // tensors (mod g). Within one tensor's ring the other tensors' positions are constant (they depend on
  // coordinates that fix the tensor's block), so neighbours on the ring start one piece apart, and a core's
  // three operands agree on its first block.
  for (CoreState& core : cores_) {
    core.start.assign(d_.levels.size(), 0);
    for (int x = 0; x < 3; ++x) {
      const std::vector<int64_t> digits = ring_digits(x, core.at[kLacking[x]]);
      for (size_t i = 0; i < digits.size(); ++i) core.start[levels_of_[x][i]] += digits[i];
    }
    for (size_t j = 0; j < core.start.size(); ++j) core.start[j] %= d_.levels[j].g;
    for (int x = 0; x < 3; ++x) {
      Piece& piece = core.holds[x];
      piece.block = {core.at[kDims[x][0]], core.at[kDims[x][1]]};
      for (int j : levels_of_[x]) piece.digits.push_back(core.start[j]);
    }
    PartialSums sums;
    sums.block = core.holds[C].block;
    sums.digits = core.holds[C].digits;
    sums.copy = core.at[kLacking[C]] / ring_[C];
    if (o_.functional) {
      const Range r = piece_range(C, 0, sums.block[0], piece_index(C, 0, sums.digits));
      const Range c = piece_range(C, 2, sums.block[1], piece_index(C, 2, sums.digits));
      sums.values.assign(operands_->sums_size(r.size(), c.size()), 0);
    }
    core.holds[C].buffer = static_cast<int>(sums_.size());
    sums_.push_back(std::move(sums));
  }
}

// Exchange timing of one superstep, or the grader's charge; advances simulated time and records the phase.
void Engine::phase(const std::string& name, double grader_cycles, const std::vector<double>& send,
                   const std::vector<double>& recv, const std::vector<double>& busy, int64_t bytes,
                   LinkPhase crossing) {
  double cycles = grader_cycles;
  if (o_.timing == CoreTiming::Exchange) {
    PhaseCost cost{name, 0, {}, bytes};
    for (size_t c = 0; c < cores_.size(); ++c) {
      const double t =
          std::max({send.empty() ? 0 : send[c], recv.empty() ? 0 : recv[c], busy.empty() ? 0 : busy[c]});
      result_.per_core[c].busy_cycles += t;
      if (t > cost.cycles) cost.cycles = t, cost.critical_core = cores_[c].at;
    }
    const bool exchange = busy.empty();
    (exchange ? result_.exchange_exchange : result_.exchange_compute) += cost.cycles;
    result_.exchange_sync += p_.chip.sync_cycles;
    cost.cycles += p_.chip.sync_cycles;  // every superstep ends with a sync
    cycles = cost.cycles;
    result_.phases.push_back(cost);
  }
  if (o_.timing == CoreTiming::Calibrated) {
    result_.phases.push_back({name, cycles, {}, bytes});
    calibrated_clock_ += cycles;  // summed in binary64 as the model sums (sc_time rounds to picoseconds)
    if (calibrated_term_) *calibrated_term_ += cycles;
    for (CoreStats& core : result_.per_core) core.busy_cycles += cycles;
  }
  const double start = sc_time_stamp().to_seconds() * 1e9;
  if (links_ && crossing.bytes && !crossing.bytes->per_link.empty())
    links_->run(crossing);
  else if (cycles > 0)
    wait(sc_time(cycles, SC_NS));
  if (!trace_) return;
  trace_->span(track_, name, start / 1000, cycles / 1000, {{"bytes", bytes}});
  for (size_t c = 0; c < core_tracks_.size(); ++c) {
    // Exchange timing: the core's own busy, send and receive time; grader timing: the phase.
    const double own =
        o_.timing == CoreTiming::Grader
            ? cycles
            : std::max({send.empty() ? 0 : send[c], recv.empty() ? 0 : recv[c], busy.empty() ? 0 : busy[c]});
    if (own > 0)
      trace_->span(core_tracks_[c], name, start / 1000, own / 1000,
                   {{"compute", busy.empty() ? 0 : busy[c]},
                    {"send", send.empty() ? 0 : send[c]},
                    {"receive", recv.empty() ? 0 : recv[c]}});
  }
}

void Engine::broadcast() {
  // Each ring copy but the first receives its initial A and B pieces from the core of copy 0 that starts
  // with the same piece (its home); a home sends to every other copy, one transfer after another, or once
  // for all of them when the chip multicasts (chip.exchange_multicast).
  const double bw = p_.chip.exchange_bytes_per_cycle, latency = p_.chip.exchange_latency_cycles;
  std::vector<double> send(cores_.size(), 0), recv(cores_.size(), 0);
  std::array<std::vector<uint8_t>, 3> sent;  // multicast: a home's piece is sent once, whatever the copies
  for (auto& v : sent) v.assign(cores_.size(), 0);
  int64_t bytes = 0;
  for (const CoreState& core : cores_)
    for (int x : {A, B}) {
      const int64_t coordinate = core.at[kLacking[x]];
      if (coordinate < ring_[x]) continue;  // copy 0 holds its pieces
      std::array<int64_t, 3> home = core.at;
      home[kLacking[x]] = coordinate % ring_[x];
      const int64_t b = piece_bytes(x, core.holds[x]);
      if (b == 0) continue;
      const size_t from = static_cast<size_t>(core_id(home));
      if (!p_.chip.exchange_multicast || !sent[x][from]) send[from] += b / bw + latency;
      sent[x][from] = 1;
      recv[core_id(core.at)] += b / bw + latency;
      bytes += b;
      ++result_.transfers;
    }
  result_.bytes_moved += bytes;
  const bool any =
      std::any_of(d_.ring_products.begin() + 1, d_.ring_products.end(), [](int64_t r) { return r > 1; });
  if (o_.timing == CoreTiming::Grader) {
    if (any) phase("broadcast", static_cast<double>(cost_.bcast), {}, {}, {}, bytes);
  } else if (o_.timing == CoreTiming::Exchange && bytes > 0) {
    phase("broadcast", 0, send, recv, {}, bytes);
  }  // calibrated: the layout change is the warm-up, reported beside the makespan
}

void Engine::compute_step(int64_t step, const std::vector<int64_t>& gray) {
  const size_t L = d_.levels.size();
  std::vector<double> busy(cores_.size(), 0);
  const double amp = p_.chip.amp_macs_per_cycle;
  const double padded = static_cast<double>(d_.sub_task[0] * d_.sub_task[1] * d_.sub_task[2]) / amp;
  for (size_t c = 0; c < cores_.size(); ++c) {
    CoreState& core = cores_[c];
    // The block this core computes: its own start (the skew) plus the Gray code, per level; then per dim
    // the mixed radix of its levels, joint first.
    std::array<int64_t, 3> block{0, 0, 0};
    if (!d_.misaligned) {
      for (int dim = 0; dim < 3; ++dim)
        for (size_t j = 0; j < L; ++j)
          if (d_.levels[j].dim == kDimName[dim])
            block[dim] = block[dim] * d_.levels[j].g + (core.start[j] + gray[j]) % d_.levels[j].g;
    } else {
      // No levels: the steps walk the blocks in order, and nothing moves (T18).
      int64_t rest = step;
      for (int dim = 2; dim >= 0; --dim) {
        block[dim] = rest % d_.steps_per_dim[dim];
        rest /= d_.steps_per_dim[dim];
      }
    }
    const int64_t index = (block[0] * d_.steps_per_dim[1] + block[1]) * d_.steps_per_dim[2] + block[2];
    uint8_t& seen =
        computed_[static_cast<size_t>(c) * static_cast<size_t>(d_.steps) + static_cast<size_t>(index)];
    if (seen)
      fail(step, core, C,
           "computes block (" + std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
               std::to_string(block[2]) + ") a second time");
    seen = 1;
    // T35 on every core: each operand's block and piece are those the block needs.
    for (int x = 0; x < 3; ++x) {
      const Piece& piece = core.holds[x];
      for (int side = 0; side < 2; ++side) {
        const int dim = kDims[x][side];
        const int64_t want = block[dim] / per_piece(x, dim);
        const int64_t have = piece_index(x, dim, piece.digits);
        if (piece.block[side] != core.at[dim] || have != want)
          fail(step, core, x,
               std::string("holds piece ") + std::to_string(have) + " of block " +
                   std::to_string(piece.block[side]) + " on " + kDimName[dim] + ", its block (" +
                   std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                   std::to_string(block[2]) + ") needs piece " + std::to_string(want) + " of block " +
                   std::to_string(core.at[dim]));
      }
    }
    const Range rm = sub_block(0, core.at[0], block[0]), rk = sub_block(1, core.at[1], block[1]),
                rn = sub_block(2, core.at[2], block[2]);
    const double own = static_cast<double>(rm.size() * rk.size() * rn.size()) / amp;
    busy[c] = own;
    result_.edge_idle_cycles += padded - own;
    // Where the partial sums land: the output block of the C piece the core holds, at the block's offset
    // within the piece; which k block: the A piece's. (Equal to the core's own blocks when consistent.)
    const Piece& pc = core.holds[C];
    const Piece& pa = core.holds[A];
    const Piece& pb = core.holds[B];
    auto global_block = [&](int x, const Piece& piece, int side, int64_t local) {
      const int dim = kDims[x][side];
      return piece.block[side] * d_.steps_per_dim[dim] +
             piece_index(x, dim, piece.digits) * per_piece(x, dim) + local % per_piece(x, dim);
    };
    const int64_t out_m = global_block(C, pc, 0, block[0]), out_n = global_block(C, pc, 1, block[2]);
    const int64_t k_a = global_block(A, pa, 1, block[1]), k_b = global_block(B, pb, 0, block[1]);
    if (k_a != k_b)
      fail(step, core, B,
           "reduces over k block " + std::to_string(k_b) + " while A gives " + std::to_string(k_a));
    const int64_t out = out_m * procs_[2] * d_.steps_per_dim[2] + out_n;
    uint64_t& word = reduced_[static_cast<size_t>(out * words_ + k_a / 64)];
    if (word & (uint64_t{1} << (k_a % 64)))
      fail(step, core, C,
           "adds k block " + std::to_string(k_a) + " to output block (" + std::to_string(out_m) + ", " +
               std::to_string(out_n) + ") a second time");
    word |= uint64_t{1} << (k_a % 64);
    if (!o_.functional || rm.size() * rk.size() * rn.size() == 0) continue;
    // Multiply with the pieces held: rows and columns read through each piece's own range.
    auto start_in = [&](int x, const Piece& piece, int side, int64_t local) {
      const int dim = kDims[x][side];
      return piece_range(x, dim, piece.block[side], piece_index(x, dim, piece.digits)).lo +
             (local % per_piece(x, dim)) * d_.sub_task[dim];
    };
    const int64_t a_row = start_in(A, pa, 0, block[0]), a_col = start_in(A, pa, 1, block[1]);
    const int64_t b_row = start_in(B, pb, 0, block[1]), b_col = start_in(B, pb, 1, block[2]);
    PartialSums& sums = sums_[static_cast<size_t>(pc.buffer)];
    const Range c_rows = piece_range(C, 0, sums.block[0], piece_index(C, 0, sums.digits));
    const Range c_cols = piece_range(C, 2, sums.block[1], piece_index(C, 2, sums.digits));
    const int64_t c_row = start_in(C, pc, 0, block[0]) - c_rows.lo,
                  c_col = start_in(C, pc, 1, block[2]) - c_cols.lo;
    BlockProduct product;
    product.rows = rm.size(), product.depth = rk.size(), product.cols = rn.size();
    product.a_row = a_row, product.a_col = a_col, product.b_row = b_row, product.b_col = b_col;
    product.c_row = c_row, product.c_col = c_col;
    product.piece_rows = c_rows.size(), product.piece_cols = c_cols.size(), product.piece_col0 = c_cols.lo;
    operands_->multiply_into(product, sums.values);
  }
  calibrated_term_ = &result_.calibrated_compute;
  phase("compute step " + std::to_string(step),
        o_.timing == CoreTiming::Calibrated ? calibrated_.compute_per_step : durations_.sub_task, {}, {},
        busy, 0);
}

void Engine::shift(size_t level, int64_t dir) {
  const ShiftLevel& l = d_.levels[level];
  const double bw = p_.chip.exchange_bytes_per_cycle, latency = p_.chip.exchange_latency_cycles;
  std::vector<double> send(cores_.size(), 0), recv(cores_.size(), 0);
  int64_t bytes = 0;
  for (char t : l.tensors) {
    const int x = tensor_index(t);
    const auto [pos, weight] = ring_place(x, level);
    std::vector<Piece> incoming(cores_.size());
    for (size_t c = 0; c < cores_.size(); ++c) {
      // CoreState c receives from the ring neighbour one place ahead (in direction dir) on this level's ring.
      const CoreState& core = cores_[c];
      const int64_t coordinate = core.at[kLacking[x]];
      const int64_t digit = ring_digits(x, coordinate)[pos];
      const int64_t moved = ((digit + dir) % l.g + l.g) % l.g;
      std::array<int64_t, 3> from = core.at;
      from[kLacking[x]] = coordinate + (moved - digit) * weight;
      const size_t f = static_cast<size_t>(core_id(from));
      incoming[c] = cores_[f].holds[x];
      const int64_t b = piece_bytes(x, incoming[c]);
      send[f] += b / bw + latency;
      recv[c] += b / bw + latency;
      bytes += b;
      ++result_.transfers;
    }
    for (size_t c = 0; c < cores_.size(); ++c) {
      if (shift_events_ == o_.drop_shift_event && c == 0 && t == l.tensors[0]) continue;  // the test hook
      cores_[c].holds[x] = std::move(incoming[c]);
    }
  }
  result_.bytes_moved += bytes;
  ++result_.events_per_level[level];
  ++shift_events_;
  calibrated_term_ = &result_.calibrated_sync_shift;
  phase("shift level " + std::to_string(level) + " (" + l.dim + ", " + l.tensors + ")",
        o_.timing == CoreTiming::Calibrated ? calibrated_events_[level] : durations_.shift[level], send, recv,
        {}, bytes, o_.timing == CoreTiming::Calibrated ? calibrated_crossings_[level] : LinkPhase{});
}

void Engine::reduce_and_gather() {
  // The pk replicas of an output block (the rho_C ring copies when C rotates) each hold partial sums of every
  // C piece. They reduce-scatter over the all-to-all exchange: each of the n holders of a piece owns 1/n of
  // it and sends the other n - 1 parts to their owners (every core sends and receives (n - 1)/n of the piece,
  // in n - 1 transfers). The sum ends spread over the replicas, as T10 leaves it.
  const double bw = p_.chip.exchange_bytes_per_cycle, latency = p_.chip.exchange_latency_cycles;
  std::vector<double> send(cores_.size(), 0), recv(cores_.size(), 0);
  int64_t bytes = 0;
  std::map<std::pair<std::array<int64_t, 2>, std::vector<int64_t>>, std::vector<size_t>> holders;
  for (size_t c = 0; c < cores_.size(); ++c) {
    const PartialSums& sums = sums_[static_cast<size_t>(cores_[c].holds[C].buffer)];
    holders[{sums.block, sums.digits}].push_back(c);
  }
  for (const auto& [piece, group] : holders) {
    const int64_t n = static_cast<int64_t>(group.size());
    if (n < 2) continue;
    const int64_t b = p_.dtype_bytes *
                      piece_range(C, 0, piece.first[0], piece_index(C, 0, piece.second)).size() *
                      piece_range(C, 2, piece.first[1], piece_index(C, 2, piece.second)).size();
    const double part = static_cast<double>(b) * static_cast<double>(n - 1) / static_cast<double>(n);
    for (size_t c : group) {
      send[c] += part / bw + latency * static_cast<double>(n - 1);
      recv[c] += part / bw + latency * static_cast<double>(n - 1);
    }
    bytes += b * (n - 1);
    result_.transfers += n * (n - 1);
  }
  result_.bytes_moved += bytes;
  if (o_.timing == CoreTiming::Grader) {
    if (d_.rotates(C)) phase("reduce", static_cast<double>(cost_.reduce), {}, {}, {}, bytes);
  } else if (o_.timing == CoreTiming::Exchange) {
    if (bytes > 0) phase("reduce", 0, send, recv, {}, bytes);
  } else {
    // The shuffle after the operator, as the calibrated model splits it (get_shuffle_time).
    const double scale = calibrated_.inter_chip;
    calibrated_term_ = &result_.calibrated_shuffle;
    // On linked chips the output's move and the gather also cross the links, beside their on-chip parts.
    const double output = calibrated_.shuffle_output * scale, gather = calibrated_.gather * scale;
    phase("shuffle: output moved", output + calibrated_.output_link, {}, {}, {}, 0,
          {&calibrated_.output_link_bytes, output, 1});
    phase("shuffle: syncs", calibrated_.shuffle_sync * scale, {}, {}, {}, 0);
    if (calibrated_.gather > 0 || calibrated_.gather_link > 0)
      phase("shuffle: gather copies", gather + calibrated_.gather_link, {}, {}, {}, bytes,
            {&calibrated_.gather_link_bytes, gather, 1});
    if (calibrated_.reduce > 0) phase("shuffle: reduce copies", calibrated_.reduce * scale, {}, {}, {}, 0);
  }
  // Every output block must have received every k block exactly once (the adds were checked as they came).
  if (!result_.violation)
    for (int64_t out = 0; out < static_cast<int64_t>(reduced_.size()) / words_; ++out) {
      int64_t count = 0;
      for (int64_t w = 0; w < words_; ++w)
        count += __builtin_popcountll(reduced_[static_cast<size_t>(out * words_ + w)]);
      if (count != k_blocks_) {
        const int64_t out_m = out / (procs_[2] * d_.steps_per_dim[2]),
                      out_n = out % (procs_[2] * d_.steps_per_dim[2]);
        const int64_t im = out_m / d_.steps_per_dim[0], in = out_n / d_.steps_per_dim[2];
        CoreViolation v{-1,
                        {im, 0, in},
                        'C',
                        "output block (" + std::to_string(out_m) + ", " + std::to_string(out_n) +
                            ") received " + std::to_string(count) + " of its " + std::to_string(k_blocks_) +
                            " k blocks"};
        result_.violation = v;
        break;
      }
    }
  if (!o_.functional) return;
  // Gather: every piece's sums, reduced over the copies, into C (or C·r); then it must equal A·B.
  std::vector<GatheredPiece> pieces;
  for (const PartialSums& sums : sums_) {
    const Range rows = piece_range(C, 0, sums.block[0], piece_index(C, 0, sums.digits));
    const Range cols = piece_range(C, 2, sums.block[1], piece_index(C, 2, sums.digits));
    pieces.push_back({rows.lo, rows.size(), cols.lo, cols.size(), &sums.values});
  }
  result_.functional_checked = true;
  result_.functional_method = operands_->projected() ? "freivalds" : "exact";
  if (result_.violation) return;
  if (auto wrong = operands_->compare(pieces, o_.gathered_c)) {
    const std::array<int64_t, 3> core{wrong->first / d_.spatial[0], 0, 0};
    result_.violation = CoreViolation{-1, core, 'C', wrong->second};
  }
}

// Each level's event at its calibrated share: the model's total for the level over the walk's (T16) events.
void Engine::price_calibrated_events() {
  if (calibrated_.levels.size() != d_.levels.size()) throw std::logic_error("calibrated levels do not match");
  for (const ShiftLevel& ours : d_.levels) {
    auto theirs =
        std::find_if(calibrated_.levels.begin(), calibrated_.levels.end(), [&](const CalibratedLevel& t) {
          return t.dim == ours.dim && t.tensors == ours.tensors && t.g == ours.g;
        });
    if (theirs == calibrated_.levels.end())
      throw std::logic_error("calibrated levels do not match the plan's");
    // On linked chips an event also waits for its crossing part (t10_links.hpp) where that is longer.
    const double events = static_cast<double>(theirs->events), walked = static_cast<double>(ours.events);
    const double on_chip = theirs->event_cycles * events / walked * calibrated_.inter_chip;
    calibrated_events_.push_back(on_chip + theirs->link_cycles * events / walked);
    calibrated_crossings_.push_back({&theirs->link_bytes, on_chip, events / walked});
  }
}

CoresResult Engine::run() {
  result_.cores = d_.cores;
  result_.steps = d_.steps;
  result_.misaligned = d_.misaligned;
  result_.rule_book_hot_bytes = d_.hot_bytes;
  result_.events_per_level.assign(d_.levels.size(), 0);
  if (o_.functional && o_.operand_a && o_.operand_b)
    operands_.emplace(p_, *o_.operand_a, *o_.operand_b);
  else if (o_.functional)
    operands_.emplace(p_, o_.seed, uses_projected_check(p_, o_));
  place_initial_pieces();
  computed_.assign(static_cast<size_t>(d_.cores * d_.steps), 0);
  k_blocks_ = procs_[1] * d_.steps_per_dim[1];
  words_ = (k_blocks_ + 63) / 64;
  reduced_.assign(
      static_cast<size_t>(procs_[0] * d_.steps_per_dim[0] * procs_[2] * d_.steps_per_dim[2] * words_), 0);
  for (const CoreState& core : cores_) {
    bool empty = false;
    for (int dim = 0; dim < 3; ++dim) empty = empty || block_range(dim, core.at[dim]).size() == 0;
    result_.empty_cores += empty;
  }
  result_.per_core.resize(cores_.size());
  for (size_t c = 0; c < cores_.size(); ++c) result_.per_core[c].core = cores_[c].at;
  // The ring through core (0, 0, 0) of every level and tensor: follow the shift's neighbour g times.
  for (size_t j = 0; j < d_.levels.size(); ++j)
    for (char t : d_.levels[j].tensors) {
      const int x = tensor_index(t);
      const int64_t weight = ring_place(x, j).second;
      RingPath ring{static_cast<int>(j), t, {}};
      std::array<int64_t, 3> at{0, 0, 0};
      for (int64_t step = 0; step < d_.levels[j].g; ++step) {
        ring.cores.push_back(at);
        at[kLacking[x]] += weight;
      }
      result_.rings.push_back(ring);
    }
  if (trace_) {
    track_ = trace_->track("all " + std::to_string(d_.cores) + " cores");
    for (int64_t c = 0; c < std::min<int64_t>(o_.core_tracks, d_.cores); ++c) {
      const auto& at = cores_[static_cast<size_t>(c)].at;
      core_tracks_.push_back(trace_->track("core (" + std::to_string(at[0]) + ", " + std::to_string(at[1]) +
                                           ", " + std::to_string(at[2]) + ")"));
    }
  }
  broadcast();
  if (o_.timing == CoreTiming::Calibrated) price_calibrated_events();
  if (o_.timing == CoreTiming::Calibrated && p_.chip.linked()) links_.emplace(p_.chip);
  if (o_.timing == CoreTiming::Grader && cost_.comp > cost_.compute)
    phase("local load/store stall", cost_.comp - cost_.compute, {}, {}, {}, 0);
  // T34: the reflected Gray code over the level digits; between two compute steps exactly one level shifts.
  const size_t L = d_.levels.size();
  std::vector<int64_t> gray(L, 0), dir(L, 1);
  for (int64_t step = 0; step < d_.steps; ++step) {
    // SRAM per core: the pieces it holds, and a receive buffer for each rotating tensor.
    int64_t step_peak = 0;
    for (size_t c = 0; c < cores_.size(); ++c) {
      const CoreState& core = cores_[c];
      int64_t bytes = 0;
      for (int x = 0; x < 3; ++x) bytes += piece_bytes(x, core.holds[x]) * (d_.rotates(x) ? 2 : 1);
      result_.per_core[c].peak_sram_bytes = std::max(result_.per_core[c].peak_sram_bytes, bytes);
      if (bytes > result_.peak_sram_bytes) result_.peak_sram_bytes = bytes, result_.peak_sram_core = core.at;
      step_peak = std::max(step_peak, bytes);
    }
    if (trace_)
      trace_->counter("SRAM, fullest core (bytes)", sc_time_stamp().to_seconds() * 1e6,
                      {{"bytes", step_peak}});
    compute_step(step, gray);
    if (step + 1 == d_.steps || d_.misaligned) continue;
    const size_t j = gray_advance(d_.levels, gray, dir);
    shift(j, dir[j]);
  }
  reduce_and_gather();
  // Grader timing: the components as T37 aggregates them (equal to the analytic model).
  result_.shift = shift_cycles(d_, result_.events_per_level, p_.chip.noc_elems_per_cycle);
  result_.bcast = cost_.bcast;
  result_.reduce = d_.rotates(C) ? cost_.reduce : 0;
  result_.compute = durations_.sub_task * static_cast<double>(d_.steps);
  result_.stall = std::max(0.0, cost_.comp - cost_.compute);
  result_.total =
      (result_.compute + result_.stall) + static_cast<double>(result_.shift + result_.bcast + result_.reduce);
  result_.exchange_total = result_.exchange_compute + result_.exchange_exchange + result_.exchange_sync;
  result_.makespan = sc_time_stamp().to_seconds() * 1e9;
  result_.simulated_cycles = sc_time_stamp().to_seconds() * 1e9;
  if (links_) result_.links = links_->uses();
  if (o_.timing == CoreTiming::Calibrated) {
    result_.makespan = calibrated_clock_;
    result_.warm_up = calibrated_.warm_up;
    result_.calibrated_hot_bytes = calibrated_.hot_bytes;
    result_.calibrated_cold_bytes = calibrated_.cold_bytes;
    result_.calibrated_rejections = calibrated_.rejections;
  }
  return result_;
}


}  // namespace

namespace {

bool exact_affordable(const Problem& p, int64_t max_work) {
  const double work = static_cast<double>(p.m) * static_cast<double>(p.k) * static_cast<double>(p.n);
  return p.m * p.k <= kMaxExactElements && p.k * p.n <= kMaxExactElements && p.m * p.n <= kMaxExactElements &&
         work <= static_cast<double>(max_work);
}

}  // namespace

bool uses_projected_check(const Problem& p, const CoreSimOptions& o) {
  return o.functional_check == FunctionalCheck::Projected ||
         (o.functional_check == FunctionalCheck::Auto && !exact_affordable(p, kAutoExactWork));
}

namespace {

// The functional check's memory and work stay bounded: the exact check holds A, B and C; the projected one
// walks A·(B·r) and every core's B_block·r and A_block·t.
void check_functional_affordable(const Problem& problem, const Derived& d, const CoreSimOptions& options) {
  if (options.functional_check == FunctionalCheck::Exact && !exact_affordable(problem, kMaxExactWork))
    throw std::invalid_argument(
        "the exact functional check holds the operands in memory and multiplies them "
        "twice: above " +
        std::to_string(kMaxExactElements) + " elements per operand or " + std::to_string(kMaxExactWork) +
        " multiply-adds use the projected (Freivalds) check");
  if (!uses_projected_check(problem, options)) return;
  const double per_step =
      static_cast<double>(d.sub_task[1]) * static_cast<double>(d.sub_task[2] + d.sub_task[0]);
  const double work = static_cast<double>(problem.k) * static_cast<double>(problem.n + problem.m) +
                      static_cast<double>(d.cores) * static_cast<double>(d.steps) * per_step;
  if (work > static_cast<double>(kMaxProjectedWork))
    throw std::invalid_argument("the projected functional check would take " + std::to_string(work) +
                                " multiply-adds, above " + std::to_string(kMaxProjectedWork));
}

}  // namespace

CoresResult simulate_cores(const Problem& problem, const Plan& plan, const CoreSimOptions& options,
                           TraceObserver* trace) {
  // Refusals first, before the kernel is touched.
  const Derived d = derive(problem, plan);
  if (d.cores > kMaxSimulatedCores || d.steps > kMaxCoreSteps / d.cores)
    throw std::invalid_argument(
        "the plan has " + std::to_string(d.cores) + " cores x " + std::to_string(d.steps) +
        " steps; the all-cores engine simulates at most " + std::to_string(kMaxSimulatedCores) +
        " cores and " + std::to_string(kMaxCoreSteps) + " core-steps (--representative replays one core)");
  for (int x = 0; x < 3; ++x)
    if (d.replication[x] % d.ring_products[x] != 0)
      throw std::invalid_argument(std::string("tensor ") + kName[x] + ": its ring of " +
                                  std::to_string(d.ring_products[x]) + " cores does not divide its " +
                                  std::to_string(d.replication[x]) + " replicas (E4): the plan has no rings");
  if (options.timing == CoreTiming::Calibrated && d.misaligned)
    throw std::invalid_argument(std::string("dimension ") + d.misaligned_dim +
                                ": its ring factors are no chain, which the calibrated model cannot price "
                                "(docs/t10-model.md#calibrated)");
  if (options.functional) check_functional_affordable(problem, d, options);
  Engine engine(problem, plan, options, trace);
  return run_as_one_thread<CoresResult>("t10_cores", [&] { return engine.run(); });
}

}  // namespace mlsys::t10
