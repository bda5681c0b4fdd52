#include "traces/bound_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <vector>

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
  nlohmann::json out = {
      {"bound", b.bound},     {"lambda_bound", b.lambda_bound}, {"lambda", b.lambda}, {"compute", b.compute},
      {"traffic", b.traffic}, {"rule_book_bound", b.rule_book}, {"terms", terms}};
  if (b.cover) out["cover"] = cover_bound_to_json(*b.cover);
  out["inner_k_steps"] = inner_k_step_bound_to_json(b.inner_k_steps);
  out["deep_weights"] = deep_weight_bound_to_json(b.deep_weights);
  out["head_discounts"] = head_discount_bound_to_json(b.head_discounts);
  out["tail_runs"] = tail_run_bound_to_json(b.tail_runs);
  out["head_loads_beside_runs"] = head_discount_bound_to_json(b.head_loads_beside_runs);
  out["exposed_epilogues"] = exposed_epilogue_bound_to_json(b.exposed_epilogues);
  return out;
}

nlohmann::json exposed_epilogue_bound_to_json(const ExposedEpilogueBound& b) {
  // A case no schedule can reach (no MatMul can head a link into the producer) is null: JSON has no infinity.
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json epilogues = nlohmann::json::array();
  for (const ExposedEpilogueBound::Epilogue& e : b.epilogues)
    epilogues.push_back({{"op", e.op},
                         {"producer", e.producer},
                         {"alone", e.alone},
                         {"in_chain", finite(e.in_chain)},
                         {"epilogue", e.epilogue},
                         {"beside_head", finite(e.beside_head)},
                         {"cheapest_head", e.cheapest_head},
                         {"exposed", e.exposed}});
  return {{"applies", b.applies},          {"status", b.status},
          {"bound", b.bound},              {"graph_traffic", b.graph_traffic},
          {"pointwise_io", b.pointwise_io}, {"epilogues", epilogues}};
}

nlohmann::json tail_run_bound_to_json(const TailRunBound& b) {
  // A head no subgraph of three or more MatMuls can stream has no shared price: null, as JSON has no
  // infinity.
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json heads = nlohmann::json::array(), tails = nlohmann::json::array();
  for (const TailRunBound::Head& h : b.heads)
    heads.push_back({{"op", h.op},
                     {"discount", h.discount},
                     {"shared_price", finite(h.shared_price)},
                     {"tails", h.tails},
                     {"rerun", h.rerun},
                     {"charge", h.charge}});
  for (const TailRunBound::Tail& t : b.tails)
    tails.push_back({{"op", t.op}, {"heads", t.heads}, {"passed", t.passed}, {"rerun", t.rerun}});
  nlohmann::json joins = nlohmann::json::array();
  for (const TailRunBound::Join& j : b.joins)
    joins.push_back({{"op", j.op}, {"heads", j.heads}, {"charge", j.charge}});
  nlohmann::json paths = nlohmann::json::array();
  for (const TailRunBound::SharedPath& s : b.shared_paths)
    paths.push_back({{"op", s.op}, {"readers", s.readers}, {"rerun", s.rerun}, {"charge", s.charge}});
  nlohmann::json remade = nlohmann::json::array();
  for (const TailRunBound::RemadeOp& r : b.remade_ops)
    remade.push_back({{"op", r.op}, {"readers", r.readers}, {"charge", r.charge}});
  nlohmann::json waiting = nlohmann::json::array();
  for (const TailRunBound::WaitingOp& w : b.waiting_ops)
    waiting.push_back({{"op", w.op},
                       {"reader", w.reader},
                       {"waiting", w.waiting},
                       {"above", w.above},
                       {"read_alone", w.read_alone},
                       {"never_kept", w.never_kept},
                       {"charge", w.charge}});
  return {{"applies", b.applies},
          {"status", b.status},
          {"bound", b.bound},
          {"compute_floor", b.compute_floor},
          {"join_charges", b.join_charges},
          {"joins", joins},
          {"first_runs", b.first_runs},
          {"heads", heads},
          {"tails", tails},
          {"shared_path_charges", b.shared_path_charges},
          {"shared_paths", paths},
          {"remade_charges", b.remade_charges},
          {"remade_ops", remade},
          {"waiting_charges", b.waiting_charges},
          {"waiting_ops", waiting}};
}

