// Whole-model compilation for T10 (t10_compile.hpp, docs/t10-programs.md).
#include "solver/t10_compile.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "solver/t10_search.hpp"

namespace mlsys::t10 {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A candidate before it is built into an option: what the Pareto filter compares, and how to rebuild it.
struct Candidate {
  int64_t cold, extra;
  double time;
  uint32_t plan;  // index into the plans visited
  bool no_copy;
};

// Keeps the candidates no other beats on cold, extra and time at once; fastest first (ties: smaller cold,
// then smaller extra, then the first visited). The staircase maps cold to the least extra of the kept ones
// up to that cold. The order is total, so filtering a part first never changes what survives the whole.
std::vector<Candidate> pareto(std::vector<Candidate> all) {
  std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.time, a.cold, a.extra, a.plan, a.no_copy) <
           std::tie(b.time, b.cold, b.extra, b.plan, b.no_copy);
  });
  std::vector<Candidate> kept;
  std::map<int64_t, int64_t> staircase;  // cold -> least extra among kept with that cold or less
  for (const Candidate& c : all) {
    auto at = staircase.upper_bound(c.cold);
    if (at != staircase.begin() && std::prev(at)->second <= c.extra) continue;  // dominated
    kept.push_back(c);
    auto [it, fresh] = staircase.insert_or_assign(c.cold, c.extra);
    // Later steps with no smaller extra are now implied by this one.
    for (auto next = std::next(it); next != staircase.end() && next->second >= c.extra;)
      next = staircase.erase(next);
  }
  return kept;
}

// A quick test of "dominated by a survivor so far": the survivors (sorted fastest first) cut into up to 16
// prefixes by time; for each prefix, the least extra at each cold. A candidate found dominated here is one
// the Pareto filter would drop (a survivor came first and is no worse anywhere); one not found is kept for
// the filter, so the result is the same with or without the gate, only sooner.
class DominanceGate {
 public:
  void rebuild(const std::vector<Candidate>& survivors_fastest_first) {
    prefixes_.clear();
    const size_t n = survivors_fastest_first.size();
    const size_t parts = std::min<size_t>(16, n);
    for (size_t j = 1; j <= parts; ++j) {
      const size_t end = j * n / parts;
      Prefix p;
      p.time = survivors_fastest_first[end - 1].time;
      std::vector<std::pair<int64_t, int64_t>> points;
      for (size_t i = 0; i < end; ++i)
        points.push_back({survivors_fastest_first[i].cold, survivors_fastest_first[i].extra});
      std::sort(points.begin(), points.end());
      for (const auto& [cold, extra] : points)
        if (p.stairs.empty() || extra < p.stairs.back().second) p.stairs.push_back({cold, extra});
      prefixes_.push_back(std::move(p));
    }
  }
  bool dominated(const Candidate& c) const {
    // The longest prefix whose survivors are all at most as slow as c.
    auto it = std::upper_bound(prefixes_.begin(), prefixes_.end(), c.time,
                               [](double t, const Prefix& p) { return t < p.time; });
    if (it == prefixes_.begin()) return false;
    const auto& stairs = std::prev(it)->stairs;
    auto at = std::upper_bound(stairs.begin(), stairs.end(), std::pair<int64_t, int64_t>{c.cold, INT64_MAX});
    return at != stairs.begin() && std::prev(at)->second <= c.extra;
  }

 private:
  struct Prefix {
    double time = 0;
    std::vector<std::pair<int64_t, int64_t>> stairs;  // cold ascending, extra strictly descending
  };
  std::vector<Prefix> prefixes_;
};

// The Pareto survivors of a stream of priced plans, each in two layouts (with and without copies). A weight
// product has millions of plans and a few hundred survivors: the candidates are filtered whenever they have
// grown to a few times the survivors (up to 2^18), keeping only the survivors' plans (renumbered in visit
// order, so ties still go to the first), and a candidate the survivors so far dominate is not kept at all.
class ParetoPlans {
 public:
  void add(const Plan& plan, const CalibratedCost& c) {
    const auto at = static_cast<uint32_t>(plans_.size());
    const Candidate copied{c.cold_bytes, c.hot_bytes - c.cold_bytes, c.total, at, false};
    const Candidate uncopied{c.no_copy_cold_bytes, c.hot_bytes - c.no_copy_cold_bytes, c.total + c.warm_up, at,
                             true};
    const bool keep_copied = !gate_.dominated(copied), keep_uncopied = !gate_.dominated(uncopied);
    if (!keep_copied && !keep_uncopied) return;
    plans_.push_back(plan);
    if (keep_copied) candidates_.push_back(copied);
    if (keep_uncopied) candidates_.push_back(uncopied);
    if (candidates_.size() >= next_compaction_) compact();
  }
  bool empty() const { return candidates_.empty(); }
  // Fastest first, each with whether it is the layout without copies.
  std::vector<std::pair<Plan, bool>> pareto_plans() const {
    std::vector<std::pair<Plan, bool>> out;
    for (const Candidate& c : pareto(candidates_)) out.push_back({plans_[c.plan], c.no_copy});
    return out;
  }

