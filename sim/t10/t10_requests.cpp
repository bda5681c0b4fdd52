#include "sim/t10/t10_requests.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "sim/number_format.hpp"
#include "sim/violation.hpp"

namespace mlsys::t10 {

namespace {

std::string line_field(size_t line, const std::string& field) {
  return "line " + std::to_string(line) + (field.empty() ? "" : ": " + field);
}

int64_t token_count(const nlohmann::json& j, const std::string& file, size_t line, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw InputError(file, line_field(line, key), "", "missing (a count of tokens, 1 or more)");
  if (!it->is_number_integer() && !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()))
    throw InputError(file, line_field(line, key), "", "expected a whole number of tokens, got " + it->dump());
  const double v = it->get<double>();
  if (!(v >= 1) || v > static_cast<double>(kMaxRequestTokens))
    throw InputError(file, line_field(line, key), "",
                     "expected 1 to " + std::to_string(kMaxRequestTokens) + " tokens, got " + it->dump());
  return static_cast<int64_t>(v);
}

}  // namespace

std::vector<ServingRequest> parse_requests(const std::string& text, const std::string& file) {
  std::vector<ServingRequest> out;
  std::istringstream lines(text);
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (out.size() >= kMaxRequests)
      throw InputError(file, line_field(number, ""), "",
                       "more than " + std::to_string(kMaxRequests) + " requests in one file");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(file, line_field(number, ""), "", std::string("not JSON: ") + e.what());
    }
    if (!j.is_object())
      throw InputError(file, line_field(number, ""), "",
                       "a request is an object {\"arrival_ms\", \"prompt_tokens\", \"output_tokens\"}");
    ServingRequest r;
    const auto arrival = j.find("arrival_ms");
    if (arrival == j.end()) throw InputError(file, line_field(number, "arrival_ms"), "", "missing");
    if (!arrival->is_number() || !(arrival->get<double>() >= 0) || arrival->get<double>() > kMaxArrivalMs)
      throw InputError(file, line_field(number, "arrival_ms"), "",
                       "expected milliseconds from 0 to " + format_number(kMaxArrivalMs) + ", got " +
                           arrival->dump());
    r.arrival_ms = arrival->get<double>();
    r.prompt_tokens = token_count(j, file, number, "prompt_tokens");
    r.output_tokens = token_count(j, file, number, "output_tokens");
    if (const auto id = j.find("id"); id != j.end()) {
      if (id->is_string())
        r.id = id->get<std::string>();
      else if (id->is_number_integer())
        r.id = std::to_string(id->get<int64_t>());
      else
        throw InputError(file, line_field(number, "id"), "", "expected a string or an integer, got " + id->dump());
      if (r.id.size() > 256) throw InputError(file, line_field(number, "id"), "", "longer than 256 characters");
    } else {
      r.id = std::to_string(out.size());
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw InputError(file, "", "", "no request in the file (one JSON object a line)");
  std::stable_sort(out.begin(), out.end(),
                   [](const ServingRequest& a, const ServingRequest& b) { return a.arrival_ms < b.arrival_ms; });
  return out;
}

std::vector<ServingRequest> read_requests_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "", "cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_requests(buffer.str(), path);
}

std::string requests_to_jsonl(const std::vector<ServingRequest>& requests) {
  std::string out;
  for (const ServingRequest& r : requests)
    out += nlohmann::json{{"id", r.id},
                          {"arrival_ms", r.arrival_ms},
                          {"prompt_tokens", r.prompt_tokens},
                          {"output_tokens", r.output_tokens}}
               .dump() +
           "\n";
  return out;
}

