#include "traces/sweep_csv.hpp"

#include <fstream>
#include <sstream>

#include "sim/json_io.hpp"
#include "sim/number_format.hpp"
#include "sim/violation.hpp"

namespace mlsys {

const char* const kSweepCsvHeader =
    "capacity,bandwidth,status,total,lower_bound,compute_bound_share,peak_working_set,solve_seconds,schedule,"
    "found_at,certified_bound";
namespace {
// Sweeps written before the certified bound: still merged (the bounds are recomputed anyway).
const char* const kSweepCsvHeaderWithoutCertifiedBound =
    "capacity,bandwidth,status,total,lower_bound,compute_bound_share,peak_working_set,solve_seconds,schedule,"
    "found_at";
}  // namespace

std::string sweep_csv(const std::vector<SweepPoint>& points) {
  std::ostringstream csv;
  csv << kSweepCsvHeader << "\n";
  for (const SweepPoint& p : points)
    csv << format_number(p.capacity) << "," << format_number(p.bandwidth) << ","
        << (p.feasible ? "ok" : "infeasible") << "," << (p.feasible ? format_number(p.total) : "") << ","
        << format_number(p.lower_bound) << "," << (p.feasible ? format_number(p.compute_bound_share) : "")
        << "," << (p.feasible ? std::to_string(p.peak_working_set) : "") << ","
        << format_number(p.solve_seconds) << "," << p.schedule_file << "," << p.found_at << ","
        << format_number(p.certified_bound) << "\n";
  return csv.str();
}

std::vector<SweepPoint> read_sweep(const std::string& dir, const Problem& problem) {
  const std::string path = dir + "/sweep.csv";
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "", "cannot open file");
  std::string line;
  if (!std::getline(in, line) || (line != kSweepCsvHeader && line != kSweepCsvHeaderWithoutCertifiedBound))
    throw InputError(path, "line 1", "",
                     "not a sweep.csv (expected the header " + std::string(kSweepCsvHeader) + ")");
  const size_t fields = line == kSweepCsvHeader ? 11 : 10;
  std::vector<SweepPoint> points;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split(line, ',');
    const std::string where = "line " + std::to_string(number);
    if (f.size() != fields)
      throw InputError(path, where, "",
                       "expected " + std::to_string(fields) + " fields, got " + std::to_string(f.size()));
    SweepPoint p;
    p.capacity = parse_positive(f[0], where + " capacity");
    p.bandwidth = parse_positive(f[1], where + " bandwidth");
    p.solve_seconds = std::stod(f[7]);
    p.schedule_file = f[8];
    p.found_at = f[9];
    if (f[2] == "ok") {
      if (p.schedule_file.empty() || p.schedule_file.find("..") != std::string::npos)
        throw InputError(path, where, "",
                         "a feasible point needs its schedule file inside the sweep directory");
      p.schedule = load_schedule(dir + "/" + p.schedule_file, problem);
    }
    points.push_back(p);
  }
  return points;
}

}  // namespace mlsys
