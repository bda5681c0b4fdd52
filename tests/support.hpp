// Helpers shared by the test suites: paths to checked-in data and running the CLI binaries.
#pragma once

#include <random>
#include <string>
#include <utility>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "verifier/verify.hpp"

namespace mlsys::test {

std::string source_path(const std::string& relative);  // relative to the repository root

struct Loaded {
  Problem problem;
  Graph graph;
  Schedule schedule;
};
Loaded load(const std::string& problem_path, const std::string& solution_path);

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
  double wall_seconds = 0;  // from the start of the command to its end
  double cpu_seconds = 0;   // user + system time the command (and its children) received
};
// Runs `binary args...` with stdout and stderr captured into files (no shell quoting issues for our paths).
CommandResult run_command(const std::string& binary, const std::string& args);

// A campaign's number of trials and random generator: the defaults, or those the environment names
// (docs/bounds.md#soundness runs them longer). Without its own seed variable, a campaign's seed moves with
// MLSYS_CAMPAIGN_SEED (scripts/test derives it from the commit), so that CI runs new problems each commit;
// the seed and the command that reproduces it go to stderr, which ctest shows when the test fails.
std::pair<int, std::mt19937> campaign(const char* trials_variable, int trials, const char* seed_variable,
                                      unsigned seed);

// A busy machine for as long as the object lives: `stress-ng --cpu workers` in a process group of its own,
// stopped by the destructor. Deadline tests check the programs' promises under a load they make themselves.
// Fails the calling test when stress-ng is missing (scripts/install-deps installs it).
// A certified bound against its hand-derived exact value: never above it, and below it by no more than the
// stated rounding step of `ulps` (docs/bounds.md#rounding).
void expect_certified(double certified, double exact, int64_t ulps);

// The seed a campaign runs: `seed_variable`'s value, else `seed` moved by MLSYS_CAMPAIGN_SEED, printed.
unsigned campaign_seed(const char* seed_variable, unsigned seed);

// A campaign's problem count: `trials_variable`'s value, else `trials`; on a moved seed (MLSYS_CAMPAIGN_SEED)
// scaled by MLSYS_CAMPAIGN_SCALE (default 1), at least 1.
int campaign_trials(const char* trials_variable, int trials);

// True when MLSYS_CAMPAIGN_SEED moves the campaigns' seeds.
bool seeds_moved();

// A campaign's coverage: its theorem binds (or its case occurs) on more than `checked / divisor` of its
// problems. The shares are calibrated on each campaign's own seed; on a moved seed the campaign checks
// soundness only (the same assertions of never above the optimum), and the share is printed, not asserted.
void expect_share(int count, int checked, int divisor, const char* what);

// mlsys's deadline promise on one finished run of `mlsys PROBLEM OUT --timeout T` (docs/solver.md#deadline):
// the process is gone by T plus kDeadlineMargin, and it leaves either a schedule (exit 0, returned true for
// the caller to verify) or exit 1 with the documented message and no file at `out`. The second outcome is
// a failure only when the process received at least `first_schedule_cpu` seconds of CPU, what its first
// schedule needs (measured and documented per graph in docs/solver.md#deadline): on a busy machine the
// program cannot control how much CPU it gets, only what it does with it.
inline constexpr double kDeadlineMargin = 0.25;
bool expect_deadline_promise(const CommandResult& r, double timeout, const std::string& out,
                             double first_schedule_cpu);

class CpuLoad {
 public:
  explicit CpuLoad(int workers);
  ~CpuLoad();
  CpuLoad(const CpuLoad&) = delete;
  CpuLoad& operator=(const CpuLoad&) = delete;

 private:
  int pid_ = -1;
};

// A guard against a hang, not a speed assertion: a closed form or a refusal answers in milliseconds, the
// walk it replaces would take hours, and a loaded machine is never this much slower. Speeds are measured in
// bench/ (docs/performance.md).
inline constexpr double kHangGuardSeconds = 60;

// A fresh temporary directory for the calling test.
std::string temp_dir(const std::string& name);
void write_text(const std::string& path, const std::string& text);

}  // namespace mlsys::test

#include <nlohmann/json.hpp>
#include <random>
#include <vector>

namespace mlsys::test {

// A problem's JSON built one tensor and one op at a time (the random generators of the tests).
class ProblemBuilder {
 public:
  int tensor(int64_t rows, int64_t cols);  // returns the tensor's index
  int op(const char* type, const std::vector<int>& inputs, int output, double base);  // the op's index
  int64_t rows(int t) const { return heights_[t].get<int64_t>(); }
  int64_t cols(int t) const { return widths_[t].get<int64_t>(); }
  nlohmann::json problem(double capacity, double bandwidth, int64_t native_w, int64_t native_h) const;

 private:
  nlohmann::json widths_ = nlohmann::json::array(), heights_ = nlohmann::json::array(),
                 inputs_ = nlohmann::json::array(), outputs_ = nlohmann::json::array(),
                 types_ = nlohmann::json::array(), bases_ = nlohmann::json::array();
};

// A random subgraph of 2 or 3 split-K MatMuls of equal K (sometimes sharing their LHS) whose outputs reach
// the subgraph's outputs through Pointwise epilogues of several shapes (M20 D, revision of 2026-11-24): one op
// over all partial sums, one epilogue each, a pair and a single, an epilogue chain, a retained intermediate
// output, a MatMul without an epilogue. Unary and binary (extra input) epilogues; some outputs retained.
// `unhosted` is the number of partial sums without a host, derived by hand for each shape (not by the
// matching the step model runs).
struct RandomSplitK {
  nlohmann::json problem;
  std::vector<int> ops;     // the subgraph, in declared order (the problem may hold more ops)
  std::vector<int> retain;  // outputs of the subgraph to retain
  int shape = 0;
  int matmuls = 2;
  int unhosted = 0;
  int64_t K = 0;
};
RandomSplitK random_split_k(std::mt19937& rng);

}  // namespace mlsys::test