 private:
  void compact() {
    std::vector<Candidate> kept = pareto(std::move(candidates_));
    gate_.rebuild(kept);
    std::sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.plan, a.no_copy) < std::tie(b.plan, b.no_copy);
    });
    std::vector<Plan> kept_plans;
    uint32_t last = UINT32_MAX;  // both layouts of one plan share its entry
    for (Candidate& c : kept) {
      if (c.plan != last) {
        last = c.plan;
        kept_plans.push_back(plans_[c.plan]);
      }
      c.plan = static_cast<uint32_t>(kept_plans.size() - 1);
    }
    plans_ = std::move(kept_plans);
    candidates_ = std::move(kept);
    next_compaction_ = std::min<size_t>(size_t{1} << 18, std::max<size_t>(4096, 8 * candidates_.size()));
  }

  std::vector<Candidate> candidates_;
  std::vector<Plan> plans_;
  DominanceGate gate_;
  size_t next_compaction_ = 4096;
};

}  // namespace

std::string shape_key(const TensorOperator& op) {
  return std::string(to_string(op.type)) + ":" + std::to_string(op.batch) + "x" + std::to_string(op.m) + "x" +
         std::to_string(op.k) + "x" + std::to_string(op.n) + "/" + std::to_string(op.inputs);
}

OperatorOptions operator_options(const TensorProgram& program, const TensorOperator& op) {
  OperatorOptions out;
  if (op.type == OperatorType::MatMul) {
    // Each plan in two layouts; only the Pareto survivors are built into options.
    ParetoPlans survivors;
    Problem problem = operator_problem(program, op);
    auto enumerate = [&] {
      out.plans_priced += for_each_calibrated_plan(problem, [&](const Plan& plan, const CalibratedCost& c) {
                            survivors.add(plan, c);
                          }).second;
    };
    enumerate();
    if (survivors.empty()) {
      // No plan fits a core: priced without the limit, so that the refusal can say how many bytes are
      // missing.
      problem.chip.sram_bytes_per_core = int64_t{1} << 50;
      enumerate();
    }
    for (const auto& [plan, no_copy] : survivors.pareto_plans())
      out.options.push_back(matmul_option(plan, calibrated_cost(problem, plan), no_copy));
  } else {
    // Nothing rotates: more cores is both faster and smaller, so an elementwise operator uses every core it
    // can. A row-wise one may also split its rows (into divisors of the row length): smaller, slower.
    const VectorOp v = vector_op(op);
    std::vector<Candidate> candidates;
    std::vector<Plan> plans;
    for (int64_t c = 1; c <= (v.kind == VectorKind::RowWise ? std::min(v.cols, program.chip.cores) : 1);
         ++c) {
      if (v.cols % c != 0) continue;
      Plan plan;
      plan.f_op[0] = std::min(program.chip.cores / c, vector_units(v));
      plan.f_op[2] = c;
      const OperatorOption o = price_option(program, op, plan, false);
      ++out.plans_priced;
      if (!o.cost.accepted()) continue;
      candidates.push_back({o.cold, o.extra(), o.time(), static_cast<uint32_t>(plans.size()), false});
      plans.push_back(plan);
    }
    for (const Candidate& c : pareto(std::move(candidates)))
      out.options.push_back(price_option(program, op, plans[c.plan], false));
  }
  if (out.options.empty())
    throw std::invalid_argument("operator '" + op.name + "' (" + shape_key(op) +
                                "): no plan of the calibrated model's search space fits a core's " +
                                std::to_string(program.chip.sram_bytes_per_core) + " B");
  return out;
}

int64_t least_sram_bytes(const std::vector<const OperatorOptions*>& ops) {
  // A sweep over H, the bound on the extra, in increasing order: each option becomes usable at its extra
  // and can only lower its operator's least cold bytes; at every H the need is that sum plus H.
  struct Event {
    int64_t extra, cold;
    size_t op;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < ops.size(); ++i)
    for (const OperatorOption& x : ops[i]->options) events.push_back({x.extra(), x.cold, i});
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.extra < b.extra; });
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> smallest(ops.size(), kNone);
  size_t without = ops.size();  // operators with no usable option yet
  int64_t cold = 0, least = kNone;
  for (size_t e = 0; e < events.size();) {
    const int64_t h = events[e].extra;
    for (; e < events.size() && events[e].extra == h; ++e) {
      int64_t& s = smallest[events[e].op];
      if (s == kNone) {
        --without;
        cold += events[e].cold;
        s = events[e].cold;
      } else if (events[e].cold < s) {
        cold -= s - events[e].cold;
        s = events[e].cold;
      }
    }
    if (without == 0) least = std::min(least, cold + h);
  }
  return least;
}

