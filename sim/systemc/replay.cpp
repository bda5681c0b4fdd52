#include "sim/systemc/replay.hpp"

#include <memory>

#include "sim/schedule_model.hpp"
#include "sim/systemc/hardware.hpp"
#include "sim/systemc/kernel.hpp"
#include "sim/systemc/waveform_observer.hpp"
#include "sim/trace_observer.hpp"

namespace mlsys {
namespace {

using namespace sc_core;

std::string slice_name(int tensor, const Region& r) {
  return "T" + std::to_string(tensor) + "[" + std::to_string(r.r0) + ":" + std::to_string(r.r1) + "," +
         std::to_string(r.c0) + ":" + std::to_string(r.c1) + "]";
}

// Turns module activity into Perfetto events and, if asked, records the occupancy's step function.
class TraceSink : public hw::ActivitySink {
 public:
  TraceSink(TraceObserver* trace, std::vector<OccupancySample>* occupancy, TraceDetail detail)
      : trace_(trace),
        occupancy_(occupancy),
        steps_detail_(detail == TraceDetail::Step),
        subgraphs_(trace ? trace->track("subgraphs") : 0),
        steps_(trace && steps_detail_ ? trace->track("steps") : 0),
        link_(trace && steps_detail_ ? trace->track("DMA link") : 0),
        compute_(trace && steps_detail_ ? trace->track("compute array") : 0) {}
  void transfer(const hw::Transfer& t, double start, double duration) override {
    if (!trace_ || !steps_detail_) return;
    trace_->span(link_, std::string(t.store ? "store " : "load ") + slice_name(t.tensor, t.region), start,
                 duration,
                 {{"tensor", t.tensor},
                  {"rows", {t.region.r0, t.region.r1}},
                  {"cols", {t.region.c0, t.region.c1}},
                  {"elements", t.region.area()},
                  {"direction", t.store ? "store" : "load"}});
  }
  void compute(const OpCompute& c, double start, double duration) override {
    if (!trace_ || !steps_detail_) return;
    trace_->span(compute_, "op " + std::to_string(c.op), start, duration,
                 {{"op", c.op},
                  {"rows", {c.region.r0, c.region.r1}},
                  {"cols", {c.region.c0, c.region.c1}},
                  {"cost", c.cost}});
  }
  void occupancy(double time, const hw::Occupancy& parts, double capacity) override {
    const int64_t elements = parts.total();
    if (occupancy_) {
      if (!occupancy_->empty() && occupancy_->back().time == time)
        occupancy_->back().elements = elements;
      else
        occupancy_->push_back({time, elements});
    }
    capacity_ = capacity;
    subgraph_peak_ = std::max(subgraph_peak_, elements);
    if (trace_ && steps_detail_) {
      trace_->counter("fast memory (elements)", time, {{"occupancy", elements}, {"capacity", capacity}});
      // The same occupancy by working-set part (M20), one stacked track each.
      trace_->counter("fast memory by part (elements)", time,
                      {{"A retained-in", parts.retained_in},
                       {"B slices", parts.slices},
                       {"C outputs", parts.outputs},
                       {"D accumulators", parts.accumulators}});
    }
  }
  void step(int subgraph, const StepDetail& d, double start, double duration) {
    ++subgraph_steps_;
    if (!trace_ || !steps_detail_) return;
    trace_->span(steps_, "step " + std::to_string(d.ref.position), start, duration,
                 {{"subgraph", subgraph},
                  {"tile", d.ref.tile},
                  {"k_step", d.ref.k_step},
                  {"compute", d.compute},
                  {"memory", d.memory_time},
                  {"working_set", d.working_set.total()}});
  }
  void subgraph(int index, double start, double duration) {
    const int64_t steps = subgraph_steps_, peak = subgraph_peak_;
    subgraph_steps_ = subgraph_peak_ = 0;
    if (!trace_) return;
    trace_->span(subgraphs_, "subgraph " + std::to_string(index), start, duration,
                 {{"subgraph", index}, {"steps", steps}, {"peak_occupancy", peak}});
    if (!steps_detail_)  // the occupancy as one value per subgraph: its peak, held over the subgraph
      trace_->counter("fast memory, subgraph peak (elements)", start,
                      {{"peak", peak}, {"capacity", capacity_}});
  }

 private:
  TraceObserver* trace_;
  std::vector<OccupancySample>* occupancy_;
  bool steps_detail_;
  int subgraphs_, steps_, link_, compute_;
  int64_t subgraph_steps_ = 0, subgraph_peak_ = 0;
  double capacity_ = 0;
};

// A step's link job: the new slices of its set (M21), then its stores (M22).
std::vector<hw::Transfer> transfers_of(const StepDetail& d) {
  std::vector<hw::Transfer> work;
  for (const SliceUse& s : d.slices)
    if (s.loaded) work.push_back({false, s.tensor, s.region});
  for (const Store& s : d.stores) work.push_back({true, s.tensor, s.region});
  return work;
}

// Runs subgraphs strictly in order and their steps in traversal order, as the step model yields them.
class Sequencer : public sc_module {
 public:
  SC_HAS_PROCESS(Sequencer);
  Sequencer(sc_module_name name, const Problem& p, const Graph& g, const Schedule& s, const ReplayOptions& o,
            hw::SlowMemoryLink& link, hw::ComputeArray& compute, hw::FastMemory& memory, TraceSink* sink,
            ReplayResult& result)
      : sc_module(name),
        p_(p),
        g_(g),
        s_(s),
        o_(o),
        link_(link),
        compute_(compute),
        memory_(memory),
        sink_(sink),
        result_(result) {
    SC_THREAD(run);
  }