nlohmann::json head_discount_bound_to_json(const HeadDiscountBound& b) {
  nlohmann::json heads = nlohmann::json::array();
  for (const HeadDiscountBound::Head& h : b.heads)
    heads.push_back(
        {{"op", h.op},
         {"discount", h.discount},
         {"loads", h.loads},
         {"made_operand", h.made_operand < 0 ? nlohmann::json(nullptr) : nlohmann::json(h.made_operand)},
         {"made_loads", h.made_loads},
         {"remake", h.remake},
         {"tails", h.tails},
         {"pool", h.pool},
         {"pool_compute", h.pool_compute},
         {"runs_beside", h.runs_beside},
         {"charge", h.charge}});
  return {{"applies", b.applies},
          {"status", b.status},
          {"bound", b.bound},
          {"compute_floor", b.compute_floor},
          {"base", b.base},
          {"free_operands", b.free_operands},
          {"heads", heads}};
}

nlohmann::json deep_weight_bound_to_json(const DeepWeightBound& b) {
  nlohmann::json families = nlohmann::json::array();
  for (const DeepWeightBound::Family& f : b.families)
    families.push_back({{"depth", f.depth},
                        {"inputs", f.inputs},
                        {"loads", f.loads},
                        {"pool", f.pool},
                        {"pool_compute", f.pool_compute},
                        {"excess", f.excess()}});
  return {{"applies", b.applies},
          {"status", b.status},
          {"bound", b.bound},
          {"compute_floor", b.compute_floor},
          {"families", families}};
}

nlohmann::json inner_k_step_bound_to_json(const InnerKStepBound& b) {
  // Infinite cases (no MatMul to recompute, no possible link) are null: JSON has no infinity.
  auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json trees = nlohmann::json::array();
  for (const InnerKStepBound::Tree& t : b.trees)
    trees.push_back({{"matmuls", t.matmuls}, {"excess", t.excess}, {"reason", t.reason}});
  return {{"applies", b.applies},
          {"status", b.status},
          {"bound", b.bound},
          {"compute_floor", b.compute_floor},
          {"recompute_case", finite(b.recompute_case)},
          {"link_case", finite(b.link_case)},
          {"disturbed_loss", finite(b.disturbed_loss)},
          {"chain_case", b.chain_case},
          {"mixed_case", finite(b.mixed_case)},
          {"trees", trees}};
}

nlohmann::json cover_bound_to_json(const CoverBound& c) {
  nlohmann::json binding = nlohmann::json::array();
  for (const CoverBound::Binding& s : c.binding) {
    nlohmann::json entry = {{"ops", s.ops},
                            {"charged", s.charged},
                            {"retained_in", s.retained_in},
                            {"retained_out", s.retained_out},
                            {"floor", s.floor.value},
                            {"exact", s.exact}};
    if (s.exact)
      entry.update({{"compute", s.floor.compute},
                    {"memory", s.floor.memory},
                    {"granularity", {s.floor.granularity.w, s.floor.granularity.h, s.floor.granularity.k}}});
    binding.push_back(entry);
  }
  nlohmann::json store_terms = nlohmann::json::array();
  for (const CoverBound::StoreTerm& s : c.store_terms)
    store_terms.push_back({{"tensor", s.tensor}, {"reader", s.reader}, {"price", s.price}});
  nlohmann::json credits = nlohmann::json::object();
  for (size_t t = 0; t < c.tensor_credits.size(); ++t)
    if (c.tensor_credits[t] > 0) credits[std::to_string(t)] = c.tensor_credits[t];
  return {{"attempted", c.attempted},   {"complete", c.complete},   {"status", c.status},
          {"bound", c.bound},           {"op_prices", c.op_prices}, {"tensor_credits", credits},
          {"store_terms", store_terms}, {"sets", c.subgraphs},      {"priced_exactly", c.priced_exactly},
          {"never_fit", c.never_fit},   {"reentrant", c.reentrant}, {"lp_rounds", c.lp_rounds},
          {"seconds", c.seconds},       {"binding_sets", binding}};
}

