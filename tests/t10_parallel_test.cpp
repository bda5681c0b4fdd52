// Serving over chips joined by links (sim/t10/t10_parallel, solver/t10_parallel, docs/t10-chips.md#parallel).
// - A two-stage pipeline's timeline, derived by hand for one, two and four micro-batches.
// - Megatron's roles read from a model file's data flow (tests/data/elk-mlp.json: a column-split product,
//   its activation, a row-split product and the residual add), and one chip's share of it.
// - Tensor parallelism on two linked chips: the step is one chip's timeline with the all-reduce after the
//   row-split product, and the SystemC replay of that chip's program equals it.
#include "sim/t10/t10_parallel.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <systemc>

#include "sim/json_io.hpp"
#include "sim/t10/t10_links.hpp"
#include "sim/t10/t10_program_sim.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/t10/t10_serving_sim.hpp"
#include "solver/t10_parallel.hpp"
#include "solver/t10_traffic_pricing.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

using namespace mlsys::t10;

TEST(T10Pipeline, TwoStagesFillDrainAndSteadyStateByHand) {
  // Stages of 100 and 60 cycles and a 10-cycle transfer: a slot is 110.
  PipelineTiming one = pipeline_timing({100, 60}, 10, 1);
  EXPECT_DOUBLE_EQ(one.slot, 110);
  EXPECT_DOUBLE_EQ(one.fill, 220);  // (1 + 2 - 1) slots
  EXPECT_DOUBLE_EQ(one.step, 220);  // a token each max(1, 2) slots
  EXPECT_DOUBLE_EQ(one.bubble, 0.5);
  PipelineTiming two = pipeline_timing({100, 60}, 10, 2);
  EXPECT_DOUBLE_EQ(two.fill, 330);
  EXPECT_DOUBLE_EQ(two.step, 220);
  EXPECT_DOUBLE_EQ(two.bubble, 1.0 / 3);
  PipelineTiming four = pipeline_timing({100, 60}, 10, 4);
  EXPECT_DOUBLE_EQ(four.fill, 550);
  EXPECT_DOUBLE_EQ(four.step, 440);
  EXPECT_DOUBLE_EQ(four.bubble, 0.2);
}

ServingChip two_linked_chips() {
  ServingChip c = *serving_chip_preset("elk-5888-linked");
  c.chip.chips = 2;
  c.chip.cores = 2 * kIpuCoresPerChip;
  c.chip.link_latency_ns = 500;
  return c;
}

// The model file with its nodes from `first` on repeated, ids and all, the `reader`-th of the copies reading
// node `id` (the first block's output) as its first input: a second block, as the artifact's llama2-70 has.
nlohmann::json with_a_second_block(nlohmann::json doc, size_t first, size_t reader, int64_t id) {
  nlohmann::json second = nlohmann::json::array();
  for (size_t i = first; i < doc.size(); ++i) second.push_back(doc[i]);
  second[reader][3][0][0] = id;
  for (const nlohmann::json& node : second) doc.push_back(node);
  return doc;
}

TEST(T10TensorParallel, RolesComeFromTheDataFlowAndEachChipLoadsHalf) {
  const ServingChip system = two_linked_chips();
  const ServingProgram p =
      read_elk_model(read_json_file(source_path("tests/data/elk-mlp.json")), "mlp.json", {4, 16, 0}, system);
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.ops[0].shard, TensorShard::Column);
  EXPECT_EQ(p.ops[1].shard, TensorShard::Split);
  EXPECT_EQ(p.ops[2].shard, TensorShard::Row);
  EXPECT_EQ(p.ops[3].shard, TensorShard::Replicated);
  const ServingChip one = single_chip(system);
  EXPECT_EQ(one.chip.cores, kIpuCoresPerChip);
  EXPECT_FALSE(one.chip.linked());
  const ServingProgram share = tensor_parallel_share(p, 2, system, one.chip);
  EXPECT_EQ(share.ops[0].op.n, 128);  // 256 columns over two chips
  EXPECT_EQ(share.ops[0].hbm_bytes, 64 * 128 * 2);
  EXPECT_EQ(share.ops[1].op.m * share.ops[1].op.n, 4 * 128);
  EXPECT_EQ(share.ops[2].op.k, 128);  // 256 rows over two chips
  EXPECT_EQ(share.ops[2].hbm_bytes, 128 * 64 * 2);
  EXPECT_EQ(share.ops[3].op.m, 4);  // the residual add stays whole
  EXPECT_EQ(share.ops[3].op.n, 64);
  // The all-reduce of the 4 x 64 FP16 partial sums: 512 B, half each way per step, two steps.
  const double link = link_bytes_per_cycle(system.chip), latency = link_latency_cycles(system.chip);
  EXPECT_DOUBLE_EQ(share.ops[2].collective_cycles, 2 * (256 / link + latency));
  EXPECT_EQ(share.ops[0].collective_cycles, 0);
}

