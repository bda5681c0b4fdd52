#include "sim/t10/t10_serving_sim.hpp"

#include <cmath>
#include <limits>
#include <systemc>

#include "sim/systemc/kernel.hpp"

namespace mlsys::t10 {
namespace {

using namespace sc_core;

// One cycle is one nanosecond of simulated time (the kernel's resolution is a femtosecond).
sc_time cycles(double c) { return sc_time(c, SC_NS); }
double now_cycles() { return sc_time_stamp().to_seconds() * 1e9; }

// What both modules see: the operators' progress, the loads started, and the SRAM check at every event.
struct SharedState {
  const ServingProgram& program;
  const ServingChip& chip;
  const std::vector<ServingChoice>& choices;
  std::vector<bool> load_started, loaded;
  int first_unended = 0, running = -1;
  int lookahead = 1;
  sc_event changed;  // an operator started or ended, or a load ended
  ServingReplay& out;
  TraceObserver* trace;
  int hbm_track = 0, noc_track = 0, compute_track = 0;

  ServingResidency residency() const { return {choices, load_started, first_unended, running}; }
  void check_sram(const std::string& when) {
    ++out.events;
    const int64_t use = serving_sram_now(residency());
    out.peak_sram_bytes = std::max(out.peak_sram_bytes, use);
    if (use > chip.chip.sram_bytes_per_core && out.disagreement.empty())
      out.disagreement = "SRAM overflow at cycle " + std::to_string(static_cast<int64_t>(now_cycles())) + " (" +
                         when + "): " + std::to_string(use) + " B per core > " +
                         std::to_string(chip.chip.sram_bytes_per_core) + " B";
    if (trace) trace->counter("SRAM per core", now_cycles() / 1e3, {{"bytes", use}});
  }
};

// The HBM channel: the loads one at a time in operator order, each when SRAM admits it, progressing at the
// rate the running operator leaves the NoC; re-planned at every change.
class HbmChannel : public sc_module {
 public:
  SC_HAS_PROCESS(HbmChannel);
  HbmChannel(sc_module_name name, SharedState& s) : sc_module(name), s_(s) { SC_THREAD(run); }

 private:
  void run() {
    const int n = static_cast<int>(s_.choices.size());
    std::vector<bool> has_load(n);
    int pending = 0;
    for (int i = 0; i < n; ++i) pending += has_load[i] = !s_.loaded[i];
    for (; pending > 0; --pending) {
      int i;
      while ((i = serving_next_load(s_.residency(), has_load, s_.lookahead, s_.chip.chip.sram_bytes_per_core)) < 0)
        wait(s_.changed);
      s_.load_started[i] = true;
      const double start = now_cycles();
      s_.check_sram("load start " + s_.program.ops[i].op.name);
      for (double remaining = 1; remaining > 0;) {
        const ServingChoice* running = s_.running >= 0 ? &s_.choices[s_.running] : nullptr;
        const double rate = serving_load_rate(s_.chip, s_.choices[i], running);
        const double need = remaining / rate, from = now_cycles();
        if (need < 1e-6) break;  // below the kernel's femtosecond: done now
        wait(cycles(need), s_.changed);
        const double spent = now_cycles() - from;
        remaining = spent >= need * (1 - 1e-12) ? 0 : remaining - rate * spent;
      }
      s_.loaded[i] = true;
      if (s_.trace) {
        const ServingChoice& c = s_.choices[i];
        s_.trace->span(s_.hbm_track, s_.program.ops[i].op.name, start / 1e3, (now_cycles() - start) / 1e3,
                       {{"hbm_bytes", c.hbm_bytes}, {"loads", to_string(s_.program.ops[i].hbm)}});
        s_.trace->span(s_.noc_track, s_.program.ops[i].op.name, start / 1e3, (now_cycles() - start) / 1e3,
                       {{"bytes_per_core", c.preload_bytes}, {"noc_cycles", serving_noc_cycles(s_.chip, c)}});
      }
      s_.check_sram("load end " + s_.program.ops[i].op.name);
      s_.changed.notify(SC_ZERO_TIME);
    }
  }
  SharedState& s_;
};

// The cores: each operator when the one before has ended and its load is done, for its option's time.
class ComputeArray : public sc_module {
 public:
  SC_HAS_PROCESS(ComputeArray);
  ComputeArray(sc_module_name name, SharedState& s) : sc_module(name), s_(s) { SC_THREAD(run); }

 private:
  void run() {
    const int n = static_cast<int>(s_.choices.size());
    for (int j = 0; j < n; ++j) {
      while (!s_.loaded[j]) wait(s_.changed);
      s_.running = j;
      s_.check_sram("start " + s_.program.ops[j].op.name);
      s_.changed.notify(SC_ZERO_TIME);
      const double start = now_cycles(), time = s_.choices[j].option.time();
      wait(cycles(time));
      if (s_.trace)
        s_.trace->span(s_.compute_track, s_.program.ops[j].op.name, start / 1e3, time / 1e3,
                       {{"compute_cycles", s_.choices[j].option.cost.compute},
                        {"hot_bytes_per_core", s_.choices[j].option.hot}});
      s_.running = -1;
      s_.first_unended = j + 1;
      s_.check_sram("end " + s_.program.ops[j].op.name);
      s_.changed.notify(SC_ZERO_TIME);
    }
    s_.out.makespan = now_cycles();
    sc_stop();
  }
  SharedState& s_;
};

}  // namespace

ServingReplay replay_serving(const ServingProgram& program, const ServingChip& chip,
                             const std::vector<ServingChoice>& choices, int lookahead, TraceObserver* trace) {
  prepare_systemc_kernel();
  ServingReplay out;
  {
    SharedState s{program, chip, choices, std::vector<bool>(choices.size(), false),
                  std::vector<bool>(choices.size(), false), 0, -1, lookahead, sc_event("changed"), out, trace};
    for (size_t i = 0; i < choices.size(); ++i) s.loaded[i] = choices[i].hbm_bytes == 0 && choices[i].preload_bytes == 0;
    if (trace) {
      s.hbm_track = trace->track("HBM");
      s.noc_track = trace->track("NoC (loads)");
      s.compute_track = trace->track("compute");
    }
    HbmChannel hbm("hbm", s);
    ComputeArray compute("compute", s);
    sc_start();
  }
  reset_systemc_kernel();
  const ServingTimeline analytic = serving_timeline(program, chip, choices, lookahead);
  const bool same_time = std::abs(out.makespan - analytic.makespan) <= 1e-9 * std::max(1.0, analytic.makespan);
  if (out.disagreement.empty() && !same_time)
    out.disagreement = "makespan " + std::to_string(out.makespan) + " cycles against the analytic " +
                       std::to_string(analytic.makespan);
  if (out.disagreement.empty() && out.peak_sram_bytes != analytic.peak_sram_bytes)
    out.disagreement = "SRAM peak " + std::to_string(out.peak_sram_bytes) + " B against the analytic " +
                       std::to_string(analytic.peak_sram_bytes);
  out.agrees = out.disagreement.empty();
  return out;
}

}  // namespace mlsys::t10
