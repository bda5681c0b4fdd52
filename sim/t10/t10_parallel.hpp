// A serving step over several chips joined by links (docs/t10-chips.md#parallel): what each chip runs under
// tensor or pipeline parallelism, and how a pipeline's stages make a step. The per-chip programs are priced
// by the same serving timeline as one chip's (t10_serving.hpp); the links by t10_links.hpp. The choice
// between the ways is the solver's (solver/t10_parallel).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/t10/t10_serving.hpp"

namespace mlsys::t10 {

// One chip of a system of linked chips: its cores, SRAM and HBM, no links.
ServingChip single_chip(const ServingChip& system);

// Tensor parallelism over `ways` chips (Megatron's column and row splits, by each operator's `shard`): what
// one chip runs. Split dimensions are divided by `ways` (rounded up, so the busiest chip's share), and so
// are the bytes each loads from its HBM; a row-split product pays the all-reduce of its output over the
// system's links. The program's chip becomes `chip`.
ServingProgram tensor_parallel_share(const ServingProgram& program, int64_t ways, const ServingChip& system,
                                     const Chip& chip);
// Whether any operator of the program can be split (the model file gave its data flow).
bool has_tensor_shards(const ServingProgram& program);

// Pipeline parallelism: the operators of layers [first, end), on `chip`.
ServingProgram pipeline_stage(const ServingProgram& program, int first_layer, int end_layer,
                              const Chip& chip);
// The bytes of an operator's output (one value per row for a reducing row-wise operator): what a stage hands
// to the next, and what an all-reduce of a partial output moves.
double output_bytes(const TensorOperator& op, int64_t dtype_bytes);
// The bytes a stage hands to the next: its last operator's output.
double stage_output_bytes(const ServingProgram& stage);

// A pipeline of stages taking `stage_cycles` each per micro-batch, each handing its output over a link in
// `transfer_cycles`, with `micro_batches` in flight. A slot is the slowest stage plus its transfer; one step
// from an empty pipeline fills and drains it in (micro_batches + stages - 1) slots, and in steady state every
// request gets a token each max(micro_batches, stages) slots. The bubble is the share of the fill that a
// stage idles: (stages - 1) / (micro_batches + stages - 1).
struct PipelineTiming {
  double slot = 0, fill = 0, step = 0, bubble = 0;
};
PipelineTiming pipeline_timing(const std::vector<double>& stage_cycles, double transfer_cycles,
                               int64_t micro_batches);

}  // namespace mlsys::t10
