// `t10 compile MODEL`: a whole network compiled into one compute-shift program (docs/t10-programs.md).
// MODEL is a T10 model file, a graph problem, or an ONNX file (read through mlsys-import --t10).
#include "apps/t10_compile.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "apps/cli_inputs.hpp"
#include "apps/t10_serve.hpp"
#include "sim/json_io.hpp"
#include "sim/t10/t10_program_sim.hpp"
#include "sim/t10/t10_serving.hpp"
#include "sim/violation.hpp"
#include "solver/t10_compile.hpp"
#include "solver/t10_parallel.hpp"
#include "traces/atomic_file.hpp"
#include "traces/perfetto_trace.hpp"
#include "traces/t10_program_report.hpp"

namespace mlsys::t10 {
namespace {

using nlohmann::json;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// An ONNX model goes through the importer installed beside this program (its T10 lowering).
json import_onnx(const std::string& path) {
  const auto importer = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mlsys-import";
  const std::string command = shell_quote(importer.string()) + " --t10 -o - " + shell_quote(path);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw InputError(path, "", "E_PROGRAM", "cannot run " + importer.string());
  std::string text;
  char buffer[65536];
  for (size_t got; (got = fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) text.append(buffer, got);
  if (pclose(pipe.release()) != 0)
    throw InputError(path, "", "E_PROGRAM", "mlsys-import --t10 refused the model (its message is above)");
  return parse_json_text(text, path);
}

TensorProgram read_model_file(const std::string& path) {
  const bool onnx = std::filesystem::path(path).extension() == ".onnx";
  const json doc = onnx ? import_onnx(path) : read_json_file(path);
  return program_from_document(doc, path, std::filesystem::path(path).stem().string());
}

TensorProgram read_model(const CompileArgs& a) {
  TensorProgram program = read_model_file(a.model_path);
  if (a.sram_bytes > 0) program.chip.sram_bytes_per_core = a.sram_bytes;
  return program;
}

}  // namespace

bool is_model_file(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".onnx") return true;
  const json doc = read_json_file(path);
  return doc.is_object() && (doc.contains("t10_program") || doc.contains("widths"));
}

int run_model_sweep(const std::string& model_path, const std::vector<int64_t>& srams,
                    const std::vector<double>& exchange, const std::string& shard,
                    const std::string& out_dir) {
  const std::pair<int, int> which = parse_shard(shard);
  const int index = which.first, count = which.second;  // not a structured binding: lambdas capture them
  const TensorProgram program = read_model_file(model_path);
  const size_t total = srams.size() * exchange.size();
  size_t done = 0;
  const auto points =
      sweep_program(program, srams, exchange, index, count, [&](const ProgramVariantPoint& p) {
        std::cerr << "t10 sweep: " << ++done << " of " << (total + count - 1 - index) / count << ": SRAM "
                  << p.sram_bytes << " B, exchange " << p.exchange_bytes_per_cycle << " B/cycle: "
                  << (p.fits ? std::to_string(p.total_cycles) + " cycles"
                             : "needs " + std::to_string(p.least_sram_bytes) + " B")
                  << "\n";
      });
  std::filesystem::create_directories(out_dir);
  write_file_atomic(out_dir + "/" + kProgramSweepFile, program_sweep_csv(points));
  std::cout << program_sweep_csv(points);
  return 0;
}

int run_model_merge(const std::vector<std::string>& dirs, const std::string& out_dir) {
  std::map<int64_t, ProgramVariantPoint> merged;
  for (const std::string& dir : dirs)
    for (const ProgramVariantPoint& p : read_program_sweep(dir)) merged[p.index] = p;
  std::vector<ProgramVariantPoint> points;
  for (const auto& [i, p] : merged) points.push_back(p);
  std::filesystem::create_directories(out_dir);
  write_file_atomic(out_dir + "/" + kProgramSweepFile, program_sweep_csv(points));
  std::cerr << "t10 merge: " << points.size() << " points -> " << out_dir << "/" << kProgramSweepFile << "\n";
  return 0;
}

CLI::App* add_compile_command(CLI::App& app, CompileArgs& a) {
  CLI::App* c = app.add_subcommand(
      "compile", "compile a whole network (T10 model file, graph problem or ONNX) into one program");
  c->add_option("model", a.model_path, "T10 model JSON, graph problem JSON, or .onnx")->required();
  c->add_option("-o,--out", a.out_path, "write the compiled program (JSON)");
  c->add_option("--reconcile", a.reconcile,
                "exact (default: optimal over the operators' options, or a proven gap) or heuristic (the "
                "published planner's greedy)")
      ->check(CLI::IsMember({"exact", "heuristic"}));
  c->add_option("--sram", a.sram_bytes, "SRAM bytes per core (default: the chip's, 638,976)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  c->add_flag("--json", a.json_out, "print the compiled program as JSON on stdout");
  c->add_option("--chip", a.chip,
                "the chip or chips (a preset: " + serving_chip_presets_text() +
                    "; or a chip file); default the model file's chip");
  c->add_option("--parallel", a.parallel,
                "over several chips: flat (one partition over the fewest chips it fits on, the default), "
                "pipeline (consecutive operators per chip) or auto (the faster)")
      ->check(CLI::IsMember({"flat", "pipeline", "auto"}));
  c->add_option("--trace", a.trace_path, "write a Perfetto trace (a track per operator phase)");
  c->add_option("--html", a.html_path, "write an HTML report (timeline, SRAM per core, critical operators)");
  c->add_flag("--no-simulate", a.no_simulate, "skip the all-cores simulation of the program");
  c->add_flag("--functional", a.functional,
              "compute real integers through the network on the engine, along its data flow and views; a "
              "chain's output is compared with a reference computed directly");
  c->add_option("--values", a.values_path,
                "with --functional: write every drawn input, weight and bias and the network's output (JSON), "
                "for an independent reference")
      ->needs("--functional");
  return c;
}

namespace {

// A pipeline over chips (docs/t10-chips.md#compile): each stage simulated on its chip, the stages and the
// transfers between them summed.
int report_pipeline(const CompileArgs& a, const ChipPlacement& p, const json& ways) {
  json stages = json::array();
  double simulated = 0;
  bool agrees = true;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    std::optional<ProgramRun> run;
    if (!a.no_simulate) {
      std::cerr << "t10 compile: simulating stage " << s << " on every core of its chip...\n";
      run = simulate_program(p.stages[s], *p.results[s].compiled, {}, nullptr);
      simulated += run->makespan;
      agrees = agrees && run->first_failure().empty();
    }
    stages.push_back(compiled_program_json(p.stages[s], p.results[s], run ? &*run : nullptr));
  }
  for (double t : p.transfer_cycles) simulated += t;
  const json doc{{"parallelism", "pipeline"},
                 {"chips_used", p.chips_used},
                 {"total_cycles", p.total_cycles},
                 {"transfer_cycles", p.transfer_cycles},
                 {"stages", stages},
                 {"parallel_options", ways}};
  if (!a.out_path.empty()) write_file_atomic(a.out_path, doc.dump(2) + "\n");
  if (a.json_out) {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << "pipeline over " << p.chips_used << " chips: " << p.total_cycles << " cycles (stages";
    for (const CompileResult& r : p.results) std::cout << " " << r.compiled->total_cycles;
    std::cout << ", transfers";
    for (double t : p.transfer_cycles) std::cout << " " << t;
    std::cout << ")\n";
    if (!a.no_simulate) std::cout << "simulated on every core: " << simulated << " cycles\n";
  }
  if (!agrees) {
    std::cerr << "error: a stage's simulation disagrees with its compiled total\n";
    return 1;
  }
  return 0;
}

}  // namespace

int run_compile(const CompileArgs& a) {
  TensorProgram program = read_model(a);
  CompileOptions options;
  options.reconciliation = a.reconcile == "heuristic" ? Reconciliation::Heuristic : Reconciliation::Exact;
  if (program.ops.size() > 20) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  std::optional<CompileResult> placed;
  json ways;
  if (!a.chip.empty() || a.parallel != "flat") {
    Chip system = a.chip.empty() ? program.chip : read_serving_chip(a.chip).chip;
    if (a.sram_bytes > 0) system.sram_bytes_per_core = a.sram_bytes;
    const std::vector<ChipPlacement> placements =
        compile_over_chips(program, system, *parallelism_from(a.parallel), options);
    const ChipPlacement* best = nullptr;
    ways = json::array();
    for (const ChipPlacement& p : placements) {
      ways.push_back(
          {{"parallelism", to_string(p.way)}, {"compiled", p.compiled}, {"chips_used", p.chips_used}});
      if (p.compiled)
        ways.back()["total_cycles"] = p.total_cycles;
      else
        ways.back()["why_not"] = p.why_not;
      if (p.compiled && (!best || p.total_cycles < best->total_cycles)) best = &p;
    }
    if (!best) {
      for (const ChipPlacement& p : placements)
        std::cerr << "error: " << to_string(p.way) << ": " << p.why_not << "\n";
      if (a.json_out)
        std::cout << json{{"name", program.name}, {"fits", false}, {"parallel_options", ways}}.dump(2)
                  << "\n";
      return 1;
    }
    if (best->way == Parallelism::Pipeline) return report_pipeline(a, *best, ways);
    program = best->stages[0];
    placed = best->results[0];
  }
  const CompileResult result = placed ? *placed : compile_program(program, options);
  if (!result.compiled) {
    const int64_t sram = program.chip.sram_bytes_per_core;
    if (a.json_out)
      std::cout << json{{"name", program.name},
                        {"fits", false},
                        {"sram_bytes_per_core", sram},
                        {"least_sram_bytes", result.least_sram_bytes},
                        {"missing_bytes_per_core", std::max<int64_t>(result.least_sram_bytes - sram, 0)}}
                       .dump(2)
                << "\n";
    std::cerr << "error: [E_SRAM] " << program.name << " does not fit: its operators need at least "
              << result.least_sram_bytes << " B per core (cold layouts of all operators plus the largest "
              << "extra), the chip has " << sram << " B: "
              << (result.least_sram_bytes > sram
                      ? std::to_string(result.least_sram_bytes - sram) +
                            " B missing per core (more chips: --chip elk-5888-linked or ipu-pod4)"
                      : std::string("the heuristic found no fitting choice"))
              << "\n";
    return 1;
  }
  const CompiledProgram& compiled = *result.compiled;
  std::optional<ProgramRun> run;
  PerfettoTrace trace("t10 program: " + program.name);
  if (!a.no_simulate || a.functional || !a.trace_path.empty()) {
    if (program.ops.size() > 20) std::cerr << "t10 compile: simulating on every core...\n";
    ProgramSimOptions sim;
    sim.functional = a.functional;
    run = simulate_program(program, compiled, sim, a.trace_path.empty() ? nullptr : &trace);
  }
  json doc = compiled_program_json(program, result, run ? &*run : nullptr);
  if (!ways.is_null())
    doc.update({{"parallelism", "flat"}, {"chips_used", program.chip.chips}, {"parallel_options", ways}});
  if (!a.out_path.empty()) write_file_atomic(a.out_path, doc.dump(2) + "\n");
  if (!a.trace_path.empty()) trace.write(a.trace_path);
  if (!a.values_path.empty() && run) write_file_atomic(a.values_path, functional_values_json(program, *run).dump() + "\n");
  if (!a.html_path.empty())
    write_file_atomic(a.html_path, program_html(program, compiled, result.stats, run ? &*run : nullptr));
  if (a.json_out)
    std::cout << doc.dump(2) << "\n";
  else
    print_program(std::cout, program, compiled, result.stats, run ? &*run : nullptr);
  if (run && !run->first_failure().empty()) {
    std::cerr << "error: " << run->first_failure() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mlsys::t10
