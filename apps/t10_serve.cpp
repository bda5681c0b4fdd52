// `t10 serve MODEL.json --batch B --seq L`: one LLM decode step on the chip with HBM (docs/t10-serving.md).
#include "apps/t10_serve.hpp"

#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>

#include "sim/json_io.hpp"
#include "sim/number_format.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/t10/t10_serving_sim.hpp"
#include "sim/violation.hpp"
#include "solver/t10_parallel.hpp"
#include "solver/t10_serving.hpp"
#include "traces/atomic_file.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/t10_serving_report.hpp"

namespace mlsys::t10 {

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
  CLI::App* serve = app.add_subcommand(
      "serve", "one LLM decode step with HBM behind the chip: loads scheduled beside execution, replayed");
  serve
      ->add_option("model", a.model_path,
                   "an Elk model file (platformxlab/elk models/original/*.json), or a T10 model file from "
                   "mlsys-import --t10 of a decoder with a KV cache")
      ->required();
  serve->add_option("--batch", a.batch, "sequences decoded together (Elk model files only)")
      ->check(CLI::Range(1, 1 << 20));
  serve->add_option("--seq", a.sequence, "the KV cache's length, tokens so far (Elk model files only)")
      ->check(CLI::Range(1, 1 << 24));
  serve->add_option("--layers", a.layers, "only the first N layers (default all)")
      ->check(CLI::Range(1, 100000));
  serve->add_option("--chip", a.chip,
                    "a preset (" + serving_chip_presets_text() + "; default elk-1472) or a chip JSON file");
  serve->add_option("--cores", a.cores, "override the chip's core count")->check(CLI::Range(1, 1 << 20));
  serve
      ->add_option("--hbm-gbps", a.hbm_gbps,
                   "override the HBM bandwidth of all chips together (GB/s as the artifact counts)")
      ->check(CLI::PositiveNumber);
  std::vector<std::string> policy_names;
  std::string policy_help;
  for (const auto& [name, what] : serving_policy_names()) {
    policy_names.push_back(name);
    policy_help += (policy_help.empty() ? "" : "; ") + name + ": " + what;
  }
  serve->add_option("--policy", a.policy, policy_help)->check(CLI::IsMember(policy_names));
  serve->add_option("--timeout", a.seconds, "seconds for our policy's local search (default 30)")
      ->check(CLI::PositiveNumber);
  serve->add_option("--schedule", a.schedule_path,
                    "price another tool's schedule instead of searching: JSON [[cold, hot], ...] or "
                    "{\"cold_hot\": [...]}, bytes per core per operator (scripts/elk-schedule converts the "
                    "artifact's .coldhot output)");
  serve
      ->add_option("--parallel", a.parallel,
                   "over linked chips: flat (one partition over all cores, the default), tensor, pipeline, "
                   "or auto (the fastest of the three); request traffic: flat, tensor or auto (the faster on "
                   "one decode iteration)")
      ->check(CLI::IsMember({"flat", "tensor", "pipeline", "auto"}));
  serve->add_flag("--json", a.json_out, "print the result as JSON on stdout");
  serve->add_flag("--no-simulate", a.no_simulate, "skip the SystemC replay");
  serve->add_option("--trace", a.trace_path,
                    "write a Perfetto trace of the replay (HBM, NoC, compute, SRAM)");
  serve->add_option("--html", a.html_path,
                    "write an HTML report (timeline, HBM and NoC use, SRAM over time)");
  add_traffic_options(serve, a.traffic);
  return serve;
}

std::string serving_chip_presets_text() {
  std::string text;
  for (const std::string& p : serving_chip_preset_names()) text += (text.empty() ? "" : ", ") + p;
  return text;
}

ServingChip read_serving_chip(const std::string& spec) {
  if (auto preset = serving_chip_preset(spec)) return *preset;
  return parse_serving_chip(read_json_file(spec), spec);
}

ServingChip serving_chip_for(const ServeArgs& a) {
  ServingChip chip = read_serving_chip(a.chip);
  if (a.cores > 0) {
    chip.chip.cores = a.cores;
    chip.chip.chips = (a.cores + chip.chip.cores_per_chip - 1) / chip.chip.cores_per_chip;
    if (chip.chip.linked() && chip.chip.chips > kMaxChips)
      throw InputError(a.chip, "--cores", "", "more than " + std::to_string(kMaxChips) + " chips joined by links");
  }
  if (a.hbm_gbps > 0) chip.hbm_gbps = a.hbm_gbps / static_cast<double>(chip.chip.chips);  // all chips
  if (chip.hbm_gbps <= 0)
    throw InputError(a.chip, "hbm_gbps", "",
                     "the chip has no HBM: serving loads weights and the KV cache from it");
  return chip;
}

