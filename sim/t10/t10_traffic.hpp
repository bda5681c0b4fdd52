// Serving request traffic (docs/t10-traffic.md): requests arrive, wait, are batched into iterations of
// prefill chunks and decode steps by a batch scheduler, grow their KV cache in HBM, may be preempted when it
// would overflow, and finish with exactly their output tokens. The scheduler's state lives in TrafficEngine;
// the drivers only advance time: the analytic one (run_traffic) jumps from event to event, the SystemC one
// (t10_traffic_sim) runs arrivals and iterations as processes on the kernel. Both ask the same pricer for an
// iteration's time, which is the serving step model's timeline of that iteration (solver/t10_traffic_pricing).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/t10/t10_requests.hpp"
#include "sim/t10/t10_serving_io.hpp"

namespace mlsys::t10 {

// How iterations are formed (docs/t10-traffic.md#schedulers).
// - vllm: prefill first (vLLM's default scheduler): whole prompts of waiting requests, first come first
//   served, within the batch limit and the token budget, in an iteration of their own; otherwise one decode
//   step of every running request.
// - sarathi: chunked prefill under a token budget (Sarathi-Serve): every decoding request's token first, then
//   prefill chunks of admitted and then waiting requests, first come first served, until the budget is used.
// - decode-first: a decode step whenever some request decodes; prompts only when none does.
enum class BatchScheduler { Vllm, Sarathi, DecodeFirst };
std::optional<BatchScheduler> batch_scheduler_from(const std::string& name);
const char* to_string(BatchScheduler s);
std::vector<std::string> batch_scheduler_names();

inline constexpr int64_t kDefaultMaxIterations = 1'000'000;

struct TrafficOptions {
  BatchScheduler scheduler = BatchScheduler::Sarathi;
  int64_t max_batch = 64;       // requests in one iteration
  int64_t token_budget = 0;     // tokens in one iteration; 0: the scheduler's default (kDefaultTokenBudget)
  double kv_capacity_bytes = 0; // HBM left for the KV cache beside the weights; 0: unlimited
  int64_t kv_bytes_per_token = 0;
  double host_link_bytes_per_ms = 0;  // > 0: preempted caches are swapped to the host, else recomputed
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // 0: no objective
  // The run stops after this many iterations: each is kept (and reported), so an unbounded run would
  // exhaust memory on a request file the reader accepts (docs/t10-traffic.md#limits).
  int64_t max_iterations = kDefaultMaxIterations;
};

int64_t default_token_budget(BatchScheduler s);  // vllm 4,096; sarathi 512; decode-first 4,096

// What the pricer tells of one iteration.
struct IterationPrice {
  double ms = 0;
  double hbm_bytes = 0;        // read and written
  double compute_ms = 0;       // the operators' compute, without their exchanges
  double hbm_busy_ms = 0;      // the HBM channel's busy time
  bool exact = true;           // priced at its own shape (not from a bucket or by interpolation)
};
using IterationPricer = std::function<IterationPrice(const IterationShape&)>;

// One iteration as planned and run.
struct IterationRecord {
  double start_ms = 0, end_ms = 0;
  IterationShape shape;
  std::vector<int64_t> decode_kv;   // the KV length of each decoding request
  int64_t prefill_tokens = 0;       // prefill chunk tokens (recomputation included)
  int64_t prefill_requests = 0;
  int64_t queue = 0;                // requests waiting when it started
  double kv_bytes = 0;              // the KV cache after it
  double swap_ms = 0;               // host transfers of swapped caches before it
  int64_t preempted = 0;            // requests preempted to make room for it
  IterationPrice price;
  std::vector<int> decoding;                          // requests that decode one token
  std::vector<std::pair<int, int64_t>> prefill_chunks;  // requests and their chunk's tokens
};

struct RequestOutcome {
  ServingRequest request;
  enum class Status { Finished, Rejected, Unfinished } status = Status::Unfinished;
  std::string why;  // for a rejected or unfinished request
  double first_token_ms = -1, finish_ms = -1;
  int64_t generated = 0;  // output tokens produced
  int64_t preemptions = 0;
  double ttft_ms() const { return first_token_ms - request.arrival_ms; }
  double e2e_ms() const { return finish_ms - request.arrival_ms; }
  // Time per output token after the first; 0 for a request of one output token.
  double tpot_ms() const {
    return request.output_tokens > 1 ? (finish_ms - first_token_ms) / static_cast<double>(request.output_tokens - 1)
                                     : 0;
  }
};

// The scheduler's state between events. Drivers call arrive() for each request at its arrival time, then
// plan() whenever the chip is idle; a planned iteration is priced, run for its time and finished().
class TrafficEngine {
 public:
  TrafficEngine(const std::vector<ServingRequest>& requests, const TrafficOptions& options);
  void arrive(int request);
  // The next iteration, or nullopt when nothing can run (no request waits or runs). Admissions and
  // preemptions happen here.
  std::optional<IterationRecord> plan(double now_ms);
  void finish(const IterationRecord& it, double end_ms);
  bool idle() const { return running_.empty() && waiting_.empty(); }
  const std::vector<RequestOutcome>& outcomes() const { return outcomes_; }
  double kv_bytes() const { return kv_tokens_ * static_cast<double>(options_.kv_bytes_per_token); }
  double kv_peak_bytes() const { return kv_peak_tokens_ * static_cast<double>(options_.kv_bytes_per_token); }
  int64_t preemptions() const { return preemptions_; }
  int64_t swaps() const { return swaps_; }
  int64_t queue_length() const { return static_cast<int64_t>(waiting_.size()); }

