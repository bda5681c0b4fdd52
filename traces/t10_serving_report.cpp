#include "traces/t10_serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/number_format.hpp"
#include "traces/html_page.hpp"

namespace mlsys::t10 {
namespace {

std::string ms(double v) {
  return format_number(std::round(v * 1e4) / 1e4);
}

// A horizontal axis under a chart of `width` px covering [0, end_ms], with ticks and labels in ms.
std::string time_axis(double end_ms, double x0, double width, double y) {
  std::ostringstream s;
  s << "<line x1='" << x0 << "' y1='" << y << "' x2='" << x0 + width << "' y2='" << y
    << "' stroke='#444'/>";
  const double step = std::pow(10.0, std::floor(std::log10(std::max(end_ms, 1e-9) / 5)));
  for (double t = 0; t <= end_ms * 1.0001; t += step) {
    const double x = x0 + width * t / end_ms;
    s << "<line x1='" << x << "' y1='" << y << "' x2='" << x << "' y2='" << y + 4 << "' stroke='#444'/>"
      << "<text x='" << x << "' y='" << y + 16 << "' font-size='10' text-anchor='middle'>" << ms(t)
      << "</text>";
  }
  s << "<text x='" << x0 + width / 2 << "' y='" << y + 30
    << "' font-size='11' text-anchor='middle'>time (ms)</text>";
  return s.str();
}

}  // namespace

std::string serving_report_html(const ServingProgram& p, const ServingChip& chip, const ServingResult& r,
                                const std::string& title) {
  const ServingTimeline& t = r.timeline;
  const double end = chip.cycles_to_ms(std::max(t.makespan, 1e-9));
  const double x0 = 90, width = 1000;
  auto x = [&](double cycles) { return x0 + width * chip.cycles_to_ms(cycles) / end; };
  std::ostringstream h;
  h << html_page_start("t10 serve: " + title,
                       ".load{fill:#4e79a7}.run{fill:#f28e2b}.kv{fill:#76b7b2}.legend rect{stroke:none}");
  h << "<h1>" << html_escape(title) << "</h1>";
  const double hbm_ms = chip.cycles_to_ms(t.hbm_busy_cycles);
  h << "<table><tr><th>decode step</th><td>" << ms(end) << " ms</td></tr><tr><th>lower bound</th><td>"
    << ms(chip.cycles_to_ms(r.lower_bound)) << " ms (proven gap "
    << format_number(std::round((t.makespan / std::max(r.lower_bound, 1e-9) - 1) * 1e4) / 100)
    << " %)</td></tr><tr><th>baselines</th><td>elk rule " << ms(chip.cycles_to_ms(r.elk_makespan))
    << " ms, fastest options " << ms(chip.cycles_to_ms(r.fastest_makespan)) << " ms</td></tr>"
    << "<tr><th>HBM</th><td>" << format_number(std::round(t.hbm_bytes / 1e6) / 1e3) << " GB at "
    << format_number(chip.total_hbm_gbps()) << " GB/s: busy " << ms(hbm_ms) << " ms, "
    << format_number(std::round(hbm_ms / end * 1000) / 10) << " % of the step</td></tr>"
    << "<tr><th>NoC (loads)</th><td>" << ms(chip.cycles_to_ms(t.noc_load_cycles))
    << " ms of delivery at the per-core share; operators' exchanges "
    << ms(chip.cycles_to_ms(t.exchange_cycles)) << " ms</td></tr><tr><th>compute</th><td>"
    << ms(chip.cycles_to_ms(t.compute_cycles)) << " ms</td></tr><tr><th>SRAM per core</th><td>peak "
    << t.peak_sram_bytes << " of " << chip.chip.sram_bytes_per_core << " B</td></tr></table>";

  // Timeline: loads (HBM lane, KV loads in their own colour) and operators (compute lane).
  h << "<h2>Timeline</h2><svg width='" << x0 + width + 20 << "' height='130' class='legend'>"
    << "<text x='4' y='34' font-size='12'>HBM loads</text><text x='4' y='74' font-size='12'>operators</text>";
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const LoadSpan& l = t.loads[i];
    if (r.choices[i].hbm_bytes > 0)
      h << "<rect class='" << (p.ops[i].hbm == HbmOperand::KvCache ? "kv" : "load") << "' x='" << x(l.start)
        << "' y='20' width='" << std::max(0.5, x(l.end) - x(l.start)) << "' height='22' data-tip='"
        << html_escape(p.ops[i].op.name + ": load (" + to_string(p.ops[i].hbm) + "), " + ms(chip.cycles_to_ms(l.start)) +
                       " to " + ms(chip.cycles_to_ms(l.end)) + " ms, " + std::to_string(r.choices[i].hbm_bytes) +
                       " B from HBM, " + std::to_string(r.choices[i].preload_bytes) + " B per core")
        << "'/>";
    const OpSpan& o = t.ops[i];
    h << "<rect class='run' x='" << x(o.start) << "' y='60' width='" << std::max(0.5, x(o.end) - x(o.start))
      << "' height='22' data-tip='"
      << html_escape(p.ops[i].op.name + ": run (" + to_string(p.ops[i].op.type) + ", layer " +
                     std::to_string(p.ops[i].layer) + "), " + ms(chip.cycles_to_ms(o.start)) + " to " +
                     ms(chip.cycles_to_ms(o.end)) + " ms, hot " + std::to_string(r.choices[i].option.hot) +
                     " B per core")
      << "'/>";
  }
  h << time_axis(end, x0, width, 92) << "</svg>"
    << "<p><svg width='12' height='12'><rect class='load' width='12' height='12'/></svg> weight load "
    << "<svg width='12' height='12'><rect class='kv' width='12' height='12'/></svg> KV cache load "
    << "<svg width='12' height='12'><rect class='run' width='12' height='12'/></svg> operator running</p>";