CompileResult compile_program(const TensorProgram& program, const CompileOptions& options) {
  CompileResult result;
  const auto start = Clock::now();
  std::map<std::string, size_t> distinct;  // identical shapes share their options
  std::vector<size_t> first_of, index_of;  // the first operator of each shape; each operator's shape
  for (size_t i = 0; i < program.ops.size(); ++i) {
    auto [it, fresh] = distinct.try_emplace(shape_key(program.ops[i]), first_of.size());
    if (fresh) first_of.push_back(i);
    index_of.push_back(it->second);
  }
  size_t matmul_shapes = 0;
  for (size_t i : first_of) matmul_shapes += program.ops[i].type == OperatorType::MatMul;
  if (matmul_shapes > kMaxMatMulShapes)
    throw std::invalid_argument(std::to_string(matmul_shapes) + " distinct MatMul shapes, above the " +
                                std::to_string(kMaxMatMulShapes) +
                                " the compiler prices (each prices up to about a million plans)");
  // The shapes are independent: one worker per core takes the next one.
  std::vector<OperatorOptions> tables(first_of.size());
  std::vector<std::exception_ptr> failures(first_of.size());
  std::atomic<size_t> next{0};
  std::mutex progress_lock;
  auto work = [&] {
    for (size_t s; (s = next++) < first_of.size();) {
      const TensorOperator& op = program.ops[first_of[s]];
      try {
        tables[s] = operator_options(program, op);
      } catch (...) {
        failures[s] = std::current_exception();
        continue;
      }
      if (!options.progress) continue;
      std::lock_guard lock(progress_lock);
      options.progress("t10 compile: " + op.name + " (" + shape_key(op) +
                       "): " + std::to_string(tables[s].options.size()) + " options from " +
                       std::to_string(tables[s].plans_priced) + " plans");
    }
  };
  const size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::thread> pool;
  for (size_t w = 1; w < std::min(workers, first_of.size()); ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  std::vector<const OperatorOptions*> per_op;
  for (const OperatorOptions& t : tables) {
    result.stats.plans_priced += t.plans_priced;
    result.stats.options += static_cast<int64_t>(t.options.size());
  }
  for (size_t i : index_of) per_op.push_back(&tables[i]);
  result.stats.distinct_operators = static_cast<int64_t>(tables.size());
  result.stats.options_seconds = seconds_since(start);
  result.least_sram_bytes = least_sram_bytes(per_op);
  const auto reconcile_start = Clock::now();
  const int64_t sram = program.chip.sram_bytes_per_core;
  std::optional<CompiledProgram> heuristic = reconcile_heuristic(per_op, sram);
  if (heuristic) result.stats.heuristic_cycles = heuristic->total_cycles;
  if (options.reconciliation == Reconciliation::Heuristic) {
    result.compiled = heuristic;
  } else if (result.least_sram_bytes <= sram) {
    result.compiled = reconcile_exact(per_op, sram, heuristic, options.max_frontier, result.stats,
                                      options.reconcile_seconds);
  }
  result.stats.reconcile_seconds = seconds_since(reconcile_start);
  return result;
}

std::vector<ProgramVariantPoint> sweep_program(
    const TensorProgram& program, const std::vector<int64_t>& srams, const std::vector<double>& exchange,
    int shard, int shards, const std::function<void(const ProgramVariantPoint&)>& on_point) {
  std::vector<ProgramVariantPoint> points;
  int64_t index = 0;
  for (int64_t sram : srams)
    for (double bandwidth : exchange) {
      const int64_t at = index++;
      if (at % shards != shard) continue;
      TensorProgram variant = program;
      variant.chip.sram_bytes_per_core = sram;
      variant.chip.exchange_bytes_per_cycle = bandwidth;
      const auto start = Clock::now();
      const CompileResult result = compile_program(variant, {});
      ProgramVariantPoint p;
      p.index = at, p.sram_bytes = sram, p.exchange_bytes_per_cycle = bandwidth;
      p.least_sram_bytes = result.least_sram_bytes;
      p.heuristic_cycles = result.stats.heuristic_cycles;
      p.fits = result.compiled.has_value();
      if (p.fits) {
        p.total_cycles = result.compiled->total_cycles;
        p.lower_bound = result.compiled->lower_bound;
        p.peak_sram_bytes = result.compiled->peak_sram_bytes();
        p.proven = result.stats.proven;
      }
      p.seconds = seconds_since(start);
      if (on_point) on_point(p);
      points.push_back(p);
    }
  return points;
}

}  // namespace mlsys::t10
