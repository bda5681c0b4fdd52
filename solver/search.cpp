// The search's orchestration: the plan of jobs (orders of several kinds and lengths, the set-of-done-ops
// program, local search), the worker threads that run them, and the incumbent they publish to.
#include "solver/search.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <thread>

#include "sim/number_format.hpp"
#include "solver/search_internal.hpp"
#include "verifier/bound.hpp"

namespace mlsys {

using namespace search;

std::optional<std::string> exhaustive_search_impossible(const Problem& problem, const Graph& graph) {
  return search::downsets_unaffordable(problem, graph);
}

double default_timeout_seconds(int num_ops) {
  if (num_ops <= 5) return 2;
  if (num_ops <= 20) return 5;
  if (num_ops <= 32) return 15;
  if (num_ops <= 63) return 30;
  if (num_ops <= 103) return 60;
  return 120;
}

namespace {

// Which tensors a job's later readers recompute: none; those computed from graph inputs alone (no more
// traffic than loading them); a random subset of all that may be; or the incumbent's choice, sometimes with
// one tensor toggled (local search).
enum class Recompute { None, FromGraphInputs, RandomSubset, AsIncumbent };
struct Job {
  OrderKind kind;
  int max_length;
  Recompute recompute = Recompute::None;
  bool downsets = false;    // the set-of-done-ops program instead of an order
  bool exhaustive = false;  // that program is mlsys --exhaustive's
};

// Graphs of at most this many ops (benchmarks 1-8) get the exhaustive DP, a branch and bound pruned by
// rule-book floors, within the contest deadline: it proves the search's result optimal within its space, or
// says how close it came (SolveStats::exact_space_bound).
constexpr int kExactMaxOps = 20;
// At most this many sets of done ops, it takes milliseconds (benchmarks 1, 3, 4 and 7 have 6, 5, 11 and 41).
constexpr size_t kQuickProofMaxDownsets = 100;
// Local-search moves segment at most this long (benchmark 13's sibling group has sixteen).
constexpr int kLongestMove = 32;

// Sibling groups (MatMuls sharing an operand) beyond what the usual orders' segments form (see first_jobs).
bool has_long_siblings(int siblings) {
  return siblings > 10;
}

// Runs of one layer's copies longer than the longest usual segment (see first_jobs).
bool has_long_copy_runs(int copy_run) {
  return copy_run > 16;
}

// The jobs in priority order, before the random ones: a first schedule at once, then longer fusions and
// other orders.
std::vector<Job> first_jobs(const Problem& problem, bool exhaustive, bool downsets, bool recompute_cheap,
                            int siblings, int copy_run, bool prove) {
  // Siblings (MatMuls sharing an operand) in one subgraph load it once. Groups of up to 10 can form in the
  // segments of the other orders; a larger group (benchmark 13: sixteen x_i @ W0) needs orders that put it
  // side by side and segments as long as it. They are added only for groups above 10: smaller groups
  // already form in the other orders' segments, and adding the orders for them measured worse.
  std::vector<Job> plan;  // in priority order
  const bool long_siblings = has_long_siblings(siblings);
  if (exhaustive) {
    // A first schedule at once (every op alone), a few cheap fusions whose costs prune the exhaustive DP
    // (on one thread it has no other incumbent), then every grouping. Other threads meanwhile run the usual
    // jobs below: their schedules are what a signal leaves if it comes first, and their costs prune too.
    plan.push_back({OrderKind::ByIndex, 1});
    for (OrderKind kind : {OrderKind::ByIndex, OrderKind::DepthFirst}) plan.push_back({kind, 3});
    plan.push_back({OrderKind::RetentionFriendly, 6});
    plan.push_back({OrderKind::ByIndex, 3, Recompute::None, true});
    plan.push_back({OrderKind::ByIndex, problem.num_ops(), Recompute::None, true, true});
  }
  for (int length : {1, 3, 6, 10, 16}) {
    for (OrderKind kind : {OrderKind::ByIndex, OrderKind::DepthFirst}) plan.push_back({kind, length});
    // A small graph: after the first quick schedules, the exhaustive DP, whose completion proves that no
    // schedule of the search's space is cheaper (which ends the search if nothing is recomputable).
    if (prove && length == 1)
      plan.push_back({OrderKind::ByIndex, problem.num_ops(), Recompute::None, true, true});
    // An imported network cut into row blocks (the zoo): each layer's copies in one subgraph load its
    // weights once instead of once per block, which segments of 16 ops cannot do.
    if (has_long_copy_runs(copy_run) && length == 1) plan.push_back({OrderKind::BatchedLevels, 1});
    if (length == 6 || length == 10) plan.push_back({OrderKind::RetentionFriendly, length});
    if (downsets && length == 3) plan.push_back({OrderKind::ByIndex, 3, Recompute::None, true});
  }
  // Long segments: benchmark 15's copy of op 0 belongs inside its 14-op side-read segment.
  if (recompute_cheap)
    for (OrderKind kind : {OrderKind::ByIndex, OrderKind::DepthFirst, OrderKind::RetentionFriendly})
      plan.push_back({kind, 16, Recompute::FromGraphInputs});
  if (long_siblings) plan.push_back({OrderKind::SiblingsFirst, siblings});
  // Wavefronts: benchmark 10's best schedule holds one layer of all six branches per subgraph (12 and 11
  // ops), which other orders line up only by chance (random ones took 2.4-10 s of its 15).
  plan.push_back({OrderKind::ByLevel, 16});
  if (has_long_copy_runs(copy_run)) plan.push_back({OrderKind::BatchedLevels, 10});
  // Subgraphs of up to 4 ops (5 on graphs of at most 20 ops) from any set of done ops: a graph whose best
  // subgraphs gather ops that orders seldom put side by side needs it. Since the rule book revision of
  // 2026-11-23, benchmark 8's best schedule ends with a 5-op subgraph (the three O = S V with the final
  // Pointwise ops), which this job finds at L = 5. Its cost grows fast with L on larger graphs, so it comes
  // last.
  if (downsets) plan.push_back({OrderKind::ByIndex, problem.num_ops() <= 20 ? 5 : 4, Recompute::None, true});
  return plan;
}

// Which tensors a job's later readers recompute (`recompute` holds the incumbent's choice on entry).
void choose_recomputed(Recompute how, const std::vector<int>& cheap, const std::vector<int>& recomputable,
                       std::mt19937_64& rng, std::vector<int>& recompute) {
  if (how == Recompute::FromGraphInputs) recompute = cheap;
  if (how == Recompute::RandomSubset)
    for (int t : recomputable)
      if (rng() % 2) recompute.push_back(t);
  if (how == Recompute::AsIncumbent && !recomputable.empty() && rng() % 4 == 0) {
    const int t = recomputable[rng() % recomputable.size()];
    if (auto it = std::find(recompute.begin(), recompute.end(), t); it != recompute.end())
      recompute.erase(it);
    else
      recompute.push_back(t);
  }
}

// Why no schedule was found: the first op that fits nowhere on its own, the usual reason.
std::string infeasible_reason(const Problem& problem, const Graph& graph, const ModelOptions& model) {
  SubgraphOracle oracle(problem, graph, model);
  for (int o = 0; o < problem.num_ops(); ++o) {
    std::string reason;
    if (!oracle.best({o}, {}, {}, &reason)) return "op " + std::to_string(o) + ": " + reason;
  }
  return "no schedule found within the time limit";
}

// The cover bound, beside the search in a thread of its own: it publishes its certificate (which prunes the
// searches over sets of done ops) and raises `floor` when it beats it.
void run_cover_bound(Incumbent& inc, std::atomic<double>& floor, std::atomic<bool>& raised,
                     const std::atomic<bool>& search_over) {
  const SolveOptions& options = inc.options;
  // An exhaustive search has no deadline to share: the cover bound's certificate prunes it, so it gets the
  // bound's own limit on sets (benchmark 8 has 259,269).
  const int64_t sets = options.exhaustive ? std::max(options.cover_bound_sets, CoverLimits{}.max_subgraphs)
                                          : options.cover_bound_sets;
  const CoverLimits limits{options.timeout_seconds / 2, sets, &search_over};
  const CoverBound cover = cover_bound(inc.problem, inc.graph, options.model, limits);
  if (cover.attempted && !cover.op_prices.empty()) inc.publish({cover.op_prices, cover.tensor_credits});
  if (!cover.attempted || cover.bound <= floor.load()) return;
  floor = cover.bound;
  raised = true;
  if (options.on_bound) options.on_bound(cover.bound);
  if (options.on_progress)
    options.on_progress("certified bound raised to " + format_certified(cover.bound) + " by the cover bound (" +
                        cover.status + ", " + std::to_string(cover.subgraphs) + " connected sets)");
}

// A search its own proof ended leaves time on the clock: the cover bound may still certify the result
// (benchmark 3's takes milliseconds, but on a loaded machine the proof came first), so it gets up to a tenth
// of the timeout more.
void wait_for_cover_bound(const Incumbent& inc, const std::atomic<bool>& cover_finished) {
  if (!inc.exhaustive_done || inc.stop) return;
  const Clock::time_point grace = std::min(inc.deadline, Clock::now() + (inc.deadline - inc.start) / 10);
  while (!cover_finished && Clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// The search's account once its threads are done: the bound it reached and what ended it.
void record_stats(Incumbent& inc, double certified_bound, const std::string& bound_name, bool cover_raised,
                  bool at_floor) {
  inc.stats.certified_bound = certified_bound;
  // The rule book's bound holds within the exhaustive search's space too.
  if (inc.stats.exact_space_bound > 0)
    inc.stats.exact_space_bound = std::max(inc.stats.exact_space_bound, inc.stats.certified_bound);
  inc.stats.certified_by = cover_raised ? "cover" : bound_name;
  inc.stats.evaluations = inc.evaluations.load();
  inc.stats.orders = inc.orders.load();
  const int64_t budget = inc.options.max_orders;
  inc.stats.stopped_by = inc.stop.load()                             ? "signal"
                         : at_floor                                  ? "certified bound"
                         : budget > 0 && inc.stats.orders >= budget ? "order budget"
                         : inc.exhaustive_done.load()                ? "exhaustive search done"
                                                                     : "timeout";
  if (!inc.best) inc.stats.infeasible_reason = infeasible_reason(inc.problem, inc.graph, inc.options.model);
}

// Before anything that grows faster than the graph (the bounds, sibling groups, sets of done ops): a first
// schedule, every op alone. On a graph of 100,000 ops under load it may be all the deadline allows, so only a
// signal cuts it short: mlsys's watchdog keeps the process's deadline (docs/solver.md#deadline).
void publish_first_schedule(Incumbent& inc) {
  std::string why;
  if (auto first = first_schedule(inc.problem, inc.graph, inc.options.model, [&] { return inc.stop.load(); }, &why))
    inc.offer(std::move(*first), inc.graph.topological_order, {}, "first (every op alone)");
}

// The certified bound the search starts from (docs/bounds.md), the caller's or computed with a twentieth of
// the deadline (Theorem 11 may take a second on a hostile graph), and the name of the bound that gave it.
double initial_certified_bound(const Incumbent& inc, std::string& name) {
  const SolveOptions& options = inc.options;
  name = "lambda";
  double bound = 0;
  if (options.certified_bound) {
    bound = *options.certified_bound;
  } else {
    const Clock::time_point bound_deadline = inc.start + (inc.deadline - inc.start) / 20;
    const CertifiedBound certified = certified_bound(inc.problem, inc.graph, options.model,
                                                     [&] { return Clock::now() > bound_deadline; });
    bound = certified.bound;
    name = largest_bound_name(certified);
  }
  if (options.on_bound) options.on_bound(bound);
  return bound;
}

}  // namespace

std::optional<Schedule> first_schedule(const Problem& problem, const Graph& graph, const ModelOptions& model,
                                       const std::function<bool()>& expired, std::string* why) {
  SubgraphOracle oracle(problem, graph, model);
  // An op alone, nothing retained, costs what its kind, base cost and tensor shapes say (and which operands
  // are the same tensor): imported networks and generated graphs repeat a few such signatures thousands of
  // times, so each is asked once. The verifier prices every subgraph again before the schedule is published.
  std::map<std::vector<int64_t>, SubgraphChoice> by_signature;
  std::vector<int64_t> signature;
  Schedule s;
  s.subgraphs.reserve(graph.topological_order.size());
  for (int op : graph.topological_order) {
    if (expired && expired()) {
      if (why) *why = "no schedule found within the time limit";
      return std::nullopt;
    }
    const std::vector<int>& ins = problem.inputs[op];
    signature.assign({static_cast<int64_t>(problem.op_types[op]), std::bit_cast<int64_t>(problem.base_costs[op])});
    for (size_t i = 0; i < ins.size(); ++i)
      signature.insert(signature.end(), {problem.widths[ins[i]], problem.heights[ins[i]],
                                         std::find(ins.begin(), ins.end(), ins[i]) - ins.begin()});
    for (int t : problem.outputs[op]) signature.insert(signature.end(), {-problem.widths[t], -problem.heights[t]});
    auto known = by_signature.find(signature);
    if (known == by_signature.end()) {
      std::string reason;
      const std::optional<SubgraphChoice> choice = oracle.best({op}, {}, {}, &reason);
      if (!choice) {
        if (why) *why = "op " + std::to_string(op) + ": " + reason;
        return std::nullopt;
      }
      known = by_signature.emplace(signature, *choice).first;
    }
    s.subgraphs.push_back({{op}, known->second.granularity, {}, known->second.traversal_order()});
  }
  return s;
}

std::optional<Schedule> solve(const Problem& problem, const Graph& graph, const SolveOptions& options,
                              const std::atomic<bool>& stop, const ImprovementCallback& on_improvement,
                              SolveStats* stats) {
  Incumbent inc{problem, graph, options, stop, on_improvement, Clock::now(), {}, {}, {}, {}, {}, 0, {}, {}};
  inc.deadline = inc.start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options.timeout_seconds));
  if (!options.exhaustive || !search::downsets_unaffordable(problem, graph)) publish_first_schedule(inc);
  // First a quick answer (every op alone, then short fusions), then longer fusions and other orders.
  std::mutex queue_mutex;
  const std::optional<std::string> too_many_sets = search::downsets_unaffordable(problem, graph);
  const bool downsets = !too_many_sets;
  const std::vector<int> recomputable = recomputable_tensors(problem, graph);
  const std::vector<int> cheap = recomputable_from_graph_inputs(problem, graph);
  if (options.exhaustive && too_many_sets) {
    if (stats)
      stats->infeasible_reason = "the exhaustive search cannot enumerate this graph: " + *too_many_sets;
    return std::nullopt;
  }
  const int siblings = largest_sibling_group(problem, graph);
  const bool long_siblings = has_long_siblings(siblings);
  // The exhaustive DP runs within the deadline on small graphs. Its completion ends the search where its
  // space holds the timed search's (nothing to recompute: the recomputing jobs would have no tensor to
  // choose); elsewhere the other jobs go on to the clock. Beyond a few sets of done ops it takes seconds, so
  // it needs a second thread for the usual jobs, and it would make an order budget's run depend on time.
  const bool prove = !options.exhaustive && downsets && problem.num_ops() <= kExactMaxOps &&
                     (!search::downsets_unaffordable(problem, graph, kQuickProofMaxDownsets) ||
                      (options.threads >= 2 && options.max_orders == 0));
  const bool proof_ends_search = options.exhaustive || recomputable.empty();
  const std::vector<Job> plan = first_jobs(problem, options.exhaustive, downsets, !cheap.empty(), siblings,
                                           longest_copy_run(problem, graph), prove);
  // Then, for as long as time allows (or until the schedule meets the lower bound): every other job perturbs
  // the incumbent's order (local search); the others draw new orders, random or retention-friendly with
  // random ties, one in four of the random ones with a random set of recomputed tensors, and with a long
  // sibling group one in eight siblings-first with random ties.
  // Every eighth job's random order is segmented at up to 16 ops on graphs larger than 20 ops: benchmark 10's
  // best schedule has segments of 12 and 11 ops (10,118,758.4 against 10,433,331.2 at L = 10). On smaller
  // graphs the slower DP costs the local search more than it gains (benchmark 8).
  const int long_random = problem.num_ops() > 20 ? 16 : 10;
  auto job_at = [&](size_t index) -> Job {
    if (index < plan.size()) return plan[index];
    const size_t j = index - plan.size();
    if (j % 2 == 1) return {OrderKind::MovedIncumbent, 6, Recompute::AsIncumbent};
    if (j % 8 == 4 && !recomputable.empty()) return {OrderKind::Random, 10, Recompute::RandomSubset};
    if (j % 16 == 6 && long_siblings) return {OrderKind::RandomSiblingsFirst, siblings};
    return {j % 4 == 2 ? OrderKind::RandomRetentionFriendly : OrderKind::Random,
            j % 8 == 0 ? long_random : 10};
  };
  // The certified bound (docs/bounds.md): a schedule that meets it is optimal, so the search stops there.
  // The lambda bound is known at once; the cover bound comes from a thread of its own and may raise it.
  std::string bound_name;
  const double initial_floor = initial_certified_bound(inc, bound_name);
  std::atomic<double> floor{initial_floor};
  std::atomic<bool> cover_raised{false}, search_over{false};
  std::thread cover_thread;
  std::atomic<bool> cover_finished{false};
  if (options.cover_bound_sets > 0 && problem.num_ops() <= kCoverBoundMaxOps)
    cover_thread = std::thread([&] {
      run_cover_bound(inc, floor, cover_raised, search_over);
      cover_finished = true;
    });
  auto at_floor = [&] { return inc.bound.load() <= floor.load() * (1 + 1e-9); };  // nothing can beat it: stop
  size_t next = 0;
  OracleCache cache;

