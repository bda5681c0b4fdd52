#include "traces/bound_report.hpp"

#include <iomanip>

#include "sim/number_format.hpp"

namespace mlsys {

nlohmann::json certified_bound_to_json(const CertifiedBound& b) {
  nlohmann::json terms = nlohmann::json::array();
  for (const BoundTerm& t : b.terms)
    terms.push_back({{"subject", t.subject},
                     {"rule", t.rule},
                     {"compute", t.compute},
                     {"traffic", t.traffic},
                     {"reason", t.reason}});
  return {{"bound", b.bound},
          {"lambda", b.lambda},
          {"compute", b.compute},
          {"traffic", b.traffic},
          {"rule_book_bound", b.rule_book},
          {"terms", terms}};
}

void print_certified_bound(std::ostream& out, const CertifiedBound& b) {
  out << "certified bound: " << format_number(b.bound) << "\n"
      << "  = " << format_number(b.lambda) << " x compute " << format_display(b.compute) << " + "
      << format_number(1 - b.lambda) << " x memory " << format_display(b.traffic)
      << " (every step costs max(compute, memory) >= lambda compute + (1 - lambda) memory)\n"
      << "rule book's bound (section 8): " << format_number(b.rule_book) << "\n"
      << std::left << std::setw(12) << "term" << std::setw(18) << "rules" << std::right << std::setw(18)
      << "compute" << std::setw(18) << "memory"
      << "  why\n";
  for (const BoundTerm& t : b.terms)
    out << std::left << std::setw(12) << t.subject << std::setw(18) << t.rule << std::right << std::setw(18)
        << format_display(t.compute) << std::setw(18) << format_display(t.traffic) << "  " << t.reason
        << "\n";
}

}  // namespace mlsys
