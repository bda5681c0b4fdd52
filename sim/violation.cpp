#include "sim/violation.hpp"

#include <sstream>
#include <stdexcept>

#include "sim/problem.hpp"

namespace mlsys {

const char* to_string(MatmulCompute m) { return m == MatmulCompute::FullK ? "full-k" : "native-k"; }

ModelOptions parse_model_options(const std::string& matmul_compute, bool allow_supernative_k) {
  ModelOptions o;
  if (matmul_compute == "native-k")
    o.matmul_compute = MatmulCompute::NativeK;
  else if (matmul_compute != "full-k")
    throw std::invalid_argument("expected \"full-k\" or \"native-k\", got \"" + matmul_compute + "\"");
  o.allow_supernative_k = allow_supernative_k;
  return o;
}

std::string to_string(const Region& r) {
  std::ostringstream out;
  out << "rows [" << r.r0 << "," << r.r1 << ") x cols [" << r.c0 << "," << r.c1 << ")";
  return out.str();
}

std::string RuleViolation::sentence() const {
  if (!message.empty() || !working_set) return message;
  const WorkingSet& ws = *working_set;
  std::ostringstream out;
  out << "out of fast memory: working set " << ws.total() << " > capacity " << capacity << " (A retained-in "
      << ws.retained_in << " + B slices " << ws.slices << " + C outputs " << ws.outputs << " + D accumulators "
      << ws.accumulators << ")";
  return out.str();
}

std::string RuleViolation::describe() const {
  std::ostringstream out;
  out << "[" << rule << "] ";
  if (subgraph >= 0) {
    out << "subgraph " << subgraph;
    if (step)
      out << ", step " << step->position << " (tile " << step->tile << ", k-step " << step->k_step << ")";
    out << ": ";
  }
  out << sentence();
  return out.str();
}

static std::string compose(const std::string& file, const std::string& field, const std::string& rule,
                           const std::string& message) {
  std::string text = file.empty() ? std::string() : file + ": ";
  if (!rule.empty()) text += "[" + rule + "] ";
  if (!field.empty()) text += field + ": ";
  return text + message;
}

InputError::InputError(std::string file, std::string field, std::string rule, const std::string& message)
    : std::runtime_error(compose(file, field, rule, message)),
      file_(std::move(file)),
      field_(std::move(field)),
      rule_(std::move(rule)) {}

}  // namespace mlsys
