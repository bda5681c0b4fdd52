// Scheduling a decode step on the chip with HBM (docs/t10-serving.md#policies): one option per operator, and
// the loads as early as SRAM allows (the timeline of sim/t10/t10_serving.hpp decides when). The timeline is
// the oracle: every policy proposes choices and is told their makespan or the overflow.
//
// - `fastest`: every operator's fastest option (a baseline).
// - `elk`: the artifact's rule of thumb restated (platformxlab/elk, DNNProgram.py
//   search_optimal_global_config_icbm): each operator the fastest plan whose hot bytes fit the SRAM left
//   after 1.01 x (COLD_THRESHOLD) the next loading operator's smallest preload; loads in the option's own
//   cold layout, as the timeline counts them.
// - `ours` (the default): from the better of those two, a local search over the options of each class of
//   identical operators (a layer's QKV projection is one class over all layers), accepting a change when the
//   timeline's makespan falls, then over the HBM channel's lookahead (how many loads waiting for room a
//   smaller one may pass); never worse than either start.
// - `given`: another tool's schedule, per operator its cold (loaded) and hot bytes per core, priced by the
// same
//   timeline (`t10 serve --schedule`): the option with both sizes, else the one with that hot size, else the
//   fastest that holds no more than the given hot size for a product, the fastest for a vector operator (one
//   the two tools shape differently); each kind of match is counted, so a reader sees how closely the pricing
//   follows the schedule.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/t10/t10_serving.hpp"
#include "solver/t10_compile.hpp"

namespace mlsys::t10 {

enum class ServingPolicy { Ours, Elk, Fastest, Given };
std::optional<ServingPolicy> serving_policy_from(const std::string& name);
const char* to_string(ServingPolicy policy);
// The policies a user names (--policy), each with one line on what it does.
std::vector<std::pair<std::string, std::string>> serving_policy_names();

struct ServingResult {
  std::vector<ServingChoice> choices;
  int lookahead = 1;  // how many waiting loads the HBM channel may look past (serving_next_load)
  ServingTimeline timeline;
  double lower_bound = 0;                         // cycles, serving_lower_bound over the same option sets
  double elk_makespan = 0, fastest_makespan = 0;  // the baselines' makespans (0: overflow)
  int64_t evaluations = 0, classes = 0, options = 0;
  double options_seconds = 0, schedule_seconds = 0;
  // Policy `given`: operators matched on both sizes, on the hot size only, and to the nearest option.
  int64_t given_exact = 0, given_hot_only = 0, given_nearest = 0;
};

// One operator of another tool's schedule: bytes per core loaded (its cold layout) and held while running.
struct GivenChoice {
  int64_t cold = 0, hot = 0;
};

struct ServeOptions {
  ServingPolicy policy = ServingPolicy::Ours;
  double seconds = 30;             // the local search's deadline
  std::vector<GivenChoice> given;  // policy `given`: one per operator
  // false: policies elk and fastest run only their own rule (one timeline, no baselines, no lower bound),
  // as a serving run does for each of its iterations.
  bool baselines = true;
  std::function<void(const std::string&)> progress;
};

// Each operator shape's options, computed once for every program priced on one chip (a serving run prices
// thousands of iterations whose operators repeat).
class ServingOptionCache {
 public:
  const OperatorOptions& options(const TensorProgram& program, const TensorOperator& op);
  // Computes the tables `program` lacks on `threads` threads at once (each table is independent work).
  void prefetch(const TensorProgram& program, int threads);
  int64_t tables() const { return static_cast<int64_t>(tables_.size()); }
  double seconds() const { return seconds_; }
  int64_t plans_priced() const { return plans_; }
  int64_t tables_from_file() const { return from_file_; }

  // A file of the tables' Pareto plans (docs/t10-traffic.md#options-cache): only which plans survive is
  // kept; their prices are computed again by the model when a table is first asked for. A file for another
  // chip is ignored (returns false with the reason); a malformed one throws InputError naming the field.
  bool load(const std::string& path, const Chip& chip, std::string& why_not);
  std::string to_json_text(const Chip& chip) const;

 private:
  struct StoredPlan {
    Plan plan;
    bool no_copy = false;
  };
  struct StoredTable {
    TensorOperator op;
    std::vector<StoredPlan> plans;
    int64_t plans_priced = 0;
  };
  std::map<std::string, OperatorOptions> tables_;
  std::map<std::string, StoredTable> stored_;  // from a file, not yet priced
  int64_t from_file_ = 0;
  double seconds_ = 0;
  int64_t plans_ = 0;
};

// Throws std::invalid_argument when an operator has no plan that fits a core, or a given schedule's length is
// not the operator count. With `cache`, option tables come from it (and are added to it).
ServingResult serve(const ServingProgram& program, const ServingChip& chip, const ServeOptions& options,
                    ServingOptionCache* cache = nullptr);

}  // namespace mlsys::t10
