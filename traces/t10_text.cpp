#include "traces/t10_text.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/number_format.hpp"

namespace mlsys::t10 {

void print_breakdown(std::ostream& out, const Problem& p, const Plan& plan, const Evaluation& e) {
  out << plan_to_json(plan).dump() << "\n";
  if (e.cost) {
    const Cost& c = *e.cost;
    out << "total " << format_number(c.total) << " cycles = comp " << format_number(c.comp) << " (compute "
        << format_number(c.compute) << ", load " << format_number(c.load) << ", store "
        << format_number(c.store) << ") + shift " << c.shift << " + broadcast " << c.bcast << " + reduce "
        << c.reduce << "\n";
  }
  out << "cores " << e.derived.cores << " of " << p.chip.cores << ", SRAM peak " << e.derived.hot_bytes
      << " B per core (capacity " << p.chip.sram_bytes_per_core << ")";
  if (e.score) out << ", benchmark score " << format_number(*e.score);
  out << "\n";
}

void print_cores_result(std::ostream& out, const CoresResult& r, CoreTiming timing) {
  out << "all cores: " << r.cores << " (" << r.empty_cores << " with an empty block), " << r.steps
      << " compute steps, " << r.transfers << " transfers, " << r.bytes_moved << " bytes moved; SRAM peak "
      << r.peak_sram_bytes << " B on core (" << r.peak_sram_core[0] << ", " << r.peak_sram_core[1] << ", "
      << r.peak_sram_core[2] << ") (rule book hot " << r.rule_book_hot_bytes << " B)\n";
  out << "grader timing: total " << format_number(r.total) << " cycles\n";
  if (timing == CoreTiming::Exchange)
    out << "exchange timing: total " << format_number(r.exchange_total) << " cycles (compute "
        << format_number(r.exchange_compute) << ", exchange " << format_number(r.exchange_exchange)
        << ", sync " << format_number(r.exchange_sync) << "), "
        << format_display(100 * (r.exchange_total / r.total - 1)) << " % against the grader\n";
  if (timing == CoreTiming::Calibrated) {
    out << "calibrated timing: total " << format_number(r.makespan) << " cycles (compute "
        << format_number(r.calibrated_compute) << ", shifts and syncs "
        << format_number(r.calibrated_sync_shift) << ", shuffle after the operator "
        << format_number(r.calibrated_shuffle) << "); warm-up from the cold "
        << "layout " << format_number(r.warm_up) << " (not added)\n";
    out << "calibrated memory per core: hot " << r.calibrated_hot_bytes << " B, cold "
        << r.calibrated_cold_bytes << " B (engine's real peak " << r.peak_sram_bytes << " B)\n";
    if (!r.links.empty()) {
      const auto busiest =
          std::max_element(r.links.begin(), r.links.end(),
                           [](const LinkUse& a, const LinkUse& b) { return a.busy_cycles < b.busy_cycles; });
      out << "links: " << r.links.size() << " carried crossing bytes; the busiest, link " << busiest->link
          << ", " << format_number(busiest->bytes) << " B in " << busiest->transfers << " transfers, busy "
          << format_number(busiest->busy_cycles) << " cycles (SystemC clock "
          << format_number(r.simulated_cycles) << ")\n";
    }
    for (const std::string& why : r.calibrated_rejections)
      out << "note: outside the calibrated model's search space: " << why << "\n";
  }
  if (r.functional_checked && !r.violation)
    out << (r.functional_method == "freivalds" ? "functional: C·r = A·(B·r) for a random r modulo 2^61 - 1 "
                                                 "(Freivalds' check: a wrong C passes "
                                                 "with probability at most 2^-61)\n"
                                               : "functional: C = A·B exactly\n");
}

using nlohmann::json;

void print_grader_search(std::ostream& out, const Problem& problem, const SearchResult& r, Profile profile,
                         bool json_out) {
  if (json_out) {
    json list = json::array();
    for (const RankedPlan& rp : r.top)
      list.push_back({{"plan", plan_to_json(rp.plan)}, {"total_cycles", rp.total}});
    json j = evaluation_to_json(problem, r.top[0].plan, evaluate(problem, r.top[0].plan, profile), profile);
    j["ties"] = r.ties;
    j["top"] = list;
    j["evaluated"] = r.evaluated;
    out << j.dump(2) << "\n";
    return;
  }
  for (size_t i = 0; i < r.top.size(); ++i) {
    if (r.top.size() > 1) out << "#" << i + 1 << " ";
    print_breakdown(out, problem, r.top[i].plan, evaluate(problem, r.top[i].plan, profile));
  }
  out << "plans with the best total: " << r.ties << "\n";
}

void print_exchange_search(std::ostream& out, const ExchangeSearchResult& r, bool json_out) {
  if (json_out) {
    json list = json::array();
    for (const ExchangeRankedPlan& rp : r.top)
      list.push_back({{"plan", plan_to_json(rp.plan)},
                      {"exchange_cycles", rp.exchange_total},
                      {"grader_cycles", rp.grader_total}});
    out << json{{"top", list}, {"proven", r.proven}, {"simulated", r.simulated}, {"accepted", r.accepted}}
               .dump(2)
        << "\n";
    return;
  }
  for (const ExchangeRankedPlan& rp : r.top)
    out << plan_to_json(rp.plan).dump() << "  exchange " << format_number(rp.exchange_total)
        << " cycles, grader " << format_number(rp.grader_total) << "\n";
}

void print_calibrated_search(std::ostream& out, const CalibratedSearchResult& r,
                             const std::vector<CoresResult>& on_cores, bool json_out) {
  json list = json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const CalibratedRankedPlan& rp = r.top[i];
    const CoresResult& cores = on_cores.at(i);
    list.push_back({{"plan", plan_to_json(rp.plan)},
                    {"calibrated_cycles", rp.total},
                    {"engine_makespan", cores.makespan},
                    {"warm_up", cores.warm_up},
                    {"hot_bytes", rp.hot},
                    {"cold_bytes", rp.cold},
                    {"consistent", !cores.violation.has_value()}});
    if (!json_out)
      out << plan_to_json(rp.plan).dump() << "  calibrated " << format_number(rp.total) << " cycles (engine "
          << format_number(cores.makespan) << "), warm-up " << format_number(cores.warm_up) << ", hot "
          << rp.hot << " B, cold " << rp.cold << " B\n";
  }
  if (json_out)
    out << json{{"top", list}, {"proven", true}, {"evaluated", r.evaluated}, {"accepted", r.accepted}}.dump(2)
        << "\n";
}

}  // namespace mlsys::t10