void print_inner_k_step_bound(std::ostream& out, const InnerKStepBound& b) {
  out << "inner k-step bound (compute plus what deep reductions cannot hide, docs/bounds.md#theorem-11): ";
  if (!b.applies) {
    out << format_number(b.bound) << ", the compute floor (" << b.status << ")\n";
    return;
  }
  auto text = [](double v) { return std::isfinite(v) ? format_display(v) : std::string("none possible"); };
  out << format_number(b.bound) << "\n  = compute floor " << format_display(b.compute_floor)
      << " + the lesser of: no MatMul recomputed or linked " << format_display(b.chain_case)
      << " (the trees below), or some " << text(b.mixed_case) << " (each extra run of a MatMul at least "
      << text(b.recompute_case) << ", each link at least " << text(b.link_case) << ", against at most "
      << text(b.disturbed_loss) << " less in the trees per MatMul they disturb)\n";
  for (const InnerKStepBound::Tree& t : b.trees) {
    out << "    {";
    for (size_t i = 0; i < t.matmuls.size(); ++i) out << (i ? " " : "") << t.matmuls[i];
    out << "} " << format_display(t.excess) << ": " << t.reason << "\n";
  }
}

void print_deep_weight_bound(std::ostream& out, const DeepWeightBound& b) {
  out << "deep-weight bound (compute plus loads only deep MatMuls' subgraphs can hide, "
         "docs/bounds.md#theorem-12): ";
  if (!b.applies) {
    out << format_number(b.bound) << ", the compute floor (" << b.status << ")\n";
    return;
  }
  out << format_number(b.bound) << "\n  = compute floor " << format_display(b.compute_floor);
  for (const DeepWeightBound::Family& f : b.families) out << " + " << format_display(f.excess());
  out << "\n";
  for (const DeepWeightBound::Family& f : b.families)
    out << "    K = " << f.depth << ": " << f.inputs.size() << " graph inputs only such MatMuls read, loaded at "
        << "least once: " << format_display(f.loads) << "; the " << f.pool.size()
        << " ops that can share a subgraph with a reader compute at least " << format_display(f.pool_compute)
        << "; the rest, " << format_display(f.excess()) << ", no compute hides\n";
}

// Theorem 13 (on the compute floor) and Theorem 21 (the same charges on the tail-run bound, `beside_runs`).
void print_head_discount_bound(std::ostream& out, const HeadDiscountBound& b, bool beside_runs) {
  const char* base = beside_runs ? "tail-run bound" : "compute floor";
  out << (beside_runs ? "head loads beside tail runs (the tail-run bound plus what each deep MatMul's first head "
                        "subgraph cannot hide beyond the charges its ops may take, docs/bounds.md#theorem-21): "
                      : "head-discount bound (compute plus what each deep MatMul pays for its streamed price, "
                        "docs/bounds.md#theorem-13): ");
  if (!b.applies) {
    out << format_number(b.bound) << ", the " << base << " (" << b.status << ")\n";
    return;
  }
  double charges = 0;
  for (const HeadDiscountBound::Head& h : b.heads) charges += h.charge;
  out << format_number(b.bound) << "\n  = " << base << " " << format_display(b.base) << " + "
      << format_display(charges) << " over " << b.heads.size() << " heads - "
      << format_display(b.free_operands)
      << " (per made operand, the readers that may take it kept by the subgraph before)\n";
  std::vector<const HeadDiscountBound::Head*> largest;
  for (const HeadDiscountBound::Head& h : b.heads) largest.push_back(&h);
  const size_t shown = std::min<size_t>(largest.size(), 8);
  std::partial_sort(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(shown), largest.end(),
                    [](const auto* a, const auto* c) { return a->charge > c->charge; });
  for (size_t i = 0; i < shown; ++i) {
    const HeadDiscountBound::Head& h = *largest[i];
    out << "    op " << h.op << ": streamed price saves " << format_display(h.discount)
        << "; as a head its subgraph loads " << format_display(h.loads) << " of graph inputs";
    if (h.made_operand >= 0)
      out << " and tensor " << h.made_operand << " (" << format_display(h.made_loads)
          << ") unless the subgraph before makes it again (" << format_display(h.remake) << ")";
    out << ", beside " << h.pool.size() << " ops computing at least " << format_display(h.pool_compute);
    if (h.runs_beside > 0)
      out << " (of which " << format_display(h.runs_beside) << " are tail-run charges their runs may take)";
    out << "; charged " << format_display(h.charge) << "\n";
  }
  if (largest.size() > shown)
    out << "    ... and " << largest.size() - shown << " more heads (bound --json)\n";
}