TEST(T10TensorParallel, ReusedIdsNameTheNearestNodeBeforeThem) {
  // The Elk artifact's llama2-70 reuses ids: a second MLP block whose nodes repeat the first's ids, its first
  // product reading the first block's residual add (id 6). Keyed by id, the two blocks' inputs merge and the
  // second block's down projection loses its row split.
  const nlohmann::json doc =
      with_a_second_block(read_json_file(source_path("tests/data/elk-mlp.json")), 2, 0, 6);
  const ServingProgram p = read_elk_model(doc, "mlp2.json", {4, 16, 0}, two_linked_chips());
  ASSERT_EQ(p.ops.size(), 8u);
  const TensorShard block[] = {TensorShard::Column, TensorShard::Split, TensorShard::Row,
                               TensorShard::Replicated};
  for (size_t i = 0; i < p.ops.size(); ++i) EXPECT_EQ(p.ops[i].shard, block[i % 4]) << "operator " << i;
}

class T10ParallelServe : public ::testing::Test {
 protected:
  void TearDown() override { sc_core::sc_get_curr_simcontext()->reset(); }
};

TEST_F(T10ParallelServe, TensorParallelStepIsOneChipsTimelineWithItsAllReduceAndTheReplayAgrees) {
  const ServingChip system = two_linked_chips();
  const nlohmann::json doc = read_json_file(source_path("tests/data/elk-mlp.json"));
  auto at = [&](int64_t batch) { return read_elk_model(doc, "mlp.json", {batch, 16, 0}, system); };
  ServeOptions options;
  options.seconds = 5;
  const ParallelChoice c = serve_in_parallel(at, 4, system, Parallelism::Auto, options);
  ASSERT_EQ(c.options.size(), 3u);
  const ParallelOption& flat = c.options[0];
  const ParallelOption& tensor = c.options[1];
  const ParallelOption& pipeline = c.options[2];
  EXPECT_TRUE(flat.feasible) << flat.why_not;
  ASSERT_TRUE(tensor.feasible) << tensor.why_not;
  EXPECT_FALSE(pipeline.feasible);  // one layer
  EXPECT_NE(pipeline.why_not.find("one layer"), std::string::npos);
  EXPECT_EQ(tensor.chips_used, 2);
  EXPECT_DOUBLE_EQ(tensor.step_cycles, tensor.result.timeline.makespan);
  EXPECT_DOUBLE_EQ(tensor.lower_bound_cycles, tensor.result.lower_bound);
  EXPECT_LE(tensor.lower_bound_cycles, tensor.step_cycles);
  EXPECT_DOUBLE_EQ(tensor.link_cycles, tensor.program.ops[2].collective_cycles);
  // The row-split product runs for its option's time plus the all-reduce.
  const ServingChoice& row = tensor.result.choices[2];
  EXPECT_DOUBLE_EQ(row.option.cost.collective, tensor.link_cycles);
  EXPECT_GE(tensor.result.timeline.ops[2].end - tensor.result.timeline.ops[2].start, tensor.link_cycles);
  const ServingReplay replay =
      replay_serving(tensor.program, tensor.chip, tensor.result.choices, tensor.result.lookahead);
  EXPECT_TRUE(replay.agrees) << replay.disagreement;
  EXPECT_NEAR(replay.makespan, tensor.step_cycles, 1e-9 * tensor.step_cycles);
  // The choice is the fastest feasible way.
  ASSERT_GE(c.chosen, 0);
  for (const ParallelOption& o : c.options)
    if (o.feasible) {
      EXPECT_LE(c.options[c.chosen].step_cycles, o.step_cycles);
    }
}