namespace {

// A schedule file: per operator [cold, hot] bytes per core, as a list or under "cold_hot".
std::vector<GivenChoice> read_schedule(const std::string& path, size_t operators) {
  const nlohmann::json doc = read_json_file(path);
  const nlohmann::json* list = &doc;
  std::string field = "";
  if (doc.is_object() && doc.contains("cold_hot")) {
    list = &doc["cold_hot"];
    field = "cold_hot";
  }
  if (!list->is_array())
    throw InputError(path, field, "", "a schedule is a list of [cold, hot] bytes per core, one per operator");
  if (list->size() != operators)
    throw InputError(path, field, "",
                     std::to_string(list->size()) + " operators, the model has " + std::to_string(operators));
  std::vector<GivenChoice> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& pair = (*list)[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    auto bytes = [&](const nlohmann::json& v) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 40))
        throw InputError(path, where, "", "expected bytes per core from 0 to 2^40, got " + v.dump());
      return v.get<int64_t>();
    };
    if (!pair.is_array() || pair.size() != 2) throw InputError(path, where, "", "expected [cold, hot]");
    out.push_back({bytes(pair[0]), bytes(pair[1])});
  }
  return out;
}

nlohmann::json timeline_json(const ServingProgram& p, const ServingChip& chip, const ServingResult& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const ServingChoice& c = r.choices[i];
    ops.push_back({{"name", p.ops[i].op.name},
                   {"type", to_string(p.ops[i].op.type)},
                   {"layer", p.ops[i].layer},
                   {"loads", to_string(p.ops[i].hbm)},
                   {"hbm_bytes", c.hbm_bytes},
                   {"preload_bytes_per_core", c.preload_bytes},
                   {"hot_bytes_per_core", c.option.hot},
                   {"exec_cycles", c.option.time()},
                   {"compute_cycles", c.option.cost.compute},
                   {"load_start_ms", chip.cycles_to_ms(r.timeline.loads[i].start)},
                   {"load_end_ms", chip.cycles_to_ms(r.timeline.loads[i].end)},
                   {"start_ms", chip.cycles_to_ms(r.timeline.ops[i].start)},
                   {"end_ms", chip.cycles_to_ms(r.timeline.ops[i].end)}});
    if (c.option.cost.link > 0)  // a plan spanning linked chips (docs/t10-chips.md#pricing)
      ops.back().update({{"link_cycles", c.option.cost.link},
                         {"crossing_bytes", c.option.cost.crossing_bytes},
                         {"placement", c.option.cost.placement}});
    if (c.option.cost.collective > 0) ops.back()["all_reduce_cycles"] = c.option.cost.collective;
  }
  return ops;
}

// ", batch B, KV length L" for an Elk model file; nothing for an imported one (its shapes are its own).
std::string shape_text(const ServeArgs& a) {
  if (a.batch < 1) return "";
  return ", batch " + std::to_string(a.batch) + ", KV length " + std::to_string(a.sequence);
}

// Each way of running the step over the chips, with its terms (docs/t10-chips.md#parallel).
nlohmann::json parallel_json(const ParallelChoice& c, const ServingChip& system) {
  nlohmann::json out = nlohmann::json::array();
  for (const ParallelOption& o : c.options) {
    nlohmann::json j{
        {"parallelism", to_string(o.way)}, {"feasible", o.feasible}, {"chips_used", o.chips_used}};
    if (!o.feasible) {
      j["why_not"] = o.why_not;
    } else {
      j.update({{"step_ms", system.cycles_to_ms(o.step_cycles)},
                {"chip_ms", system.cycles_to_ms(o.chip_cycles)},
                {"link_ms", system.cycles_to_ms(o.link_cycles)},
                {"hbm_bytes_per_chip", o.hbm_bytes_per_chip}});
      if (o.way == Parallelism::Pipeline)
        j.update({{"micro_batches", o.micro_batches}, {"bubble", o.bubble}});
    }
    out.push_back(j);
  }
  return out;
}

