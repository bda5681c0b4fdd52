#include "support.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "sim/json_io.hpp"

namespace mlsys::test {

std::string source_path(const std::string& relative) { return std::string(MLSYS_SOURCE_DIR) + "/" + relative; }

Loaded load(const std::string& problem_path, const std::string& solution_path) {
  Loaded l;
  l.problem = load_problem(problem_path);
  l.graph = analyze_graph(l.problem, problem_path);
  l.schedule = load_schedule(solution_path, l.problem);
  return l;
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run_command(const std::string& binary, const std::string& args) {
  const std::string dir = temp_dir("cmd");
  const std::string command = "'" + binary + "' " + args + " >'" + dir + "/out' 2>'" + dir + "/err' </dev/null";
  // RUSAGE_CHILDREN counts every child waited for: the difference is the command's own CPU time, since no
  // other child of this process ends meanwhile (a CpuLoad is reaped only when it is destroyed).
  auto cpu = [] {
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  const double cpu_before = cpu();
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  CommandResult r;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.cpu_seconds = cpu() - cpu_before;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  return r;
}

CpuLoad::CpuLoad(int workers) {
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::string cpu = std::to_string(workers);
  // The timeout only bounds a load whose test crashed before the destructor.
  std::vector<std::string> args{"stress-ng", "--cpu", cpu, "--timeout", "900s", "--quiet"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int failed = posix_spawnp(&pid, "stress-ng", nullptr, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) {
    ADD_FAILURE() << "cannot start stress-ng (scripts/install-deps installs it): " << std::strerror(failed);
    return;
  }
  pid_ = pid;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its workers are running
}

CpuLoad::~CpuLoad() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::string temp_dir(const std::string& name) {
  static int counter = 0;
  auto path = std::filesystem::temp_directory_path() /
              ("mlsys-test-" + std::to_string(::getpid()) + "-" + name + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path);
  return path.string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace mlsys::test

namespace mlsys::test {

int ProblemBuilder::tensor(int64_t rows, int64_t cols) {
  heights_.push_back(rows);
  widths_.push_back(cols);
  return static_cast<int>(widths_.size()) - 1;
}

int ProblemBuilder::op(const char* type, const std::vector<int>& inputs, int output, double base) {
  inputs_.push_back(inputs);
  outputs_.push_back({output});
  types_.push_back(type);
  bases_.push_back(base);
  return static_cast<int>(types_.size()) - 1;
}

nlohmann::json ProblemBuilder::problem(double capacity, double bandwidth, int64_t native_w, int64_t native_h) const {
  return {{"widths", widths_},
          {"heights", heights_},
          {"inputs", inputs_},
          {"outputs", outputs_},
          {"base_costs", bases_},
          {"op_types", types_},
          {"fast_memory_capacity", capacity},
          {"slow_memory_bandwidth", bandwidth},
          {"native_granularity", {native_w, native_h}}};
}

RandomSplitK random_split_k(std::mt19937& rng) {
  const int64_t sides[] = {40, 64, 96, 100, 128, 160, 200, 256};
  auto side = [&] { return sides[rng() % 8]; };
  RandomSplitK c;
  ProblemBuilder b;
  auto tensor = [&](int64_t rows, int64_t cols) { return b.tensor(rows, cols); };
  auto op = [&](const char* type, std::vector<int> in, int out, bool in_subgraph = true) {
    const int o = b.op(type, in, out, std::uniform_int_distribution<int>(1, 4000)(rng));
    if (in_subgraph) c.ops.push_back(o);
  };
  const int64_t rows = side(), cols = side();
  c.K = side() + 64;  // above both natives' k limit (64, 128) often enough to split
  c.matmuls = 2 + static_cast<int>(rng() % 2);
  // The MatMuls share their LHS or their RHS, so that the subgraph is connected (M7) whatever the epilogues.
  const bool shared_lhs = rng() % 2 == 0;
  const int shared = shared_lhs ? tensor(rows, c.K) : tensor(c.K, cols);
  std::vector<int> x;  // the MatMuls' outputs
  for (int i = 0; i < c.matmuls; ++i) {
    const int lhs = shared_lhs ? shared : tensor(rows, c.K), rhs = shared_lhs ? tensor(c.K, cols) : shared;
    x.push_back(tensor(rows, cols));
    op("MatMul", {lhs, rhs}, x.back());
  }
  // An epilogue of `in`: unary, or binary with an extra graph input (loaded at the last k-step).
  auto epilogue = [&](std::vector<int> in) {
    if (rng() % 2) in.push_back(tensor(rows, cols));
    const int y = tensor(rows, cols);
    op("Pointwise", in, y);
    return y;
  };
  // Outputs a later op outside the subgraph reads, so that they may be retained (M9).
  std::vector<int> retainable;
  const int n = c.matmuls;
  c.shape = static_cast<int>(rng() % 6);
  switch (c.shape) {
    case 0:  // one op over every partial sum: one host for n accumulators
      retainable.push_back(epilogue(x));
      c.unhosted = n - 1;
      break;
    case 1:  // one epilogue each: every accumulator has its own host
      for (int t : x) retainable.push_back(epilogue({t}));
      c.unhosted = 0;
      break;
    case 2:  // the first two share an epilogue, the rest have their own
      retainable.push_back(epilogue({x[0], x[1]}));
      for (int i = 2; i < n; ++i) retainable.push_back(epilogue({x[i]}));
      c.unhosted = 1;
      break;
    case 3: {  // an ephemeral epilogue chain: Z = P(x0, x1), Y = Q(Z, x2...): one host for all
      const int z = tensor(rows, cols);
      op("Pointwise", {x[0], x[1]}, z);
      std::vector<int> rest{z};
      for (int i = 2; i < n; ++i) rest.push_back(x[i]);
      retainable.push_back(epilogue(rest));
      c.unhosted = n - 1;
      break;
    }
    case 4: {  // the chain with Z retained: Z and Y are both hosts, reached by x0 and x1; x2 reaches Y only
      const int z = tensor(rows, cols);
      op("Pointwise", {x[0], x[1]}, z);
      c.retain.push_back(z);
      std::vector<int> rest{z};
      for (int i = 2; i < n; ++i) rest.push_back(x[i]);
      retainable.push_back(epilogue(rest));
      c.unhosted = n - 2;
      break;
    }
    case 5:  // the first MatMul's output leaves the subgraph (its tile is its accumulator); the rest share one
      retainable.push_back(epilogue(std::vector<int>(x.begin() + 1, x.end())));
      retainable.push_back(x[0]);
      c.unhosted = n - 2;
      break;
  }
  // Half the time each output gets a reader outside the subgraph and is retained.
  for (int y : retainable)
    if (rng() % 2) {
      op("Pointwise", {y}, tensor(rows, cols), false);
      c.retain.push_back(y);
    }
  const double capacity = rng() % 3 ? 5000 + static_cast<int>(rng() % 120000) : 1e15;
  const double bandwidth = 1 + static_cast<int>(rng() % 40);
  const int64_t natives[] = {64, 128};
  const int64_t native_w = natives[rng() % 2], native_h = natives[rng() % 2];
  c.problem = b.problem(capacity, bandwidth, native_w, native_h);
  return c;
}

void expect_certified(double certified, double exact, int64_t ulps) {
  EXPECT_LE(certified, exact) << std::setprecision(17) << "certified " << certified << " above " << exact;
  EXPECT_GE(certified, exact * (1 - static_cast<double>(ulps + 2) * 0x1p-52))
      << std::setprecision(17) << "certified " << certified << " more than " << ulps << " ulps below " << exact;
}

namespace {
// MLSYS_CAMPAIGN_SEED's text, or nullptr when it is unset or empty.
const char* moved_seed_text() {
  const char* moving = std::getenv("MLSYS_CAMPAIGN_SEED");
  return moving && *moving ? moving : nullptr;
}
}  // namespace

unsigned campaign_seed(const char* seed_variable, unsigned seed) {
  const char* own = std::getenv(seed_variable);
  const char* moving = moved_seed_text();
  unsigned chosen = seed;
  if (own) {
    chosen = static_cast<unsigned>(std::atol(own));
  } else if (moving) {
    // FNV-1a of the moving seed's text, mixed with the campaign's own seed so that campaigns differ.
    uint32_t h = 2166136261u;
    for (const char* c = moving; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
    chosen = h ^ (seed * 2654435761u);
  }
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  // On a moved seed the shares are not asserted (expect_share), so the reproduction moves it the same way.
  const char* scale = std::getenv("MLSYS_CAMPAIGN_SCALE");
  const std::string how = !own && moving
                              ? std::string("MLSYS_CAMPAIGN_SEED='") + moving + "'" +
                                    (scale && *scale ? std::string(" MLSYS_CAMPAIGN_SCALE=") + scale : "")
                              : std::string(seed_variable) + "=" + std::to_string(chosen);
  std::cerr << "campaign seed " << chosen << "; reproduce with " << how << " ctest --preset release -R '"
            << (test ? test->name() : "") << "$'\n";
  return chosen;
}

bool seeds_moved() { return moved_seed_text() != nullptr; }

int campaign_trials(const char* trials_variable, int trials) {
  if (const char* own = std::getenv(trials_variable)) return std::atoi(own);
  const char* scale = std::getenv("MLSYS_CAMPAIGN_SCALE");
  if (seeds_moved() && scale && *scale)
    trials = std::max(1, static_cast<int>(std::lround(trials * std::atof(scale))));
  return trials;
}

void expect_share(int count, int checked, int divisor, const char* what) {
  if (seeds_moved()) {
    std::cerr << what << ": " << count << " of " << checked << " (share not asserted on a moved seed)\n";
    return;
  }
  EXPECT_GT(count, checked / divisor) << what << ": of " << checked;
}

std::pair<int, std::mt19937> campaign(const char* trials_variable, int trials, const char* seed_variable,
                                      unsigned seed) {
  return {campaign_trials(trials_variable, trials), std::mt19937(campaign_seed(seed_variable, seed))};
}

bool expect_deadline_promise(const CommandResult& r, double timeout, const std::string& out,
                             double first_schedule_cpu) {
  EXPECT_LT(r.wall_seconds, timeout + kDeadlineMargin) << "gone later than the timeout and its margin";
  if (r.exit_code == 0) return true;
  EXPECT_EQ(1, r.exit_code) << r.err;
  EXPECT_NE(std::string::npos, r.err.find("came before a first schedule was complete")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a partial file was left at " << out;
  EXPECT_LT(r.cpu_seconds, first_schedule_cpu)
      << "no schedule, though the process received " << r.cpu_seconds << " s of CPU, at least the "
      << first_schedule_cpu << " s its first schedule needs";
  std::cerr << "no schedule: the process received " << r.cpu_seconds << " s of CPU in " << r.wall_seconds
            << " s, below the " << first_schedule_cpu << " s its first schedule needs\n";
  return false;
}

}  // namespace mlsys::test