TEST_F(T10ParallelServe, APipelineStageHoldsEveryMicroBatchsKvCache) {
  // Two layers of tests/data/elk-tiny.json, the second reusing the first's ids and reading its output.
  const nlohmann::json doc =
      with_a_second_block(read_json_file(source_path("tests/data/elk-tiny.json")), 1, 1, 6);
  ServingChip system = two_linked_chips();
  auto at = [&](int64_t batch) { return read_elk_model(doc, "tiny2.json", {batch, 16, 0}, system); };
  const ServingProgram whole = at(4);
  ASSERT_EQ(whole.layers, 2);
  // By hand: a stage is one layer; it holds that layer's weights once and the KV cache of all four requests,
  // though it steps through two at a time.
  double need = 0, one_micro_batch = 0;
  for (int layer = 0; layer < 2; ++layer) {
    double weights = 0, kv = 0;
    for (const ServingOperator& op : whole.ops)
      if (op.layer == layer)
        (op.hbm == HbmOperand::KvCache ? kv : weights) +=
            static_cast<double>(op.hbm_bytes + op.hbm_write_bytes);
    need = std::max(need, weights + kv);
    one_micro_batch = std::max(one_micro_batch, weights + kv / 2);
  }
  ASSERT_LT(one_micro_batch, need);
  ServeOptions options;
  options.seconds = 5;
  const ParallelOption fits = serve_in_parallel(at, 4, system, Parallelism::Pipeline, options).options.back();
  ASSERT_TRUE(fits.feasible) << fits.why_not;
  EXPECT_EQ(fits.micro_batches, 2);
  EXPECT_DOUBLE_EQ(fits.hbm_bytes_per_chip, need);
  // HBM that holds one micro-batch's cache but not both refuses the pipeline.
  system.hbm_capacity_bytes = (one_micro_batch + need) / 2;
  try {
    serve_in_parallel(at, 4, system, Parallelism::Pipeline, options);
    ADD_FAILURE() << "a pipeline whose stage's HBM is short was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("it needs " + std::to_string(static_cast<int64_t>(need)) + " B"),
              std::string::npos)
        << e.what();
  }
}

TEST(T10TensorParallel, TrafficIterationsRunAsOneChipsShareLoadingHalfTheBytes) {
  // tests/data/elk-tiny.json on two linked chips: the projection splits its 128 columns, the attention
  // products their 128 heads x requests, so each chip loads exactly half of what the flat partition loads.
  const ServingChip system = two_linked_chips();
  const ServingModel model =
      ServingModel::read_elk(read_json_file(source_path("tests/data/elk-tiny.json")), "tiny.json", 0, system);
  PricingOptions exact;
  exact.exact = true;
  TrafficPricer flat(model, system, exact);
  exact.tensor_parallel = true;
  TrafficPricer tensor(model, system, exact);
  EXPECT_EQ(tensor.pricing_chip().chip.cores, kIpuCoresPerChip);
  for (const IterationShape& s : {IterationShape{4, {{4, 1, 16, 16}}}, IterationShape{32, {{2, 16, 16, 0}}}}) {
    const IterationPrice a = flat.price(s), b = tensor.price(s);
    EXPECT_DOUBLE_EQ(b.hbm_bytes, a.hbm_bytes / 2) << s.tokens << " tokens";
    EXPECT_GT(b.ms, 0);
  }
  EXPECT_THROW({ TrafficPricer one_chip(model, single_chip(system), exact); }, std::invalid_argument);
}

