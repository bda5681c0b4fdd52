// The text table and HTML report of a compiled whole-model T10 program.
#include "traces/t10_program_report.hpp"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "sim/number_format.hpp"
#include "sim/violation.hpp"
#include "solver/sweep.hpp"
#include "traces/html_page.hpp"

namespace mlsys::t10 {
namespace {

std::string shape(const TensorOperator& op) {
  std::string s = (op.batch > 1 ? std::to_string(op.batch) + "x" : "") + std::to_string(op.m);
  if (op.type == OperatorType::MatMul) s += "x" + std::to_string(op.k);
  return s + "x" + std::to_string(op.n);
}

std::string plan_text(const TensorOperator& op, const Plan& p) {
  if (op.type != OperatorType::MatMul) return std::to_string(p.f_op[0]) + " cores";
  std::ostringstream s;
  if (p.pb > 1) s << "pb=" << p.pb << " ";
  s << "F=[" << p.f_op[0] << "," << p.f_op[1] << "," << p.f_op[2] << "] A=" << p.am << "," << p.ak
    << " B=" << p.bk << "," << p.bn << " C=" << p.cm << "," << p.cn;
  return s.str();
}

// The operators that take most of the time, largest first (at most `count`).
std::vector<size_t> critical(const CompiledProgram& compiled, size_t count) {
  std::vector<size_t> order(compiled.chosen.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return compiled.chosen[a].time() > compiled.chosen[b].time(); });
  order.resize(std::min(order.size(), count));
  return order;
}

}  // namespace

void print_program(std::ostream& out, const TensorProgram& program, const CompiledProgram& compiled,
                   const CompileStats& stats, const ProgramRun* run) {
  out << program.name << " on " << program.chip.name << " (" << program.chip.cores << " cores, "
      << format_display(static_cast<double>(program.chip.sram_bytes_per_core)) << " B SRAM per core), "
      << program.ops.size() << " operators, calibrated timing\n\n";
  out << std::left << std::setw(28) << "operator" << std::setw(12) << "type" << std::setw(18) << "shape"
      << std::setw(42) << "plan" << std::right << std::setw(12) << "cycles" << std::setw(10) << "warm-up"
      << std::setw(10) << "cold B" << std::setw(10) << "hot B"
      << "\n";
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorOperator& op = program.ops[i];
    const OperatorOption& o = compiled.chosen[i];
    out << std::left << std::setw(28) << op.name.substr(0, 27) << std::setw(12) << to_string(op.type)
        << std::setw(18) << shape(op) << std::setw(42) << plan_text(op, o.plan) << std::right << std::setw(12)
        << format_display(std::round(o.time())) << std::setw(10) << format_display(std::round(o.warm_up))
        << std::setw(10) << o.cold << std::setw(10) << o.hot << "\n";
  }
  out << "\ntotal: " << format_display(compiled.total_cycles) << " cycles (" << compiled.reconciliation
      << " reconciliation";
  if (compiled.lower_bound > 0)
    out << "; proven lower bound over the same options " << format_display(compiled.lower_bound) << ", gap "
        << std::fixed << std::setprecision(2) << 100 * (compiled.total_cycles / compiled.lower_bound - 1)
        << " %" << std::defaultfloat;
  out << ")\n";
  if (stats.heuristic_cycles > 0)
    out << "published heuristic on the same options: " << format_display(stats.heuristic_cycles)
        << " cycles\n";
  out << "SRAM per core: " << format_display(static_cast<double>(compiled.cold_bytes)) << " B cold + "
      << format_display(static_cast<double>(compiled.peak_extra_bytes))
      << " B largest extra = " << format_display(static_cast<double>(compiled.peak_sram_bytes())) << " of "
      << format_display(static_cast<double>(program.chip.sram_bytes_per_core)) << " B\n";
  if (run) {
    const std::string failure = run->first_failure();
    out << "all-cores engine: " << run->engine_runs << " distinct operator plans simulated, makespan "
        << format_display(run->makespan) << " cycles"
        << (failure.empty() ? ", every core consistent, equal to the model" : "; FAILED: " + failure);
    if (run->functional_checked)
      out << (run->functional_mismatch ? "" : "; functional check: the output equals the reference");
    out << "\n";
  }
}

