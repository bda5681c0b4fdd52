#include "sim/t10/t10_serving.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mlsys::t10 {

// The Elk artifact gives its HBM a bandwidth but no capacity. 4,000 GB/s is an H100-class part's bandwidth
// (3.35 TB/s SXM), whose capacity is 80 GB: each 4,000 GB/s of a preset brings 80 GB.
constexpr double kHbmBytesPer4000Gbps = 80e9;

// A GC200's ten IPU-Links together (Graphcore's GC200 specifications, docs/t10-chips.md#numbers). No public
// figure for their latency was found: 0 until one is set.
constexpr double kIpuLinkGbps = 320;

std::optional<ServingChip> serving_chip_preset(const std::string& name) {
  ServingChip c;
  c.chip.name = name;
  if (name == "ipu-mk2") return c;  // T1's chip, no HBM
  const bool linked = name == "elk-5888-linked" || name == "ipu-pod4";
  if (name == "elk-1472" || name == "elk-5888" || linked) {
    // The artifact's default is one chip with HBM at 4,000 GB/s (launch.py hbm_bw); its large configuration
    // is four chips' cores with 16,000 GB/s, which we read as 4,000 GB/s behind each chip.
    c.hbm_gbps = name == "ipu-pod4" ? 0 : 4000;
    c.hbm_capacity_bytes = name == "ipu-pod4" ? 0 : kHbmBytesPer4000Gbps;
    if (name != "elk-1472") {
      c.chip.chips = 4;
      c.chip.cores = 4 * kIpuCoresPerChip;
    }
    if (linked) {
      c.chip.link_gbps = kIpuLinkGbps;
      c.chip.topology = "ring";
    }
    return c;
  }
  return std::nullopt;
}

std::vector<std::string> serving_chip_preset_names() {
  return {"ipu-mk2", "elk-1472", "elk-5888", "elk-5888-linked", "ipu-pod4"};
}

const char* to_string(HbmOperand kind) {
  switch (kind) {
    case HbmOperand::Weight: return "weight";
    case HbmOperand::KvCache: return "kv-cache";
    case HbmOperand::None: break;
  }
  return "none";
}

ServingChoice serving_choice(const ServingOperator& op, const OperatorOption& option) {
  ServingChoice c;
  c.option = option;
  if (op.hbm != HbmOperand::None) {
    c.preload_bytes = option.cold_input(1);
    c.hbm_bytes = op.hbm_bytes;
  }
  c.hbm_bytes += op.hbm_write_bytes;
  if (op.collective_cycles > 0) {
    c.option.cost.collective = op.collective_cycles;
    c.option.cost.total += op.collective_cycles;
  }
  return c;
}

std::string SramOverflow::message() const {
  std::string text = "SRAM overflow at cycle " + std::to_string(static_cast<int64_t>(std::floor(time))) +
                     (op >= 0 ? " (operator " + std::to_string(op) + ")" : std::string()) +
                     ": every core holds " + std::to_string(total) + " B > " + std::to_string(capacity) +
                     " B:";
  for (const auto& [name, bytes] : resident) text += " " + name + " " + std::to_string(bytes) + " B;";
  return text;
}

int64_t serving_running_bytes(const ServingChoice& c) {
  return c.option.hot + (c.option.cold_is_hot ? 0 : c.preload_bytes);
}

int64_t serving_sram_now(const ServingResidency& r) {
  int64_t use = r.running >= 0 ? serving_running_bytes(r.choices[r.running]) : 0;
  for (int k = r.first_unended; k < static_cast<int>(r.choices.size()); ++k)
    if (r.load_started[k] && k != r.running) use += r.choices[k].preload_bytes;
  return use;
}

namespace {
// Whether every operator from `from` on fits while it runs beside the held loads of later operators.
bool fits_from(const ServingResidency& r, const std::vector<bool>& held, int from, int64_t sram) {
  const int n = static_cast<int>(r.choices.size());
  int last = from - 1;
  for (int k = from; k < n; ++k)
    if (held[k]) last = k;
  for (int j = from; j <= last; ++j) {
    int64_t use = serving_running_bytes(r.choices[j]);
    for (int k = j + 1; k <= last; ++k)
      if (held[k]) use += r.choices[k].preload_bytes;
    if (use > sram) return false;
  }
  return true;
}
}  // namespace

