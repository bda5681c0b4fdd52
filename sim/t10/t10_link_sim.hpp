// Chips joined by links in simulated time (docs/t10-chips.md#engine). Each transfer over a directed link is
// a SystemC process that carries a phase's bytes over that link at its rate, after a latency per hop of the
// phase's longest route, so the links of a phase run side by side and the slowest ends it. The all-cores
// engine starts a phase's crossing transfers beside its on-chip part and waits for both. The bytes per link
// are the calibrated model's (CalibratedLevel::link_bytes); the rate and latency are t10_links'.
#pragma once

#include <cstdint>
#include <map>
#include <systemc>
#include <vector>

#include "sim/t10/t10_links.hpp"
#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

// An exchange phase of linked chips: its on-chip part in cycles, and its crossing bytes per link (scaled by
// `scale`: an engine event may be a share of the model's events).
struct LinkPhase {
  const LinkBytes* bytes = nullptr;
  double on_chip = 0, scale = 1;
};

// Used from inside a SystemC thread: its transfers are processes spawned there.
class LinkFabric {
 public:
  explicit LinkFabric(const Chip& chip) : chip_(chip) {}
  // Runs a phase: its crossing transfers start, the caller waits its on-chip part and then for the links.
  void run(const LinkPhase& phase);
  std::vector<LinkUse> uses() const;  // the links that carried anything, in link order

 private:
  // Starts each link's bytes now, scaled by `scale` (an engine event may be a share of the model's events).
  void start(const LinkBytes& bytes, double scale);
  void wait_idle();  // until every transfer started has ended
  Chip chip_;
  std::map<int64_t, LinkUse> uses_;
  int64_t active_ = 0;
  sc_core::sc_event idle_;
};

}  // namespace mlsys::t10
