// Serving on the chip with HBM (docs/t10-serving.md): the timeline's rules on cases derived by hand, the
// SystemC replay against them, the Elk model reader on a small file of the artifact's format, and the CLI.
#include "sim/t10/t10_serving.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/json_io.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/t10/t10_serving_sim.hpp"
#include "sim/violation.hpp"
#include "support.hpp"

namespace mlsys::t10 {
namespace {

// A chip whose units make the arithmetic round: 100 B of HBM and 10 B of NoC per core per cycle, 1,000 B
// of SRAM per core.
ServingChip round_chip(int64_t sram = 1000) {
  ServingChip c;
  c.chip.clock_hz = 1000.0 * 1024 * 1024;  // then hbm_bytes_per_cycle = hbm_gbps
  c.hbm_gbps = 100;
  c.noc_gib_per_core = 10 * 1000.0 / 1024;  // 10 B per cycle per core
  c.chip.sram_bytes_per_core = sram;
  return c;
}

ServingChoice choice(double time, double compute, int64_t hot, int64_t preload, int64_t hbm) {
  ServingChoice c;
  c.option.cost.total = time;
  c.option.cost.compute = compute;
  c.option.hot = hot;
  c.option.cold_is_hot = true;
  c.preload_bytes = preload;
  c.hbm_bytes = hbm;
  return c;
}

ServingProgram two_ops() {
  ServingProgram p;
  for (const auto& [name, bytes] : {std::pair{"w0", 10000}, std::pair{"w1", 20000}}) {
    ServingOperator op;
    op.op.name = name;
    op.hbm = HbmOperand::Weight;
    op.hbm_bytes = bytes;
    p.ops.push_back(op);
  }
  return p;
}

TEST(ServingTimeline, TheNextLoadHidesBehindTheRunningOperator) {
  // Load 0: 10,000 B of HBM = 100 cycles, 500 B per core of NoC = 50: 100 cycles, alone. Operator 0 runs
  // 100..300 (half of it compute). Load 1 (20,000 B: 200 cycles; 400 B per core: 40 cycles of NoC, of which
  // the running operator leaves half: 80) fits beside it (600 + 400 = 1,000 B) and ends at 100 + 200 = 300;
  // operator 1 runs 300..350. The bound: 300 cycles of HBM plus the last operator's 50 = 350.
  const ServingProgram p = two_ops();
  const std::vector<ServingChoice> c{choice(200, 100, 600, 500, 10000), choice(50, 50, 500, 400, 20000)};
  const ServingTimeline t = serving_timeline(p, round_chip(), c);
  ASSERT_FALSE(t.overflow);
  EXPECT_DOUBLE_EQ(100, t.loads[0].end);
  EXPECT_DOUBLE_EQ(100, t.loads[1].start);
  EXPECT_DOUBLE_EQ(300, t.loads[1].end);
  EXPECT_DOUBLE_EQ(300, t.ops[1].start);
  EXPECT_DOUBLE_EQ(350, t.makespan);
  EXPECT_EQ(1000, t.peak_sram_bytes);
  EXPECT_DOUBLE_EQ(350, serving_lower_bound(p, round_chip(), {{c[0]}, {c[1]}}));
}

TEST(ServingTimeline, TheRunningOperatorsExchangesSlowTheLoadsNoC) {
  // As above, but operator 0 computes 20 of its 200 cycles: load 1's NoC part (40 cycles) gets a tenth of
  // the NoC, so it advances 1/400 per cycle (HBM would allow 1/200): half done at 300. Then alone, at the
  // HBM's 1/200: 100 cycles more, to 400. Operator 1 runs 400..450.
  const ServingProgram p = two_ops();
  const std::vector<ServingChoice> c{choice(200, 20, 600, 500, 10000), choice(50, 50, 500, 400, 20000)};
  const ServingTimeline t = serving_timeline(p, round_chip(), c);
  EXPECT_DOUBLE_EQ(400, t.loads[1].end);
  EXPECT_DOUBLE_EQ(450, t.makespan);
}

TEST(ServingTimeline, ALoadWaitsForRoomInEveryCoresSram) {
  // 900 B per core: operator 0's 600 and load 1's 400 do not fit together, so load 1 starts when operator 0
  // ends (300) and takes its 200 HBM cycles; operator 1 runs 500..550. The peak is operator 0's 600.
  const ServingProgram p = two_ops();
  const std::vector<ServingChoice> c{choice(200, 100, 600, 500, 10000), choice(50, 50, 500, 400, 20000)};
  const ServingTimeline t = serving_timeline(p, round_chip(900), c);
  ASSERT_FALSE(t.overflow);
  EXPECT_DOUBLE_EQ(300, t.loads[1].start);
  EXPECT_DOUBLE_EQ(550, t.makespan);
  EXPECT_EQ(600, t.peak_sram_bytes);
}

TEST(ServingTimeline, AnOperatorThatCannotFitIsNamedWithItsTerms) {
  const ServingProgram p = two_ops();
  const std::vector<ServingChoice> c{choice(200, 100, 1200, 500, 10000), choice(50, 50, 500, 400, 20000)};
  const ServingTimeline t = serving_timeline(p, round_chip(), c);
  ASSERT_TRUE(t.overflow);
  const std::string message = t.overflow->message();
  EXPECT_NE(std::string::npos, message.find("w0")) << message;
  EXPECT_NE(std::string::npos, message.find("1200 B > 1000 B")) << message;
}

TEST(ServingTimeline, ASmallLoadMayPassALargeOneThatWaitsForRoom) {
  // SRAM 1,000 B. Operator 0 (hot 600) runs 100..500 all compute. Load 1 (preload 500, 200 HBM cycles) cannot
  // start beside it (1,100 B). In operator order it waits until 500: 500..700, operator 1 700..750, then
  // load 2 (preload 100, 300 cycles) 700..1,000 and operator 2 1,000..1,050. With a lookahead of 2 load 2
  // passes: beside operator 0 it needs 700 B, and once operator 0 ends load 1 still fits beside it (500 +
  // 100): load 2 100..400, load 1 500..700, operators 1 and 2 700..800.
  ServingProgram p;
  for (const auto& [name, bytes] : {std::pair{"a", 10000}, std::pair{"b", 20000}, std::pair{"c", 30000}}) {
    ServingOperator op;
    op.op.name = name;
    op.hbm = HbmOperand::Weight;
    op.hbm_bytes = bytes;
    p.ops.push_back(op);
  }
  const std::vector<ServingChoice> c{choice(400, 400, 600, 300, 10000), choice(50, 50, 500, 500, 20000),
                                     choice(50, 50, 200, 100, 30000)};
  const ServingTimeline in_order = serving_timeline(p, round_chip(), c, 1);
  EXPECT_DOUBLE_EQ(500, in_order.loads[1].start);
  EXPECT_DOUBLE_EQ(1050, in_order.makespan);
  const ServingTimeline passing = serving_timeline(p, round_chip(), c, 2);
  EXPECT_DOUBLE_EQ(100, passing.loads[2].start);
  EXPECT_DOUBLE_EQ(400, passing.loads[2].end);
  EXPECT_DOUBLE_EQ(500, passing.loads[1].start);
  EXPECT_DOUBLE_EQ(800, passing.makespan);
  EXPECT_LE(passing.peak_sram_bytes, 1000);
  const ServingReplay replay = replay_serving(p, round_chip(), c, 2);
  EXPECT_TRUE(replay.agrees) << replay.disagreement;
  EXPECT_NEAR(800, replay.makespan, 1e-9 * 800);
}

TEST(ServingReplay, TheSystemCEngineGivesTheTimelinesMakespanAndPeak) {
  const ServingProgram p = two_ops();
  for (int64_t sram : {1000, 900})
    for (double compute : {100.0, 20.0}) {
      const std::vector<ServingChoice> c{choice(200, compute, 600, 500, 10000),
                                         choice(50, 50, 500, 400, 20000)};
      const ServingTimeline analytic = serving_timeline(p, round_chip(sram), c);
      const ServingReplay replay = replay_serving(p, round_chip(sram), c);
      EXPECT_TRUE(replay.agrees) << replay.disagreement;
      EXPECT_NEAR(analytic.makespan, replay.makespan, 1e-9 * analytic.makespan) << sram << " " << compute;
      EXPECT_EQ(analytic.peak_sram_bytes, replay.peak_sram_bytes);
    }
}

// tests/data/elk-tiny.json, written in the artifact's format: [id, einstein_v2 expression, type, inputs];
// 99 is the batch, 66 the sequence.
nlohmann::json elk_tiny() {
  return read_json_file(test::source_path("tests/data/elk-tiny.json"));
}

TEST(ElkModelFile, ADecodeStepsShapesAndWhatItLoads) {
  // Batch 4, KV length 16. The Dot: [4 x 1 x 64] x [64 x 128], a weight of 64 x 128 x 2 B = 16,384 B. The
  // scores: 99 x 32 = 3,168 -> 128 products of [1 x 64] x [64 x 16], the keys 128 x 64 x 16 x 2 = 262,144 B
  // of KV cache. Softmax: 128 rows (one query each) of 16. The context: 128 x [1 x 16] x [16 x 64].
  const ServingProgram p =
      read_elk_model(elk_tiny(), "tiny.json", {4, 16, 0}, *serving_chip_preset("elk-1472"));
  ASSERT_EQ(4u, p.ops.size());
  EXPECT_EQ(1, p.layers);
  const TensorOperator& dot = p.ops[0].op;
  EXPECT_EQ(OperatorType::MatMul, dot.type);
  EXPECT_EQ((std::array<int64_t, 4>{1, 4, 64, 128}),
            (std::array<int64_t, 4>{dot.batch, dot.m, dot.k, dot.n}));
  EXPECT_EQ(HbmOperand::Weight, p.ops[0].hbm);
  EXPECT_EQ(16384, p.ops[0].hbm_bytes);
  const TensorOperator& scores = p.ops[1].op;
  EXPECT_EQ((std::array<int64_t, 4>{128, 1, 64, 16}),
            (std::array<int64_t, 4>{scores.batch, scores.m, scores.k, scores.n}));
  EXPECT_EQ(HbmOperand::KvCache, p.ops[1].hbm);
  EXPECT_EQ(262144, p.ops[1].hbm_bytes);
  EXPECT_EQ(OperatorType::RowWise, p.ops[2].op.type);
  EXPECT_EQ(128, p.ops[2].op.m);
  EXPECT_EQ(16, p.ops[2].op.n);
  const TensorOperator& context = p.ops[3].op;
  EXPECT_EQ((std::array<int64_t, 4>{128, 1, 16, 64}),
            (std::array<int64_t, 4>{context.batch, context.m, context.k, context.n}));
}

TEST(ElkModelFile, MalformedNodesAreNamed) {
  const nlohmann::json bad = nlohmann::json::parse(R"([[1, "no expression here", "Dot", []]])");
  try {
    read_elk_model(bad, "bad.json", {4, 16, 0}, *serving_chip_preset("elk-1472"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ("bad.json", e.file());
    EXPECT_EQ("[0]", e.field());
  }
  EXPECT_THROW(
      read_elk_model(nlohmann::json::object(), "o.json", {4, 16, 0}, *serving_chip_preset("elk-1472")),
      InputError);
  EXPECT_THROW(read_elk_model(elk_tiny(), "tiny.json", {4, 16, 2}, *serving_chip_preset("elk-1472")),
               InputError);  // one layer only
}

TEST(ElkModelFile, AWeightThatDisagreesWithTheConcatBuildingItIsNamed) {
  // The Dot's weight is 64 x 128 = 8,192 elements. Built by a Concat of two 128 x 32 halves, the file agrees
  // with itself; of two 128 x 48 pieces (12,288), it does not, and the product is named.
  auto with_concat = [](const std::string& shape) {
    nlohmann::json doc = elk_tiny();
    const std::string piece = R"({ "dtype" : "float32", "shape" : [)" + shape + "]}";
    doc[1][1] =
        " - einstein_v2(\" output0[N0, N1] = input0[N0, N1].when(N1 < 32, input1[N0, N1 - 32]); \", "
        "input_dict={ \"input0\" : " +
        piece + ", \"input1\" : " + piece + " })";
    doc[1][2] = "Concat";
    return doc;
  };
  const ServingChip chip = *serving_chip_preset("elk-1472");
  EXPECT_TRUE(read_elk_model(with_concat("128, 32"), "tiny.json", {4, 16, 0}, chip).warnings.empty());
  const ServingProgram odd = read_elk_model(with_concat("128, 48"), "tiny.json", {4, 16, 0}, chip);
  ASSERT_EQ(odd.warnings.size(), 1u);
  EXPECT_EQ(odd.warnings[0], "[2] Dot#3: its weight has 8192 elements, the Concat it reads builds 12288");
  EXPECT_EQ(odd.ops[0].hbm_bytes, 8192 * 2);  // priced as the product says, as the artifact does
  // Absurd sizes saturate at 2^50 elements instead of overflowing.
  const ServingProgram absurd = read_elk_model(with_concat("99999999999999999999, 99999999999999999999"),
                                               "tiny.json", {4, 16, 0}, chip);
  ASSERT_EQ(absurd.warnings.size(), 1u);
  EXPECT_NE(absurd.warnings[0].find("builds " + std::to_string(int64_t{1} << 50)), std::string::npos)
      << absurd.warnings[0];
}

// A T10 model file as mlsys-import --t10 writes it for a decode step: one layer of batch 2, two heads of 8,
// a cache of 5 positions. The products say what they load; the sizes below are derived by hand.
nlohmann::json imported_step() {
  return nlohmann::json::parse(R"({"t10_program": {"name": "step", "dtype_bytes": 2, "ops": [
    {"name": "qkv", "type": "matmul", "m": 2, "k": 16, "n": 48, "hbm": "weight", "hbm_bytes": 1536},
    {"name": "scores", "type": "matmul", "batch": 4, "m": 1, "k": 8, "n": 6, "hbm": "kv_cache", "hbm_bytes": 320},
    {"name": "softmax", "type": "rowwise", "m": 4, "n": 6},
    {"name": "context", "type": "matmul", "batch": 4, "m": 1, "k": 6, "n": 8, "hbm": "kv_cache", "hbm_bytes": 320},
    {"name": "proj", "type": "matmul", "m": 2, "k": 16, "n": 16, "hbm": "weight", "hbm_bytes": 512}]}})");
}

TEST(ImportedServingModel, ProductsSayWhatTheyLoad) {
  // Weights: 16 x 48 x 2 = 1,536 B and 16 x 16 x 2 = 512 B. Keys: 2 x 2 heads x 5 cached x 8 x 2 = 320 B (the
  // sixth key, this step's, is computed on chip).
  const ServingProgram p =
      read_serving_model(imported_step(), "step.json", {}, *serving_chip_preset("elk-1472"));
  ASSERT_EQ(5u, p.ops.size());
  EXPECT_EQ(1, p.layers);
  EXPECT_EQ(5u, p.program.ops.size());
  const std::vector<HbmOperand> kinds{HbmOperand::Weight, HbmOperand::KvCache, HbmOperand::None,
                                      HbmOperand::KvCache, HbmOperand::Weight};
  const std::vector<int64_t> bytes{1536, 320, 0, 320, 512};
  for (size_t i = 0; i < p.ops.size(); ++i) {
    EXPECT_EQ(kinds[i], p.ops[i].hbm) << i;
    EXPECT_EQ(bytes[i], p.ops[i].hbm_bytes) << i;
  }
}

TEST(ImportedServingModel, BadTagsAreNamedWithTheirField) {
  const ServingChip chip = *serving_chip_preset("elk-1472");
  auto field_of = [&](nlohmann::json doc, const ServingShape& shape = {}) -> std::string {
    try {
      read_serving_model(doc, "step.json", shape, chip);
    } catch (const InputError& e) {
      EXPECT_EQ("step.json", e.file());
      return e.field();
    }
    return "accepted";
  };
  nlohmann::json d = imported_step();
  d["t10_program"]["ops"][2]["hbm"] = "weight";  // a row-wise operator loads nothing
  EXPECT_EQ("ops[2].hbm", field_of(d));
  d = imported_step();
  d["t10_program"]["ops"][1]["hbm_bytes"] = 4 * 8 * 6 * 2 + 1;  // one byte more than the whole operand
  EXPECT_EQ("ops[1].hbm_bytes", field_of(d));
  d = imported_step();
  d["t10_program"]["ops"][0]["hbm"] = "host";
  EXPECT_EQ("ops[0].hbm", field_of(d));
  d = imported_step();
  d["t10_program"]["ops"][0].erase("hbm");
  EXPECT_EQ("ops[0].hbm_bytes", field_of(d));  // bytes without a kind
  d = imported_step();
  for (auto& op : d["t10_program"]["ops"]) op.erase("hbm"), op.erase("hbm_bytes");
  EXPECT_EQ("ops", field_of(d));                               // nothing to load: an old import
  EXPECT_EQ("--batch", field_of(imported_step(), {4, 0, 0}));  // its shapes are its own
  EXPECT_EQ("--layers", field_of(imported_step(), {0, 0, 2}));
  EXPECT_EQ("--batch", field_of(elk_tiny()));  // an Elk file needs them
}

TEST(ServeCommand, ServesAnImportedStepWithTheShapesItWasImportedWith) {
  const std::string path = test::temp_dir("serve-imported") + "/step.json";
  test::write_text(path, imported_step().dump());
  const test::CommandResult r = test::run_command(MLSYS_T10_BIN, "serve " + path + " --timeout 2 --json");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(1536 + 320 + 320 + 512, j.at("hbm_bytes").get<int64_t>());  // every loaded byte once
  EXPECT_TRUE(j.at("batch").is_null());
  EXPECT_TRUE(j.at("fits").get<bool>());
  EXPECT_TRUE(j.at("simulation").at("agrees").get<bool>());
  EXPECT_NEAR(j.at("latency_ms").get<double>(), j.at("simulation").at("latency_ms").get<double>(),
              1e-9 * j.at("latency_ms").get<double>());
  const test::CommandResult given = test::run_command(MLSYS_T10_BIN, "serve " + path + " --batch 4");
  EXPECT_EQ(2, given.exit_code);
  EXPECT_NE(std::string::npos, given.err.find("--batch")) << given.err;
  EXPECT_NE(std::string::npos, given.err.find("mlsys-import")) << given.err;
}

TEST(ServeCommand, PricesAGivenScheduleOperatorByOperator) {
  const std::string dir = test::temp_dir("serve-given");
  const std::string model = dir + "/step.json", schedule = dir + "/schedule.json";
  test::write_text(model, imported_step().dump());
  const test::CommandResult searched =
      test::run_command(MLSYS_T10_BIN, "serve " + model + " --timeout 2 --json");
  ASSERT_EQ(0, searched.exit_code) << searched.err;
  const nlohmann::json ours = nlohmann::json::parse(searched.out);
  // Our own schedule handed back as another tool's: every operator matches on both sizes, same makespan.
  nlohmann::json pairs = nlohmann::json::array();
  for (const nlohmann::json& op : ours.at("ops"))
    pairs.push_back({op.at("preload_bytes_per_core"), op.at("hot_bytes_per_core")});
  test::write_text(schedule, nlohmann::json{{"cold_hot", pairs}}.dump());
  const test::CommandResult given =
      test::run_command(MLSYS_T10_BIN, "serve " + model + " --schedule " + schedule + " --json");
  ASSERT_EQ(0, given.exit_code) << given.err;
  const nlohmann::json priced = nlohmann::json::parse(given.out);
  EXPECT_EQ("given", priced.at("policy"));
  EXPECT_EQ(5, priced.at("schedule").at("matched_exactly").get<int>());
  EXPECT_EQ(ours.at("latency_ms").get<double>(), priced.at("latency_ms").get<double>());
  // The softmax given 0 hot bytes matches nothing: a vector operator then takes its fastest option.
  pairs[2] = {0, 0};
  test::write_text(schedule, pairs.dump());
  const nlohmann::json nearest = nlohmann::json::parse(
      test::run_command(MLSYS_T10_BIN, "serve " + model + " --schedule " + schedule + " --json").out);
  EXPECT_EQ(4, nearest.at("schedule").at("matched_exactly").get<int>());
  EXPECT_EQ(1, nearest.at("schedule").at("matched_nearest").get<int>());
  // Malformed schedules are named by field; a schedule with a policy is refused.
  auto refusal = [&](const std::string& text, const std::string& extra = "") {
    test::write_text(schedule, text);
    const test::CommandResult r =
        test::run_command(MLSYS_T10_BIN, "serve " + model + " --schedule " + schedule + extra);
    EXPECT_EQ(2, r.exit_code) << text;
    return r.err;
  };
  EXPECT_NE(std::string::npos, refusal("[[0, 1]]").find("1 operators, the model has 5"));
  EXPECT_NE(std::string::npos,
            refusal(R"({"cold_hot": [[0,1],[0,-1],[0,1],[0,1],[0,1]]})").find("cold_hot[1]"));
  EXPECT_NE(std::string::npos, refusal(pairs.dump(), " --policy elk").find("--policy"));
}

TEST(ServeCommand, SchedulesReplaysAndBoundsTheTinyModel) {
  const std::string dir = test::temp_dir("serve");
  const test::CommandResult r =
      test::run_command(MLSYS_T10_BIN, "serve " + test::source_path("tests/data/elk-tiny.json") +
                                           " --batch 4 --seq 16 --timeout 2 --json");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.at("fits").get<bool>());
  EXPECT_LE(j.at("peak_sram_bytes").get<int64_t>(), 638976);
  EXPECT_GE(j.at("latency_ms").get<double>(), j.at("lower_bound_ms").get<double>() * (1 - 1e-12));
  EXPECT_TRUE(j.at("simulation").at("agrees").get<bool>());
  EXPECT_NEAR(j.at("latency_ms").get<double>(), j.at("simulation").at("latency_ms").get<double>(),
              1e-9 * j.at("latency_ms").get<double>());
  EXPECT_LE(j.at("latency_ms").get<double>(), j.at("baselines_ms").at("elk").get<double>() * (1 + 1e-12));
  const test::CommandResult missing =
      test::run_command(MLSYS_T10_BIN, "serve " + dir + "/nope.json --batch 4 --seq 16");
  EXPECT_EQ(2, missing.exit_code);
  EXPECT_NE(std::string::npos, missing.err.find("nope.json")) << missing.err;
}

}  // namespace
}  // namespace mlsys::t10