void print_tail_run_bound(std::ostream& out, const TailRunBound& b) {
  out << "tail-run bound (compute plus the tail runs of heads streamed one at a time, the heads that join "
         "and the readers that each need a run of what they read, docs/bounds.md#theorem-14, #theorem-16, "
         "#theorem-18 to #theorem-20): ";
  if (!b.applies) {
    out << format_number(b.bound) << ", the compute floor (" << b.status << ")\n";
    return;
  }
  double charges = 0;
  for (const TailRunBound::Head& h : b.heads) charges += h.charge;
  out << format_number(b.bound) << "\n  = compute floor " << format_display(b.compute_floor) << " + "
      << format_display(b.join_charges) << " over " << b.joins.size() << " joins (all their heads but one "
      << "padded)";
  if (!b.heads.empty())
    out << " + " << format_display(charges) << " over " << b.heads.size() << " heads - "
        << format_display(b.first_runs) << " (per tail, the head its first run may serve)";
  if (!b.shared_paths.empty())
    out << " + " << format_display(b.shared_path_charges) << " over " << b.shared_paths.size()
        << " Pointwise ops whose readers each need a run of them in-chain";
  if (!b.remade_ops.empty())
    out << " + " << format_display(b.remade_charges) << " over " << b.remade_ops.size()
        << " Pointwise ops read by MatMuls only, made again per reader";
  if (!b.waiting_ops.empty()) {
    size_t above = 0;
    for (const TailRunBound::WaitingOp& w : b.waiting_ops) above += w.above.size();
    out << " + " << format_display(b.waiting_charges) << " over " << b.waiting_ops.size()
        << " Pointwise ops read by a MatMul and by an op that waits for it, made twice or padded (with " << above
        << " ops above them)";
  }
  out << "\n";
  std::vector<const TailRunBound::Tail*> largest;
  for (const TailRunBound::Tail& t : b.tails) largest.push_back(&t);
  const size_t shown = std::min<size_t>(largest.size(), 8);
  std::partial_sort(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(shown), largest.end(),
                    [](const auto* a, const auto* c) { return a->heads.size() > c->heads.size(); });
  for (size_t i = 0; i < shown; ++i) {
    const TailRunBound::Tail& t = *largest[i];
    out << "    tail op " << t.op << ": " << t.heads.size() << (t.heads.size() == 1 ? " head" : " heads")
        << " streamed only beside it alone; each more run of it";
    if (!t.passed.empty()) out << " and the " << t.passed.size() << " Pointwise ops every path passes";
    out << " computes at least " << format_display(t.rerun) << "\n";
  }
  if (largest.size() > shown)
    out << "    ... and " << largest.size() - shown << " more tails (bound --json)\n";
}

void print_exposed_epilogue_bound(std::ostream& out, const ExposedEpilogueBound& b) {
  out << "exposed-epilogue bound (graph traffic plus the compute of Pointwise ops between deep MatMuls that "
         "it cannot hide, docs/bounds.md#theorem-15): ";
  if (!b.applies) {
    out << format_number(b.bound) << ", the graph traffic (" << b.status << ")\n";
    return;
  }
  double exposed = 0;
  for (const ExposedEpilogueBound::Epilogue& e : b.epilogues) exposed += e.exposed;
  out << format_number(b.bound) << "\n  = graph inputs loaded and outputs stored once "
      << format_display(b.graph_traffic) << " + " << format_display(exposed) << " exposed over "
      << b.epilogues.size() << " Pointwise ops\n";
  const size_t shown = std::min<size_t>(b.epilogues.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    const ExposedEpilogueBound::Epilogue& e = b.epilogues[i];
    out << "    op " << e.op << " after op " << e.producer << ": alone " << format_display(e.alone)
        << ", as its producer's epilogue " << format_display(e.epilogue);
    if (std::isfinite(e.beside_head))
      out << ", beside head op " << e.cheapest_head << " " << format_display(e.beside_head);
    if (std::isfinite(e.in_chain)) out << ", in-chain " << format_display(e.in_chain);
    out << "; exposed " << format_display(e.exposed) << "\n";
  }
  if (b.epilogues.size() > shown)
    out << "    ... and " << b.epilogues.size() - shown << " more (bound --json)\n";
}