 private:
  struct State {
    int64_t context = 0;    // tokens the next prefill covers (prompt, plus generated ones after a preemption)
    int64_t prefilled = 0;  // of those, processed so far
    int64_t cached = 0;     // tokens in the KV cache
    int64_t admitted_order = -1;
    bool decoding = false, swapped = false;
    int64_t chunk = 0;      // this iteration's prefill tokens
  };
  bool fits(int64_t extra_tokens) const;
  void admit(int r);
  void preempt(int r, IterationRecord& it);
  int64_t peak_tokens(int r) const;
  // The iteration's shape from its decoding requests and prefill chunks (and each decode's KV length).
  void shape_iteration(IterationRecord& it) const;

  std::vector<ServingRequest> requests_;
  TrafficOptions options_;
  std::vector<RequestOutcome> outcomes_;
  std::vector<State> state_;
  std::deque<int> waiting_;  // arrived (or preempted), in service order
  std::vector<int> running_; // admitted, in admission order
  int64_t kv_tokens_ = 0, kv_peak_tokens_ = 0, preemptions_ = 0, swaps_ = 0, admissions_ = 0;
};

struct TrafficRun {
  std::vector<RequestOutcome> requests;
  std::vector<IterationRecord> iterations;
  double makespan_ms = 0;
  double kv_peak_bytes = 0;
  int64_t preemptions = 0, swaps = 0;
  std::string stopped;  // why the run ended before every request did (empty: it did not)
};

// The fewest iterations any scheduler needs for `requests`: each decode step gives a request at most one
// token (its first comes with its prefill), and a step holds at most `max_batch` requests.
int64_t least_iterations(const std::vector<ServingRequest>& requests, int64_t max_batch);

// A planned iteration's time from `now_ms`: its host transfers, then the pricer's time. Both drivers time
// iterations here, so that they cannot disagree on how.
void time_iteration(IterationRecord& it, double now_ms, const IterationPricer& price);

// The analytic driver: from event to event, pricing each iteration with `price`. `progress`, if given, is
// told every few thousand iterations. The run stops at options.max_iterations, or when `stop` (asked
// between iterations) gives a reason; TrafficRun::stopped says why, and the requests left are unfinished.
TrafficRun run_traffic(const std::vector<ServingRequest>& requests, const TrafficOptions& options,
                       const IterationPricer& price,
                       const std::function<void(const std::string&)>& progress = nullptr,
                       const std::function<std::string()>& stop = nullptr);

// Percentiles as serving papers report them (nearest rank on the sorted values).
struct Distribution {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
  int64_t count = 0;
};
Distribution distribution(std::vector<double> values);

// What serving papers report of a run (docs/t10-traffic.md#metrics).
struct TrafficMetrics {
  int64_t arrived = 0, admitted = 0, completed = 0, rejected = 0, unfinished = 0;
  int64_t preempted_requests = 0, preemptions = 0, swaps = 0;
  Distribution ttft_ms, tpot_ms, e2e_ms;
  int64_t output_tokens = 0;           // generated by finished requests
  bool exact_output_tokens = true;     // every finished request generated exactly its output tokens
  int64_t met_slo = 0;                 // finished requests within both objectives
  double throughput_tokens_per_s = 0;  // output tokens over the time from the first arrival to the end
  double goodput_requests_per_s = 0;   // requests that met both objectives, over the same time
  double makespan_ms = 0, first_arrival_ms = 0;
  double kv_peak_bytes = 0;
  // The makespan's floors (docs/t10-traffic.md#bounds): every iteration's HBM channel time, and its compute.
  double hbm_floor_ms = 0, compute_floor_ms = 0;
  int64_t approximate_iterations = 0;  // priced from a bucket or by interpolation
};
TrafficMetrics summarize_traffic(const TrafficRun& run, const TrafficOptions& options);

}  // namespace mlsys::t10
