#include "traces/t10_text.hpp"

#include "sim/number_format.hpp"

namespace mlsys::t10 {

void print_breakdown(std::ostream& out, const Problem& p, const Plan& plan, const Evaluation& e) {
  out << plan_to_json(plan).dump() << "\n";
  if (e.cost) {
    const Cost& c = *e.cost;
    out << "total " << format_number(c.total) << " cycles = comp " << format_number(c.comp) << " (compute "
        << format_number(c.compute) << ", load " << format_number(c.load) << ", store " << format_number(c.store)
        << ") + shift " << c.shift << " + broadcast " << c.bcast << " + reduce " << c.reduce << "\n";
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
        << format_number(r.exchange_compute) << ", exchange " << format_number(r.exchange_exchange) << ", sync "
        << format_number(r.exchange_sync) << "), " << format_display(100 * (r.exchange_total / r.total - 1))
        << " % against the grader\n";
  if (timing == CoreTiming::Calibrated) {
    out << "calibrated timing: total " << format_number(r.makespan) << " cycles (compute "
        << format_number(r.calibrated_compute) << ", shifts and syncs " << format_number(r.calibrated_sync_shift)
        << ", shuffle after the operator " << format_number(r.calibrated_shuffle) << "); warm-up from the cold "
        << "layout " << format_number(r.warm_up) << " (not added)\n";
    out << "calibrated memory per core: hot " << r.calibrated_hot_bytes << " B, cold " << r.calibrated_cold_bytes
        << " B (engine's real peak " << r.peak_sram_bytes << " B)\n";
    for (const std::string& why : r.calibrated_rejections)
      out << "note: outside the calibrated model's search space: " << why << "\n";
  }
  if (r.functional_checked && !r.violation)
    out << (r.functional_method == "freivalds"
                ? "functional: C·r = A·(B·r) for a random r modulo 2^61 - 1 (Freivalds' check: a wrong C passes "
                  "with probability at most 2^-61)\n"
                : "functional: C = A·B exactly\n");
}

}  // namespace mlsys::t10