void print_certified_bound(std::ostream& out, const CertifiedBound& b) {
  out << "certified bound: " << format_certified(b.bound) << "\n"
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
  print_inner_k_step_bound(out, b.inner_k_steps);
  print_deep_weight_bound(out, b.deep_weights);
  print_head_discount_bound(out, b.head_discounts, false);
  print_tail_run_bound(out, b.tail_runs);
  print_head_discount_bound(out, b.head_loads_beside_runs, true);
  print_exposed_epilogue_bound(out, b.exposed_epilogues);
  if (!b.cover) return;
  const CoverBound& c = *b.cover;
  out << "cover bound (every subgraph pays its own roofline, docs/bounds.md#theorem-6): ";
  if (!c.attempted) {
    out << c.status << "\n";
    return;
  }
  out << format_number(c.bound) << " (" << c.status << "; " << c.subgraphs << " connected sets, "
      << c.priced_exactly << " priced by the step model, " << c.never_fit << " never fit; "
      << format_number(c.seconds) << " s)\n"
      << "  op prices (no set's prices add up to more than its floor; with the store terms below, their sum "
         "is "
         "the bound):";
  for (size_t o = 0; o < c.op_prices.size(); ++o)
    if (c.op_prices[o] > 0) out << " op " << o << " " << format_number(c.op_prices[o]) << ";";
  bool any_credit = false;
  for (size_t t = 0; t < c.tensor_credits.size(); ++t)
    if (c.tensor_credits[t] > 0) {
      if (!any_credit)
        out << "\n  tensor credits (earned by a set that keeps the tensor, paid by the next, which receives "
               "it):";
      any_credit = true;
      out << " tensor " << t << " " << format_number(c.tensor_credits[t]) << ";";
    }
  if (!c.store_terms.empty())
    out << "\n  store terms (Theorem 10: some subgraph writes the tensor to slow memory, or the reader's "
           "first "
           "subgraph does not load it; charged to the sets that may):";
  for (const CoverBound::StoreTerm& s : c.store_terms)
    out << " tensor " << s.tensor << " for op " << s.reader << " " << format_number(s.price) << ";";
  out << "\n  tightest sets (floor = max(compute, unavoidable memory) at the granularity shown):\n";
  for (const CoverBound::Binding& s : c.binding) {
    out << "    {";
    for (size_t i = 0; i < s.ops.size(); ++i) out << (i ? " " : "") << s.ops[i];
    out << "}";
    if (s.charged.size() < s.ops.size()) {
      out << " (first computation of {";
      for (size_t i = 0; i < s.charged.size(); ++i) out << (i ? " " : "") << s.charged[i];
      out << "} only: the others feed an op outside it that it reads again)";
    }
    auto list = [&](const char* what, const std::vector<int>& tensors) {
      if (tensors.empty()) return;
      out << " " << what << " {";
      for (size_t i = 0; i < tensors.size(); ++i) out << (i ? " " : "") << tensors[i];
      out << "}";
    };
    list("receiving", s.retained_in);
    list("keeping", s.retained_out);
    out << " floor " << format_number(s.floor.value);
    if (s.exact)
      out << " = max(compute " << format_number(s.floor.compute) << ", memory "
          << format_number(s.floor.memory) << ") at [" << s.floor.granularity.w << ", "
          << s.floor.granularity.h << ", " << s.floor.granularity.k << "]";
    else
      out << " (cheap floor: compute floors, graph inputs and outputs)";
    out << "\n";
  }
}

}  // namespace mlsys
