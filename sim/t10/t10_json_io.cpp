// T10's JSON reading and writing, in one place: the problem and plan files (T1-T5), the evaluation report,
// and the all-cores engine's result. Declared beside the types they read and write (t10_model.hpp,
// t10_cores.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"
#include "sim/violation.hpp"

namespace mlsys::t10 {
namespace {

using nlohmann::json;

constexpr int64_t kMaxFactor = int64_t{1} << 31;  // keeps every product of factors inside 64 bits
std::string str(const json& j) {
  return j.dump();
}

// "Integer" = JSON number without fractional part (T5: 2.0 counts as 2).
std::optional<int64_t> as_integer(const json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_unsigned())
    return j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? std::nullopt
                                                                : std::optional<int64_t>(j.get<int64_t>());
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<int64_t>(v);
  }
  return std::nullopt;
}

}  // namespace

Chip parse_chip(const json& c, const std::string& where, const std::string& rule, const std::string& file,
                const Chip& base) {
  auto fault = [&](const std::string& field, const std::string& what) {
    return InputError(file, "", rule, field + ": " + what);
  };
  Chip chip = base;
  auto at = [&](const std::string& name) { return where.empty() ? name : where + "." + name; };
  if (!c.is_object()) throw fault(where.empty() ? "chip" : where, "must be an object, got " + str(c));
  if (c.contains("name") && c["name"].is_string()) chip.name = c["name"];
  for (auto [name, out, most] : {std::tuple{"cores", &chip.cores, kMaxFactor},
                                 {"sram_bytes_per_core", &chip.sram_bytes_per_core, kMaxFactor},
                                 {"chips", &chip.chips, kMaxFactor},
                                 {"cores_per_chip", &chip.cores_per_chip, kMaxFactor}}) {
    if (!c.contains(name)) continue;
    auto v = as_integer(c[name]);
    if (!v || *v < 1 || *v > most)
      throw fault(at(name), "must be an integer from 1 to " + std::to_string(most) + ", got " + str(c[name]));
    *out = *v;
  }
  for (auto [name, out] : {std::pair{"flops_per_cycle", &chip.flops_per_cycle},
                           {"local_bytes_per_cycle", &chip.local_bytes_per_cycle},
                           {"noc_elems_per_cycle", &chip.noc_elems_per_cycle},
                           {"exchange_bytes_per_cycle", &chip.exchange_bytes_per_cycle},
                           {"sync_cycles", &chip.sync_cycles},
                           {"amp_macs_per_cycle", &chip.amp_macs_per_cycle},
                           {"clock_hz", &chip.clock_hz}}) {
    if (!c.contains(name)) continue;
    if (!c[name].is_number() || !(c[name].get<double>() > 0) || !std::isfinite(c[name].get<double>()))
      throw fault(at(name), "must be a positive number, got " + str(c[name]));
    *out = c[name].get<double>();
  }
  for (auto [name, out, low, high] :
       {std::tuple{"exchange_latency_cycles", &chip.exchange_latency_cycles, 0.0, 1e12},
        {"link_gbps", &chip.link_gbps, 0.0, 1e9},
        {"link_latency_ns", &chip.link_latency_ns, 0.0, 1e9},
        {"inter_chip_overhead", &chip.inter_chip_overhead, 1.0, 100.0}}) {
    if (!c.contains(name)) continue;
    const json& v = c[name];
    if (!v.is_number() || !(v.get<double>() >= low) || !(v.get<double>() <= high))
      throw fault(at(name), "must be a number from " + str(low) + " to " + str(high) + ", got " + str(v));
    *out = v.get<double>();
  }
  if (c.contains("exchange_multicast")) {
    if (!c["exchange_multicast"].is_boolean())
      throw fault(at("exchange_multicast"), "must be true or false, got " + str(c["exchange_multicast"]));
    chip.exchange_multicast = c["exchange_multicast"].get<bool>();
  }
  if (c.contains("link_bytes_per_s") &&
      (!c["link_bytes_per_s"].is_number() || !(c["link_bytes_per_s"].get<double>() > 0)))
    throw fault(at("link_bytes_per_s"), "must be a positive number, got " + str(c["link_bytes_per_s"]));
  if (c.contains("systolic")) {
    const json& s = c["systolic"];
    std::optional<int64_t> a, b;
    if (s.is_array() && s.size() == 2) a = as_integer(s[0]), b = as_integer(s[1]);
    if (!a || !b || *a < 1 || *a != *b)
      throw fault(at("systolic"), "must be two equal positive integers, got " + str(s));
    chip.systolic = *a;
  }
  if (c.contains("noc_topology")) {
    if (c["noc_topology"] != "mesh")
      throw fault(at("noc_topology"), "must be \"mesh\", got " + str(c["noc_topology"]));
  }
  if (c.contains("topology")) {
    if (!c["topology"].is_string() || !is_chip_topology(c["topology"].get<std::string>()))
      throw fault(at("topology"), "must be \"ring\" or \"all-to-all\", got " + str(c["topology"]));
    chip.topology = c["topology"].get<std::string>();
  }
  // The cores and the chips they lie on: either may follow from the other.
  if (!c.contains("chips") && (c.contains("cores") || c.contains("cores_per_chip")))
    chip.chips = std::max<int64_t>(1, (chip.cores + chip.cores_per_chip - 1) / chip.cores_per_chip);
  else if (c.contains("chips") && !c.contains("cores"))
    chip.cores = chip.chips * chip.cores_per_chip;
  if (chip.cores > chip.chips * chip.cores_per_chip)
    throw fault(at("cores"), std::to_string(chip.cores) + " cores do not fit " + std::to_string(chip.chips) +
                                 " chips of " + std::to_string(chip.cores_per_chip) + " (" + at("chips") +
                                 ", " + at("cores_per_chip") + ")");
  if (chip.linked() && chip.chips > kMaxChips)  // the link model keeps a load per pair of chips
    throw fault(at("chips"), "at most " + std::to_string(kMaxChips) + " chips joined by links, got " +
                                 std::to_string(chip.chips));
  return chip;
}

