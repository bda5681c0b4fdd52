// T10's human-readable output: a plan's cycle breakdown under the grader's rules, and what the all-cores
// engine found under each timing.
#pragma once

#include <ostream>

#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"
#include "solver/t10_exchange_search.hpp"
#include "solver/t10_search.hpp"

namespace mlsys::t10 {

void print_breakdown(std::ostream& out, const Problem& problem, const Plan& plan,
                     const Evaluation& evaluation);
void print_cores_result(std::ostream& out, const CoresResult& result, CoreTiming timing);

// The best plans of `t10 solve`, as text or as one JSON document, for each timing.
void print_grader_search(std::ostream& out, const Problem& problem, const SearchResult& result,
                         Profile profile, bool json_out);
void print_exchange_search(std::ostream& out, const ExchangeSearchResult& result, bool json_out);
// `on_cores`: each best plan simulated on every core (its makespan is the model's total, checked).
void print_calibrated_search(std::ostream& out, const CalibratedSearchResult& result,
                             const std::vector<CoresResult>& on_cores, bool json_out);

}  // namespace mlsys::t10
