#include "traces/t10_sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/number_format.hpp"
#include "traces/html_page.hpp"

namespace mlsys::t10 {

std::string chip_sweep_csv(const std::vector<ChipVariantPoint>& points) {
  std::ostringstream csv;
  csv << "exchange_bytes_per_cycle,sram_bytes_per_core,status,exchange_cycles,grader_cycles,plan,proven,"
         "simulated,seconds,timing,calibrated_cycles\n";
  for (const ChipVariantPoint& p : points) {
    csv << format_number(p.exchange_bytes_per_cycle) << "," << p.sram_bytes_per_core << ","
        << (p.best ? "ok" : "no accepted plan") << ",";
    if (p.best) {
      std::string plan = plan_to_json(p.best->plan).dump();
      std::replace(plan.begin(), plan.end(), ',', ';');  // one CSV field
      csv << (p.timing == CoreTiming::Exchange ? format_number(p.best->exchange_total) : "") << ","
          << format_number(p.best->grader_total) << "," << plan;
    } else {
      csv << ",,";
    }
    csv << "," << (p.proven ? "yes" : "no") << "," << p.simulated << "," << format_number(p.seconds) << ","
        << to_string(p.timing) << ","
        << (p.best && p.timing == CoreTiming::Calibrated ? format_number(p.best->calibrated_total) : "")
        << "\n";
  }
  return csv.str();
}

std::string chip_sweep_html(const std::string& problem_name, const std::vector<ChipVariantPoint>& points) {
  const bool calibrated = !points.empty() && points.front().timing == CoreTiming::Calibrated;
  // One curve per SRAM size: the exchange time of the best plan against the exchange bandwidth (log axis).
  std::map<int64_t, std::vector<const ChipVariantPoint*>> curves;
  double x_lo = INFINITY, x_hi = 0, y_hi = 0;
  for (const ChipVariantPoint& p : points) {
    curves[p.sram_bytes_per_core].push_back(&p);
    x_lo = std::min(x_lo, p.exchange_bytes_per_cycle);
    x_hi = std::max(x_hi, p.exchange_bytes_per_cycle);
    if (p.best) y_hi = std::max(y_hi, sweep_cycles(p));
  }
  if (!(x_hi > x_lo)) x_hi = x_lo * 2;
  if (!(y_hi > 0)) y_hi = 1;
  const double width = 860, height = 420, left = 90, right = 200, top = 20, bottom = 50;
  auto x_of = [&](double v) {
    return left + (std::log(v) - std::log(x_lo)) / (std::log(x_hi) - std::log(x_lo)) * (width - left - right);
  };
  auto y_of = [&](double v) { return height - bottom - v / (y_hi * 1.05) * (height - top - bottom); };
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                          "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  std::ostringstream svg;
  svg << "<svg id=\"chip-sweep\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << width << " " << height << "\">\n";
  svg << "<line x1=\"" << left << "\" y1=\"" << height - bottom << "\" x2=\"" << width - right << "\" y2=\""
      << height - bottom << "\" stroke=\"#333\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\""
      << left << "\" y2=\"" << height - bottom << "\" stroke=\"#333\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = y_hi * 1.05 * i / 4;
    svg << "<text x=\"" << left - 6 << "\" y=\"" << y_of(v) + 4 << "\" text-anchor=\"end\" font-size=\"11\">"
        << format_display(std::round(v)) << "</text>\n";
  }
  std::vector<double> ticks;
  for (const ChipVariantPoint& p : points)
    if (std::find(ticks.begin(), ticks.end(), p.exchange_bytes_per_cycle) == ticks.end())
      ticks.push_back(p.exchange_bytes_per_cycle);
  for (double t : ticks)
    svg << "<text x=\"" << x_of(t) << "\" y=\"" << height - bottom + 16
        << "\" text-anchor=\"middle\" font-size=\"11\">" << format_number(t) << "</text>\n";
  svg << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 10
      << "\" text-anchor=\"middle\" font-size=\"12\">exchange bytes per cycle per tile</text>\n";
  int curve = 0;
  for (const auto& [sram, list] : curves) {
    const char* color = colors[curve++ % 8];
    std::ostringstream path;
    for (const ChipVariantPoint* p : list) {
      if (!p->best) continue;
      path << (path.tellp() == 0 ? "M" : " L") << x_of(p->exchange_bytes_per_cycle) << " "
           << y_of(sweep_cycles(*p));
      svg << "<circle class=\"chip-point\" cx=\"" << x_of(p->exchange_bytes_per_cycle) << "\" cy=\""
          << y_of(sweep_cycles(*p)) << "\" r=\"4\" fill=\"" << color << "\" data-tip=\""
          << html_escape(plan_to_json(p->best->plan).dump()) << ": " << format_display(sweep_cycles(*p))
          << " cycles (grader " << format_display(p->best->grader_total) << ")\"/>\n";
    }
    svg << "<path class=\"chip-curve\" d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << color
        << "\"/>\n";
    svg << "<text x=\"" << width - right + 10 << "\" y=\"" << top + 16 * curve
        << "\" font-size=\"12\" fill=\"" << color << "\">SRAM " << format_display(static_cast<double>(sram))
        << " B</text>\n";
  }
  svg << "</svg>\n";
  std::ostringstream html;
  html << html_page_start("T10 chip sweep: " + problem_name)
       << "<h1>T10 chip sweep: " << html_escape(problem_name) << "</h1>\n<p class=\"note\">"
       << (calibrated
               ? "The best accepted plan under the calibrated timing (the T10 authors' IPU-fitted model; "
                 "a variant's exchange bandwidth scales its transfer terms by 4 over it, "
                 "docs/t10-programs.md#chip-variants) for each chip variant, proven by exhausting that model's "
                 "search space.</p>\n"
               : "The best accepted plan under the exchange timing of the all-cores engine for each chip "
                 "variant (exchange bandwidth per tile x SRAM per core), proven by the search's bound unless "
                 "the table says otherwise.</p>\n")
       << svg.str() << "<table><tr><th>bytes/cycle</th><th>SRAM B</th><th>best plan</th><th>"
       << (calibrated ? "calibrated" : "exchange") << " cycles</th>"
       << "<th>grader cycles</th><th>proven</th></tr>\n";
  for (const ChipVariantPoint& p : points)
    html << "<tr><td>" << format_number(p.exchange_bytes_per_cycle) << "</td><td>"
         << format_display(static_cast<double>(p.sram_bytes_per_core)) << "</td><td>"
         << (p.best ? html_escape(plan_to_json(p.best->plan).dump()) : std::string("no accepted plan"))
         << "</td><td>" << (p.best ? format_display(sweep_cycles(p)) : "") << "</td><td>"
         << (p.best ? format_display(p.best->grader_total) : "") << "</td><td>" << (p.proven ? "yes" : "no")
         << "</td></tr>\n";
  html << "</table>\n" << html_page_end();
  return html.str();
}

}  // namespace mlsys::t10