// The step as --parallel asks: flat on the system, or the fastest feasible way over its chips; false (with
// the reasons on stderr) when no way fits.
struct StepRun {
  ServingProgram program;  // what one chip runs (all of it when flat)
  ServingChip chip;
  ServingResult result;
  ParallelChoice choice;  // empty when flat
  double cycles = 0, bound = 0;
};
bool run_step(const ServeArgs& a, const ServingChip& system, const ServeOptions& options,
              const std::function<ServingProgram(int64_t)>& at_batch, StepRun& step) {
  if (*parallelism_from(a.parallel) == Parallelism::Flat || system.chip.chips == 1) {
    step.result = serve(step.program, step.chip, options);
    step.cycles = step.result.timeline.makespan;
    step.bound = step.result.lower_bound;
    return true;
  }
  if (options.policy == ServingPolicy::Given)
    throw InputError(a.schedule_path, "--parallel", "", "a given schedule is one chip's: --parallel flat");
  try {
    step.choice = serve_in_parallel(at_batch, a.batch, system, *parallelism_from(a.parallel), options);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n";
    return false;
  }
  ParallelOption& o = step.choice.options[step.choice.chosen];
  step.program = o.program, step.chip = o.chip, step.result = o.result;
  step.cycles = o.step_cycles;
  step.bound = o.lower_bound_cycles;
  return true;
}

}  // namespace

void print_model_warnings(const std::string& model_path, const std::vector<std::string>& warnings) {
  for (size_t i = 0; i < std::min<size_t>(warnings.size(), 3); ++i)
    std::cerr << "warning: " << model_path << " " << warnings[i] << "\n";
  if (warnings.size() > 3)
    std::cerr << "warning: " << model_path << ": " << warnings.size() - 3
              << " more products like these; each is priced as it says\n";
}