TEST(T10TensorParallel, ServeTrafficChoosesTheFasterWayOnADecodeAndRefusesAPipeline) {
  const std::string dir = temp_dir("traffic-parallel");
  const std::string chip = dir + "/two.json";
  std::ofstream(chip) << R"({"preset": "elk-5888-linked", "chips": 2, "cores": 2944})";
  const std::string base = "serve " + source_path("tests/data/elk-tiny.json") + " --chip " + chip +
                           " --arrivals poisson --rate 2000 --count 12 --prompt-mean 16 --output-mean 4 " +
                           "--scheduler vllm --max-batch 4 --json --no-simulate";
  const CommandResult r = run_command(MLSYS_T10_BIN, base + " --parallel auto");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const nlohmann::json pricing = nlohmann::json::parse(r.out).at("pricing");
  const nlohmann::json& ways = pricing.at("parallel_options");
  ASSERT_EQ(ways.size(), 2u);
  const double flat = ways[0].at("decode_ms"), tensor = ways[1].at("decode_ms");
  EXPECT_EQ(pricing.at("parallelism"), flat <= tensor ? "flat" : "tensor");
  const CommandResult pipeline = run_command(MLSYS_T10_BIN, base + " --parallel pipeline");
  EXPECT_EQ(2, pipeline.exit_code);
  EXPECT_NE(pipeline.err.find("--parallel"), std::string::npos) << pipeline.err;
}

// Four MatMuls in a chain, 256 x 512 x 512 each: weights of 512 KB apiece.
TensorProgram four_products() {
  TensorProgram p;
  p.name = "four";
  for (int i = 0; i < 4; ++i) {
    TensorOperator op;
    op.name = "fc" + std::to_string(i);
    op.m = 256, op.k = 512, op.n = 512;
    p.ops.push_back(op);
  }
  return p;
}

TEST_F(T10ParallelServe, CompileSpreadsANetworkThatExceedsOneChipOverSeveral) {
  Chip system = (*serving_chip_preset("ipu-pod4")).chip;
  system.cores_per_chip = 64;
  system.cores = 4 * 64;
  TensorProgram program = four_products();
  program.chip = system;
  program.chip.chips = 1, program.chip.cores = 64;
  const CompileResult alone = compile_program(program, {});
  ASSERT_GT(alone.least_sram_bytes, 0);
  // A chip's SRAM at 60 % of what one chip needs: no single chip holds the network.
  system.sram_bytes_per_core = alone.least_sram_bytes * 6 / 10;
  program.chip.sram_bytes_per_core = system.sram_bytes_per_core;
  ASSERT_FALSE(compile_program(program, {}).compiled);
  const std::vector<ChipPlacement> ways = compile_over_chips(program, system, Parallelism::Auto, {});
  ASSERT_EQ(ways.size(), 2u);
  const ChipPlacement& flat = ways[0];
  const ChipPlacement& pipeline = ways[1];
  ASSERT_TRUE(flat.compiled) << flat.why_not;
  EXPECT_GE(flat.chips_used, 2);
  EXPECT_LE(flat.results[0].compiled->peak_sram_bytes(), system.sram_bytes_per_core);
  // The engine charges the links' share of each phase, and its makespan is the compiled total.
  const ProgramRun run = simulate_program(flat.stages[0], *flat.results[0].compiled, {});
  EXPECT_EQ(run.first_failure(), "");
  EXPECT_NEAR(run.makespan, flat.total_cycles, 1e-9 * flat.total_cycles);
  ASSERT_TRUE(pipeline.compiled) << pipeline.why_not;
  EXPECT_GE(pipeline.chips_used, 2);
  double sum = 0;
  for (size_t s = 0; s < pipeline.stages.size(); ++s) {
    EXPECT_LE(pipeline.results[s].compiled->peak_sram_bytes(), system.sram_bytes_per_core);
    EXPECT_EQ(pipeline.stages[s].chip.cores, 64);
    sum += pipeline.results[s].compiled->total_cycles;
  }
  // Each stage hands its last product's 256 x 512 FP16 output to the next chip.
  ASSERT_EQ(pipeline.transfer_cycles.size(), pipeline.stages.size() - 1);
  for (double t : pipeline.transfer_cycles) {
    EXPECT_DOUBLE_EQ(t, transfer_cycles(system, 256.0 * 512 * 2));
    sum += t;
  }
  EXPECT_DOUBLE_EQ(pipeline.total_cycles, sum);
}

}  // namespace
}  // namespace mlsys::test
