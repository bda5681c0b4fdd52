// Request traffic (docs/t10-traffic.md): the request reader and generator, the batch schedulers on cases
// derived by hand with a pricer whose prices are round, the iterations against `t10 serve`'s one step, the
// KV cache against its capacity, the SystemC replay against the analytic run, and the CLI.
#include "sim/t10/t10_traffic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/json_io.hpp"
#include "sim/t10/t10_requests.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/t10/t10_traffic_sim.hpp"
#include "sim/violation.hpp"
#include "solver/t10_serving.hpp"
#include "solver/t10_traffic_pricing.hpp"
#include "support.hpp"

namespace mlsys::t10 {
namespace {

std::string field_of_bad_requests(const std::string& text) {
  try {
    parse_requests(text, "r.jsonl");
  } catch (const InputError& e) {
    EXPECT_EQ("r.jsonl", e.file());
    return e.field();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(RequestFile, LinesAreReadInArrivalOrderAndBadOnesAreNamed) {
  const std::vector<ServingRequest> r = parse_requests(
      "{\"arrival_ms\": 5, \"prompt_tokens\": 10, \"output_tokens\": 2, \"id\": \"b\"}\n\n"
      "{\"arrival_ms\": 1.5, \"prompt_tokens\": 3, \"output_tokens\": 1}\n",
      "r.jsonl");
  ASSERT_EQ(2u, r.size());
  EXPECT_EQ(1.5, r[0].arrival_ms);
  EXPECT_EQ(3, r[0].prompt_tokens);
  EXPECT_EQ("1", r[0].id);  // its line's request number, when it has no id
  EXPECT_EQ("b", r[1].id);
  EXPECT_EQ(r.size(), parse_requests(requests_to_jsonl(r), "again").size());
  EXPECT_EQ("line 2: prompt_tokens",
            field_of_bad_requests("{\"arrival_ms\":0,\"prompt_tokens\":1,\"output_tokens\":1}\n"
                                  "{\"arrival_ms\":0,\"prompt_tokens\":0,\"output_tokens\":1}"));
  EXPECT_EQ("line 1: output_tokens", field_of_bad_requests("{\"arrival_ms\":0,\"prompt_tokens\":4}"));
  EXPECT_EQ("line 1: output_tokens",
            field_of_bad_requests("{\"arrival_ms\":0,\"prompt_tokens\":4,\"output_tokens\":2.5}"));
  EXPECT_EQ("line 1: arrival_ms",
            field_of_bad_requests("{\"arrival_ms\":-1,\"prompt_tokens\":4,\"output_tokens\":2}"));
  EXPECT_EQ("line 1: prompt_tokens",
            field_of_bad_requests("{\"arrival_ms\":1,\"prompt_tokens\":1e12,\"output_tokens\":2}"));
  EXPECT_EQ("line 1", field_of_bad_requests("{\"arrival_ms\":1,"));
  EXPECT_EQ("line 1", field_of_bad_requests("[1, 2]"));
  EXPECT_EQ("", field_of_bad_requests("\n\n"));
}

TEST(RequestGenerator, ArrivalsAndLengthsHaveTheirParameters) {
  Workload w = *workload_preset("conversation");
  w.requests = 20000;
  w.arrivals.rate_per_s = 10;
  w.seed = 7;
  const std::vector<ServingRequest> a = generate_requests(w);
  EXPECT_EQ(requests_to_jsonl(a), requests_to_jsonl(generate_requests(w)));  // the seed decides
  double prompt = 0, output = 0;
  int64_t low = kMaxRequestTokens, high = 0;
  for (const ServingRequest& r : a) {
    prompt += static_cast<double>(r.prompt_tokens);
    output += static_cast<double>(r.output_tokens);
    low = std::min(low, r.prompt_tokens);
    high = std::max(high, r.prompt_tokens);
  }
  // 20,000 draws: the means within 3 %, the rate within 3 % (a mean gap of 100 ms), the clip respected.
  EXPECT_NEAR(prompt / 20000, 1154.7, 0.03 * 1154.7);
  EXPECT_NEAR(output / 20000, 211.1, 0.03 * 211.1);
  EXPECT_NEAR(a.back().arrival_ms / 19999, 100.0, 3.0);
  EXPECT_GE(low, 2);
  EXPECT_LE(high, 14050);
  // Gamma arrivals with cv 2 keep the rate and are burstier: the gaps' spread is twice their mean.
  w.arrivals = {ArrivalProcess::Kind::Gamma, 10, 2};
  const std::vector<ServingRequest> g = generate_requests(w);
  double sum = 0, square = 0;
  for (size_t i = 1; i < g.size(); ++i) {
    const double gap = g[i].arrival_ms - g[i - 1].arrival_ms;
    sum += gap;
    square += gap * gap;
  }
  const double mean = sum / 19999, sd = std::sqrt(square / 19999 - mean * mean);
  EXPECT_NEAR(mean, 100.0, 5.0);
  EXPECT_NEAR(sd / mean, 2.0, 0.15);
  // Out-of-range parameters are refused by option.
  Workload bad = w;
  bad.arrivals.rate_per_s = 0;
  EXPECT_THROW(generate_requests(bad), InputError);
  bad = w;
  bad.prompt = {LengthDistribution::Kind::Uniform, 10, 20, 1, 100};
  try {
    generate_requests(bad);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ("--prompt-spread", e.field());
  }
}

// A pricer whose iteration costs 1 ms plus 0.01 ms a token: round enough to derive schedules by hand.
IterationPrice round_price(const IterationShape& s) {
  IterationPrice p;
  p.ms = 1 + 0.01 * static_cast<double>(s.tokens);
  p.hbm_busy_ms = 1;
  p.compute_ms = 0.01 * static_cast<double>(s.tokens);
  return p;
}

std::vector<ServingRequest> two_requests() {
  return {{"a", 0, 4, 3}, {"b", 0, 6, 2}};
}

TEST(BatchSchedulers, VllmPrefillsWholePromptsFirst) {
  TrafficOptions o;
  o.scheduler = BatchScheduler::Vllm;
  const TrafficRun run = run_traffic(two_requests(), o, round_price);
  // 1: prefill a and b (10 tokens, 1.1 ms): both first tokens at 1.1. 2: decode both (1.02): b is done at
  // 2.12. 3: decode a (1.01): a is done at 3.13.
  ASSERT_EQ(3u, run.iterations.size());
  EXPECT_EQ(10, run.iterations[0].prefill_tokens);
  EXPECT_EQ((std::vector<int64_t>{4, 6}), run.iterations[1].decode_kv);  // each at its own KV length
  EXPECT_DOUBLE_EQ(1.1, run.requests[0].first_token_ms);
  EXPECT_DOUBLE_EQ(1.1, run.requests[1].first_token_ms);
  EXPECT_DOUBLE_EQ(1.1 + 1.02, run.requests[1].finish_ms);
  EXPECT_DOUBLE_EQ(1.1 + 1.02 + 1.01, run.requests[0].finish_ms);
  // The decode step's attention: one group per KV length, the longest first.
  ASSERT_EQ(2u, run.iterations[1].shape.groups.size());
  EXPECT_EQ(6, run.iterations[1].shape.groups[0].context);
  EXPECT_EQ(6, run.iterations[1].shape.groups[0].cached);
  EXPECT_EQ(4, run.iterations[1].shape.groups[1].context);
}

TEST(BatchSchedulers, SarathiChunksPromptsUnderItsTokenBudget) {
  TrafficOptions o;
  o.scheduler = BatchScheduler::Sarathi;
  o.token_budget = 4;
  const TrafficRun run = run_traffic(two_requests(), o, round_price);
  // 1: a's 4 prompt tokens (1.04): a's first token at 1.04. 2: a decodes (1) and b's first 3 (1.04).
  // 3: a decodes, b's next 3 (1.04): b's first token at 3.12, a done (3 tokens). 4: b decodes (1.01): done.
  ASSERT_EQ(4u, run.iterations.size());
  EXPECT_EQ(3, run.iterations[1].prefill_tokens);
  EXPECT_EQ(1u, run.iterations[1].decoding.size());
  EXPECT_DOUBLE_EQ(1.04, run.requests[0].first_token_ms);
  EXPECT_DOUBLE_EQ(3 * 1.04, run.requests[1].first_token_ms);
  EXPECT_DOUBLE_EQ(3 * 1.04, run.requests[0].finish_ms);
  EXPECT_DOUBLE_EQ(3 * 1.04 + 1.01, run.requests[1].finish_ms);
  // b's second chunk attends over its 6 positions and reads the 3 it cached.
  const AttentionGroup& chunk = run.iterations[2].shape.groups.back();
  EXPECT_EQ(3, chunk.query);
  EXPECT_EQ(6, chunk.context);
  EXPECT_EQ(3, chunk.cached);
}

TEST(BatchSchedulers, DecodeFirstAdmitsOnlyWhenNothingDecodes) {
  std::vector<ServingRequest> r = two_requests();
  r[1].arrival_ms = 0.5;  // b arrives while a's prompt runs
  TrafficOptions o;
  o.scheduler = BatchScheduler::DecodeFirst;
  const TrafficRun run = run_traffic(r, o, round_price);
  // 1: a's prompt (1.04). 2, 3: a decodes (1.01 each) until done at 3.06. 4: b's prompt (1.06). 5: b.
  ASSERT_EQ(5u, run.iterations.size());
  EXPECT_DOUBLE_EQ(1.04 + 2 * 1.01, run.requests[0].finish_ms);
  EXPECT_DOUBLE_EQ(1.04 + 2 * 1.01 + 1.06, run.requests[1].first_token_ms);
  EXPECT_EQ(1, run.iterations[1].queue);  // b waited
}

TEST(BatchSchedulers, AFullKvCachePreemptsTheNewestAndEveryRequestStillFinishes) {
  // 10 bytes a token, 100 bytes of cache: a (4 + 3 - 1 = 6 tokens at most) and b (6 + 2 - 1 = 7) fit alone
  // but not together once they decode. Recomputed, b prefills its prompt and generated token again.
  TrafficOptions o;
  o.scheduler = BatchScheduler::Vllm;
  o.kv_bytes_per_token = 10;
  o.kv_capacity_bytes = 100;
  std::vector<ServingRequest> r = {{"a", 0, 4, 3}, {"b", 0, 6, 3}, {"c", 0, 20, 1}};
  const TrafficRun run = run_traffic(r, o, round_price);
  const TrafficMetrics m = summarize_traffic(run, o);
  EXPECT_EQ(1, m.rejected);  // c: 20 tokens of cache can never fit
  EXPECT_EQ(2, m.completed);
  EXPECT_TRUE(m.exact_output_tokens);
  EXPECT_GE(run.preemptions, 1);
  for (const IterationRecord& it : run.iterations) EXPECT_LE(it.kv_bytes, 100);
  EXPECT_LE(run.kv_peak_bytes, 100);
  EXPECT_EQ(3, run.requests[1].generated);
  // Swapped instead (a host link): no prompt is prefilled twice.
  o.host_link_bytes_per_ms = 100;
  const TrafficRun swapped = run_traffic(r, o, round_price);
  EXPECT_GE(swapped.swaps, 1);
  int64_t prefilled = 0;
  for (const IterationRecord& it : swapped.iterations) prefilled += it.prefill_tokens;
  EXPECT_EQ(4 + 6, prefilled);
  EXPECT_EQ(2, summarize_traffic(swapped, o).completed);
}

TEST(BatchSchedulers, ARunStopsAtItsIterationLimitOrWhenAskedAndSaysWhy) {
  // Outputs 5, 3 and 1: 4 + 2 + 0 = 6 decode tokens, at most 2 a step: 3 steps, but a's 4 tokens after its
  // first need 4 steps on their own.
  const std::vector<ServingRequest> r = {{"a", 0, 2, 5}, {"b", 0, 2, 3}, {"c", 0, 2, 1}};
  EXPECT_EQ(4, least_iterations(r, 2));
  EXPECT_EQ(6, least_iterations(r, 1));
  TrafficOptions o;
  o.scheduler = BatchScheduler::Vllm;
  o.max_batch = 2;
  const TrafficRun whole = run_traffic(r, o, round_price);
  EXPECT_TRUE(whole.stopped.empty()) << whole.stopped;
  ASSERT_GE(static_cast<int64_t>(whole.iterations.size()), least_iterations(r, 2));
  o.max_iterations = 2;
  const TrafficRun capped = run_traffic(r, o, round_price);
  EXPECT_EQ(2u, capped.iterations.size());
  EXPECT_NE(std::string::npos, capped.stopped.find("2 iterations")) << capped.stopped;
  EXPECT_EQ(RequestOutcome::Status::Unfinished, capped.requests[0].status);
  EXPECT_NE(std::string::npos, capped.requests[0].why.find("stopped")) << capped.requests[0].why;
  o.max_iterations = kDefaultMaxIterations;
  int asked = 0;
  const TrafficRun asked_to = run_traffic(r, o, round_price, nullptr, [&] {
    return ++asked > 3 ? std::string("enough") : std::string();
  });
  EXPECT_EQ(3u, asked_to.iterations.size());
  EXPECT_EQ("enough", asked_to.stopped);
}

TEST(BatchSchedulers, TheSystemCReplayGivesTheAnalyticRun) {
  Workload w;
  w.requests = 200;
  w.arrivals.rate_per_s = 300;
  w.prompt = {LengthDistribution::Kind::Uniform, 40, 30, 1, 1000};
  w.output = {LengthDistribution::Kind::Uniform, 20, 15, 1, 1000};
  for (BatchScheduler s : {BatchScheduler::Vllm, BatchScheduler::Sarathi, BatchScheduler::DecodeFirst}) {
    TrafficOptions o;
    o.scheduler = s;
    o.max_batch = 8;
    o.kv_bytes_per_token = 1;
    o.kv_capacity_bytes = 600;
    const std::vector<ServingRequest> r = generate_requests(w);
    const TrafficRun run = run_traffic(r, o, round_price);
    const TrafficReplay replay = replay_traffic(r, o, round_price, run);
    EXPECT_TRUE(replay.agrees) << to_string(s) << ": " << replay.disagreement;
    EXPECT_EQ(200, replay.arrivals);
    EXPECT_EQ(200, summarize_traffic(run, o).completed) << to_string(s);
    for (const IterationRecord& it : run.iterations) ASSERT_LE(it.kv_bytes, 600) << to_string(s);
  }
}

nlohmann::json elk_tiny() { return read_json_file(test::source_path("tests/data/elk-tiny.json")); }

TEST(TrafficPricing, ADecodeIterationCostsWhatTheOneStepCommandGives) {
  // B requests with one prompt length arriving together decode in steps of batch B at KV lengths P, P + 1,
  // ...: each step priced exactly must be `t10 serve --batch B --seq L --policy elk`.
  const ServingChip chip = *serving_chip_preset("elk-1472");
  const ServingModel model = ServingModel::read_elk(elk_tiny(), "tiny.json", 0, chip);
  PricingOptions exact;
  exact.exact = true;
  TrafficPricer pricer(model, chip, exact);
  TrafficOptions o;
  o.scheduler = BatchScheduler::Vllm;
  std::vector<ServingRequest> r;
  for (int i = 0; i < 4; ++i) r.push_back({std::to_string(i), 0, 16, 4});
  const TrafficRun run =
      run_traffic(r, o, [&](const IterationShape& s) { return pricer.price(s); });
  ASSERT_EQ(4u, run.iterations.size());  // the prompts, then three decode steps at L = 16, 17, 18
  for (int step = 1; step < 4; ++step) {
    const IterationRecord& it = run.iterations[step];
    ASSERT_EQ((std::vector<int64_t>(4, 15 + step)), it.decode_kv);
    const test::CommandResult one = test::run_command(
        MLSYS_T10_BIN, "serve " + test::source_path("tests/data/elk-tiny.json") + " --batch 4 --seq " +
                           std::to_string(15 + step) + " --policy elk --json --no-simulate");
    ASSERT_EQ(0, one.exit_code) << one.err;
    const double expected = nlohmann::json::parse(one.out).at("latency_ms").get<double>();
    EXPECT_NEAR(it.end_ms - it.start_ms, expected, 1e-9 * expected) << "step " << step;
  }
  // The prompts' iteration writes every prompt's keys and values: 4 x 16 positions x 2 rows of 8 x 16 B.
  EXPECT_TRUE(run.iterations[0].price.exact);
}

TEST(TrafficPricing, TheApproximationsStayNearTheExactPrice) {
  const ServingChip chip = *serving_chip_preset("elk-1472");
  const ServingModel model = ServingModel::read_elk(elk_tiny(), "tiny.json", 0, chip);
  TrafficPricer pricer(model, chip, PricingOptions{});
  const IterationShape s{37, {{5, 1, 203, 203}, {1, 32, 100, 68}}};
  const IterationPrice approx = pricer.price(s), exact = pricer.price_exactly(s);
  EXPECT_FALSE(approx.exact);
  EXPECT_TRUE(exact.exact);
  EXPECT_NEAR(approx.ms, exact.ms, 0.05 * exact.ms);
  EXPECT_EQ((std::pair<int64_t, int64_t>{32, 40}), token_grid_neighbours(37));
  EXPECT_EQ((std::pair<int64_t, int64_t>{64, 64}), token_grid_neighbours(64));
  EXPECT_EQ((std::pair<int64_t, int64_t>{1, 1}), token_grid_neighbours(1));
  EXPECT_EQ((std::pair<int64_t, int64_t>{4, 8}), token_grid_neighbours(5));
  EXPECT_EQ((std::pair<int64_t, int64_t>{1536, 1792}), token_grid_neighbours(1600));
  EXPECT_EQ((std::pair<int64_t, int64_t>{28, 32}), token_grid_neighbours(31));
  // Each token count at itself, and KV lengths below the rounding's exact range: the approximate price is
  // the exact one, to the last bit, unless the layers are extrapolated.
  PricingOptions by_count;
  by_count.exact_tokens = true;
  by_count.kv_steps_per_octave = 1 << 20;
  by_count.sample_layers = model.layers();
  TrafficPricer counted(model, chip, by_count);
  EXPECT_DOUBLE_EQ(counted.price(s).ms, exact.ms);
  EXPECT_FALSE(counted.price(s).exact);  // still reported as approximate: it took the approximate path
}

TEST(ServeTraffic, TheCommandReportsTheRunAndRefusesBadInput) {
  const std::string dir = test::temp_dir("traffic");
  const std::string model = test::source_path("tests/data/elk-tiny.json");
  const test::CommandResult r = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --arrivals poisson --rate 2000 --count 60 --prompt-dist uniform " +
                         "--prompt-mean 24 --prompt-spread 16 --output-mean 6 --scheduler vllm --max-batch 8 " +
                         "--slo-ttft-ms 1 --slo-tpot-ms 1 --json --html " + dir + "/t.html --trace " + dir +
                         "/t.json --write-requests " + dir + "/r.jsonl");
  ASSERT_EQ(0, r.exit_code) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(60, j.at("requests").at("completed").get<int>());
  EXPECT_TRUE(j.at("requests").at("exact_output_tokens").get<bool>());
  for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms"})
    for (const char* p : {"p50", "p90", "p99", "mean"}) EXPECT_TRUE(j.at(key).contains(p)) << key << p;
  EXPECT_TRUE(j.at("lower_bounds").at("makespan").at("holds").get<bool>());
  EXPECT_TRUE(j.at("lower_bounds").at("ttft").at("holds").get<bool>());
  EXPECT_TRUE(j.at("simulation").at("agrees").get<bool>());
  EXPECT_GT(j.at("price_check").at("sampled").get<int>(), 0);
  EXPECT_GT(j.at("throughput_tokens_per_s").get<double>(), 0);
  EXPECT_LE(j.at("goodput_requests_per_s").get<double>() * (j.at("makespan_ms").get<double>() / 1e3),
            60 * (1 + 1e-9));
  ASSERT_EQ(j.at("iteration_count").get<size_t>(), j.at("iterations").size());
  int64_t prefill = 0;
  for (const nlohmann::json& it : j.at("iterations")) prefill += it.at("prefill_tokens").get<int64_t>();
  int64_t prompts = 0;
  for (const ServingRequest& q : read_requests_file(dir + "/r.jsonl")) prompts += q.prompt_tokens;
  EXPECT_EQ(prompts, prefill);  // nothing preempted on an unlimited cache: each prompt prefilled once
  const std::string html = [&] {
    std::ifstream in(dir + "/t.html");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_NE(std::string::npos, html.find("TTFT, cumulative"));
  EXPECT_NE(std::string::npos, html.find("KV cache in HBM"));
  EXPECT_NE(std::string::npos, test::run_command("/bin/cat", dir + "/t.json").out.find("KV cache"));
  // The same requests from the file give the same run.
  const test::CommandResult again = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --requests " + dir + "/r.jsonl --scheduler vllm --max-batch 8 --json");
  ASSERT_EQ(0, again.exit_code) << again.err;
  EXPECT_EQ(j.at("makespan_ms"), nlohmann::json::parse(again.out).at("makespan_ms"));
  // Bad input: exit 2 naming the line, the field or the option.
  test::write_text(dir + "/bad.jsonl", "{\"arrival_ms\": 0, \"prompt_tokens\": 3, \"output_tokens\": 1}\n{\"arrival_ms\": 1}\n");
  const test::CommandResult bad =
      test::run_command(MLSYS_T10_BIN, "serve " + model + " --requests " + dir + "/bad.jsonl");
  EXPECT_EQ(2, bad.exit_code);
  EXPECT_NE(std::string::npos, bad.err.find("line 2: prompt_tokens")) << bad.err;
  EXPECT_NE(std::string::npos, bad.err.find("bad.jsonl")) << bad.err;
  const test::CommandResult both = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --requests " + dir + "/r.jsonl --batch 4");
  EXPECT_EQ(2, both.exit_code);
  EXPECT_NE(std::string::npos, both.err.find("--batch")) << both.err;
  const test::CommandResult no_rate = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --arrivals poisson --rate 0 --prompt-mean 4 --output-mean 2");
  EXPECT_EQ(2, no_rate.exit_code);
  EXPECT_NE(std::string::npos, no_rate.err.find("--rate")) << no_rate.err;
  // Requests that need more iterations than the limit are refused before any work; a run past its time
  // limit stops between iterations, reports what ran and exits 1.
  const test::CommandResult too_many = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --requests " + dir + "/r.jsonl --max-iterations 3");
  EXPECT_EQ(2, too_many.exit_code);
  EXPECT_NE(std::string::npos, too_many.err.find("--max-iterations")) << too_many.err;
  EXPECT_NE(std::string::npos, too_many.err.find("r.jsonl")) << too_many.err;
  const test::CommandResult late = test::run_command(
      MLSYS_T10_BIN, "serve " + model + " --requests " + dir + "/r.jsonl --time-limit 1e-9 --json");
  EXPECT_EQ(1, late.exit_code);
  EXPECT_NE(std::string::npos, late.err.find("stopped at the time limit")) << late.err;
  const nlohmann::json stopped = nlohmann::json::parse(late.out);
  EXPECT_NE(std::string::npos, stopped.at("stopped").get<std::string>().find("--time-limit"));
  EXPECT_LT(stopped.at("requests").at("completed").get<int>(), 60);
}

}  // namespace
}  // namespace mlsys::t10
