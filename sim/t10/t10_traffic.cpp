#include "sim/t10/t10_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace mlsys::t10 {

std::optional<BatchScheduler> batch_scheduler_from(const std::string& name) {
  if (name == "vllm") return BatchScheduler::Vllm;
  if (name == "sarathi") return BatchScheduler::Sarathi;
  if (name == "decode-first") return BatchScheduler::DecodeFirst;
  return std::nullopt;
}

const char* to_string(BatchScheduler s) {
  switch (s) {
    case BatchScheduler::Vllm: return "vllm";
    case BatchScheduler::Sarathi: return "sarathi";
    case BatchScheduler::DecodeFirst: return "decode-first";
  }
  return "?";
}

std::vector<std::string> batch_scheduler_names() { return {"vllm", "sarathi", "decode-first"}; }

int64_t default_token_budget(BatchScheduler s) {
  // vLLM's max_num_batched_tokens is at least the model's length; Sarathi-Serve's strict-latency budget.
  return s == BatchScheduler::Sarathi ? 512 : 4096;
}

TrafficEngine::TrafficEngine(const std::vector<ServingRequest>& requests, const TrafficOptions& options)
    : requests_(requests), options_(options), state_(requests.size()) {
  if (options_.token_budget <= 0) options_.token_budget = default_token_budget(options_.scheduler);
  if (options_.max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
  outcomes_.reserve(requests.size());
  for (const ServingRequest& r : requests) {
    RequestOutcome o;
    o.request = r;
    outcomes_.push_back(std::move(o));
  }
}

int64_t TrafficEngine::peak_tokens(int r) const {
  return requests_[r].prompt_tokens + requests_[r].output_tokens - 1;
}

bool TrafficEngine::fits(int64_t extra_tokens) const {
  if (options_.kv_capacity_bytes <= 0) return true;
  return static_cast<double>(kv_tokens_ + extra_tokens) * static_cast<double>(options_.kv_bytes_per_token) <=
         options_.kv_capacity_bytes;
}

void TrafficEngine::arrive(int r) {
  RequestOutcome& o = outcomes_[r];
  const double need = static_cast<double>(peak_tokens(r)) * static_cast<double>(options_.kv_bytes_per_token);
  if (options_.kv_capacity_bytes > 0 && need > options_.kv_capacity_bytes) {
    o.status = RequestOutcome::Status::Rejected;
    o.why = "its KV cache grows to " + std::to_string(static_cast<int64_t>(need)) + " B, above the " +
            std::to_string(static_cast<int64_t>(options_.kv_capacity_bytes)) +
            " B the HBM has beside the weights";
    return;
  }
  state_[r].context = requests_[r].prompt_tokens;
  waiting_.push_back(r);
}

void TrafficEngine::admit(int r) {
  state_[r].admitted_order = admissions_++;
  running_.push_back(r);
}

void TrafficEngine::preempt(int r, IterationRecord& it) {
  State& s = state_[r];
  running_.erase(std::find(running_.begin(), running_.end(), r));
  kv_tokens_ -= s.cached;
  ++outcomes_[r].preemptions;
  ++preemptions_;
  ++it.preempted;
  if (options_.host_link_bytes_per_ms > 0) {  // swapped out: its cache comes back as it was
    s.swapped = true;
    ++swaps_;
    it.swap_ms += static_cast<double>(s.cached) * static_cast<double>(options_.kv_bytes_per_token) /
                  options_.host_link_bytes_per_ms;
  } else {  // recomputed: the prompt and what it generated are prefilled again
    s.context = requests_[r].prompt_tokens + outcomes_[r].generated;
    s.prefilled = 0;
    s.cached = 0;
    s.decoding = false;
  }
  waiting_.push_front(r);
}

std::optional<IterationRecord> TrafficEngine::plan(double now_ms) {
  (void)now_ms;
  IterationRecord it;
  it.queue = static_cast<int64_t>(waiting_.size());
  const int64_t budget = options_.token_budget;
  // The decoding requests, oldest admission first, within the batch limit; the newest is preempted first
  // when their next rows do not fit.
  auto decoders = [&] {
    std::vector<int> d;
    for (int r : running_)
      if (state_[r].decoding && static_cast<int64_t>(d.size()) < options_.max_batch) d.push_back(r);
    return d;
  };
  auto make_room_for_decodes = [&] {
    std::vector<int> d = decoders();
    while (!d.empty() && !fits(static_cast<int64_t>(d.size()))) {
      preempt(running_.back(), it);
      d = decoders();
    }
    return d;
  };
  int64_t chunk_tokens = 0;
  auto swap_in = [&](int r) {
    State& s = state_[r];
    if (!fits(chunk_tokens + s.cached)) return false;
    it.swap_ms += static_cast<double>(s.cached) * static_cast<double>(options_.kv_bytes_per_token) /
                  options_.host_link_bytes_per_ms;
    kv_tokens_ += s.cached;
    s.swapped = false;
    waiting_.pop_front();
    admit(r);
    return true;
  };
  // Whole prompts of waiting requests, first come first served (vLLM's prefill and decode-first's).
  auto admit_whole_prompts = [&] {
    while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < options_.max_batch) {
      const int r = waiting_.front();
      State& s = state_[r];
      if (s.swapped) {
        if (!swap_in(r)) break;
        continue;
      }
      const int64_t need = s.context - s.prefilled;
      if (!it.prefill_chunks.empty() && chunk_tokens + need > budget) break;
      if (!fits(chunk_tokens + need)) break;
      waiting_.pop_front();
      admit(r);
      it.prefill_chunks.push_back({r, need});
      chunk_tokens += need;
    }
  };
  switch (options_.scheduler) {
    case BatchScheduler::Vllm:
      admit_whole_prompts();
      if (it.prefill_chunks.empty()) it.decoding = make_room_for_decodes();
      break;
    case BatchScheduler::DecodeFirst:
      it.decoding = make_room_for_decodes();
      if (it.decoding.empty()) admit_whole_prompts();
      break;
    case BatchScheduler::Sarathi: {
      it.decoding = make_room_for_decodes();
      const int64_t decode_tokens = static_cast<int64_t>(it.decoding.size());
      int64_t left = budget - decode_tokens;
      auto free_tokens = [&] {
        if (options_.kv_capacity_bytes <= 0) return left;
        const int64_t capacity = static_cast<int64_t>(
            std::floor(options_.kv_capacity_bytes / static_cast<double>(options_.kv_bytes_per_token)));
        return std::min(left, capacity - kv_tokens_ - decode_tokens - chunk_tokens);
      };
      for (int r : running_) {  // prompts under way, in admission order
        const State& s = state_[r];
        if (s.decoding || left <= 0) continue;
        const int64_t q = std::min(s.context - s.prefilled, free_tokens());
        if (q <= 0) break;
        it.prefill_chunks.push_back({r, q});
        chunk_tokens += q;
        left -= q;
      }
      while (left > 0 && !waiting_.empty() && static_cast<int64_t>(running_.size()) < options_.max_batch) {
        const int r = waiting_.front();
        if (state_[r].swapped) {
          if (!swap_in(r)) break;
          continue;
        }
        const int64_t q = std::min(state_[r].context - state_[r].prefilled, free_tokens());
        if (q <= 0) break;
        waiting_.pop_front();
        admit(r);
        it.prefill_chunks.push_back({r, q});
        chunk_tokens += q;
        left -= q;
      }
      break;
    }
  }
  if (it.decoding.empty() && it.prefill_chunks.empty()) {
    if (it.swap_ms > 0) throw std::logic_error("a swap planned with no iteration to run");
    return std::nullopt;
  }
  shape_iteration(it);
  return it;
}