 private:
  void fail(const RuleViolation& v) {
    result_.error = v;
    result_.error_time = hw::now_units();
    sc_stop();
  }

  // Runs one step's compute; returns when both the compute and the step's link job are done.
  void run_step(int64_t link_job, std::vector<OpCompute> computes) {
    compute_.work = std::move(computes);
    compute_.start.notify(SC_ZERO_TIME);
    wait(compute_.done);
    link_.wait_for(link_job);
  }

  void run() {
    ScheduleWalk walk(p_, g_, s_, o_.model);
    if (auto v = walk.check_coverage()) return fail(*v);
    StepDetail d, next;
    for (int i = 0; i < walk.size(); ++i) {
      auto compiled = walk.next();
      if (auto* v = std::get_if<RuleViolation>(&compiled)) return fail(*v);
      const SubgraphModel& model = std::get<SubgraphModel>(compiled);
      const double start = hw::now_units();
      StepWalker walker(model);
      // Evaluates the next step and lets the fast memory allocate its working set (it detects OOM itself).
      auto take = [&](StepDetail& out) {
        const bool ok = walker.advance(&out);
        if (!ok && walker.violation()->rule != "M20") return fail(*walker.violation()), false;
        if (!memory_.apply(i, out)) return fail(*memory_.violation()), false;
        if (!ok) return fail(*walker.violation()), false;  // the model's OOM, had the memory missed it
        return true;
      };
      // Contest: a step's transfers and compute start together and the step ends when both are done (the
      // roofline max). Overlapped (what-if): in addition, the link may start the next step's transfers as
      // soon as it is free, if this step's working set plus the next step's new slices fit in capacity.
      const bool overlapped = o_.timing == TimingMode::Overlapped;
      int64_t job = -1;  // link job of the current step, if already submitted
      if (!walker.done() && !take(d)) return;
      while (true) {
        const double step_start = hw::now_units();
        if (job < 0) job = link_.submit(transfers_of(d));
        const bool more = !walker.done();
        int64_t next_job = -1;
        if (more) {
          if (!walker.advance(&next) && walker.violation()->rule != "M20") return fail(*walker.violation());
          if (overlapped &&
              static_cast<double>(d.working_set.total() + next.load_elements) <= memory_.capacity())
            next_job = link_.submit(transfers_of(next));
        }
        run_step(job, d.computes);
        if (sink_) sink_->step(i, d, step_start, hw::now_units() - step_start);
        ++result_.steps;
        if (!more) break;
        // The next step begins: its working set is allocated now (an OOM is found here).
        if (!memory_.apply(i, next)) return fail(*memory_.violation());
        if (walker.violation()) return fail(*walker.violation());
        d = next;
        job = next_job;
      }
      memory_.clear();
      const double latency = hw::now_units() - start;
      result_.subgraph_latencies.push_back(latency);
      if (sink_) sink_->subgraph(i, start, latency);
      walk.finish(model);
    }
    if (auto v = walk.check_outputs()) return fail(*v);
    result_.completed = true;
    sc_stop();
  }

  const Problem& p_;
  const Graph& g_;
  const Schedule& s_;
  const ReplayOptions& o_;
  hw::SlowMemoryLink& link_;
  hw::ComputeArray& compute_;
  hw::FastMemory& memory_;
  TraceSink* sink_;
  ReplayResult& result_;
};

}  // namespace

ReplayResult replay_schedule(const Problem& problem, const Graph& graph, const Schedule& schedule,
                             const ReplayOptions& options) {
  prepare_systemc_kernel();
  ReplayResult result;
  std::unique_ptr<TraceSink> sink;
  if (options.trace || options.occupancy)
    sink = std::make_unique<TraceSink>(options.trace, options.occupancy, options.trace_detail);
  {
    auto link = std::make_unique<hw::SlowMemoryLink>("link", problem.slow_memory_bandwidth, sink.get());
    auto compute = std::make_unique<hw::ComputeArray>("compute", sink.get());
    auto memory = std::make_unique<hw::FastMemory>("fast_memory", problem.fast_memory_capacity, sink.get());
    auto sequencer = std::make_unique<Sequencer>("sequencer", problem, graph, schedule, options, *link,
                                                 *compute, *memory, sink.get(), result);
    if (options.waveform) options.waveform->elaborated({memory->occupancy, link->busy, compute->busy});
    sc_start();
    result.total_latency = hw::now_units();
    result.peak_occupancy = memory->peak();
    if (options.waveform) options.waveform->finished();
  }
  // Modules are gone; a fresh kernel for the next replay in this process.
  reset_systemc_kernel();
  return result;
}

}  // namespace mlsys
