#include "traces/report.hpp"

#include "verifier/bound.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace mlsys {

using nlohmann::json;

static std::string slice_text(int tensor, const Region& r) {
  return "T" + std::to_string(tensor) + "[" + std::to_string(r.r0) + ":" + std::to_string(r.r1) + "," +
         std::to_string(r.c0) + ":" + std::to_string(r.c1) + "]";
}

json violation_to_json(const RuleViolation& v) {
  json j = {{"rule", v.rule}, {"message", v.sentence()}};
  j["subgraph"] = v.subgraph >= 0 ? json(v.subgraph) : json(nullptr);
  j["step"] = v.step ? json{{"position", v.step->position}, {"tile", v.step->tile}, {"k_step", v.step->k_step}}
                     : json(nullptr);
  if (v.op >= 0) j["op"] = v.op;
  if (v.tensor >= 0) j["tensor"] = v.tensor;
  if (v.working_set) {
    const WorkingSet& ws = *v.working_set;
    json terms = json::array();
    for (const auto& t : ws.terms)
      terms.push_back({{"part", std::string(1, t.part)},
                       {"tensor", t.tensor},
                       {"rows", {t.region.r0, t.region.r1}},
                       {"cols", {t.region.c0, t.region.c1}},
                       {"elements", t.elements}});
    j["working_set"] = {{"total", ws.total()}, {"capacity", v.capacity}, {"retained_in", ws.retained_in},
                        {"slices", ws.slices}, {"outputs", ws.outputs},  {"accumulators", ws.accumulators},
                        {"terms", terms}};
  }
  return j;
}

std::string describe_error(const RuleViolation& v) {
  std::string text = v.describe();
  if (v.working_set)
    for (const auto& t : v.working_set->terms)
      text += "\n    " + std::string(1, t.part) + "  " + slice_text(t.tensor, t.region) + "  " +
              std::to_string(t.elements) + " elements";
  return text;
}

json report_to_json(const ScheduleReport& r, const LowerBound& lb, MatmulCompute model) {
  json subgraphs = json::array();
  for (const auto& sg : r.subgraphs)
    subgraphs.push_back({{"index", sg.index},
                         {"ops", sg.ops},
                         {"granularity", {sg.granularity.w, sg.granularity.h, sg.granularity.k}},
                         {"grid", {sg.grid_rows, sg.grid_cols}},
                         {"k_steps", sg.k_steps},
                         {"steps", sg.steps},
                         {"latency", sg.latency},
                         {"reported_latency", sg.reported ? json(*sg.reported) : json(nullptr)},
                         {"compute_time", sg.compute_time},
                         {"memory_time", sg.memory_time},
                         {"compute_bound_latency", sg.compute_bound_latency},
                         {"peak_working_set", sg.peak_working_set}});
  json errors = json::array(), warnings = json::array();
  if (r.error) errors.push_back(violation_to_json(*r.error));
  for (const auto& w : r.warnings) warnings.push_back(violation_to_json(w));
  return {{"valid", r.valid},
          {"matmul_compute", to_string(model)},
          {"total_latency", r.valid ? json(r.total_latency) : json(nullptr)},
          {"lower_bound",
           {{"bound", lb.bound(model)},
            {"compute_full_k", lb.compute_full_k},
            {"compute_native_k", lb.compute_native_k},
            {"io", lb.io}}},
          {"certified_bound", lb.certified > 0
                                  ? json{{"bound", lb.certified},
                                         {"proven_gap_percent",
                                          r.valid ? json(proven_gap_percent(r.total_latency, lb.certified))
                                                  : json(nullptr)}}
                                  : json(nullptr)},
          {"fast_memory_capacity", r.capacity},
          {"errors", errors},
          {"warnings", warnings},
          {"subgraphs", subgraphs}};
}

void print_report(std::ostream& out, const ScheduleReport& r, const LowerBound& lb, MatmulCompute model) {
  out << std::left << std::setw(5) << "sg" << std::setw(18) << "ops" << std::setw(12) << "grid"
      << std::setw(8) << "steps" << std::right << std::setw(20) << "compute" << std::setw(20) << "memory"
      << std::setw(20) << "latency" << std::setw(20) << "reported" << std::setw(14) << "diff" << std::setw(26)
      << "peak WS / cap"
      << "\n";
  for (const auto& sg : r.subgraphs) {
    std::string ops;
    for (int o : sg.ops) ops += (ops.empty() ? "" : ",") + std::to_string(o);
    if (ops.size() > 16) ops = ops.substr(0, 13) + "...";
    const std::string grid = std::to_string(sg.grid_rows) + "x" + std::to_string(sg.grid_cols) + "x" +
                             std::to_string(sg.k_steps);
    // Display figures (thousands separators, two decimals unless whole); the JSON report and the
    // "subgraph i:" / "total:" lines below keep full round-trip precision (M28).
    out << std::left << std::setw(5) << sg.index << std::setw(18) << ops
        << std::setw(std::max<size_t>(12, grid.size() + 1)) << grid << std::setw(8)
        << format_display(static_cast<double>(sg.steps)) << std::right << std::setw(20)
        << format_display(sg.compute_time) << std::setw(20) << format_display(sg.memory_time) << std::setw(20)
        << format_display(sg.latency) << std::setw(20) << (sg.reported ? format_display(*sg.reported) : "-")
        << std::setw(14) << (sg.reported ? format_display(*sg.reported - sg.latency) : "-") << std::setw(26)
        << (format_display(static_cast<double>(sg.peak_working_set)) + " / " + format_display(r.capacity))
        << "\n";
  }
  if (!r.valid) return;
  for (const auto& sg : r.subgraphs) out << "subgraph " << sg.index << ": " << format_number(sg.latency) << "\n";
  out << "lower bound: " << format_number(lb.bound(model)) << " (" << to_string(model) << ")\n";
  if (lb.certified > 0)
    out << "certified bound: " << format_certified(lb.certified) << " (within "
        << format_display(proven_gap_percent(r.total_latency, lb.certified)) << " % of optimal; bound --json "
        << "gives the certificate)\n";
  out << "total: " << format_number(r.total_latency) << "\n";
}

void print_step(std::ostream& out, int subgraph, const StepDetail& s, double capacity) {
  out << "sg " << subgraph << " step " << s.ref.position << " (tile " << s.ref.tile << ", k-step " << s.ref.k_step
      << "):";
  for (const auto& u : s.slices) out << " " << slice_text(u.tensor, u.region) << (u.loaded ? " load" : " reuse");
  for (const auto& c : s.computes) out << " | op" << c.op << " " << format_number(c.cost);
  for (const auto& st : s.stores) out << " | store " << slice_text(st.tensor, st.region);
  out << " | compute " << format_number(s.compute) << " memory " << format_number(s.memory_time) << " latency "
      << format_number(s.latency) << " | WS " << s.working_set.total() << "/" << format_number(capacity) << " (A "
      << s.working_set.retained_in << " + B " << s.working_set.slices << " + C " << s.working_set.outputs << " + D "
      << s.working_set.accumulators << ")\n";
}

}  // namespace mlsys
