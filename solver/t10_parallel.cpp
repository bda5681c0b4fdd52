#include "solver/t10_parallel.hpp"

#include <algorithm>
#include <stdexcept>

#include "sim/t10/t10_links.hpp"

namespace mlsys::t10 {

std::optional<Parallelism> parallelism_from(const std::string& name) {
  for (Parallelism p : {Parallelism::Flat, Parallelism::Tensor, Parallelism::Pipeline, Parallelism::Auto})
    if (name == to_string(p)) return p;
  return std::nullopt;
}

const char* to_string(Parallelism p) {
  switch (p) {
    case Parallelism::Tensor:
      return "tensor";
    case Parallelism::Pipeline:
      return "pipeline";
    case Parallelism::Auto:
      return "auto";
    case Parallelism::Flat:
      break;
  }
  return "flat";
}

namespace {

// The KV cache one step of `program` reads and writes.
double kv_bytes(const ServingProgram& program) {
  double bytes = 0;
  for (const ServingOperator& op : program.ops)
    bytes += static_cast<double>(op.hbm_write_bytes) + (op.hbm == HbmOperand::KvCache ? op.hbm_bytes : 0);
  return bytes;
}

// Schedules `program` on `chip`; infeasible when an operator fits no core, SRAM overflows, or one chip's HBM
// cannot hold what it loads and `resident_besides` (other micro-batches' KV cache, which stays in HBM).
bool schedule(ParallelOption& o, const ServeOptions& options, ServingOptionCache* cache, double hbm_capacity,
              double resident_besides = 0) {
  try {
    o.result = serve(o.program, o.chip, options, cache);
  } catch (const std::invalid_argument& e) {
    o.why_not = e.what();
    return false;
  }
  const ServingTimeline& t = o.result.timeline;
  if (t.overflow) {
    o.why_not = t.overflow->message();
    return false;
  }
  o.chip_cycles = t.makespan;
  o.hbm_bytes_per_chip = t.hbm_bytes + resident_besides;
  if (hbm_capacity > 0 && o.hbm_bytes_per_chip > hbm_capacity) {
    o.why_not = "one chip's HBM holds " + std::to_string(static_cast<int64_t>(hbm_capacity)) +
                " B, it needs " + std::to_string(static_cast<int64_t>(o.hbm_bytes_per_chip)) + " B";
    return false;
  }
  return true;
}

ParallelOption flat(const ServingProgram& program, const ServingChip& system, const ServeOptions& options,
                    ServingOptionCache* cache) {
  ParallelOption o;
  o.way = Parallelism::Flat;
  o.chips_used = system.chip.chips;
  o.program = program;
  o.program.program.chip = system.chip;
  o.chip = system;
  // The flat pool's loads spread over every chip's HBM: the capacity is theirs together.
  o.feasible = schedule(o, options, cache, system.total_hbm_capacity_bytes());
  o.hbm_bytes_per_chip /= static_cast<double>(system.chip.chips);
  o.step_cycles = o.chip_cycles;
  o.lower_bound_cycles = o.result.lower_bound;
  return o;
}

ParallelOption tensor(const ServingProgram& program, const ServingChip& system, const ServeOptions& options) {
  ParallelOption o;
  o.way = Parallelism::Tensor;
  o.chips_used = system.chip.chips;
  if (!has_tensor_shards(program)) {
    o.why_not = "the model file gives no data flow to split its operators by";
    return o;
  }
  o.chip = single_chip(system);
  o.program = tensor_parallel_share(program, o.chips_used, system, o.chip.chip);
  ServingOptionCache own;  // one chip's tables, not the system's
  o.feasible = schedule(o, options, &own, system.hbm_capacity_bytes);
  for (const ServingOperator& op : o.program.ops) o.link_cycles += op.collective_cycles;
  o.step_cycles = o.chip_cycles;
  o.lower_bound_cycles = o.result.lower_bound;
  return o;
}

ParallelOption pipeline(const std::function<ServingProgram(int64_t)>& at_batch, int64_t batch,
                        const ServingProgram& whole, const ServingChip& system, const ServeOptions& options) {
  ParallelOption o;
  o.way = Parallelism::Pipeline;
  const int64_t stages = std::min<int64_t>(system.chip.chips, whole.layers);
  o.chips_used = stages;
  if (stages < 2) {
    o.why_not = "one layer: nothing to pipeline";
    return o;
  }
  // As many micro-batches as stages keeps every stage busy in steady state; more reload the weights more
  // often. The largest divisor of the batch up to that.
  o.micro_batches = 1;  // an imported step (batch 0) has its own shapes: one micro-batch
  for (int64_t m = batch > 0 ? stages : 1; m >= 1; --m)
    if (batch % m == 0) {
      o.micro_batches = m;
      break;
    }
  const ServingProgram micro = o.micro_batches == 1 ? whole : at_batch(batch / o.micro_batches);
  o.chip = single_chip(system);
  ServingOptionCache own;
  std::vector<double> stage_cycles;
  double transfer = 0;
  for (int64_t s = 0; s < stages; ++s) {
    ParallelOption stage = o;
    const int first = static_cast<int>(s * whole.layers / stages),
              end = static_cast<int>((s + 1) * whole.layers / stages);
    stage.program = pipeline_stage(micro, first, end, o.chip.chip);
    // A stage holds every micro-batch's KV cache while it steps through one of them.
    const double other_kv = static_cast<double>(o.micro_batches - 1) * kv_bytes(stage.program);
    if (!schedule(stage, options, &own, system.hbm_capacity_bytes, other_kv)) {
      o.why_not = "stage " + std::to_string(s) + ": " + stage.why_not;
      return o;
    }
    transfer = std::max(transfer, transfer_cycles(system.chip, stage_output_bytes(stage.program)));
    stage_cycles.push_back(stage.chip_cycles);
    o.hbm_bytes_per_chip = std::max(o.hbm_bytes_per_chip, stage.hbm_bytes_per_chip);
    if (stage.chip_cycles >= o.chip_cycles) {
      o.program = stage.program;
      o.result = stage.result;
      o.chip_cycles = stage.chip_cycles;
    }
  }
  const PipelineTiming t = pipeline_timing(stage_cycles, transfer, o.micro_batches);
  // The step is max(micro-batches, stages) slots, each at least the slowest stage's bound and its transfer.
  o.lower_bound_cycles = t.step / t.slot * (o.result.lower_bound + transfer);
  o.link_cycles = transfer;
  o.bubble = t.bubble;
  o.step_cycles = t.step;
  o.feasible = true;
  return o;
}

}  // namespace

ParallelChoice serve_in_parallel(const std::function<ServingProgram(int64_t)>& at_batch, int64_t batch,
                                 const ServingChip& system, Parallelism way, const ServeOptions& options,
                                 ServingOptionCache* cache) {
  ParallelChoice c;
  const bool several = system.chip.chips > 1;
  const ServingProgram whole = at_batch(batch);
  if (way == Parallelism::Flat || way == Parallelism::Auto || !several)
    c.options.push_back(flat(whole, system, options, cache));
  if (several && (way == Parallelism::Tensor || way == Parallelism::Auto))
    c.options.push_back(tensor(whole, system, options));
  if (several && (way == Parallelism::Pipeline || way == Parallelism::Auto))
    c.options.push_back(pipeline(at_batch, batch, whole, system, options));
  std::string reasons;
  for (size_t i = 0; i < c.options.size(); ++i) {
    const ParallelOption& o = c.options[i];
    if (!o.feasible) {
      reasons += std::string(reasons.empty() ? "" : "; ") + to_string(o.way) + ": " + o.why_not;
      continue;
    }
    if (c.chosen < 0 || o.step_cycles < c.options[c.chosen].step_cycles) c.chosen = static_cast<int>(i);
  }
  if (c.chosen < 0) throw std::invalid_argument("no way to run the step fits: " + reasons);
  return c;
}

namespace {

// `system`'s first `chips` chips.
Chip first_chips(const Chip& system, int64_t chips) {
  Chip c = system;
  c.chips = chips;
  c.cores = chips * system.cores_per_chip;
  return c;
}

// Operators [first, end) of `program` on `chip`; what they read from earlier operators arrives over the link.
TensorProgram program_part(const TensorProgram& program, size_t first, size_t end, const Chip& chip) {
  TensorProgram part = program;
  part.chip = chip;
  part.ops.assign(program.ops.begin() + static_cast<std::ptrdiff_t>(first),
                  program.ops.begin() + static_cast<std::ptrdiff_t>(end));
  part.name = program.name + " [" + std::to_string(first) + ", " + std::to_string(end) + ")";
  return part;
}

ChipPlacement flat_placement(const TensorProgram& program, const Chip& system,
                             const CompileOptions& options) {
  ChipPlacement p;
  p.way = Parallelism::Flat;
  int64_t least = 0;
  for (int64_t chips = 1; chips <= system.chips; ++chips) {
    TensorProgram on = program;
    on.chip = first_chips(system, chips);
    CompileResult r = compile_program(on, options);
    least = r.least_sram_bytes;
    if (!r.compiled) continue;
    p.compiled = true;
    p.chips_used = chips;
    p.total_cycles = r.compiled->total_cycles;
    p.stages.push_back(std::move(on));
    p.results.push_back(std::move(r));
    return p;
  }
  p.why_not = "on all " + std::to_string(system.chips) + " chips its operators still need " +
              std::to_string(least) + " B per core";
  return p;
}

ChipPlacement pipeline_placement(const TensorProgram& program, const Chip& system,
                                 const CompileOptions& options) {
  ChipPlacement p;
  p.way = Parallelism::Pipeline;
  const Chip one = first_chips(system, 1);
  const std::vector<std::vector<DataEdge>> flow = data_flow(program);
  const size_t ops = program.ops.size();
  for (int64_t chips = 2; chips <= system.chips && static_cast<size_t>(chips) <= ops; ++chips) {
    std::vector<size_t> start;
    for (int64_t s = 0; s <= chips; ++s)
      start.push_back(static_cast<size_t>(s) * ops / static_cast<size_t>(chips));
    std::vector<TensorProgram> stages;
    std::vector<CompileResult> results;
    bool fits = true;
    for (int64_t s = 0; s < chips && fits; ++s) {
      stages.push_back(program_part(program, start[s], start[s + 1], one));
      results.push_back(compile_program(stages.back(), options));
      fits = results.back().compiled.has_value();
    }
    if (!fits) continue;
    p.compiled = true;
    p.chips_used = chips;
    for (const CompileResult& r : results) p.total_cycles += r.compiled->total_cycles;
    // After stage s, every output a later stage reads crosses to the next chip (once per producer).
    for (int64_t s = 0; s + 1 < chips; ++s) {
      double bytes = 0;
      for (size_t producer = start[0]; producer < start[s + 1]; ++producer) {
        bool read_later = false;
        for (size_t consumer = start[s + 1]; consumer < ops && !read_later; ++consumer)
          for (const DataEdge& e : flow[consumer])
            read_later = read_later || e.producer == static_cast<int>(producer);
        if (read_later) bytes += output_bytes(program.ops[producer], program.dtype_bytes);
      }
      p.transfer_cycles.push_back(transfer_cycles(system, bytes));
      p.total_cycles += p.transfer_cycles.back();
    }
    p.stages = std::move(stages);
    p.results = std::move(results);
    return p;
  }
  p.why_not = "no split over 2 to " + std::to_string(system.chips) + " chips has every stage fit one chip";
  return p;
}

}  // namespace

std::vector<ChipPlacement> compile_over_chips(const TensorProgram& program, const Chip& system,
                                              Parallelism way, const CompileOptions& options) {
  std::vector<ChipPlacement> out;
  if (way == Parallelism::Flat || way == Parallelism::Auto || system.chips == 1)
    out.push_back(flat_placement(program, system, options));
  if (system.chips > 1 && (way == Parallelism::Pipeline || way == Parallelism::Auto))
    out.push_back(pipeline_placement(program, system, options));
  return out;
}

}  // namespace mlsys::t10
