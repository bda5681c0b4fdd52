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
#include "sim/t10/t10_layouts.hpp"
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
    out << "all-cores engine: every operator on every core (" << run->engine_runs
        << " distinct operator plans simulated), makespan "
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
        if (!e.view.empty()) j["view"] = e.view;
        if (!e.replayed) continue;
        j["transfers"] = e.transfers;
        j["bytes_moved"] = e.bytes;
        j["max_bytes_into_one_core"] = e.max_core_bytes;
      }
  }
  if (run) {
    int64_t simulated = 0, vector_transfers = 0, unpriced = 0;
    for (size_t i = 0; i < run->ops.size(); ++i) {
      const OperatorRun& op = run->ops[i];
      simulated += op.simulated;
      if (program.ops[i].type != OperatorType::MatMul) vector_transfers += op.transfers;
      unpriced += op.unpriced_bytes;
    }
    doc["simulation"] = {{"makespan", run->makespan},
                         {"operators_on_engine", simulated},
                         {"vector_statistics_transfers", vector_transfers},
                         {"unpriced_bytes", unpriced},
                         {"layout_changes_replayed", run->layout_changes},
                         {"edges", run->edges},
                         {"engine_runs", run->engine_runs},
                         {"passed", run->first_failure().empty()},
                         {"failure", run->first_failure()},
                         {"functional_checked", run->functional_checked}};
  }
  return doc;
}

nlohmann::json functional_values_json(const TensorProgram& program, const ProgramRun& run) {
  nlohmann::json doc = {{"inputs", nlohmann::json::object()},
                         {"params", nlohmann::json::object()},
                         {"operands", nlohmann::json::array()}};
  for (const DrawnValues& d : run.drawn) {
    if (!d.input.empty())
      doc["inputs"][d.input] = {{"shape", d.shape}, {"values", d.values}};
    else if (!d.param.empty())
      doc["params"][d.param] = {{"shape", d.shape}, {"values", d.values}};
    else
      doc["operands"].push_back({{"op", d.op}, {"slot", d.slot}, {"shape", d.shape}, {"values", d.values}});
  }
  if (!program.ops.empty()) {
    const auto [rows, cols] = output_shape(program.ops.back());
    doc["output"] = {{"op", program.ops.back().name},
                     {"shape", {rows, cols}},
                     {"values", run.output},
                     {"scale", run.output_scale}};
  }
  doc["reference"] = run.functional_reference;
  return doc;
}

// Every edge of the data flow with its layout change, or the view it goes through (docs/t10-programs.md).
void transitions_table(std::ostringstream& h, const TensorProgram& program, const ProgramRun& run) {
  h << "<h2>Transitions</h2><p>" << run.layout_changes << " of " << run.edges
    << " edges replayed core to core, through their views where they have some (mapped element by element); "
       "the others are named with why not.</p><table id='transitions'><tr><th>from</th>"
       "<th>to</th><th>operand</th><th>replayed</th><th>transfers</th><th>bytes moved</th>"
       "<th>into the busiest core</th></tr>";
  for (size_t i = 0; i < run.ops.size(); ++i)
    for (const EdgeRun& e : run.ops[i].edges) {
      h << "<tr class='transition'><td>" << html_escape(program.ops[e.producer].name) << "</td><td>"
        << html_escape(program.ops[i].name) << "</td><td>" << e.operand << "</td>";
      if (e.replayed)
        h << "<td>" << (e.view.empty() ? std::string("yes") : "yes, " + html_escape(e.view)) << "</td><td>"
          << e.transfers << "</td><td>" << format_display(static_cast<double>(e.bytes)) << " B</td><td>"
          << format_display(static_cast<double>(e.max_core_bytes)) << " B</td>";
      else
        h << "<td colspan='4'>no: a view, " << html_escape(e.view) << "</td>";
      h << "</tr>";
    }
  h << "</table>";
}

