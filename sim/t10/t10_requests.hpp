// Request traffic for LLM serving (docs/t10-traffic.md#workloads): a request file (JSON lines) or a generated
// workload (arrivals at a rate, prompt and output lengths drawn from a distribution, with a seed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlsys::t10 {

struct ServingRequest {
  std::string id;
  double arrival_ms = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;
};

// Limits a reader accepts; beyond them a file is refused, never simulated for hours.
inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 20;  // per prompt or output
inline constexpr size_t kMaxRequests = 1'000'000;
inline constexpr double kMaxArrivalMs = 1e10;  // about 116 days

// One request a line: {"arrival_ms": t, "prompt_tokens": p, "output_tokens": o[, "id": "..."]}. Blank lines
// are skipped; requests are returned in arrival order (ties keep the file's order). Throws InputError naming
// the file, the line ("line 12") and the field.
std::vector<ServingRequest> parse_requests(const std::string& text, const std::string& file);
std::vector<ServingRequest> read_requests_file(const std::string& path);
// The same lines back (for --write-requests and round trips).
std::string requests_to_jsonl(const std::vector<ServingRequest>& requests);

// A length distribution: fixed at `mean`; uniform on [mean - spread, mean + spread]; or lognormal with that
// mean and standard deviation. Draws are rounded to whole tokens and clipped to [min, max].
struct LengthDistribution {
  enum class Kind { Fixed, Uniform, Lognormal } kind = Kind::Fixed;
  double mean = 0, spread = 0;
  int64_t min = 1, max = kMaxRequestTokens;
};
// Arrivals: a Poisson process (exponential gaps), or gamma gaps with coefficient of variation `cv` (1 is
// Poisson; above 1, burstier), at `rate_per_s` requests per second.
struct ArrivalProcess {
  enum class Kind { Poisson, Gamma } kind = Kind::Poisson;
  double rate_per_s = 1, cv = 1;
};
struct Workload {
  ArrivalProcess arrivals;
  LengthDistribution prompt, output;
  int64_t requests = 100;
  uint64_t seed = 1;
};

// A preset's lengths (its arrival rate is the caller's): "conversation", the Azure LLM inference trace's
// conversation requests as Splitwise published them and Vidur distributes them (docs/t10-traffic.md#presets).
std::optional<Workload> workload_preset(const std::string& name);
std::vector<std::string> workload_preset_names();

// Throws InputError naming the option (--rate, --prompt-mean ...) when a parameter is out of range.
void validate_workload(const Workload& w);
std::vector<ServingRequest> generate_requests(const Workload& w);

}  // namespace mlsys::t10