  // SRAM per core over time, against the capacity.
  const double height = 160, cap = static_cast<double>(chip.chip.sram_bytes_per_core);
  auto y = [&](double bytes) { return 10 + height * (1 - bytes / cap); };
  h << "<h2>SRAM per core</h2><svg width='" << x0 + width + 20 << "' height='" << height + 60 << "'>"
    << "<line x1='" << x0 << "' y1='" << y(cap) << "' x2='" << x0 + width << "' y2='" << y(cap)
    << "' stroke='#c00' stroke-dasharray='4'/><text x='4' y='" << y(cap) + 4 << "' font-size='10'>"
    << chip.chip.sram_bytes_per_core << " B</text><text x='4' y='" << y(0) << "' font-size='10'>0</text>"
    << "<polyline fill='none' stroke='#4e79a7' points='";
  double last = 0;
  for (const ServingEvent& e : t.events) {
    h << x(e.time) << "," << y(last) << " " << x(e.time) << "," << y(static_cast<double>(e.sram_bytes)) << " ";
    last = static_cast<double>(e.sram_bytes);
  }
  h << "'/>" << time_axis(end, x0, width, y(0) + 2) << "</svg>";

  // Time per operator type.
  std::map<std::string, std::pair<double, int>> by_type;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    auto& [cycles, count] = by_type[std::string(to_string(p.ops[i].op.type)) +
                                    (p.ops[i].hbm == HbmOperand::None ? "" : std::string(" (") + to_string(p.ops[i].hbm) + ")")];
    cycles += r.choices[i].option.time();
    ++count;
  }
  h << "<h2>Operators by type</h2><table><tr><th>type</th><th>operators</th><th>running (ms)</th></tr>";
  for (const auto& [type, v] : by_type)
    h << "<tr><td>" << html_escape(type) << "</td><td>" << v.second << "</td><td>"
      << ms(chip.cycles_to_ms(v.first)) << "</td></tr>";
  h << "</table>" << html_page_end();
  return h.str();
}

}  // namespace mlsys::t10