const char* const kProgramSweepFile = "t10-model-sweep.csv";

namespace {
constexpr const char* kSweepHeader =
    "index,sram_bytes,exchange_bytes_per_cycle,fits,total_cycles,heuristic_cycles,lower_bound_cycles,"
    "peak_sram_bytes,least_sram_bytes,proven,seconds";
}

std::string program_sweep_csv(const std::vector<ProgramVariantPoint>& points) {
  std::ostringstream out;
  out << kSweepHeader << "\n";
  for (const ProgramVariantPoint& p : points)
    out << p.index << "," << p.sram_bytes << "," << format_number(p.exchange_bytes_per_cycle) << ","
        << (p.fits ? 1 : 0) << "," << format_number(p.total_cycles) << ","
        << format_number(p.heuristic_cycles) << "," << format_number(p.lower_bound) << ","
        << p.peak_sram_bytes << "," << p.least_sram_bytes << "," << (p.proven ? 1 : 0) << ","
        << format_number(p.seconds) << "\n";
  return out.str();
}

std::vector<ProgramVariantPoint> read_program_sweep(const std::string& dir) {
  const std::string file = dir + "/" + kProgramSweepFile;
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "E_SWEEP", "cannot read (is it the -o of a t10 sweep MODEL?)");
  std::string line;
  if (!std::getline(in, line) || line != kSweepHeader)
    throw InputError(file, "header", "E_SWEEP",
                     "not a t10 model sweep (expected the header " + std::string(kSweepHeader) + ")");
  std::vector<ProgramVariantPoint> points;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split(line, ',');
    ProgramVariantPoint p;
    try {
      if (f.size() != 11) throw std::invalid_argument("fields");
      p.index = std::stoll(f[0]), p.sram_bytes = std::stoll(f[1]);
      p.exchange_bytes_per_cycle = std::stod(f[2]), p.fits = f[3] == "1";
      p.total_cycles = std::stod(f[4]), p.heuristic_cycles = std::stod(f[5]), p.lower_bound = std::stod(f[6]);
      p.peak_sram_bytes = std::stoll(f[7]), p.least_sram_bytes = std::stoll(f[8]);
      p.proven = f[9] == "1", p.seconds = std::stod(f[10]);
    } catch (const std::exception&) {
      throw InputError(file, "line " + std::to_string(number), "E_SWEEP",
                       "expected 11 numbers (" + std::string(kSweepHeader) + "), got \"" + line + "\"");
    }
    points.push_back(p);
  }
  return points;
}

nlohmann::json compiled_program_json(const TensorProgram& program, const CompileResult& result,
                                     const ProgramRun* run) {
  nlohmann::json doc = program_to_json(program, *result.compiled);
  doc["compile"] = {{"options_seconds", result.stats.options_seconds},
                    {"reconcile_seconds", result.stats.reconcile_seconds},
                    {"plans_priced", result.stats.plans_priced},
                    {"options", result.stats.options},
                    {"distinct_operators", result.stats.distinct_operators},
                    {"heuristic_cycles", result.stats.heuristic_cycles},
                    {"proven", result.stats.proven}};
  if (run) {  // the transitions are the edges in the order simulate_program replays them
    size_t t = 0;
    for (const OperatorRun& op : run->ops)
      for (const EdgeRun& e : op.edges) {
        if (t >= doc["transitions"].size()) break;
        nlohmann::json& j = doc["transitions"][t++];
        j["operand"] = e.operand;
        j["replayed"] = e.replayed;
        if (!e.replayed) {
          j["view"] = e.view;
          continue;
        }
        j["transfers"] = e.transfers;
        j["bytes_moved"] = e.bytes;
        j["max_bytes_into_one_core"] = e.max_core_bytes;
      }
  }
  if (run)
    doc["simulation"] = {{"makespan", run->makespan},       {"layout_changes_replayed", run->layout_changes},
                         {"edges", run->edges},
                         {"engine_runs", run->engine_runs}, {"passed", run->first_failure().empty()},
                         {"failure", run->first_failure()}, {"functional_checked", run->functional_checked}};
  return doc;
}

