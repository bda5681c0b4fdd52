// Serving over several chips (docs/t10-chips.md#parallel).
#include "sim/t10/t10_parallel.hpp"

#include <algorithm>

#include "sim/t10/t10_links.hpp"

namespace mlsys::t10 {

const char* to_string(TensorShard shard) {
  switch (shard) {
    case TensorShard::Column:
      return "column";
    case TensorShard::Row:
      return "row";
    case TensorShard::Heads:
      return "heads";
    case TensorShard::Split:
      return "split";
    case TensorShard::Replicated:
      break;
  }
  return "whole";
}

ServingChip single_chip(const ServingChip& system) {
  ServingChip one = system;
  one.chip.cores = std::min(system.chip.cores, system.chip.cores_per_chip);
  one.chip.chips = 1;
  one.chip.link_gbps = 0;
  one.chip.name = system.chip.name + " (one chip)";
  return one;
}

namespace {

int64_t divided(int64_t v, int64_t ways) {
  return (v + ways - 1) / ways;
}

}  // namespace

bool has_tensor_shards(const ServingProgram& program) {
  return std::any_of(program.ops.begin(), program.ops.end(),
                     [](const ServingOperator& o) { return o.shard != TensorShard::Replicated; });
}

ServingProgram tensor_parallel_share(const ServingProgram& program, int64_t ways, const ServingChip& system,
                                     const Chip& chip) {
  ServingProgram p = program;
  p.program.chip = chip;
  for (ServingOperator& o : p.ops) {
    TensorOperator& op = o.op;
    switch (o.shard) {
      case TensorShard::Column:
        op.n = divided(op.n, ways);
        break;
      case TensorShard::Row:
        op.k = divided(op.k, ways);
        break;
      case TensorShard::Heads:
        op.batch = divided(op.batch, ways);
        break;
      case TensorShard::Split:
        if (op.m >= ways)
          op.m = divided(op.m, ways);
        else
          op.n = divided(op.n, ways);
        break;
      case TensorShard::Replicated:
        continue;
    }
    o.hbm_bytes = divided(o.hbm_bytes, ways);
    o.hbm_write_bytes = divided(o.hbm_write_bytes, ways);
    if (o.shard == TensorShard::Row)
      o.collective_cycles =
          all_reduce_cycles(system.chip, ways, output_bytes(op, program.program.dtype_bytes));
  }
  p.program.ops.clear();
  for (const ServingOperator& o : p.ops) p.program.ops.push_back(o.op);
  return p;
}

ServingProgram pipeline_stage(const ServingProgram& program, int first_layer, int end_layer,
                              const Chip& chip) {
  ServingProgram p = program;
  p.program.chip = chip;
  p.ops.clear();
  p.program.ops.clear();
  for (const ServingOperator& o : program.ops)
    if (o.layer >= first_layer && o.layer < end_layer) {
      p.ops.push_back(o);
      p.program.ops.push_back(o.op);
    }
  p.layers = end_layer - first_layer;
  return p;
}

double output_bytes(const TensorOperator& op, int64_t dtype_bytes) {
  const int64_t columns = op.type == OperatorType::RowWise && op.reduces ? 1 : op.n;
  return static_cast<double>(op.batch * op.m * columns) * static_cast<double>(dtype_bytes);
}

double stage_output_bytes(const ServingProgram& stage) {
  return stage.ops.empty() ? 0 : output_bytes(stage.ops.back().op, stage.program.dtype_bytes);
}

PipelineTiming pipeline_timing(const std::vector<double>& stage_cycles, double transfer_cycles,
                               int64_t micro_batches) {
  PipelineTiming t;
  if (stage_cycles.empty() || micro_batches < 1) return t;
  const double stages = static_cast<double>(stage_cycles.size()), mb = static_cast<double>(micro_batches);
  t.slot = *std::max_element(stage_cycles.begin(), stage_cycles.end()) + transfer_cycles;
  t.fill = (mb + stages - 1) * t.slot;
  t.step = std::max(mb, stages) * t.slot;
  t.bubble = (stages - 1) / (mb + stages - 1);
  return t;
}

}  // namespace mlsys::t10
