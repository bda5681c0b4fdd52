#include "solver/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/json_io.hpp"
#include "sim/number_format.hpp"
#include "sim/violation.hpp"
#include "verifier/bound.hpp"
#include "verifier/verify.hpp"

namespace mlsys {

double parse_positive(const std::string& text, const std::string& option) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v <= 0)
    throw InputError("", option, "usage", "expected a positive number, got \"" + text + "\"");
  return v;
}

namespace {

std::string point_name(const SweepPoint& p) {
  return "capacity=" + format_number(p.capacity) + ";bandwidth=" + format_number(p.bandwidth);
}

}  // namespace

bool price_at_point(const Problem& base, const Graph& graph, const ModelOptions& model,
                    const Schedule& schedule, SweepPoint& point) {
  const Problem problem = problem_at(base, point.capacity, point.bandwidth);
  VerifyOptions options;
  options.model = model;
  const ScheduleReport report = verify_schedule(problem, graph, schedule, options);
  if (!report.valid) return false;
  point.feasible = true;
  point.total = report.total_latency;
  double compute_bound = 0;
  point.peak_working_set = 0;
  Schedule priced = schedule;
  priced.reported_latencies = std::vector<double>{};
  for (const SubgraphReport& sg : report.subgraphs) {
    compute_bound += sg.compute_bound_latency;
    point.peak_working_set = std::max(point.peak_working_set, sg.peak_working_set);
    priced.reported_latencies->push_back(sg.latency);
  }
  point.compute_bound_share = report.total_latency > 0 ? compute_bound / report.total_latency : 0;
  point.lower_bound = lower_bound(problem, graph).bound(model.matmul_compute);
  point.certified_bound = certified_bound_with_cover(problem, graph, model, kReportCoverSeconds).bound;
  point.schedule = priced;
  return true;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(line);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!line.empty() && line.back() == sep) parts.push_back("");
  return parts;
}

std::vector<double> parse_sweep_values(const std::string& text, const std::string& option, bool whole) {
  std::vector<double> values;
  const std::vector<std::string> range = split(text, ':');
  if (range.size() == 3) {
    const double a = parse_positive(range[0], option), b = parse_positive(range[1], option);
    const double n = parse_positive(range[2], option);
    if (n != std::floor(n) || n > 10000)
      throw InputError("", option, "usage", "A:B:N needs a whole N in [1, 10000], got " + range[2]);
    if (n > 1 && !(a < b)) throw InputError("", option, "usage", "A:B:N needs A < B, got " + text);
    // Rounded to 6 significant digits (capacities to whole elements): readable rows and file names.
    for (int i = 0; i < static_cast<int>(n); ++i) {
      const double v = n == 1 ? a : a * std::pow(b / a, i / (n - 1));
      const double unit = std::pow(10.0, std::floor(std::log10(v)) - 5);
      double rounded = std::round(v / unit) * unit;
      if (whole) rounded = std::max(1.0, std::round(rounded));
      values.push_back(i == 0 ? a : i == n - 1 ? b : rounded);
    }
  } else if (range.size() == 1) {
    for (const std::string& item : split(text, ',')) values.push_back(parse_positive(item, option));
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  } else {
    throw InputError("", option, "usage", "expected A:B:N or a comma-separated list, got \"" + text + "\"");
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.empty()) throw InputError("", option, "usage", "no values in \"" + text + "\"");
  return values;
}

Problem problem_at(const Problem& base, double capacity, double bandwidth) {
  Problem p = base;
  p.fast_memory_capacity = capacity;
  p.slow_memory_bandwidth = bandwidth;
  return p;
}

std::vector<SweepPoint> run_sweep(const Problem& problem, const Graph& graph, const SweepOptions& options,
                                  const std::atomic<bool>& stop) {
  std::vector<SweepPoint> points;
  const int nb = static_cast<int>(options.bandwidths.size());
  const int total = static_cast<int>(options.capacities.size()) * nb;
  int mine = 0;
  for (int index = options.shard; index < total; index += options.shards) ++mine;
  const auto start = std::chrono::steady_clock::now();
  for (int index = options.shard; index < total && !stop.load(); index += options.shards) {
    SweepPoint point;
    point.capacity_index = index / nb;
    point.bandwidth_index = index % nb;
    point.capacity = options.capacities[point.capacity_index];
    point.bandwidth = options.bandwidths[point.bandwidth_index];
    const Problem at = problem_at(problem, point.capacity, point.bandwidth);
    point.lower_bound = lower_bound(at, graph).bound(options.solve.model.matmul_compute);
    point.certified_bound = certified_bound_with_cover(at, graph, options.solve.model, kReportCoverSeconds).bound;
    const auto t0 = std::chrono::steady_clock::now();
    SolveStats stats;
    const std::optional<Schedule> best = solve(at, graph, options.solve, stop, nullptr, &stats);
    point.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (best && price_at_point(problem, graph, options.solve.model, *best, point)) point.found_at = "here";
    points.push_back(point);
    if (options.on_progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int done = static_cast<int>(points.size());
      std::ostringstream line;
      line << "point " << done << "/" << mine << " (capacity " << format_number(point.capacity)
           << ", bandwidth " << format_number(point.bandwidth)
           << "): " << (point.feasible ? format_number(point.total) : std::string("no valid schedule"))
           << "; ETA " << static_cast<int>(elapsed / done * (mine - done) + 0.5) << " s";
      options.on_progress(line.str());
    }
  }
  return points;
}

int reprice_dominated(const Problem& problem, const Graph& graph, const ModelOptions& model,
                      std::vector<SweepPoint>& points) {
  // Each point's own schedule first, so that a re-priced one is compared with what the point found itself.
  std::vector<std::optional<Schedule>> own;
  for (const SweepPoint& p : points) own.push_back(p.schedule);
  int improved = 0;
  for (SweepPoint& target : points)
    for (size_t j = 0; j < points.size(); ++j) {
      const SweepPoint& source = points[j];
      if (!own[j] || &source == &target) continue;
      if (source.capacity > target.capacity || source.bandwidth > target.bandwidth) continue;
      SweepPoint candidate = target;
      if (!price_at_point(problem, graph, model, *own[j], candidate)) continue;
      if (!target.feasible || candidate.total < target.total * (1 - 1e-12)) {
        candidate.found_at = source.found_at == "here" ? point_name(source) : source.found_at;
        target = candidate;
        ++improved;
      }
    }
  return improved;
}

}  // namespace mlsys
