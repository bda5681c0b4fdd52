// A serving run's reports (docs/t10-traffic.md#outputs): the JSON of `t10 serve --requests/--arrivals
// --json`, the text summary, and the self-contained HTML page (CDFs of TTFT and TPOT; batch, tokens per
// iteration and KV occupancy against the capacity over time; the queue over time).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/t10/t10_traffic.hpp"
#include "sim/t10/t10_traffic_sim.hpp"
#include "solver/t10_traffic_pricing.hpp"

namespace mlsys::t10 {

struct TrafficReport {
  std::string model, chip;
  const TrafficRun* run = nullptr;
  TrafficMetrics metrics;
  TrafficOptions options;
  double hbm_capacity_bytes = 0, weight_bytes = 0;
  PriceCheck price_check;
  TtftBoundCheck ttft_bound;
  nlohmann::json pricing;  // how iterations were priced (exact, buckets, option tables, timelines)
  std::optional<TrafficReplay> replay;
  double wall_seconds = 0;
};

nlohmann::json traffic_json(const TrafficReport& r);
std::string traffic_text(const TrafficReport& r);
std::string traffic_report_html(const TrafficReport& r);

}  // namespace mlsys::t10