void TrafficEngine::shape_iteration(IterationRecord& it) const {
  // The shape: every token through the per-token operators; attention per group of requests that share a
  // query length, a context and a cached length.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> groups;
  for (int r : it.decoding) {
    const int64_t cached = state_[r].cached;
    it.decode_kv.push_back(cached);
    ++groups[{1, cached, cached}];
  }
  for (const auto& [r, q] : it.prefill_chunks) {
    const State& s = state_[r];
    ++groups[{q, s.prefilled + q, s.prefilled}];
    it.prefill_tokens += q;
    ++it.prefill_requests;
  }
  it.shape.tokens = static_cast<int64_t>(it.decoding.size()) + it.prefill_tokens;
  // Decode groups first (query 1), longest context first, so that a decode-only iteration of one group is
  // exactly the one-step decode shape.
  std::vector<AttentionGroup> ordered;
  for (const auto& [key, count] : groups)
    ordered.push_back({count, std::get<0>(key), std::get<1>(key), std::get<2>(key)});
  std::stable_sort(ordered.begin(), ordered.end(), [](const AttentionGroup& a, const AttentionGroup& b) {
    return std::tie(a.query, b.context) < std::tie(b.query, a.context);
  });
  it.shape.groups = std::move(ordered);
}

void TrafficEngine::finish(const IterationRecord& it, double end_ms) {
  std::vector<int> done;
  auto produce = [&](int r) {
    RequestOutcome& o = outcomes_[r];
    ++o.generated;
    if (o.first_token_ms < 0) o.first_token_ms = end_ms;
    if (o.generated == requests_[r].output_tokens) done.push_back(r);
  };
  for (int r : it.decoding) {
    ++state_[r].cached;
    ++kv_tokens_;
    produce(r);
  }
  for (const auto& [r, q] : it.prefill_chunks) {
    State& s = state_[r];
    s.prefilled += q;
    s.cached += q;
    kv_tokens_ += q;
    if (s.prefilled == s.context) {
      s.decoding = true;
      produce(r);
    }
  }
  kv_peak_tokens_ = std::max(kv_peak_tokens_, kv_tokens_);
  for (int r : done) {
    RequestOutcome& o = outcomes_[r];
    o.status = RequestOutcome::Status::Finished;
    o.finish_ms = end_ms;
    kv_tokens_ -= state_[r].cached;
    state_[r].cached = 0;
    running_.erase(std::find(running_.begin(), running_.end(), r));
  }
}