int serving_next_load(const ServingResidency& r, const std::vector<bool>& has_load, int lookahead, int64_t sram) {
  const int n = static_cast<int>(r.choices.size());
  int first_waiting = -1;  // the earliest load not started: it must stay possible
  for (int i = r.first_unended, tried = 0; i < n && tried < lookahead; ++i) {
    if (!has_load[i] || r.load_started[i]) continue;
    ++tried;
    std::vector<bool> held(r.load_started);
    held[i] = true;
    // Now: every operator from the first unended one on fits beside the started loads and this one.
    if (!fits_from(r, held, r.first_unended, sram)) {
      if (first_waiting < 0) first_waiting = i;
      continue;
    }
    if (first_waiting < 0) return i;
    // Passing earlier loads: once the operators before them have ended, they must still fit beside this one.
    for (int k = first_waiting; k < i; ++k)
      if (has_load[k] && !r.load_started[k]) held[k] = true;
    if (fits_from(r, held, first_waiting, sram)) return i;
  }
  return -1;
}

double serving_hbm_cycles(const ServingChip& chip, const ServingChoice& c) {
  return static_cast<double>(c.hbm_bytes) / chip.hbm_bytes_per_cycle();
}

double serving_noc_cycles(const ServingChip& chip, const ServingChoice& c) {
  return static_cast<double>(c.preload_bytes) / chip.noc_bytes_per_cycle_per_core();
}

double serving_load_rate(const ServingChip& chip, const ServingChoice& loading, const ServingChoice* running) {
  double noc_share = 1;
  if (running) {
    const OperatorOption& o = running->option;
    noc_share = o.time() > 0 ? std::clamp(o.cost.compute / o.time(), 0.0, 1.0) : 1;
  }
  const double hbm = serving_hbm_cycles(chip, loading), noc = serving_noc_cycles(chip, loading);
  double rate = hbm > 0 ? 1 / hbm : std::numeric_limits<double>::infinity();
  if (noc > 0) rate = std::min(rate, noc_share / noc);
  return rate;
}

namespace {

// The walk over events: the load in flight and the operator running, advanced to the next event.
class TimelineWalk {
 public:
  TimelineWalk(const ServingProgram& program, const ServingChip& chip, const std::vector<ServingChoice>& choices,
               int lookahead)
      : program_(program), chip_(chip), c_(choices), n_(static_cast<int>(choices.size())), lookahead_(lookahead) {
    t_.loads.assign(n_, {});
    t_.ops.assign(n_, {});
    loaded_.assign(n_, false);
    started_load_.assign(n_, false);
    for (int i = 0; i < n_; ++i) {
      loaded_[i] = c_[i].preload_bytes == 0 && c_[i].hbm_bytes == 0;
      has_load_.push_back(!loaded_[i]);
      t_.hbm_bytes += static_cast<double>(c_[i].hbm_bytes);
    }
  }

  ServingTimeline run() {
    for (int i = 0; i < n_; ++i)
      if (serving_running_bytes(c_[i]) > chip_.chip.sram_bytes_per_core) {
        t_.overflow = overflow_with(i, i, 0);
        return t_;
      }
    while (ended_ < n_) {
      try_start_load();
      try_start_op();
      step();
    }
    t_.makespan = now_;
    return t_;
  }

