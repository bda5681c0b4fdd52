#include "solver/t10_serving.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <stdexcept>

#include "sim/json_io.hpp"
#include "sim/violation.hpp"
#include "solver/t10_compile.hpp"

namespace mlsys::t10 {

namespace {

// The policies by name, in the order the CLI lists them; `given` is chosen by --schedule, not by name.
struct PolicyEntry {
  ServingPolicy policy;
  const char* name;
  const char* what;
  bool chosen_by_name;
};
constexpr PolicyEntry kPolicies[] = {
    {ServingPolicy::Ours, "ours", "a local search from the better of elk and fastest (the default)", true},
    {ServingPolicy::Elk, "elk", "the artifact's rule restated", true},
    {ServingPolicy::Fastest, "fastest", "every operator's fastest option", true},
    {ServingPolicy::Given, "given", "another tool's schedule (--schedule)", false},
};

}  // namespace

std::optional<ServingPolicy> serving_policy_from(const std::string& name) {
  for (const PolicyEntry& e : kPolicies)
    if (name == e.name) return e.policy;
  return std::nullopt;
}

const char* to_string(ServingPolicy policy) {
  for (const PolicyEntry& e : kPolicies)
    if (e.policy == policy) return e.name;
  return "ours";
}

std::vector<std::pair<std::string, std::string>> serving_policy_names() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const PolicyEntry& e : kPolicies)
    if (e.chosen_by_name) out.push_back({e.name, e.what});
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInfeasible = std::numeric_limits<double>::infinity();
constexpr double kColdThreshold = 1.01;  // DNNProgram.py COLD_THRESHOLD