std::optional<Workload> workload_preset(const std::string& name) {
  if (name != "conversation") return std::nullopt;
  // Azure LLM inference trace 2023, conversation (Splitwise, ISCA'24; the copy Vidur distributes as
  // data/processed_traces/splitwise_conv.csv, 19,366 requests): prompt mean 1,154.7 and standard deviation
  // 1,108.8 tokens (2 to 14,050), output mean 211.1 and 162.9 (7 to 1,000); docs/t10-traffic.md#presets.
  Workload w;
  w.prompt = {LengthDistribution::Kind::Lognormal, 1154.7, 1108.8, 2, 14050};
  w.output = {LengthDistribution::Kind::Lognormal, 211.1, 162.9, 7, 1000};
  w.arrivals.rate_per_s = 5.53;  // the trace's own: 19,366 requests in 3,501.7 s
  return w;
}

std::vector<std::string> workload_preset_names() { return {"conversation"}; }

void validate_workload(const Workload& w) {
  auto fail = [](const std::string& option, const std::string& why) { throw InputError("", option, "", why); };
  if (!(w.arrivals.rate_per_s > 0) || w.arrivals.rate_per_s > 1e6)
    fail("--rate", "expected requests per second above 0 and at most 10^6");
  if (!(w.arrivals.cv > 0) || w.arrivals.cv > 100) fail("--cv", "expected a coefficient of variation in (0, 100]");
  if (w.requests < 1 || w.requests > static_cast<int64_t>(kMaxRequests))
    fail("--requests", "expected 1 to " + std::to_string(kMaxRequests));
  for (const auto& [name, d] : {std::pair{"prompt", &w.prompt}, std::pair{"output", &w.output}}) {
    const std::string prefix = std::string("--") + name;
    if (!(d->mean >= 1) || d->mean > static_cast<double>(kMaxRequestTokens))
      fail(prefix + "-mean", "expected 1 to " + std::to_string(kMaxRequestTokens) + " tokens");
    if (!(d->spread >= 0) || d->spread > static_cast<double>(kMaxRequestTokens))
      fail(prefix + "-spread", "expected 0 to " + std::to_string(kMaxRequestTokens) + " tokens");
    if (d->kind == LengthDistribution::Kind::Uniform && d->mean - d->spread < 1)
      fail(prefix + "-spread", "a uniform length's mean less its spread must be 1 token or more");
    if (d->min < 1 || d->max < d->min || d->max > kMaxRequestTokens)
      fail(prefix + "-max", "expected 1 <= min <= max <= " + std::to_string(kMaxRequestTokens));
  }
}

std::vector<ServingRequest> generate_requests(const Workload& w) {
  validate_workload(w);
  std::mt19937_64 rng(w.seed);
  auto length = [&](const LengthDistribution& d) {
    double v = d.mean;
    if (d.kind == LengthDistribution::Kind::Uniform) {
      v = std::uniform_real_distribution<double>(d.mean - d.spread, d.mean + d.spread)(rng);
    } else if (d.kind == LengthDistribution::Kind::Lognormal && d.spread > 0) {
      // The lognormal with this mean and standard deviation: sigma^2 = ln(1 + s^2/m^2), mu = ln m - sigma^2/2.
      const double sigma2 = std::log1p(d.spread * d.spread / (d.mean * d.mean));
      v = std::lognormal_distribution<double>(std::log(d.mean) - sigma2 / 2, std::sqrt(sigma2))(rng);
    }
    return std::clamp<int64_t>(std::llround(v), d.min, d.max);
  };
  const double mean_gap_ms = 1000.0 / w.arrivals.rate_per_s;
  std::vector<ServingRequest> out;
  out.reserve(static_cast<size_t>(w.requests));
  double t = 0;
  for (int64_t i = 0; i < w.requests; ++i) {
    if (i > 0) {
      if (w.arrivals.kind == ArrivalProcess::Kind::Poisson) {
        t += std::exponential_distribution<double>(1 / mean_gap_ms)(rng);
      } else {
        const double shape = 1 / (w.arrivals.cv * w.arrivals.cv);
        t += std::gamma_distribution<double>(shape, mean_gap_ms / shape)(rng);
      }
    }
    ServingRequest r;
    r.id = std::to_string(i);
    r.arrival_ms = t;
    r.prompt_tokens = length(w.prompt);
    r.output_tokens = length(w.output);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace mlsys::t10
