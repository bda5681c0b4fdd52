#include "sim/t10/t10_traffic_sim.hpp"

#include <cmath>
#include <systemc>

#include "sim/systemc/kernel.hpp"

namespace mlsys::t10 {
namespace {

using namespace sc_core;

// One millisecond of serving is one microsecond of simulated time: the kernel's femtosecond resolution is
// then a picosecond of serving, and its 2^64 fs range over 200 days.
sc_time serving_ms(double ms) { return sc_time(ms, SC_US); }
double now_ms() { return sc_time_stamp().to_seconds() * 1e6; }

struct Shared {
  const std::vector<ServingRequest>& requests;
  TrafficEngine engine;
  const IterationPricer& price;
  TrafficReplay& out;
  TraceObserver* trace;
  int track = 0;
  sc_event arrived;
  size_t delivered = 0;
};

// Hands each request to the scheduler at its arrival time.
class Arrivals : public sc_module {
 public:
  SC_HAS_PROCESS(Arrivals);
  Arrivals(sc_module_name name, Shared& s) : sc_module(name), s_(s) { SC_THREAD(run); }

 private:
  void run() {
    for (size_t i = 0; i < s_.requests.size(); ++i) {
      const sc_time at = serving_ms(s_.requests[i].arrival_ms);
      if (at > sc_time_stamp()) wait(at - sc_time_stamp());
      s_.engine.arrive(static_cast<int>(i));
      s_.delivered = i + 1;
      ++s_.out.arrivals;
      s_.arrived.notify(SC_ZERO_TIME);
    }
  }
  Shared& s_;
};

// The chip: an iteration whenever it is idle and something can run, for the pricer's time.
class ChipProcess : public sc_module {
 public:
  SC_HAS_PROCESS(ChipProcess);
  ChipProcess(sc_module_name name, Shared& s) : sc_module(name), s_(s) { SC_THREAD(run); }

 private:
  void run() {
    const size_t n = s_.requests.size();
    double now = n ? s_.requests[0].arrival_ms : 0;  // the serving clock, kept as the analytic driver keeps it
    while (true) {
      wait(SC_ZERO_TIME);  // arrivals at this instant are delivered first, as run_traffic admits them
      std::optional<IterationRecord> it = s_.engine.plan(now);
      if (!it) {
        if (s_.delivered >= n) break;
        wait(s_.arrived);
        now = std::max(now, s_.requests[s_.delivered - 1].arrival_ms);
        continue;
      }
      time_iteration(*it, now, s_.price);
      wait(serving_ms(it->end_ms) - sc_time_stamp());
      s_.engine.finish(*it, it->end_ms);
      now = it->end_ms;
      ++s_.out.iterations;
      if (s_.trace) {
        s_.trace->span(s_.track, it->prefill_chunks.empty() ? "decode" : "mixed", it->start_ms * 1e3,
                       (it->end_ms - it->start_ms) * 1e3,
                       {{"decode_requests", it->decoding.size()}, {"prefill_tokens", it->prefill_tokens}});
        s_.trace->counter("KV cache", now * 1e3, {{"bytes", s_.engine.kv_bytes()}});
        s_.trace->counter("queue", now * 1e3, {{"requests", s_.engine.queue_length()}});
      }
    }
    s_.out.makespan_ms = now_ms();
    sc_stop();
  }
  Shared& s_;
};

}  // namespace

TrafficReplay replay_traffic(const std::vector<ServingRequest>& requests, const TrafficOptions& options,
                             const IterationPricer& price, const TrafficRun& analytic, TraceObserver* trace) {
  TrafficReplay out;
  prepare_systemc_kernel();
  int64_t finished = 0;
  {
    Shared s{requests, TrafficEngine(requests, options), price, out, trace, 0, sc_event("arrived"), 0};
    if (trace) s.track = trace->track("iterations");
    Arrivals arrivals("arrivals", s);
    ChipProcess chip("chip", s);
    sc_start();
    for (const RequestOutcome& o : s.engine.outcomes()) finished += o.status == RequestOutcome::Status::Finished;
  }
  reset_systemc_kernel();
  int64_t analytic_finished = 0;
  for (const RequestOutcome& o : analytic.requests)
    analytic_finished += o.status == RequestOutcome::Status::Finished;
  if (std::abs(out.makespan_ms - analytic.makespan_ms) > 1e-9 * std::max(1.0, analytic.makespan_ms))
    out.disagreement = "makespan " + std::to_string(out.makespan_ms) + " ms against the analytic " +
                       std::to_string(analytic.makespan_ms);
  else if (out.iterations != static_cast<int64_t>(analytic.iterations.size()))
    out.disagreement = std::to_string(out.iterations) + " iterations against the analytic " +
                       std::to_string(analytic.iterations.size());
  else if (finished != analytic_finished)
    out.disagreement = std::to_string(finished) + " requests finished against the analytic " +
                       std::to_string(analytic_finished);
  out.agrees = out.disagreement.empty();
  return out;
}

}  // namespace mlsys::t10
