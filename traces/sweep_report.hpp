// The sweep's files: its table (sweep.csv), its schedules, and its report, one self-contained HTML page (inline SVG, no script, no network) with latency against
// fast-memory capacity, one curve per bandwidth, each bandwidth's lower bound dashed, the Pareto points
// filled, every point linked to its schedule, and the table of all points.
#pragma once

#include <string>
#include <vector>

namespace mlsys {

struct SweepPoint;

// DIR/sweep.csv, DIR/schedules/*.json, DIR/sweep.html and the chart alone as DIR/sweep.svg, each written
// atomically.
void write_sweep(const std::string& dir, const std::string& problem_name, const std::vector<SweepPoint>& points);

// The chart alone (an SVG document), for a README picture.
std::string sweep_chart_svg(const std::vector<SweepPoint>& points);
std::string sweep_html(const std::string& problem_name, const std::vector<SweepPoint>& points);

// Pareto points of one bandwidth's curve: cheaper than every point of that bandwidth with less capacity.
bool is_pareto(const std::vector<SweepPoint>& points, size_t index);

}  // namespace mlsys