std::string program_html(const TensorProgram& program, const CompiledProgram& compiled,
                         const CompileStats& stats, const ProgramRun* run) {
  std::ostringstream h;
  h << html_page_start("T10 program: " + program.name,
                       ".bar{fill:#4a7fb5}.warm{fill:#e8a33d}.shuffle{fill:#8a8a8a}.cap{stroke:#c00;"
                       "stroke-dasharray:4}");
  h << "<h1>" << html_escape(program.name) << "</h1><p>" << program.ops.size() << " operators on "
    << html_escape(program.chip.name) << " (" << program.chip.cores << " cores), calibrated timing: <b>"
    << format_display(compiled.total_cycles) << "</b> cycles (" << compiled.reconciliation
    << " reconciliation";
  if (stats.heuristic_cycles > 0) h << "; published heuristic " << format_display(stats.heuristic_cycles);
  h << ").</p>";
  // Timeline: one row, each operator's warm-up, run and shuffle as rectangles scaled to the total.
  const double width = 1100, total = std::max(compiled.total_cycles, 1.0);
  h << "<h2>Timeline</h2><svg width='" << width << "' height='60' data-chart='timeline'>";
  double x = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const OperatorOption& o = compiled.chosen[i];
    const double parts[3] = {o.warm_up, o.cost.total - o.cost.shuffle, o.cost.shuffle};
    const char* cls[3] = {"warm", "bar", "shuffle"};
    for (int p = 0; p < 3; ++p) {
      const double w = parts[p] / total * width;
      h << "<rect class='" << cls[p] << "' x='" << x << "' y='10' width='" << w << "' height='40' data-tip='"
        << html_escape(program.ops[i].name) << ": " << format_display(std::round(parts[p])) << " cycles'/>";
      x += w;
    }
  }
  h << "</svg>";
  // SRAM per core while each operator runs, against the capacity.
  const double cap = static_cast<double>(program.chip.sram_bytes_per_core);
  h << "<h2>SRAM per core across the program</h2><svg width='" << width
    << "' height='160' data-chart='sram'>";
  const double step = width / static_cast<double>(program.ops.size());
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const double used = static_cast<double>(compiled.cold_bytes + compiled.chosen[i].extra());
    const double hgt = used / cap * 140;
    h << "<rect class='bar' x='" << i * step << "' y='" << 150 - hgt << "' width='" << std::max(step - 1, 0.5)
      << "' height='" << hgt << "' data-tip='" << html_escape(program.ops[i].name) << ": "
      << format_display(used) << " B'/>";
  }
  h << "<line class='cap' x1='0' x2='" << width << "' y1='10' y2='10'/></svg><p>Every core holds the cold "
    << "layouts of all operators (" << format_display(static_cast<double>(compiled.cold_bytes))
    << " B) plus the running operator's extra; the dashed line is the capacity, " << format_display(cap)
    << " B.</p>";
  h << "<h2>Critical "
       "operators</h2><table><tr><th>operator</th><th>type</th><th>cycles</th><th>share</th></tr>";
  for (size_t i : critical(compiled, 10))
    h << "<tr><td>" << html_escape(program.ops[i].name) << "</td><td>" << to_string(program.ops[i].type)
      << "</td><td>" << format_display(std::round(compiled.chosen[i].time())) << "</td><td>" << std::fixed
      << std::setprecision(1) << 100 * compiled.chosen[i].time() / total << " %</td></tr>"
      << std::defaultfloat;
  h << "</table>";
  if (run)
    h << "<p>All-cores engine: " << run->engine_runs << " distinct plans simulated; "
      << html_escape(run->first_failure().empty() ? "every core consistent, makespan equal to the model"
                                                  : run->first_failure())
      << ".</p>";
  h << html_page_end();
  return h.str();
}

}  // namespace mlsys::t10
