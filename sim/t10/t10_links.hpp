// Chips joined by links (docs/t10-chips.md): where a plan's cores lie, which sends of an exchange phase cross
// from one chip to another, and how long the links take to carry them. The calibrated timing asks it for the
// crossing part of each phase of a plan that spans chips (t10_calibrated.cpp), and the serving step for the
// collectives of tensor parallelism; nothing else prices a link.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/t10/t10_model.hpp"

namespace mlsys::t10 {

// One phase's crossing sends: per directed link of the topology (the index of directed_link), how many
// core sends use it. Sparse: a phase crosses few of a large topology's links.
struct LinkLoad {
  std::vector<std::pair<int64_t, double>> sends;  // directed link, sends over it
  int64_t hops = 0;                               // the longest route a crossing send takes; 0: none crosses
  double crossing = 0;                            // sends that cross, each once
};

// The directed links: a ring has one each way between neighbours (two chips: one each way), all-to-all one
// per ordered pair. Each carries link_bytes_per_cycle: a chip's links split over its neighbours.
int64_t directed_links(const Chip& chip);
double link_bytes_per_cycle(const Chip& chip);
double link_latency_cycles(const Chip& chip);
// Adds `sends` from chip `from` to chip `to` along its route: all-to-all direct, a ring the shorter way round
// (clockwise on a tie).
void route(const Chip& chip, int64_t from, int64_t to, double sends, LinkLoad& load);

// Cores are numbered 0 .. used-1 and core `id` lies on chip id / cores_per_chip. In a ring phase the core
// at ring position j = (id / stride) % group sends to position j + 1, the last to the first: the members of
// a ring lie `stride` ids apart. Computed once per geometry and kept for the thread.
const LinkLoad& ring_load(const Chip& chip, int64_t used, int64_t stride, int64_t group);
// Every core sends an equal part to every core (a change of layout that keeps no locality).
LinkLoad spread_load(const Chip& chip, int64_t used);

// The crossing part of one phase: the patterns' sends with their bytes, together over each link; the busiest
// link's bytes at its rate plus a latency per hop of the longest route. 0 when nothing crosses. `bytes`, when
// given, gets the bytes that cross (each once, however many links it passes).
struct LinkPattern {
  const LinkLoad* load = nullptr;
  double bytes_per_send = 0;
};
double crossing_cycles(const Chip& chip, const std::vector<LinkPattern>& patterns, double* bytes = nullptr);
// The same in two parts: the patterns' bytes over each directed link (what link modules carry, t10_link_sim),
// and the phase's time for them: the busiest link's bytes at its rate plus a latency per hop.
struct LinkBytes {
  std::vector<std::pair<int64_t, double>> per_link;  // directed link, bytes over it
  int64_t hops = 0;                                  // the longest route a crossing send takes
};
LinkBytes bytes_per_link(const std::vector<LinkPattern>& patterns);
double crossed_bytes(const std::vector<LinkPattern>& patterns);  // each crossing send's bytes once

// What one directed link carried over a simulated run (t10_link_sim).
struct LinkUse {
  int64_t link = 0;  // directed link (the numbering of route)
  double bytes = 0;
  double busy_cycles = 0;
  int64_t transfers = 0;
};
double link_phase_cycles(const Chip& chip, const LinkBytes& bytes);

// A ring all-reduce of `bytes` held by each of `chips` chips (reduce-scatter then all-gather, 2 (chips - 1)
// steps of bytes / chips each), over the chip's topology: the collective of tensor parallelism.
double all_reduce_cycles(const Chip& chip, int64_t chips, double bytes);
// `bytes` sent from one chip to the next (a pipeline stage's activations).
double transfer_cycles(const Chip& chip, double bytes);

}  // namespace mlsys::t10
