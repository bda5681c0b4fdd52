#include "traces/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "sim/json_io.hpp"
#include "solver/sweep.hpp"
#include "traces/html_page.hpp"
#include "traces/sweep_csv.hpp"
#include "traces/report.hpp"
#include "verifier/bound.hpp"
#include "traces/atomic_file.hpp"

namespace mlsys {
namespace {

// Axis labels: whole numbers with thousands separators (1,500,000), other values as they round-trip.
std::string label(double v) {
  if (v != std::floor(v) || std::fabs(v) >= 1e15) return format_number(v);
  std::string digits = std::to_string(static_cast<long long>(std::fabs(v)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return (v < 0 ? "-" : "") + digits;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                         "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

}  // namespace

bool is_pareto(const std::vector<SweepPoint>& points, size_t index) {
  const SweepPoint& p = points[index];
  if (!p.feasible) return false;
  for (const SweepPoint& q : points)
    if (q.feasible && q.bandwidth == p.bandwidth && q.capacity < p.capacity && q.total <= p.total)
      return false;
  return true;
}

std::string sweep_chart_svg(const std::vector<SweepPoint>& points) {
  const double width = 900, height = 480, left = 90, right = 170, top = 20, bottom = 60;
  double cmin = INFINITY, cmax = 0, ymax = 0;
  std::map<double, std::vector<size_t>> by_bandwidth;
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    cmin = std::min(cmin, p.capacity);
    cmax = std::max(cmax, p.capacity);
    ymax = std::max({ymax, p.lower_bound, p.certified_bound, p.feasible ? p.total : 0.0});
    by_bandwidth[p.bandwidth].push_back(i);
  }
  if (points.empty()) cmin = cmax = 1;
  if (ymax <= 0) ymax = 1;
  ymax *= 1.08;
  const double lmin = std::log10(cmin) - (cmin == cmax ? 0.5 : 0),
               lmax = std::log10(cmax) + (cmin == cmax ? 0.5 : 0);
  auto x = [&](double c) { return left + (std::log10(c) - lmin) / (lmax - lmin) * (width - left - right); };
  auto y = [&](double v) { return height - bottom - v / ymax * (height - top - bottom); };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << width << " " << height << "\" width=\""
      << width << "\" height=\"" << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Axes, capacity ticks at the swept values, five latency ticks.
  svg << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << width - right << "\" y2=\"" << y(0)
      << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << y(0) << "\" stroke=\"black\"/>\n";
  std::vector<double> capacities;
  for (const SweepPoint& p : points) capacities.push_back(p.capacity);
  std::sort(capacities.begin(), capacities.end());
  capacities.erase(std::unique(capacities.begin(), capacities.end()), capacities.end());
  for (double c : capacities)
    svg << "<line x1=\"" << x(c) << "\" y1=\"" << y(0) << "\" x2=\"" << x(c) << "\" y2=\"" << y(0) + 5
        << "\" stroke=\"black\"/><text x=\"" << x(c) << "\" y=\"" << y(0) + 18 << "\" text-anchor=\"middle\">"
        << label(c) << "</text>\n";
  // Latency ticks at a round step (1, 2 or 5 times a power of ten), about five of them.
  const double raw = ymax / 5, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = magnitude * (raw / magnitude <= 1   ? 1
                                   : raw / magnitude <= 2 ? 2
                                   : raw / magnitude <= 5 ? 5
                                                          : 10);
  for (int i = 0; i * step <= ymax; ++i) {
    const double v = i * step;
    svg << "<line x1=\"" << left - 5 << "\" y1=\"" << y(v) << "\" x2=\"" << width - right << "\" y2=\""
        << y(v) << "\" stroke=\"#ddd\"/><text x=\"" << left - 8 << "\" y=\"" << y(v) + 4
        << "\" text-anchor=\"end\">" << label(v) << "</text>\n";
  }
  svg << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 15
      << "\" text-anchor=\"middle\">fast-memory capacity (elements, log scale)</text>\n"
      << "<text x=\"20\" y=\"" << (top + y(0)) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 "
      << (top + y(0)) / 2 << ")\">total latency</text>\n";
  int color = 0;
  for (const auto& [bandwidth, indices] : by_bandwidth) {
    const char* c = kColors[color++ % 8];
    std::vector<size_t> sorted = indices;
    std::sort(sorted.begin(), sorted.end(),
              [&](size_t a, size_t b) { return points[a].capacity < points[b].capacity; });
    // The certified bound (docs/bounds.md) as the second curve: it depends on the capacity (what may stay in
    // fast memory) and the bandwidth; no schedule lies below it.
    std::string bound_path;
    for (size_t i : sorted)
      bound_path += (bound_path.empty() ? "" : " ") + std::to_string(x(points[i].capacity)) + "," +
                    std::to_string(y(std::max(points[i].certified_bound, points[i].lower_bound)));
    svg << "<g class=\"bandwidth\" data-bandwidth=\"" << format_number(bandwidth) << "\">\n"
        << "<polyline class=\"lower-bound\" fill=\"none\" stroke=\"" << c
        << "\" stroke-dasharray=\"5,4\" points=\"" << bound_path << "\"><title>certified bound at bandwidth "
        << format_number(bandwidth) << "</title></polyline>\n";
    std::string path;
    for (size_t i : sorted)
      if (points[i].feasible)
        path += (path.empty() ? "" : " ") + std::to_string(x(points[i].capacity)) + "," +
                std::to_string(y(points[i].total));
    if (!path.empty())
      svg << "<polyline class=\"curve\" fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\" points=\""
          << path << "\"/>\n";
    for (size_t i : sorted) {
      const SweepPoint& p = points[i];
      std::ostringstream tip;
      tip << "capacity " << format_number(p.capacity) << ", bandwidth " << format_number(p.bandwidth) << ": ";
      if (!p.feasible) {
        tip << "no valid schedule";
        svg << "<text class=\"infeasible\" x=\"" << x(p.capacity) << "\" y=\"" << y(0) - 4
            << "\" text-anchor=\"middle\" fill=\"" << c << "\">&#215;<title>" << html_escape(tip.str())
            << "</title></text>\n";
        continue;
      }
      tip << "total " << format_number(p.total) << ", certified bound " << format_number(p.certified_bound)
          << " (within " << std::lround(proven_gap_percent(p.total, p.certified_bound)) << " % of optimal)"
          << ", compute-bound " << std::lround(100 * p.compute_bound_share) << " %, peak working set "
          << p.peak_working_set << (p.found_at == "here" ? "" : ", schedule found at " + p.found_at);
      const bool pareto = is_pareto(points, i);
      svg << "<a href=\"" << html_escape(p.schedule_file) << "\"><circle class=\"point"
          << (pareto ? " pareto" : "") << "\" cx=\"" << x(p.capacity) << "\" cy=\"" << y(p.total) << "\" r=\""
          << (pareto ? 6 : 4) << "\" fill=\"" << (pareto ? c : "white") << "\" stroke=\"" << c
          << "\" stroke-width=\"2\"><title>" << html_escape(tip.str()) << "</title></circle></a>\n";
    }
    const double ly = top + 20 * color;
    svg << "<line x1=\"" << width - right + 15 << "\" y1=\"" << ly << "\" x2=\"" << width - right + 40
        << "\" y2=\"" << ly << "\" stroke=\"" << c << "\" stroke-width=\"2\"/><text x=\""
        << width - right + 45 << "\" y=\"" << ly + 4 << "\">bandwidth " << format_number(bandwidth)
        << "</text>\n</g>\n";
  }
  const double ly = top + 20 * (color + 1);
  svg << "<circle cx=\"" << width - right + 27 << "\" cy=\"" << ly << "\" r=\"6\" fill=\"gray\"/><text x=\""
      << width - right + 45 << "\" y=\"" << ly + 4 << "\">Pareto point</text>\n<line x1=\""
      << width - right + 15 << "\" y1=\"" << ly + 20 << "\" x2=\"" << width - right + 40 << "\" y2=\""
      << ly + 20 << "\" stroke=\"gray\" stroke-dasharray=\"5,4\"/><text x=\"" << width - right + 45
      << "\" y=\"" << ly + 24 << "\">certified bound</text>\n</svg>\n";
  return svg.str();
}

std::string sweep_html(const std::string& problem_name, const std::vector<SweepPoint>& points) {
  std::ostringstream html;
  html << html_page_start("sweep: " + problem_name, "tr.pareto td{font-weight:bold}\n")
       << "<h1>Latency against fast-memory capacity: " << html_escape(problem_name) << "</h1>\n"
       << "<p>Each point is the best schedule the search found at that capacity and bandwidth, or a schedule "
          "of a point with less of both re-priced here if that is cheaper (so no curve rises with more "
          "memory). Filled points are Pareto points; click a point for its schedule.</p>\n"
       << sweep_chart_svg(points)
       << "<table class=\"grid\"><tr><th>capacity</th><th>bandwidth</th><th>total</th><th>certified "
          "bound</th><th>proven gap</th>"
          "<th>compute-bound</th><th>peak working set</th><th>solve s</th><th>schedule</th><th>found "
          "at</th></tr>\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    html << "<tr" << (is_pareto(points, i) ? " class=\"pareto\"" : "") << "><td>" << format_number(p.capacity)
         << "</td><td>" << format_number(p.bandwidth) << "</td>";
    if (p.feasible)
      html << "<td>" << format_number(p.total) << "</td><td>" << format_number(p.certified_bound)
           << "</td><td>" << std::lround(proven_gap_percent(p.total, p.certified_bound)) << " %</td><td>"
           << std::lround(100 * p.compute_bound_share) << " %</td><td>" << p.peak_working_set << "</td>";
    else
      html << "<td>no valid schedule</td><td>" << format_number(p.certified_bound)
           << "</td><td></td><td></td><td></td>";
    html << "<td>" << format_number(std::round(p.solve_seconds * 100) / 100) << "</td><td>"
         << (p.schedule_file.empty() ? "" : "<a href=\"" + html_escape(p.schedule_file) + "\">json</a>")
         << "</td><td>" << html_escape(p.found_at) << "</td></tr>\n";
  }
  html << "</table>\n" << html_page_end();
  return html.str();
}

void write_sweep(const std::string& dir, const std::string& problem_name,
                 const std::vector<SweepPoint>& points) {
  std::filesystem::create_directories(std::filesystem::path(dir) / "schedules");
  std::vector<SweepPoint> named = points;
  for (SweepPoint& p : named) {
    if (p.feasible && p.schedule) {
      p.schedule_file = "schedules/capacity-" + format_number(p.capacity) + "-bandwidth-" +
                        format_number(p.bandwidth) + ".json";
      write_file_atomic(dir + "/" + p.schedule_file, schedule_to_json(*p.schedule).dump(1) + "\n");
    }
  }
  write_file_atomic(dir + "/sweep.csv", sweep_csv(named));
  write_file_atomic(dir + "/sweep.html", sweep_html(problem_name, named));
  write_file_atomic(dir + "/sweep.svg", sweep_chart_svg(named));  // the chart alone, e.g. for a README
}

}  // namespace mlsys