 private:
  ServingResidency residency() const { return {c_, started_load_, ended_, running_}; }
  void record(const std::string& what, int op) {
    const int64_t sram = serving_sram_now(residency());
    t_.peak_sram_bytes = std::max(t_.peak_sram_bytes, sram);
    t_.events.push_back({now_, what, op, sram});
  }
  void try_start_load() {
    if (loading_ >= 0) return;
    const int next = serving_next_load(residency(), has_load_, lookahead_, chip_.chip.sram_bytes_per_core);
    if (next < 0) return;
    loading_ = next;
    started_load_[loading_] = true;
    const ServingChoice& c = c_[loading_];
    LoadSpan& span = t_.loads[loading_];
    span.start = now_;
    span.hbm_cycles = serving_hbm_cycles(chip_, c);
    span.noc_cycles = serving_noc_cycles(chip_, c);
    t_.hbm_busy_cycles += span.hbm_cycles;
    t_.noc_load_cycles += span.noc_cycles;
    remaining_ = 1;
    record("load start", loading_);
  }
  void try_start_op() {
    if (running_ >= 0 || next_op_ >= n_ || !loaded_[next_op_]) return;
    running_ = next_op_++;
    const OperatorOption& o = c_[running_].option;
    t_.ops[running_] = {now_, now_ + o.time()};
    t_.compute_cycles += o.cost.compute;
    t_.exchange_cycles += o.time() - o.cost.compute;
    record("op start", running_);
  }
  double load_rate() const {
    return serving_load_rate(chip_, c_[loading_], running_ >= 0 ? &c_[running_] : nullptr);
  }
  void step() {
    const double inf = std::numeric_limits<double>::infinity();
    const double op_end = running_ >= 0 ? t_.ops[running_].end : inf;
    double load_end = inf, rate = 0;
    if (loading_ >= 0) {
      rate = load_rate();
      load_end = rate > 0 ? now_ + remaining_ / rate : inf;
    }
    if (op_end == inf && load_end == inf) {
      // Nothing can move: only an operator that cannot fit with its own load does this, caught above.
      t_.overflow = overflow_with(next_op_, next_op_, now_);
      ended_ = n_;
      return;
    }
    if (load_end <= op_end) {
      now_ = load_end;
      t_.loads[loading_].end = now_;
      loaded_[loading_] = true;
      const int done = loading_;
      loading_ = -1;
      record("load end", done);
    } else {
      if (loading_ >= 0) remaining_ = std::max(0.0, remaining_ - rate * (op_end - now_));
      now_ = op_end;
      const int done = running_;
      running_ = -1;
      ended_ = done + 1;
      record("op end", done);
    }
  }
  SramOverflow overflow_with(int running, int through, double time) const {
    SramOverflow o;
    o.time = time;
    o.op = running;
    o.capacity = chip_.chip.sram_bytes_per_core;
    const std::string& name = program_.ops[running].op.name;
    o.resident.emplace_back(name + " (running: hot plan" +
                                (c_[running].option.cold_is_hot ? "" : " and its cold operand") + ")",
                            serving_running_bytes(c_[running]));
    for (int k = running + 1; k <= through && k < n_; ++k)
      if (started_load_[k] || k == through)
        o.resident.emplace_back(program_.ops[k].op.name + " (preloaded " + to_string(program_.ops[k].hbm) + ")",
                                c_[k].preload_bytes);
    for (const auto& term : o.resident) o.total += term.second;
    return o;
  }

  const ServingProgram& program_;
  const ServingChip& chip_;
  const std::vector<ServingChoice>& c_;
  const int n_;
  ServingTimeline t_;
  std::vector<bool> loaded_, started_load_, has_load_;
  const int lookahead_;
  double now_ = 0, remaining_ = 0;
  int loading_ = -1, running_ = -1, next_op_ = 0, ended_ = 0;
};

}  // namespace

ServingTimeline serving_timeline(const ServingProgram& program, const ServingChip& chip,
                                 const std::vector<ServingChoice>& choices, int lookahead) {
  return TimelineWalk(program, chip, choices, std::max(1, lookahead)).run();
}

double serving_lower_bound(const ServingProgram& program, const ServingChip& chip,
                           const std::vector<std::vector<ServingChoice>>& options) {
  const int n = static_cast<int>(options.size());
  std::vector<double> fastest(n, std::numeric_limits<double>::infinity());
  for (int i = 0; i < n; ++i)
    for (const ServingChoice& c : options[i]) fastest[i] = std::min(fastest[i], c.option.time());
  std::vector<double> suffix(n + 1, 0);  // the fastest times of operators i.. on
  for (int i = n - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + fastest[i];
  double hbm = 0, bound = suffix[0];
  int first = -1, last = -1;
  for (int i = 0; i < n; ++i)
    if (program.ops[i].hbm != HbmOperand::None && program.ops[i].hbm_bytes > 0) {
      hbm += static_cast<double>(program.ops[i].hbm_bytes) / chip.hbm_bytes_per_cycle();
      if (first < 0) first = i;
      last = i;
    }
  if (last >= 0) {
    bound = std::max(bound, hbm + suffix[last]);
    bound = std::max(bound, static_cast<double>(program.ops[first].hbm_bytes) / chip.hbm_bytes_per_cycle() +
                                suffix[first]);
  }
  return bound;
}

}  // namespace mlsys::t10
