// Choosing how a serving step runs on chips joined by links (docs/t10-chips.md#parallel): one partition of
// every operator over all chips' cores (flat), tensor parallelism (each chip a shard of every layer, the
// partial sums all-reduced over the links) or pipeline parallelism (each chip whole layers, micro-batches
// passing over the links). Each way is priced by the serving timeline through serve(); the solver keeps
// every way's terms so the output can say why it chose one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_parallel.hpp"
#include "solver/t10_compile.hpp"
#include "solver/t10_serving.hpp"

namespace mlsys::t10 {

enum class Parallelism { Flat, Tensor, Pipeline, Auto };
std::optional<Parallelism> parallelism_from(const std::string& name);
const char* to_string(Parallelism p);

struct ParallelOption {
  Parallelism way = Parallelism::Flat;
  bool feasible = false;
  std::string why_not;  // when not feasible
  int64_t chips_used = 1;
  int64_t micro_batches = 1;  // pipeline
  double step_cycles = 0;     // every request one token, in steady state
  double lower_bound_cycles = 0;  // no schedule of this way's option sets has a shorter step
  double chip_cycles = 0;     // flat and tensor: one chip's timeline; pipeline: the slowest stage's
  double link_cycles = 0;     // tensor: the all-reduces of one step; pipeline: one stage's transfer
  double bubble = 0;          // pipeline: PipelineTiming::bubble
  double hbm_bytes_per_chip = 0;  // the busiest chip's HBM: what it holds (weights, every micro-batch's KV)
  ServingProgram program;  // what one chip runs (the slowest stage of a pipeline)
  ServingChip chip;        // the chip it runs on
  ServingResult result;    // its schedule
};

struct ParallelChoice {
  std::vector<ParallelOption> options;  // flat, tensor, pipeline: those asked for
  int chosen = -1;                      // the fastest feasible; -1: none
};

// `at_batch(b)` instantiates the model's step at batch b (a pipeline prices micro-batches); `batch` is the
// step's. On one chip only `flat` is asked. Throws std::invalid_argument when no way asked for is feasible,
// with each way's reason.
ParallelChoice serve_in_parallel(const std::function<ServingProgram(int64_t batch)>& at_batch, int64_t batch,
                                 const ServingChip& system, Parallelism way, const ServeOptions& options,
                                 ServingOptionCache* cache = nullptr);

// `t10 compile` over linked chips (docs/t10-chips.md#compile): a whole network, every weight kept on chip.
// Flat: one partition of every operator over the fewest chips on which it fits (priced with the links).
// Pipeline: consecutive operators per chip, as even in count as the division gives, on the fewest chips on
// which every stage fits one chip; each stage hands what later stages read over the link.
struct ChipPlacement {
  Parallelism way = Parallelism::Flat;
  bool compiled = false;
  std::string why_not;
  int64_t chips_used = 0;
  std::vector<TensorProgram> stages;    // flat: one
  std::vector<CompileResult> results;   // per stage
  std::vector<double> transfer_cycles;  // pipeline: after each stage but the last
  double total_cycles = 0;              // the stages' totals and the transfers
};
// One placement per way asked (flat, pipeline; auto asks both). Throws what compile_program throws.
std::vector<ChipPlacement> compile_over_chips(const TensorProgram& program, const Chip& system,
                                              Parallelism way, const CompileOptions& options);

}  // namespace mlsys::t10