void time_iteration(IterationRecord& it, double now_ms, const IterationPricer& price) {
  it.price = price(it.shape);
  it.start_ms = now_ms;
  it.end_ms = now_ms + it.swap_ms + it.price.ms;
}

int64_t least_iterations(const std::vector<ServingRequest>& requests, int64_t max_batch) {
  int64_t longest = 0, decode_tokens = 0;
  for (const ServingRequest& q : requests) {
    longest = std::max(longest, q.output_tokens - 1);
    decode_tokens += q.output_tokens - 1;
  }
  return std::max(longest, (decode_tokens + max_batch - 1) / std::max<int64_t>(max_batch, 1));
}

TrafficRun run_traffic(const std::vector<ServingRequest>& requests, const TrafficOptions& options,
                       const IterationPricer& price, const std::function<void(const std::string&)>& progress,
                       const std::function<std::string()>& stop) {
  TrafficEngine engine(requests, options);
  TrafficRun run;
  const size_t n = requests.size();
  size_t next = 0;
  double now = n ? requests[0].arrival_ms : 0;
  while (true) {
    if (static_cast<int64_t>(run.iterations.size()) >= options.max_iterations) {
      run.stopped = "the limit of " + std::to_string(options.max_iterations) + " iterations";
      break;
    }
    if (stop)
      if (std::string why = stop(); !why.empty()) {
        run.stopped = std::move(why);
        break;
      }
    while (next < n && requests[next].arrival_ms <= now) engine.arrive(static_cast<int>(next++));
    std::optional<IterationRecord> it = engine.plan(now);
    if (!it) {
      if (next >= n) break;
      now = std::max(now, requests[next].arrival_ms);
      continue;
    }
    time_iteration(*it, now, price);
    engine.finish(*it, it->end_ms);
    it->kv_bytes = engine.kv_bytes();
    now = it->end_ms;
    run.iterations.push_back(std::move(*it));
    if (progress && run.iterations.size() % 2000 == 0)
      progress("t10 serve: " + std::to_string(run.iterations.size()) + " iterations, " + std::to_string(next) +
               " of " + std::to_string(n) + " requests arrived, at " + std::to_string(now) + " ms");
  }
  run.requests = engine.outcomes();
  for (RequestOutcome& o : run.requests)
    if (o.status == RequestOutcome::Status::Unfinished)
      o.why = "generated " + std::to_string(o.generated) + " of " + std::to_string(o.request.output_tokens) +
              " tokens when the run ended" + (run.stopped.empty() ? "" : " (stopped: " + run.stopped + ")");
  run.makespan_ms = run.iterations.empty() ? 0 : run.iterations.back().end_ms;
  run.kv_peak_bytes = engine.kv_peak_bytes();
  run.preemptions = engine.preemptions();
  run.swaps = engine.swaps();
  return run;
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  auto rank = [&](double p) {
    const size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::min(values.size() - 1, k == 0 ? 0 : k - 1)];
  };
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p99 = rank(0.99);
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.max = values.back();
  return d;
}

