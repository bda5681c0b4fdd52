#include "traces/t10_traffic_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/number_format.hpp"
#include "traces/html_page.hpp"

namespace mlsys::t10 {

namespace {

nlohmann::json distribution_json(const Distribution& d) {
  return {{"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"mean", d.mean}, {"max", d.max}, {"count", d.count}};
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
  bool steps = false;
};

// A line chart in SVG with axes from 0 to the largest value, an optional dashed limit line, at most 2,000
// points a series (evenly thinned, the last kept).
std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                  std::vector<Series> series, double limit = 0, const std::string& limit_label = "") {
  const double w = 640, h = 240, left = 70, right = 20, top = 30, bottom = 40;
  double xmax = 0, ymax = limit;
  for (Series& s : series) {
    if (s.points.size() > 2000) {
      std::vector<std::pair<double, double>> thin;
      const size_t step = (s.points.size() + 1999) / 2000;
      for (size_t i = 0; i < s.points.size(); i += step) thin.push_back(s.points[i]);
      thin.push_back(s.points.back());
      s.points = std::move(thin);
    }
    for (const auto& [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  if (xmax <= 0) xmax = 1;
  if (ymax <= 0) ymax = 1;
  auto X = [&](double x) { return left + x / xmax * (w - left - right); };
  auto Y = [&](double y) { return h - bottom - y / ymax * (h - top - bottom); };
  std::ostringstream o;
  o << "<figure><figcaption>" << html_escape(title) << "</figcaption><svg width='" << w << "' height='" << h
    << "' viewBox='0 0 " << w << " " << h << "' role='img'>";
  o << "<line x1='" << left << "' y1='" << Y(0) << "' x2='" << w - right << "' y2='" << Y(0)
    << "' stroke='#444'/><line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << Y(0)
    << "' stroke='#444'/>";
  for (int t = 0; t <= 4; ++t) {
    const double xv = xmax * t / 4, yv = ymax * t / 4;
    o << "<text x='" << X(xv) << "' y='" << h - bottom + 16 << "' font-size='11' text-anchor='middle'>"
      << html_escape(format_display(xv)) << "</text>";
    o << "<text x='" << left - 6 << "' y='" << Y(yv) + 4 << "' font-size='11' text-anchor='end'>"
      << html_escape(format_display(yv)) << "</text>";
  }
  o << "<text x='" << (left + w - right) / 2 << "' y='" << h - 6 << "' font-size='12' text-anchor='middle'>"
    << html_escape(x_label) << "</text><text x='14' y='" << top - 10 << "' font-size='12'>" << html_escape(y_label)
    << "</text>";
  if (limit > 0)
    o << "<line x1='" << left << "' y1='" << Y(limit) << "' x2='" << w - right << "' y2='" << Y(limit)
      << "' stroke='#c00' stroke-dasharray='5,4'/><text x='" << w - right << "' y='" << Y(limit) - 4
      << "' font-size='11' fill='#c00' text-anchor='end'>" << html_escape(limit_label) << "</text>";
  double legend_x = w / 2;  // clear of the y axis' label
  for (const Series& s : series) {
    o << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5' points='";
    double last_y = 0;
    bool first = true;
    for (const auto& [x, y] : s.points) {
      if (s.steps && !first) o << X(x) << "," << Y(last_y) << " ";
      o << X(x) << "," << Y(y) << " ";
      last_y = y;
      first = false;
    }
    o << "'/><text x='" << legend_x << "' y='" << top - 12 << "' font-size='11' fill='" << s.color << "'>"
      << html_escape(s.name) << "</text>";
    legend_x += 12 + 7 * static_cast<double>(s.name.size());
  }
  o << "</svg></figure>";
  return o.str();
}

Series cdf(const std::string& name, const std::string& color, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  Series s{name, color, {}, true};
  for (size_t i = 0; i < values.size(); ++i)
    s.points.push_back({values[i], static_cast<double>(i + 1) / static_cast<double>(values.size())});
  return s;
}

}  // namespace

nlohmann::json traffic_json(const TrafficReport& r) {
  const TrafficRun& run = *r.run;
  const TrafficMetrics& m = r.metrics;
  nlohmann::json iterations = nlohmann::json::array();
  for (const IterationRecord& it : run.iterations)
    iterations.push_back({{"start_ms", it.start_ms},
                          {"ms", it.end_ms - it.start_ms},
                          {"decode_requests", it.decoding.size()},
                          {"decode_kv", it.decode_kv},
                          {"prefill_tokens", it.prefill_tokens},
                          {"prefill_requests", it.prefill_requests},
                          {"tokens", it.shape.tokens},
                          {"queue", it.queue},
                          {"kv_bytes", it.kv_bytes},
                          {"preempted", it.preempted},
                          {"swap_ms", it.swap_ms},
                          {"exact", it.price.exact}});
  nlohmann::json requests = nlohmann::json::array();
  for (const RequestOutcome& o : run.requests) {
    nlohmann::json j{{"id", o.request.id},
                     {"arrival_ms", o.request.arrival_ms},
                     {"prompt_tokens", o.request.prompt_tokens},
                     {"output_tokens", o.request.output_tokens},
                     {"generated", o.generated},
                     {"preemptions", o.preemptions},
                     {"status", o.status == RequestOutcome::Status::Finished   ? "finished"
                                : o.status == RequestOutcome::Status::Rejected ? "rejected"
                                                                               : "unfinished"}};
    if (o.status == RequestOutcome::Status::Finished)
      j.update({{"ttft_ms", o.ttft_ms()}, {"tpot_ms", o.tpot_ms()}, {"e2e_ms", o.e2e_ms()}});
    if (!o.why.empty()) j["why"] = o.why;
    requests.push_back(std::move(j));
  }
  const double kv_capacity = r.options.kv_capacity_bytes;
  const double busy_floor = std::max(m.hbm_floor_ms, m.compute_floor_ms);
  nlohmann::json j{
      {"model", r.model},
      {"chip", r.chip},
      {"scheduler", to_string(r.options.scheduler)},
      {"max_batch", r.options.max_batch},
      {"token_budget", r.options.token_budget > 0 ? r.options.token_budget
                                                  : default_token_budget(r.options.scheduler)},
      {"requests",
       {{"arrived", m.arrived},
        {"admitted", m.admitted},
        {"completed", m.completed},
        {"rejected", m.rejected},
        {"unfinished", m.unfinished},
        {"preempted", m.preempted_requests},
        {"preemptions", m.preemptions},
        {"swaps", m.swaps},
        {"exact_output_tokens", m.exact_output_tokens}}},
      {"ttft_ms", distribution_json(m.ttft_ms)},
      {"tpot_ms", distribution_json(m.tpot_ms)},
      {"e2e_ms", distribution_json(m.e2e_ms)},
      {"slo", {{"ttft_ms", r.options.slo_ttft_ms}, {"tpot_ms", r.options.slo_tpot_ms}, {"met", m.met_slo}}},
      {"throughput_tokens_per_s", m.throughput_tokens_per_s},
      {"goodput_requests_per_s", m.goodput_requests_per_s},
      {"makespan_ms", m.makespan_ms},
      {"kv_peak_bytes", m.kv_peak_bytes},
      {"kv_capacity_bytes", kv_capacity > 0 ? nlohmann::json(kv_capacity) : nlohmann::json()},
      {"hbm_capacity_bytes", r.hbm_capacity_bytes > 0 ? nlohmann::json(r.hbm_capacity_bytes) : nlohmann::json()},
      {"weight_bytes", r.weight_bytes},
      {"kv_bytes_per_token", r.options.kv_bytes_per_token},
      {"lower_bounds",
       {{"makespan",
         {{"hbm_ms", m.hbm_floor_ms},
          {"compute_ms", m.compute_floor_ms},
          {"bound_ms", m.first_arrival_ms + busy_floor},
          {"limited_by", m.hbm_floor_ms >= m.compute_floor_ms ? "hbm" : "compute"},
          {"run_over_bound", busy_floor > 0 ? (m.makespan_ms - m.first_arrival_ms) / busy_floor : 0},
          {"holds", m.makespan_ms >= (m.first_arrival_ms + busy_floor) * (1 - 1e-12)}}},
        {"ttft",
         {{"checked", r.ttft_bound.checked},
          {"violations", r.ttft_bound.violations},
          {"worst_slack_ms", r.ttft_bound.worst_slack_ms},
          {"worst_request", r.ttft_bound.worst_request},
          {"holds", r.ttft_bound.violations == 0}}}}},
      {"price_check",
       {{"sampled", r.price_check.sampled},
        {"largest_relative_difference", r.price_check.largest_relative_difference},
        {"worst_iteration", r.price_check.worst_iteration},
        {"below_one_percent", r.price_check.below_one_percent}}},
      {"pricing", r.pricing},
      {"iteration_count", run.iterations.size()},
      {"stopped", run.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.stopped)},
      {"iterations", iterations},
      {"request_outcomes", requests},
      {"wall_seconds", r.wall_seconds}};
  if (r.replay)
    j["simulation"] = {{"makespan_ms", r.replay->makespan_ms},
                       {"iterations", r.replay->iterations},
                       {"agrees", r.replay->agrees},
                       {"disagreement", r.replay->disagreement}};
  return j;
}

std::string traffic_text(const TrafficReport& r) {
  const TrafficMetrics& m = r.metrics;
  std::ostringstream o;
  o << m.arrived << " requests (" << m.completed << " completed, " << m.rejected << " rejected, "
    << m.preempted_requests << " preempted " << m.preemptions << " times), " << r.run->iterations.size()
    << " iterations, scheduler " << to_string(r.options.scheduler) << "\n"
    << (r.run->stopped.empty() ? "" : "STOPPED at " + r.run->stopped + ": the figures cover what ran\n")
    << "TTFT p50 " << fixed(m.ttft_ms.p50, 2) << " ms, p99 " << fixed(m.ttft_ms.p99, 2) << " ms; TPOT p50 "
    << fixed(m.tpot_ms.p50, 3) << " ms, p99 " << fixed(m.tpot_ms.p99, 3) << " ms; E2E p50 "
    << fixed(m.e2e_ms.p50, 1) << " ms\n"
    << "throughput " << fixed(m.throughput_tokens_per_s, 1) << " tokens/s, goodput "
    << fixed(m.goodput_requests_per_s, 3) << " requests/s (" << m.met_slo << " within the objectives)\n"
    << "makespan " << fixed(m.makespan_ms, 2) << " ms against floors of " << fixed(m.hbm_floor_ms, 2)
    << " ms HBM and " << fixed(m.compute_floor_ms, 2) << " ms compute; KV peak "
    << fixed(m.kv_peak_bytes / 1e9, 3) << " GB"
    << (r.options.kv_capacity_bytes > 0 ? " of " + fixed(r.options.kv_capacity_bytes / 1e9, 3) + " GB" : "")
    << "\n";
  if (r.price_check.sampled > 0)
    o << "price check: " << r.price_check.sampled << " iterations priced exactly, largest difference "
      << fixed(100 * r.price_check.largest_relative_difference, 3) << " %"
      << (r.price_check.below_one_percent ? "" : " (not below 1 %)") << "\n";
  if (r.replay)
    o << "SystemC replay: " << fixed(r.replay->makespan_ms, 3) << " ms, " << r.replay->iterations << " iterations"
      << (r.replay->agrees ? ", equal to the analytic run" : ", DISAGREES: " + r.replay->disagreement) << "\n";
  return o.str();
}

std::string traffic_report_html(const TrafficReport& r) {
  const TrafficRun& run = *r.run;
  const TrafficMetrics& m = r.metrics;
  std::vector<double> ttft, tpot;
  for (const RequestOutcome& o : run.requests) {
    if (o.status != RequestOutcome::Status::Finished) continue;
    ttft.push_back(o.ttft_ms());
    if (o.request.output_tokens > 1) tpot.push_back(o.tpot_ms());
  }
  Series batch{"requests", "#1f77b4", {}, true}, tokens{"tokens", "#ff7f0e", {}, true},
      kv{"KV cache (GB)", "#2ca02c", {}, true}, queue{"waiting", "#9467bd", {}, true};
  for (const IterationRecord& it : run.iterations) {
    const double t = it.start_ms / 1e3;
    batch.points.push_back({t, static_cast<double>(it.decoding.size() + it.prefill_chunks.size())});
    tokens.points.push_back({t, static_cast<double>(it.shape.tokens)});
    kv.points.push_back({it.end_ms / 1e3, it.kv_bytes / 1e9});
    queue.points.push_back({t, static_cast<double>(it.queue)});
  }
  std::ostringstream o;
  o << html_page_start("t10 serve: " + r.model, "figure{margin:12px 0} figcaption{font-weight:bold}");
  o << "<h1>Serving " << html_escape(r.model) << " on " << html_escape(r.chip) << "</h1>";
  o << "<p>" << m.arrived << " requests, " << m.completed << " completed, " << m.rejected << " rejected, "
    << m.preemptions << " preemptions; scheduler " << to_string(r.options.scheduler) << ", "
    << run.iterations.size() << " iterations in " << fixed(m.makespan_ms / 1e3, 3) << " s.</p>";
  o << "<table><tr><th></th><th>p50</th><th>p90</th><th>p99</th><th>mean</th></tr>";
  for (const auto& [name, d] : {std::pair{"TTFT (ms)", &m.ttft_ms}, std::pair{"TPOT (ms)", &m.tpot_ms},
                                std::pair{"end to end (ms)", &m.e2e_ms}})
    o << "<tr><td>" << name << "</td><td>" << fixed(d->p50, 3) << "</td><td>" << fixed(d->p90, 3) << "</td><td>"
      << fixed(d->p99, 3) << "</td><td>" << fixed(d->mean, 3) << "</td></tr>";
  auto objective = [](const char* name, double ms) {
    return ms > 0 ? std::string(name) + " " + format_display(ms) + " ms" : std::string(name) + " (none given)";
  };
  o << "</table><p>Throughput " << fixed(m.throughput_tokens_per_s, 1) << " tokens/s; goodput "
    << fixed(m.goodput_requests_per_s, 3) << " requests/s within " << objective("TTFT", r.options.slo_ttft_ms)
    << " and " << objective("TPOT", r.options.slo_tpot_ms) << ". Makespan floors: HBM "
    << fixed(m.hbm_floor_ms, 1) << " ms, compute " << fixed(m.compute_floor_ms, 1) << " ms.</p>";
  o << chart("TTFT, cumulative", "ms", "fraction of requests", {cdf("TTFT", "#1f77b4", ttft)});
  o << chart("TPOT, cumulative", "ms per token", "fraction of requests", {cdf("TPOT", "#ff7f0e", tpot)});
  o << chart("Requests in each iteration", "s", "requests", {batch});
  o << chart("Tokens in each iteration", "s", "tokens", {tokens});
  o << chart("KV cache in HBM", "s", "GB", {kv}, r.options.kv_capacity_bytes / 1e9,
             r.options.kv_capacity_bytes > 0 ? "capacity" : "");
  o << chart("Requests waiting", "s", "requests", {queue});
  o << html_page_end();
  return o.str();
}

}  // namespace mlsys::t10