// Operators of a class share their choices: the same shape, load kind and collective after them.
std::string class_key(const ServingOperator& o) {
  return shape_key(o.op) + "/" + to_string(o.hbm) +
         (o.collective_cycles > 0 ? "/all-reduce " + std::to_string(o.collective_cycles) : "");
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

void ServingOptionCache::prefetch(const TensorProgram& program, int threads) {
  std::vector<const TensorOperator*> missing;
  std::set<std::string> seen;
  for (const TensorOperator& op : program.ops) {
    const std::string key = shape_key(op);
    if (!tables_.count(key) && !stored_.count(key) && seen.insert(key).second) missing.push_back(&op);
  }
  if (missing.size() < 2 || threads < 2) return;
  const auto start = Clock::now();
  std::vector<std::optional<OperatorOptions>> out(missing.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < missing.size();) {
      try {
        out[i] = operator_options(program, *missing[i]);
      } catch (const std::invalid_argument&) {
        // Left out: options() computes it again on the calling thread, which throws there.
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t i = 0; i < missing.size(); ++i)
    if (out[i]) {
      out[i]->op = *missing[i];
      plans_ += out[i]->plans_priced;
      tables_.emplace(shape_key(*missing[i]), std::move(*out[i]));
    }
}

namespace {

// What makes two chips' tables differ: every field of the calibrated model's chip.
nlohmann::json chip_fingerprint(const Chip& c) {
  nlohmann::json j = {{"cores", c.cores},
                      {"sram_bytes_per_core", c.sram_bytes_per_core},
                      {"systolic", c.systolic},
                      {"flops_per_cycle", c.flops_per_cycle},
                      {"local_bytes_per_cycle", c.local_bytes_per_cycle},
                      {"noc_elems_per_cycle", c.noc_elems_per_cycle},
                      {"noc_topology", c.noc_topology},
                      {"inter_chip_overhead", c.inter_chip_overhead},
                      {"dtype_bytes", 2},  // serving's FP16
                      {"version", 1}};
  if (c.linked())  // a flat pool's files stay valid
    j.update({{"chips", c.chips},
              {"cores_per_chip", c.cores_per_chip},
              {"link_gbps", c.link_gbps},
              {"link_latency_ns", c.link_latency_ns},
              {"topology", c.topology},
              {"clock_hz", c.clock_hz}});
  return j;
}

}  // namespace

bool ServingOptionCache::load(const std::string& path, const Chip& chip, std::string& why_not) {
  const nlohmann::json doc = read_json_file(path);
  if (!doc.is_object() || doc.value("format", "") != "mlsys t10 option plans")
    throw InputError(path, "format", "", "not an option-plan file (\"format\": \"mlsys t10 option plans\")");
  if (doc.value("chip", nlohmann::json()) != chip_fingerprint(chip)) {
    why_not = "its tables are for another chip (" + doc.value("chip", nlohmann::json()).dump() + ")";
    return false;
  }
  const nlohmann::json& tables = doc.at("tables");
  if (!tables.is_array()) throw InputError(path, "tables", "", "expected a list");
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::string where = "tables[" + std::to_string(t) + "]";
    const nlohmann::json& j = tables[t];
    StoredTable s;
    try {
      const std::optional<OperatorType> type = operator_type_from(j.at("type").get<std::string>());
      if (!type) throw InputError(path, where + ".type", "", "not an operator type");
      s.op.type = *type;
      s.op.batch = j.at("batch").get<int64_t>();
      s.op.m = j.at("m").get<int64_t>();
      s.op.k = j.at("k").get<int64_t>();
      s.op.n = j.at("n").get<int64_t>();
      s.op.inputs = j.at("inputs").get<int64_t>();
      s.plans_priced = j.at("plans_priced").get<int64_t>();
      for (const nlohmann::json& p : j.at("plans")) {
        const std::vector<int64_t> v = p.get<std::vector<int64_t>>();
        if (v.size() != 11) throw InputError(path, where + ".plans", "", "a plan is 11 integers");
        StoredPlan sp;
        sp.plan.f_op = {v[0], v[1], v[2]};
        sp.plan.am = v[3], sp.plan.ak = v[4], sp.plan.bk = v[5], sp.plan.bn = v[6], sp.plan.cm = v[7];
        sp.plan.cn = v[8], sp.plan.pb = v[9];
        sp.no_copy = v[10] != 0;
        s.plans.push_back(sp);
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, where, "", std::string("malformed table: ") + e.what());
    }
    if (s.op.batch < 1 || s.op.m < 1 || s.op.k < 1 || s.op.n < 1 || s.plans.empty())
      throw InputError(path, where, "", "dimensions must be 1 or more, and a table has a plan");
    stored_[shape_key(s.op)] = std::move(s);
  }
  return true;
}

std::string ServingOptionCache::to_json_text(const Chip& chip) const {
  nlohmann::json tables = nlohmann::json::array();
  auto add = [&](const TensorOperator& op, const std::vector<StoredPlan>& plans, int64_t priced) {
    nlohmann::json list = nlohmann::json::array();
    for (const StoredPlan& s : plans) {
      const Plan& p = s.plan;
      list.push_back({p.f_op[0], p.f_op[1], p.f_op[2], p.am, p.ak, p.bk, p.bn, p.cm, p.cn, p.pb, s.no_copy ? 1 : 0});
    }
    tables.push_back({{"type", to_string(op.type)}, {"batch", op.batch}, {"m", op.m}, {"k", op.k}, {"n", op.n},
                      {"inputs", op.inputs}, {"plans_priced", priced}, {"plans", list}});
  };
  for (const auto& [key, table] : tables_) {
    if (table.options.empty()) continue;
    std::vector<StoredPlan> plans;
    for (const OperatorOption& o : table.options) plans.push_back({o.plan, !o.cold_is_hot});
    add(table.op, plans, table.plans_priced);
  }
  for (const auto& [key, s] : stored_)
    if (!tables_.count(key)) add(s.op, s.plans, s.plans_priced);
  return nlohmann::json{{"format", "mlsys t10 option plans"}, {"chip", chip_fingerprint(chip)}, {"tables", tables}}
      .dump();
}

const OperatorOptions& ServingOptionCache::options(const TensorProgram& program, const TensorOperator& op) {
  const std::string key = shape_key(op);
  const auto found = tables_.find(key);
  if (found != tables_.end()) return found->second;
  if (const auto stored = stored_.find(key); stored != stored_.end()) {
    // The plans the file kept, priced again by the model.
    OperatorOptions table;
    table.plans_priced = stored->second.plans_priced;
    for (const StoredPlan& s : stored->second.plans)
      table.options.push_back(price_option(program, op, s.plan, s.no_copy));
    table.op = op;
    ++from_file_;
    return tables_.emplace(key, std::move(table)).first->second;
  }
  const auto start = Clock::now();
  OperatorOptions table = operator_options(program, op);
  table.op = op;
  seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  plans_ += table.plans_priced;
  return tables_.emplace(key, std::move(table)).first->second;
}

ServingResult serve(const ServingProgram& program, const ServingChip& chip, const ServeOptions& options,
                    ServingOptionCache* cache) {
  ServingResult r;
  const auto start = Clock::now();
  Space s{program, chip, {}, {}, 0};
  std::map<std::string, int> classes;
  std::map<int, std::vector<ServingChoice>> by_class;
  for (const ServingOperator& op : program.ops) {
    const auto [it, fresh] = classes.emplace(class_key(op), static_cast<int>(classes.size()));
    s.class_of.push_back(it->second);
    if (fresh) {
      OperatorOptions own;
      if (!cache) own = operator_options(program.program, op.op);
      const OperatorOptions& table = cache ? cache->options(program.program, op.op) : own;
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
  if (!options.baselines &&
      (options.policy == ServingPolicy::Elk || options.policy == ServingPolicy::Fastest)) {
    r.choices = s.pick(options.policy == ServingPolicy::Elk ? elk_rule(s) : fastest(s));
    r.timeline = serving_timeline(program, chip, r.choices, r.lookahead);
    r.evaluations = 1;
    return r;
  }
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
