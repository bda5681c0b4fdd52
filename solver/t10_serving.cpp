#include "solver/t10_serving.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <stdexcept>

#include "solver/t10_compile.hpp"

namespace mlsys::t10 {

std::optional<ServingPolicy> serving_policy_from(const std::string& name) {
  if (name == "ours") return ServingPolicy::Ours;
  if (name == "elk") return ServingPolicy::Elk;
  if (name == "fastest") return ServingPolicy::Fastest;
  if (name == "given") return ServingPolicy::Given;
  return std::nullopt;
}

const char* to_string(ServingPolicy policy) {
  switch (policy) {
    case ServingPolicy::Elk:
      return "elk";
    case ServingPolicy::Fastest:
      return "fastest";
    case ServingPolicy::Given:
      return "given";
    case ServingPolicy::Ours:
      break;
  }
  return "ours";
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInfeasible = std::numeric_limits<double>::infinity();
constexpr double kColdThreshold = 1.01;  // DNNProgram.py COLD_THRESHOLD

std::string class_key(const ServingOperator& o) {
  const TensorOperator& op = o.op;
  return std::string(to_string(op.type)) + ":" + std::to_string(op.batch) + "x" + std::to_string(op.m) + "x" +
         std::to_string(op.k) + "x" + std::to_string(op.n) + "/" + std::to_string(op.inputs) + "/" +
         to_string(o.hbm);
}

// The search's view: per operator its class, per class its choices, and the timeline as the oracle.
struct Space {
  const ServingProgram& program;
  const ServingChip& chip;
  std::vector<int> class_of;                        // per operator
  std::vector<std::vector<ServingChoice>> choices;  // per operator (shared by its class)
  int64_t evaluations = 0;
  int lookahead = 1;

  std::vector<ServingChoice> pick(const std::vector<int>& index) const {
    std::vector<ServingChoice> out;
    out.reserve(index.size());
    for (size_t i = 0; i < index.size(); ++i) out.push_back(choices[i][index[i]]);
    return out;
  }
  double makespan(const std::vector<int>& index) {
    ++evaluations;
    const ServingTimeline t = serving_timeline(program, chip, pick(index), lookahead);
    return t.overflow ? kInfeasible : t.makespan;
  }
};

std::vector<int> fastest(const Space& s) {
  std::vector<int> index(s.choices.size(), 0);
  for (size_t i = 0; i < s.choices.size(); ++i)
    for (size_t o = 0; o < s.choices[i].size(); ++o)
      if (s.choices[i][o].option.time() < s.choices[i][index[i]].option.time())
        index[i] = static_cast<int>(o);
  return index;
}

std::vector<int> elk_rule(const Space& s) {
  const int n = static_cast<int>(s.choices.size());
  const int64_t sram = s.chip.chip.sram_bytes_per_core;
  std::vector<int> index(n, 0);
  for (int i = 0; i < n; ++i) {
    double reserve = 0;  // the next loading operator's smallest preload
    for (int k = i + 1; k < n && reserve == 0; ++k)
      if (s.program.ops[k].hbm != HbmOperand::None) {
        double least = kInfeasible;
        for (const ServingChoice& c : s.choices[k])
          least = std::min(least, static_cast<double>(c.preload_bytes));
        reserve = least;
      }
    int best = -1, smallest = 0;
    for (int o = 0; o < static_cast<int>(s.choices[i].size()); ++o) {
      const ServingChoice& c = s.choices[i][o];
      const int64_t running = serving_running_bytes(c);
      if (running < serving_running_bytes(s.choices[i][smallest])) smallest = o;
      if (static_cast<double>(running) > static_cast<double>(sram) - kColdThreshold * reserve) continue;
      if (best < 0 || c.option.time() < s.choices[i][best].option.time()) best = o;
    }
    index[i] = best >= 0 ? best : smallest;
  }
  return index;
}

// Another tool's schedule mapped onto the options (ServingPolicy::Given), counting how each operator matched.
std::vector<int> given_schedule(const Space& s, const std::vector<GivenChoice>& given, ServingResult& r) {
  if (given.size() != s.choices.size())
    throw std::invalid_argument("the schedule has " + std::to_string(given.size()) +
                                " operators, the model " + std::to_string(s.choices.size()));
  std::vector<int> index(s.choices.size(), 0);
  for (size_t i = 0; i < given.size(); ++i) {
    const std::vector<ServingChoice>& list = s.choices[i];
    int exact = -1, hot_only = -1, nearest = -1;
    // A product unmatched: the fastest option that holds no more than the given plan (else the smallest). A
    // vector operator unmatched is one the two readers shape differently (the artifact prices the decode
    // softmax over one key): its fastest option, as the artifact's rule would pick.
    const bool product = s.program.ops[i].op.type == OperatorType::MatMul;
    int smallest = 0;
    for (int o = 0; o < static_cast<int>(list.size()); ++o) {
      const ServingChoice& c = list[o];
      auto keep_faster = [&](bool matches, int& best) {
        if (matches && (best < 0 || c.option.time() < list[best].option.time())) best = o;
      };
      keep_faster(c.option.hot == given[i].hot && c.preload_bytes == given[i].cold, exact);
      keep_faster(c.option.hot == given[i].hot, hot_only);
      keep_faster(!product || serving_running_bytes(c) <= given[i].hot, nearest);
      if (serving_running_bytes(c) < serving_running_bytes(list[smallest])) smallest = o;
    }
    if (exact >= 0) {
      index[i] = exact;
      ++r.given_exact;
    } else if (hot_only >= 0) {
      index[i] = hot_only;
      ++r.given_hot_only;
    } else {
      index[i] = nearest >= 0 ? nearest : smallest;
      ++r.given_nearest;
    }
  }
  return index;
}

// Class by class, every option of the class for all its operators at once; a change stays when the makespan
// falls. Passes until one changes nothing or the deadline.
std::vector<int> local_search(Space& s, std::vector<int> index, double& best, Clock::time_point deadline,
                              const ServeOptions& options) {
  std::map<int, std::vector<int>> members;
  for (size_t i = 0; i < s.class_of.size(); ++i) members[s.class_of[i]].push_back(static_cast<int>(i));
  for (bool improved = true; improved && Clock::now() < deadline;) {
    improved = false;
    for (const auto& [cls, ops] : members) {
      const int current = index[ops[0]];
      int chosen = current;
      for (int o = 0; o < static_cast<int>(s.choices[ops[0]].size()) && Clock::now() < deadline; ++o) {
        if (o == current) continue;
        for (int i : ops) index[i] = o;
        const double m = s.makespan(index);
        if (m < best * (1 - 1e-12)) {
          best = m;
          chosen = o;
          improved = true;
        }
      }
      for (int i : ops) index[i] = chosen;
    }
    if (options.progress)
      options.progress("t10 serve: local search pass: " + std::to_string(s.chip.cycles_to_ms(best)) + " ms");
  }
  return index;
}

}  // namespace

ServingResult serve(const ServingProgram& program, const ServingChip& chip, const ServeOptions& options) {
  ServingResult r;
  const auto start = Clock::now();
  Space s{program, chip, {}, {}, 0};
  std::map<std::string, int> classes;
  std::map<int, std::vector<ServingChoice>> by_class;
  for (const ServingOperator& op : program.ops) {
    const auto [it, fresh] = classes.emplace(class_key(op), static_cast<int>(classes.size()));
    s.class_of.push_back(it->second);
    if (fresh) {
      const OperatorOptions table = operator_options(program.program, op.op);
      std::vector<ServingChoice>& list = by_class[it->second];
      for (const OperatorOption& o : table.options) list.push_back(serving_choice(op, o));
      r.options += static_cast<int64_t>(list.size());
      if (options.progress)
        options.progress("t10 serve: " + op.op.name + " (" + it->first + "): " + std::to_string(list.size()) +
                         " options from " + std::to_string(table.plans_priced) + " plans");
    }
    s.choices.push_back(by_class[it->second]);
  }
  r.classes = static_cast<int64_t>(classes.size());
  r.options_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.lower_bound = serving_lower_bound(program, chip, s.choices);

  const std::vector<int> quick = fastest(s), elk = elk_rule(s);
  const double quick_time = s.makespan(quick), elk_time = s.makespan(elk);
  r.fastest_makespan = quick_time == kInfeasible ? 0 : quick_time;
  r.elk_makespan = elk_time == kInfeasible ? 0 : elk_time;
  std::vector<int> index = options.policy == ServingPolicy::Elk ? elk : quick;
  double best = options.policy == ServingPolicy::Elk ? elk_time : quick_time;
  if (options.policy == ServingPolicy::Given) {
    index = given_schedule(s, options.given, r);
    best = s.makespan(index);
  }
  if (options.policy == ServingPolicy::Ours) {
    if (elk_time < quick_time) {
      index = elk;
      best = elk_time;
    }
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options.seconds));
    index = local_search(s, index, best, deadline, options);
    // Then the load order: a small load may pass large ones that wait for room.
    for (int lookahead : {2, 3, 4, 6, 8, 12, 16}) {
      if (Clock::now() >= deadline) break;
      const int kept = s.lookahead;
      s.lookahead = lookahead;
      const double m = s.makespan(index);
      if (m < best * (1 - 1e-12))
        best = m;
      else
        s.lookahead = kept;
    }
    if (s.lookahead > 1) index = local_search(s, index, best, deadline, options);
  }
  r.choices = s.pick(index);
  r.lookahead = s.lookahead;
  r.timeline = serving_timeline(program, chip, r.choices, r.lookahead);
  r.evaluations = s.evaluations;
  r.schedule_seconds = std::chrono::duration<double>(Clock::now() - start).count() - r.options_seconds;
  return r;
}

}  // namespace mlsys::t10