Problem parse_problem(const json& doc, const std::string& file) {
  auto fault = [&](const std::string& field, const std::string& what) {
    return InputError(file, "", "E_PROBLEM", field + ": " + what);
  };
  if (!doc.is_object()) throw fault("problem", "must be a JSON object, got " + str(doc));
  Problem p;
  if (!doc.contains("op") || doc["op"] != "matmul")
    throw fault("op",
                "must be \"matmul\", got " + (doc.contains("op") ? str(doc["op"]) : std::string("nothing")));
  for (auto [name, out] : {std::pair{"m", &p.m}, {"k", &p.k}, {"n", &p.n}, {"dtype_bytes", &p.dtype_bytes}}) {
    if (!doc.contains(name)) {
      if (std::string(name) == "dtype_bytes") continue;
      throw fault(name, "required");
    }
    auto v = as_integer(doc[name]);
    if (!v || *v < 1 || *v > kMaxFactor)
      throw fault(name, "must be a positive integer, got " + str(doc[name]));
    *out = *v;
  }
  if (doc.contains("chip")) p.chip = parse_chip(doc["chip"], "chip", "E_PROBLEM", file);
  if (doc.contains("reference_cycles")) {
    if (!doc["reference_cycles"].is_number() || !(doc["reference_cycles"].get<double>() > 0))
      throw fault("reference_cycles", "must be a positive number, got " + str(doc["reference_cycles"]));
    p.reference_cycles = doc["reference_cycles"].get<double>();
  }
  if (doc.contains("name") && doc["name"].is_string()) p.name = doc["name"];
  return p;
}

Plan parse_plan(const json& input, const std::string& file) {
  auto fault = [&](const std::string& field, const std::string& what) {
    return InputError(file, "", "E_FORMAT", field + ": " + what);
  };
  const json& doc = input.is_object() && input.contains("config") ? input["config"] : input;
  if (!doc.is_object()) throw fault("plan", "must be a JSON object, got " + str(doc));
  Plan plan;
  if (!doc.contains("F_op") || !doc["F_op"].is_array() || doc["F_op"].size() != 3)
    throw fault("F_op", "must be an array of exactly 3 integers, got " +
                            (doc.contains("F_op") ? str(doc["F_op"]) : "nothing"));
  for (int i = 0; i < 3; ++i) {
    auto v = as_integer(doc["F_op"][i]);
    if (!v) throw fault("F_op", "must be an array of exactly 3 integers, got " + str(doc["F_op"]));
    if (*v < 1 || *v > kMaxFactor)
      throw fault("F_op[" + std::to_string(i) + "]", "must be in [1, 2^31], got " + std::to_string(*v));
    plan.f_op[i] = *v;
  }
  for (auto [name, out] : {std::pair{"f_t_A_m", &plan.am},
                           {"f_t_A_k", &plan.ak},
                           {"f_t_B_k", &plan.bk},
                           {"f_t_B_n", &plan.bn},
                           {"f_t_C_m", &plan.cm},
                           {"f_t_C_n", &plan.cn}}) {
    if (!doc.contains(name)) throw fault(name, "missing");
    auto v = as_integer(doc[name]);
    if (!v) throw fault(name, "must be an integer, got " + str(doc[name]));
    if (*v < 1 || *v > kMaxFactor) throw fault(name, "must be in [1, 2^31], got " + std::to_string(*v));
    *out = *v;
  }
  return plan;
}

json plan_to_json(const Plan& p) {
  return {{"F_op", p.f_op},  {"f_t_A_m", p.am}, {"f_t_A_k", p.ak}, {"f_t_B_k", p.bk},
          {"f_t_B_n", p.bn}, {"f_t_C_m", p.cm}, {"f_t_C_n", p.cn}};
}