  auto worker = [&] {
    while (!inc.expired() && !at_floor()) {
      // Between jobs, whenever the best schedule changed: fuse its neighbours (merge_search.cpp).
      if (inc.claim_merge()) {
        run_merge_search(inc, cache);
        inc.release_merge();
        continue;
      }
      Job job;
      size_t index;
      {
        std::lock_guard lock(queue_mutex);
        index = next++;
        job = job_at(index);
      }
      if (options.max_orders > 0 && index >= static_cast<size_t>(options.max_orders)) break;
      if (job.downsets) {
        if (run_downset_search(inc, cache, job.max_length, job.exhaustive) && job.exhaustive &&
            proof_ends_search)
          inc.exhaustive_done = true;
        ++inc.orders;
        continue;
      }
      // The seed depends on the job, not on the thread or timing: the same --seed gives the same orders.
      const uint64_t seed = options.seed * 7919 + index * 104729;
      std::vector<int> base, recompute;
      if (job.kind == OrderKind::MovedIncumbent) {
        std::lock_guard lock(inc.mutex);
        base = inc.walk_order;
        recompute = inc.walk_recompute;
        // Moves must be able to keep a long sibling subgraph of the incumbent whole (benchmark 13: sixteen);
        // below the usual length of new orders, short segments keep the local search fast.
        // A batched incumbent's segments of hundreds of ops would make every move's program quadratic.
        if (inc.best_longest_segment > 10) job.max_length = std::min(inc.best_longest_segment, kLongestMove);
      }
      std::mt19937_64 rng(seed ^ 0x5eed);
      choose_recomputed(job.recompute, cheap, recomputable, rng, recompute);
      run_order_search(inc, cache, job.kind, job.max_length, seed, inc.tolerance(index), base, recompute);
      ++inc.orders;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.threads); ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (cover_thread.joinable()) wait_for_cover_bound(inc, cover_finished);
  search_over = true;
  if (cover_thread.joinable()) cover_thread.join();
  record_stats(inc, floor.load(), bound_name, cover_raised, at_floor());
  if (stats) *stats = inc.stats;
  return inc.best;
}

}  // namespace mlsys