TrafficMetrics summarize_traffic(const TrafficRun& run, const TrafficOptions& options) {
  TrafficMetrics m;
  std::vector<double> ttft, tpot, e2e;
  for (const RequestOutcome& o : run.requests) {
    ++m.arrived;
    m.preempted_requests += o.preemptions > 0;
    if (o.status == RequestOutcome::Status::Rejected) {
      ++m.rejected;
      continue;
    }
    ++m.admitted;
    if (o.status != RequestOutcome::Status::Finished) {
      ++m.unfinished;
      continue;
    }
    ++m.completed;
    m.output_tokens += o.generated;
    m.exact_output_tokens = m.exact_output_tokens && o.generated == o.request.output_tokens;
    ttft.push_back(o.ttft_ms());
    e2e.push_back(o.e2e_ms());
    if (o.request.output_tokens > 1) tpot.push_back(o.tpot_ms());
    const bool ttft_ok = options.slo_ttft_ms <= 0 || o.ttft_ms() <= options.slo_ttft_ms;
    const bool tpot_ok = options.slo_tpot_ms <= 0 || o.tpot_ms() <= options.slo_tpot_ms;
    m.met_slo += ttft_ok && tpot_ok;
  }
  m.ttft_ms = distribution(ttft);
  m.tpot_ms = distribution(tpot);
  m.e2e_ms = distribution(e2e);
  m.preemptions = run.preemptions;
  m.swaps = run.swaps;
  m.makespan_ms = run.makespan_ms;
  m.first_arrival_ms = run.requests.empty() ? 0 : run.requests.front().request.arrival_ms;
  for (const RequestOutcome& o : run.requests) m.first_arrival_ms = std::min(m.first_arrival_ms, o.request.arrival_ms);
  const double span_s = (m.makespan_ms - m.first_arrival_ms) / 1e3;
  if (span_s > 0) {
    m.throughput_tokens_per_s = static_cast<double>(m.output_tokens) / span_s;
    m.goodput_requests_per_s = static_cast<double>(m.met_slo) / span_s;
  }
  m.kv_peak_bytes = run.kv_peak_bytes;
  for (const IterationRecord& it : run.iterations) {
    m.hbm_floor_ms += it.price.hbm_busy_ms;
    m.compute_floor_ms += it.price.compute_ms;
    m.approximate_iterations += !it.price.exact;
  }
  return m;
}

}  // namespace mlsys::t10
