// The certified bound's certificate as text (a table of terms) and as JSON (`bound`, mlsys_sim.bound).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "verifier/bound.hpp"

namespace mlsys {

nlohmann::json certified_bound_to_json(const CertifiedBound& bound);
nlohmann::json cover_bound_to_json(const CoverBound& cover);
nlohmann::json inner_k_step_bound_to_json(const InnerKStepBound& bound);
void print_inner_k_step_bound(std::ostream& out, const InnerKStepBound& bound);
nlohmann::json deep_weight_bound_to_json(const DeepWeightBound& bound);
void print_deep_weight_bound(std::ostream& out, const DeepWeightBound& bound);
nlohmann::json head_discount_bound_to_json(const HeadDiscountBound& bound);
// Theorem 13's bound, or with `beside_runs` Theorem 21's (the same charges on the tail-run bound).
void print_head_discount_bound(std::ostream& out, const HeadDiscountBound& bound, bool beside_runs);
nlohmann::json tail_run_bound_to_json(const TailRunBound& bound);
void print_tail_run_bound(std::ostream& out, const TailRunBound& bound);
nlohmann::json exposed_epilogue_bound_to_json(const ExposedEpilogueBound& bound);
void print_exposed_epilogue_bound(std::ostream& out, const ExposedEpilogueBound& bound);
void print_certified_bound(std::ostream& out, const CertifiedBound& bound);

}  // namespace mlsys
