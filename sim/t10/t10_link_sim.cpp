#include "sim/t10/t10_link_sim.hpp"

#include <sysc/kernel/sc_dynamic_processes.h>

namespace mlsys::t10 {

void LinkFabric::start(const LinkBytes& bytes, double scale) {
  const double rate = link_bytes_per_cycle(chip_), latency = link_latency_cycles(chip_);
  for (const auto& [link, b] : bytes.per_link) {
    if (b <= 0) continue;
    const double cycles = scale * (b / rate + static_cast<double>(bytes.hops) * latency);
    LinkUse& use = uses_[link];
    use.link = link;
    use.bytes += scale * b;
    use.busy_cycles += cycles;
    ++use.transfers;
    ++active_;
    sc_core::sc_spawn([this, cycles] {
      sc_core::wait(sc_core::sc_time(cycles, sc_core::SC_NS));
      if (--active_ == 0) idle_.notify();
    });
  }
}

void LinkFabric::wait_idle() {
  while (active_ > 0) sc_core::wait(idle_);
}

void LinkFabric::run(const LinkPhase& phase) {
  if (phase.bytes) start(*phase.bytes, phase.scale);
  if (phase.on_chip > 0) sc_core::wait(sc_core::sc_time(phase.on_chip, sc_core::SC_NS));
  wait_idle();
}

std::vector<LinkUse> LinkFabric::uses() const {
  std::vector<LinkUse> out;
  for (const auto& [link, use] : uses_) out.push_back(use);
  return out;
}

}  // namespace mlsys::t10