json evaluation_to_json(const Problem& pr, const Plan& plan, const Evaluation& e, Profile profile) {
  const Derived& d = e.derived;
  json levels = json::array();
  for (size_t i = 0; i < d.levels.size(); ++i) {
    const auto& l = d.levels[i];
    levels.push_back({{"level", i},
                      {"dim", std::string(1, l.dim)},
                      {"g", l.g},
                      {"tensors", l.tensors},
                      {"size", l.size},
                      {"events", l.events},
                      {"hops", l.hops},
                      {"contention", i + 1}});
  }
  json violations = json::array();
  for (const auto& v : e.violations) violations.push_back({{"code", v.code}, {"message", v.message}});
  json j{{"valid", e.accepted},
         {"profile", profile == Profile::Strict ? "strict" : "engdesign"},
         {"plan", plan_to_json(plan)},
         {"total_cycles", e.cost ? json(e.cost->total) : json(nullptr)},
         {"sram_peak_bytes", d.hot_bytes},
         {"cold_bytes", d.cold_bytes},
         {"score", e.score ? json(*e.score) : json(nullptr)},
         {"errors", violations},
         {"derived",
          {{"cores", d.cores},
           {"spatial", d.spatial},
           {"steps_per_dim", d.steps_per_dim},
           {"steps", d.steps},
           {"sub_task", d.sub_task},
           {"elems", {{"C", d.elems[C]}, {"A", d.elems[A]}, {"B", d.elems[B]}}},
           {"misaligned_shift", d.misaligned},
           {"shift_levels", levels}}},
         {"problem", {{"m", pr.m}, {"k", pr.k}, {"n", pr.n}}}};
  if (e.cost)
    for (auto [key, value] : {std::pair{"compute", e.cost->compute},
                              {"load", e.cost->load},
                              {"store", e.cost->store},
                              {"comp", e.cost->comp}})
      j[key] = value;
  j["shift"] = e.cost ? json(e.cost->shift) : json(nullptr);
  j["broadcast"] = e.cost ? json(e.cost->bcast) : json(nullptr);
  j["reduce"] = e.cost ? json(e.cost->reduce) : json(nullptr);
  return j;
}

const char* to_string(CoreTiming timing) {
  return timing == CoreTiming::Grader ? "grader" : timing == CoreTiming::Exchange ? "exchange" : "calibrated";
}

std::optional<CoreTiming> core_timing_from(const std::string& name) {
  for (CoreTiming t : {CoreTiming::Grader, CoreTiming::Exchange, CoreTiming::Calibrated})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

nlohmann::json cores_result_to_json(const CoresResult& r, CoreTiming timing) {
  using nlohmann::json;
  json phases = json::array();
  for (const PhaseCost& p : r.phases)
    phases.push_back(
        {{"name", p.name}, {"cycles", p.cycles}, {"critical_core", p.critical_core}, {"bytes", p.bytes}});
  json j = {{"timing", to_string(timing)},
            {"cores", r.cores},
            {"empty_cores", r.empty_cores},
            {"compute_steps", r.steps},
            {"events_per_level", r.events_per_level},
            {"transfers", r.transfers},
            {"bytes_moved", r.bytes_moved},
            {"peak_sram_bytes", r.peak_sram_bytes},
            {"peak_sram_core", r.peak_sram_core},
            {"rule_book_hot_bytes", r.rule_book_hot_bytes},
            {"edge_idle_cycles", r.edge_idle_cycles},
            {"grader",
             {{"total", r.total},
              {"compute", r.compute},
              {"stall", r.stall},
              {"shift", r.shift},
              {"bcast", r.bcast},
              {"reduce", r.reduce}}},
            {"makespan", r.makespan},
            {"misaligned", r.misaligned},
            {"functional_checked", r.functional_checked},
            {"functional_method", r.functional_method},
            {"consistent", !r.violation.has_value()}};
  if (timing == CoreTiming::Exchange)
    j["exchange"] = {{"total", r.exchange_total},
                     {"compute", r.exchange_compute},
                     {"exchange", r.exchange_exchange},
                     {"sync", r.exchange_sync},
                     {"phases", phases}};
  if (timing == CoreTiming::Calibrated) j["warm_up"] = r.warm_up;  // beside the makespan, not in it
  if (timing == CoreTiming::Calibrated)
    j["calibrated"] = {{"total", r.makespan},
                       {"compute", r.calibrated_compute},
                       {"sync_shift", r.calibrated_sync_shift},
                       {"shuffle", r.calibrated_shuffle},
                       {"warm_up", r.warm_up},
                       {"hot_bytes_per_core", r.calibrated_hot_bytes},
                       {"cold_bytes_per_core", r.calibrated_cold_bytes},
                       {"model_accepts", r.calibrated_rejections.empty()},
                       {"model_rejects", r.calibrated_rejections},
                       {"phases", phases}};
  if (!r.links.empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const LinkUse& use : r.links)
      links.push_back({{"link", use.link},
                       {"bytes", use.bytes},
                       {"busy_cycles", use.busy_cycles},
                       {"transfers", use.transfers}});
    j["links"] = std::move(links);  // what each link module carried (linked chips)
  }
  if (r.violation)
    j["violation"] = {{"step", r.violation->step},
                      {"core", r.violation->core},
                      {"tensor", std::string(1, r.violation->tensor)},
                      {"message", r.violation->message}};
  return j;
}

}  // namespace mlsys::t10