int run_serve(const ServeArgs& a) {
  const auto start = std::chrono::steady_clock::now();
  if (traffic_requested(a)) return run_serve_traffic(a);
  const ServingChip system = serving_chip_for(a);
  const nlohmann::json model_doc = read_json_file(a.model_path);
  const auto at_batch = [&](int64_t batch) {
    return read_serving_model(model_doc, a.model_path, {batch, a.sequence, a.layers}, system);
  };
  ServingProgram whole = at_batch(a.batch);
  print_model_warnings(a.model_path, whole.warnings);
  ServeOptions options;
  options.policy = *serving_policy_from(a.policy);
  if (!a.schedule_path.empty()) {
    if (a.policy != "ours")
      throw InputError(a.schedule_path, "--policy", "", "--schedule prices a given schedule: no policy");
    options.policy = ServingPolicy::Given;
    options.given = read_schedule(a.schedule_path, whole.ops.size());
  }
  options.seconds = a.seconds;
  options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  StepRun step;
  step.program = std::move(whole);
  step.chip = system;
  if (!run_step(a, system, options, at_batch, step)) return 1;
  const ServingProgram& program = step.program;
  const ServingChip& chip = step.chip;
  const ServingResult& r = step.result;
  const double step_cycles = step.cycles, step_bound = step.bound;
  const ParallelChoice& choice = step.choice;
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ServingTimeline& t = r.timeline;
  const bool fits = !t.overflow && t.peak_sram_bytes <= chip.chip.sram_bytes_per_core;
  const bool hbm_fits = chip.hbm_capacity_bytes <= 0 || t.hbm_bytes <= chip.total_hbm_capacity_bytes();
  const ParallelOption* chosen = choice.chosen >= 0 ? &choice.options[choice.chosen] : nullptr;
  std::optional<ServingReplay> replay;
  if (!a.no_simulate && fits) {
    PerfettoTrace trace("t10 serve: " + a.model_path);
    replay = replay_serving(program, chip, r.choices, r.lookahead, a.trace_path.empty() ? nullptr : &trace);
    if (!a.trace_path.empty()) trace.write(a.trace_path);
  }
  if (!a.html_path.empty())
    write_file_atomic(a.html_path, serving_report_html(program, chip, r, a.model_path + shape_text(a)));
  const double latency = chip.cycles_to_ms(step_cycles), bound = chip.cycles_to_ms(step_bound);
  const double gap = bound > 0 ? (latency / bound - 1) * 100 : 0;
  if (a.json_out) {
    nlohmann::json j{
        {"model", a.model_path},
        {"model_warnings", program.warnings},
        {"chip",
         {{"name", chip.chip.name},
          {"cores", chip.chip.cores},
          {"sram_bytes_per_core", chip.chip.sram_bytes_per_core},
          {"hbm_gbps", chip.hbm_gbps},
          {"total_hbm_gbps", chip.total_hbm_gbps()},
          {"noc_gib_per_core", chip.noc_gib_per_core},
          {"chips", chip.chip.chips},
          {"cores_per_chip", chip.chip.cores_per_chip},
          {"link_gbps", chip.chip.link_gbps},
          {"topology", chip.chip.topology},
          {"inter_chip_overhead", chip.chip.inter_chip_overhead}}},
        {"batch", a.batch > 0 ? nlohmann::json(a.batch) : nlohmann::json()},
        {"seq", a.sequence > 0 ? nlohmann::json(a.sequence) : nlohmann::json()},
        {"layers", program.layers},
        {"operators", program.ops.size()},
        {"policy", to_string(options.policy)},
        {"parallelism", chosen ? to_string(chosen->way) : "flat"},
        {"chips_used", chosen ? chosen->chips_used : system.chip.chips},
        {"load_lookahead", r.lookahead},
        {"latency_ms", latency},
        {"fits", fits && hbm_fits},
        {"peak_sram_bytes", t.peak_sram_bytes},
        {"hbm_bytes", t.hbm_bytes},
        {"lower_bound_ms", bound},
        {"proven_gap", gap / 100},
        {"baselines_ms",
         {{"elk", chip.cycles_to_ms(r.elk_makespan)}, {"fastest", chip.cycles_to_ms(r.fastest_makespan)}}},
        {"compile_seconds", compile_seconds},
        {"search",
         {{"classes", r.classes},
          {"options", r.options},
          {"evaluations", r.evaluations},
          {"options_seconds", r.options_seconds},
          {"schedule_seconds", r.schedule_seconds}}},
        {"ops", timeline_json(program, chip, r)}};
    if (chosen) {
      j["parallel_options"] = parallel_json(choice, system);
      j["chip_latency_ms"] = chip.cycles_to_ms(t.makespan);
    }
    if (t.overflow) j["overflow"] = t.overflow->message();
    if (options.policy == ServingPolicy::Given)
      j["schedule"] = {{"file", a.schedule_path},
                       {"matched_exactly", r.given_exact},
                       {"matched_on_hot_bytes", r.given_hot_only},
                       {"matched_nearest", r.given_nearest}};
    if (replay)
      j["simulation"] = {{"latency_ms", chip.cycles_to_ms(replay->makespan)},
                         {"peak_sram_bytes", replay->peak_sram_bytes},
                         {"events", replay->events},
                         {"agrees", replay->agrees}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << program.ops.size() << " operators in " << program.layers
              << (program.layers == 1 ? " layer" : " layers") << shape_text(a) << ", " << chip.chip.cores
              << " cores, HBM " << format_number(chip.total_hbm_gbps()) << " GB/s\n"
              << "decode step: " << format_number(std::round(latency * 1e4) / 1e4) << " ms (policy "
              << to_string(options.policy)
              << (chosen ? std::string(", ") + to_string(chosen->way) + " over " +
                               std::to_string(chosen->chips_used) + " chips"
                         : std::string())
              << "); lower bound " << format_number(std::round(bound * 1e4) / 1e4) << " ms, proven gap "
              << format_number(std::round(gap * 100) / 100) << " %\n"
              << "HBM traffic " << format_number(std::round(t.hbm_bytes / 1e6) / 1e3) << " GB; SRAM peak "
              << t.peak_sram_bytes << " of " << chip.chip.sram_bytes_per_core << " B per core\n";
    if (replay)
      std::cout << "SystemC replay: "
                << format_number(std::round(chip.cycles_to_ms(replay->makespan) * 1e4) / 1e4) << " ms, "
                << replay->events << " events" << (replay->agrees ? ", equal to the analytic total" : "")
                << "\n";
  }
  if (t.overflow) {
    std::cerr << "error: " << t.overflow->message() << "\n";
    return 1;
  }
  if (!hbm_fits) {
    std::cerr << "error: the model needs " << t.hbm_bytes << " B of HBM, above the chip's "
              << chip.total_hbm_capacity_bytes() << " B\n";
    return 1;
  }
  if (replay && !replay->agrees) {
    std::cerr << "error: the SystemC replay disagrees: " << replay->disagreement << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mlsys::t10