std::string program_html(const TensorProgram& program, const CompiledProgram& compiled,
                         const CompileStats& stats, const ProgramRun* run) {
  std::ostringstream h;
  h << html_page_start("T10 program: " + program.name,
                       ".bar{fill:#4a7fb5}.warm{fill:#e8a33d}.shuffle{fill:#8a8a8a}.cap{stroke:#c00;"
                       "stroke-dasharray:4}#transitions td,#transitions th{padding:2px 8px}");
  h << "<h1>" << html_escape(program.name) << "</h1><p>" << program.ops.size() << " operators on "
    << html_escape(program.chip.name) << " (" << program.chip.cores << " cores), calibrated timing: <b>"
    << format_display(compiled.total_cycles) << "</b> cycles (" << compiled.reconciliation
    << " reconciliation";
  if (stats.heuristic_cycles > 0) h << "; published heuristic " << format_display(stats.heuristic_cycles);
  h << ").</p>";
  // Timeline: one row, each operator's warm-up, run and shuffle as rectangles scaled to the total, with an
  // axis in cycles and microseconds, a legend, and the operator's name where it fits.
  const double width = 1100, total = std::max(compiled.total_cycles, 1.0);
  constexpr double kCyclesPerMicrosecond = 1325;  // IPU Mk2 at 1.325 GHz, the calibrated model's cycle
  const char* phase_names[3] = {"warm-up", "run", "shuffle"};
  const char* cls[3] = {"warm", "bar", "shuffle"};
  h << "<h2>Timeline</h2><svg width='" << width + 20 << "' height='120' data-chart='timeline'>";
  double x = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const OperatorOption& o = compiled.chosen[i];
    const double parts[3] = {o.warm_up, o.cost.total - o.cost.shuffle, o.cost.shuffle};
    const double start = x;
    for (int p = 0; p < 3; ++p) {
      const double w = parts[p] / total * width;
      if (parts[p] > 0)
        h << "<rect class='" << cls[p] << "' x='" << x << "' y='10' width='" << w
          << "' height='40' data-tip='" << html_escape(program.ops[i].name) << ", " << phase_names[p] << ": "
          << format_display(std::round(parts[p])) << " cycles'/>";
      x += w;
    }
    const std::string& name = program.ops[i].name;
    if (x - start >= 7.0 * static_cast<double>(std::min<size_t>(name.size(), 24)) + 6)
      h << "<text class='op-label' x='" << start + 3 << "' y='34' font-size='11' fill='#fff'>"
        << html_escape(name.substr(0, 24)) << "</text>";
  }
  h << "<line class='axis' x1='0' x2='" << width << "' y1='54' y2='54' stroke='#666'/>";
  for (int t = 0; t <= 5; ++t) {
    const double cycles = total * t / 5, tx = width * t / 5;
    h << "<line x1='" << tx << "' x2='" << tx
      << "' y1='54' y2='58' stroke='#666'/><text class='axis-tick' x='" << tx
      << "' y='70' font-size='10' text-anchor='"
      << (t == 0   ? "start"
          : t == 5 ? "end"
                   : "middle")
      << "'>" << format_display(std::round(cycles)) << " cycles ("
      << format_display(std::round(cycles / kCyclesPerMicrosecond * 100) / 100) << " &micro;s)</text>";
  }
  for (int p = 0; p < 3; ++p)
    h << "<g class='legend-entry'><rect class='" << cls[p] << "' x='" << 280 * p << "' y='88' width='14' "
      << "height='14'/><text x='" << 280 * p + 20 << "' y='100' font-size='12'>" << phase_names[p]
      << (p == 0   ? " (cold layout to hot)"
          : p == 1 ? " (compute and shifts)"
                   : " (output to the next layout)")
      << "</text></g>";
  h << "</svg><p class='note'>Microseconds at the IPU Mk2's 1.325 GHz.</p>";
  // SRAM per core while each operator runs: the cold layouts of all operators (the base) and the running
  // operator's extra, on an axis scaled to the peak so both can be read; the capacity is drawn when it is
  // within a few times the peak, and otherwise named at the top with the peak's share of it.
  const double cap = static_cast<double>(program.chip.sram_bytes_per_core);
  const double cold = static_cast<double>(compiled.cold_bytes);
  double peak = cold;
  for (const OperatorOption& o : compiled.chosen)
    peak = std::max(peak, cold + static_cast<double>(o.extra()));
  const double top = cap <= 4 * peak ? std::max(cap, peak) * 1.05 : peak * 1.25, H = 150;
  auto Y = [&](double bytes) { return 10 + H - bytes / std::max(top, 1.0) * H; };
  h << "<h2>SRAM per core across the program</h2><svg width='" << width + 140 << "' height='" << H + 60
    << "' data-chart='sram'><g transform='translate(90,0)'>";
  const double step = width / static_cast<double>(program.ops.size());
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const double extra = static_cast<double>(compiled.chosen[i].extra());
    const double bar = std::max(step - 1, 0.5);
    h << "<rect class='cold-base' x='" << i * step << "' y='" << Y(cold) << "' width='" << bar << "' height='"
      << Y(0) - Y(cold) << "' fill='#9ecae1' data-tip='" << html_escape(program.ops[i].name) << ": cold base "
      << format_display(cold) << " B'/><rect class='running-extra' x='" << i * step << "' y='"
      << Y(cold + extra) << "' width='" << bar << "' height='" << Y(cold) - Y(cold + extra)
      << "' fill='#3182bd' data-tip='" << html_escape(program.ops[i].name) << ": running extra "
      << format_display(extra) << " B (total " << format_display(cold + extra) << " B)'/>";
  }
  for (int t = 0; t <= 4; ++t) {
    const double bytes = top * t / 4;
    h << "<line x1='-4' x2='0' y1='" << Y(bytes) << "' y2='" << Y(bytes) << "' stroke='#666'/><text "
      << "class='axis-tick' x='-6' y='" << Y(bytes) + 3 << "' font-size='10' text-anchor='end'>"
      << format_display(std::round(bytes)) << " B</text>";
  }
  h << "<line class='axis' x1='0' x2='0' y1='" << Y(top) << "' y2='" << Y(0) << "' stroke='#666'/>";
  if (cap <= top)
    h << "<line class='cap capacity-line' x1='0' x2='" << width << "' y1='" << Y(cap) << "' y2='" << Y(cap)
      << "'/><text x='" << width << "' y='" << Y(cap) - 3 << "' font-size='11' fill='#c00' text-anchor='end'>"
      << "capacity " << format_display(cap) << " B</text>";
  else
    h << "<text class='capacity-note' x='" << width << "' y='" << Y(top) + 10
      << "' font-size='11' fill='#c00' text-anchor='end'>capacity " << format_display(cap)
      << " B, above the axis: the peak is " << format_display(std::round(peak / cap * 1000) / 10)
      << " % of it</text>";
  h << "</g>";
  const char* sram_legend[2][2] = {{"#9ecae1", "cold layouts of all operators"},
                                   {"#3182bd", "the running operator's extra"}};
  for (int l = 0; l < 2; ++l)
    h << "<g class='legend-entry'><rect x='" << 90 + 260 * l << "' y='" << H + 32
      << "' width='14' height='14' fill='" << sram_legend[l][0] << "'/><text x='" << 110 + 260 * l << "' y='"
      << H + 44 << "' font-size='12'>" << sram_legend[l][1] << "</text></g>";
  h << "</svg><p>Every core holds the cold layouts of all operators (" << format_display(cold)
    << " B) plus the running operator's extra; peak " << format_display(peak) << " B of "
    << format_display(cap) << " B.</p>";
  if (run) transitions_table(h, program, *run);
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
