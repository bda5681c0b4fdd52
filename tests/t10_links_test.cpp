// Chips joined by links (sim/t10/t10_links, docs/t10-chips.md): routes, the sends of a ring that crosses, the
// collectives, and the calibrated price of a plan that spans chips.
// - Hand-derived toys: a ring of four cores on two chips crosses each way once; a 2-chip all-reduce takes
//   X / L + 2 latencies; a plan whose one ring crosses the link pays exactly what its bytes take beyond the
//   on-chip shift.
// - Random plans on two and four chips: with infinite links and overhead 1.0 the linked price is the one-chip
//   price of the same plan exactly; with finite links it is never below it.
// - The chip readers: the new fields, and a refusal naming each.
#include "sim/t10/t10_links.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "sim/t10/t10_calibrated.hpp"
#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/violation.hpp"

namespace mlsys::test {
namespace {

using namespace mlsys::t10;

// A chip on which one cycle moves `link_gbps` bytes over a link to a single neighbour.
Chip linked_chip(int64_t chips, int64_t cores_per_chip, double link_gbps,
                 const std::string& topology = "ring") {
  Chip c;
  c.chips = chips;
  c.cores_per_chip = cores_per_chip;
  c.cores = chips * cores_per_chip;
  c.link_gbps = link_gbps;
  c.topology = topology;
  c.clock_hz = 1000.0 * 1024 * 1024;  // the link's GB/s is then its bytes per cycle
  c.inter_chip_overhead = 1.0;
  return c;
}

TEST(T10Links, ARingOfFourCoresOnTwoChipsCrossesEachWayOnce) {
  const Chip chip = linked_chip(2, 2, 8);
  // Cores 0 1 | 2 3: the sends 1 -> 2 and 3 -> 0 cross, one each way.
  const LinkLoad& load = ring_load(chip, 4, 1, 4);
  ASSERT_EQ(load.sends.size(), 2u);
  EXPECT_EQ(load.hops, 1);
  EXPECT_DOUBLE_EQ(load.crossing, 2);
  for (const auto& [link, sends] : load.sends) EXPECT_DOUBLE_EQ(sends, 1);
  double bytes = 0;
  EXPECT_DOUBLE_EQ(crossing_cycles(chip, {{&load, 80}}, &bytes), 80.0 / 8);  // 80 B on a link of 8 B/cycle
  EXPECT_DOUBLE_EQ(bytes, 160);
  // Rings of two inside each chip (stride 1, group 2) never cross.
  EXPECT_EQ(ring_load(chip, 4, 1, 2).hops, 0);
  EXPECT_DOUBLE_EQ(crossing_cycles(chip, {{&ring_load(chip, 4, 1, 2), 80}}), 0);
  // Rings of two across the chips (stride 2) cross both ways on every member.
  EXPECT_DOUBLE_EQ(ring_load(chip, 4, 2, 2).crossing, 4);
}

TEST(T10Links, RingRoutesTakeTheShorterWayAndSplitTheLinksOverTwoNeighbours) {
  Chip chip = linked_chip(4, 1, 8);
  LinkLoad load;
  route(chip, 0, 2, 1, load);  // a tie: clockwise, links 0 -> 1 and 1 -> 2
  route(chip, 0, 3, 1, load);  // one hop counter-clockwise
  EXPECT_EQ(load.hops, 2);
  EXPECT_DOUBLE_EQ(load.crossing, 2);
  ASSERT_EQ(load.sends.size(), 3u);
  EXPECT_DOUBLE_EQ(link_bytes_per_cycle(chip), 4);  // 8 over two neighbours
  chip.topology = "all-to-all";
  EXPECT_DOUBLE_EQ(link_bytes_per_cycle(chip), 8.0 / 3);  // over three peers
  chip.link_latency_ns = 1000;                            // 1e-6 s at 1000 x 1024^2 cycles per second
  EXPECT_DOUBLE_EQ(link_latency_cycles(chip), 1048.576);
}

TEST(T10Links, AllReduceAndTransferMatchTheirHandTimelines) {
  Chip two = linked_chip(2, 1, 10);
  two.link_latency_ns = 1000;
  const double lat = 1048.576;
  // Reduce-scatter then all-gather, one step each: X/2 each way per step.
  EXPECT_DOUBLE_EQ(all_reduce_cycles(two, 2, 1000), 2 * (500.0 / 10 + lat));
  EXPECT_DOUBLE_EQ(transfer_cycles(two, 1000), 100 + lat);
  // Four chips all-to-all: each sends X/4 to each of three peers over a third of its links, twice.
  const Chip four = linked_chip(4, 1, 12, "all-to-all");
  EXPECT_DOUBLE_EQ(all_reduce_cycles(four, 4, 1200), 2 * (300.0 / 4));
  // Four on a ring: 2 x 3 steps, each X/8 to both neighbours over half the links.
  const Chip ring = linked_chip(4, 1, 12);
  EXPECT_DOUBLE_EQ(all_reduce_cycles(ring, 4, 1200), 6 * (150.0 / 6));
  EXPECT_DOUBLE_EQ(all_reduce_cycles(ring, 1, 1200), 0);
}

// M 2, K 16, N 32 on two cores, one per chip: pm = 2 and B's n split in two rotating between them (bn = 2).
// One level, dim n, tensor B, g 2, one event of S_B = 16 x 16 = 256 elements per core (512 B): on chip
// 256 x 2 / 2 x 0.56 + 2 x 118 = 379.36 cycles, over a 1 B/cycle link 512 cycles. The output (32 elements
// per core) spread over both cores sends half of its 64 B across, 32 cycles, under its on-chip 253.92; there
// is one copy of C, so no gather.
t10::Problem ring_across_two_chips() {
  t10::Problem p;
  p.m = 2, p.k = 16, p.n = 32;
  p.chip = linked_chip(2, 1, 1);
  return p;
}
Plan b_rotates_between_the_chips() {
  Plan plan;
  plan.f_op = {2, 1, 1};
  plan.bn = 2;
  return plan;
}

TEST(T10Links, APlanWhoseOneRingCrossesPaysItsBytesBeyondTheOnChipShift) {
  const t10::Problem p = ring_across_two_chips();
  const Plan plan = b_rotates_between_the_chips();
  const CalibratedCost linked = calibrated_cost(p, plan);
  t10::Problem flat = p;
  flat.chip.link_gbps = 0;
  const CalibratedCost alone = calibrated_cost(flat, plan);
  ASSERT_EQ(linked.levels.size(), 1u);
  EXPECT_EQ(linked.levels[0].size, 256);
  EXPECT_NEAR(linked.levels[0].event_cycles, 379.36, 1e-9);
  EXPECT_NEAR(linked.link, 512 - 379.36, 1e-9);
  EXPECT_NEAR(linked.total - alone.total, 512 - 379.36, 1e-9);
  EXPECT_NEAR(linked.sync_shift - alone.sync_shift, 512 - 379.36, 1e-9);
  EXPECT_DOUBLE_EQ(linked.shuffle, alone.shuffle);
  EXPECT_DOUBLE_EQ(linked.crossing_bytes, 2 * 512 + 64);
}

TEST(T10Links, TheAllCoresEngineCarriesTheCrossingBytesOverLinkModules) {
  // The plan above, simulated: each of the two directed links carries one B piece (512 B, 512 cycles at
  // 1 B/cycle) while the on-chip shift takes 379.36, then half the output's 64 B (32 B) during the output's
  // on-chip 253.92. SystemC's clock and the model's total agree; the links' bytes are what crosses.
  t10::Problem p = ring_across_two_chips();
  const Plan plan = b_rotates_between_the_chips();
  CoreSimOptions options;
  options.timing = CoreTiming::Calibrated;
  options.functional = true;
  const CoresResult run = simulate_cores(p, plan, options);
  EXPECT_FALSE(run.violation.has_value());
  ASSERT_EQ(run.links.size(), 2u);
  for (const LinkUse& use : run.links) {
    EXPECT_DOUBLE_EQ(use.bytes, 512 + 32);
    EXPECT_DOUBLE_EQ(use.busy_cycles, 512 + 32);
    EXPECT_EQ(use.transfers, 2);
  }
  const CalibratedCost cost = calibrated_cost(p, plan);
  EXPECT_DOUBLE_EQ(run.links[0].bytes + run.links[1].bytes, cost.crossing_bytes);
  EXPECT_NEAR(run.makespan, cost.total, 1e-9 * cost.total);
  EXPECT_NEAR(run.simulated_cycles, cost.total, 1e-3);  // picosecond steps
  // Without links the same plan's clock is the on-chip total, and no link module carries anything.
  p.chip.link_gbps = 0;
  const CoresResult alone = simulate_cores(p, plan, options);
  EXPECT_TRUE(alone.links.empty());
  EXPECT_NEAR(alone.simulated_cycles, cost.total - (512 - 379.36), 1e-3);
}

// Random chain plans (each dimension's factors dividing one another) on more cores than one chip has.
std::vector<Plan> random_plans(std::mt19937& rng, int count, int64_t cores, int64_t cores_per_chip) {
  std::vector<Plan> plans;
  const int64_t powers[] = {1, 2, 4, 8};
  auto pick = [&](int64_t most) {
    int64_t v;
    do v = powers[rng() % 4];
    while (v > most);
    return v;
  };
  while (static_cast<int>(plans.size()) < count) {
    Plan p;
    p.f_op = {pick(64) * pick(8), pick(8) * pick(8), pick(64) * pick(8)};
    const int64_t used = p.f_op[0] * p.f_op[1] * p.f_op[2];
    if (used > cores || used <= cores_per_chip) continue;
    p.am = pick(p.f_op[2]), p.ak = 1, p.bk = 1;
    p.bn = pick(p.f_op[0]);
    p.cm = pick(p.f_op[1]), p.cn = 1;
    if (p.f_op[2] % p.am || p.f_op[0] % p.bn || p.f_op[1] % p.cm) continue;
    plans.push_back(p);
  }
  return plans;
}

TEST(T10Links, InfiniteLinksWithNoOverheadPriceEveryPlanAsOneChipDoes) {
  std::mt19937 rng(7);
  for (int64_t chips : {2, 4}) {
    for (const std::string topology : {"ring", "all-to-all"}) {
      t10::Problem linked;
      linked.m = 4096, linked.k = 4096, linked.n = 4096;
      linked.chip = linked_chip(chips, 512, std::numeric_limits<double>::infinity(), topology);
      t10::Problem flat = linked;
      flat.chip.link_gbps = 0;
      t10::Problem finite = linked;
      finite.chip.link_gbps = 1;  // 1 B per cycle: crossings dominate
      int crossing = 0;
      for (const Plan& plan : random_plans(rng, 200, linked.chip.cores, linked.chip.cores_per_chip)) {
        const CalibratedCost a = calibrated_cost(linked, plan), b = calibrated_cost(flat, plan);
        EXPECT_EQ(a.total, b.total);
        EXPECT_EQ(a.link, 0);
        const CalibratedCost slow = calibrated_cost(finite, plan);
        EXPECT_GE(slow.total, b.total);
        if (slow.link > 0) ++crossing;
      }
      EXPECT_GT(crossing, 100) << "the campaign must reach plans whose rings cross";
    }
  }
}

TEST(T10Links, TheEnginesClockEqualsTheLinkPricedTotalOnRandomPlansAcrossChips) {
  std::mt19937 rng(11);
  int crossing = 0;
  for (const std::string topology : {"ring", "all-to-all"}) {
    t10::Problem p;
    p.m = 1024, p.k = 1024, p.n = 1024;
    p.chip = linked_chip(4, 256, 2, topology);
    CoreSimOptions options;
    options.timing = CoreTiming::Calibrated;
    for (const Plan& plan : random_plans(rng, 12, p.chip.cores, p.chip.cores_per_chip)) {
      const CalibratedCost cost = calibrated_cost(p, plan);
      if (!cost.rejections.empty()) continue;
      const CoresResult run = simulate_cores(p, plan, options);
      EXPECT_NEAR(run.makespan, cost.total, 1e-9 * cost.total);
      // Each phase's wait rounds to a picosecond (a thousandth of a cycle).
      EXPECT_NEAR(run.simulated_cycles, cost.total, 1e-3 * static_cast<double>(run.phases.size() + 1));
      double carried = 0;
      for (const LinkUse& use : run.links) carried += use.bytes;
      if (cost.crossing_bytes > 0) ++crossing;
      EXPECT_GE(carried, cost.crossing_bytes * (1 - 1e-12));  // a send over h links is carried h times
    }
  }
  EXPECT_GT(crossing, 10) << "the campaign must reach plans that cross";
}

TEST(T10Links, TheReadersTakeTheChipsAndNameWhatTheyRefuse) {
  const ServingChip c = parse_serving_chip(
      {{"preset", "elk-5888-linked"}, {"link_gbps", 100}, {"topology", "all-to-all"}}, "chip.json");
  EXPECT_EQ(c.chip.chips, 4);
  EXPECT_EQ(c.chip.cores, 4 * 1472);
  EXPECT_DOUBLE_EQ(c.chip.link_gbps, 100);
  EXPECT_EQ(c.chip.topology, "all-to-all");
  EXPECT_DOUBLE_EQ(c.total_hbm_gbps(), 16000);
  const ServingChip derived = parse_serving_chip({{"cores", 2944}}, "c.json");
  EXPECT_EQ(derived.chip.chips, 2);
  auto refused = [](const nlohmann::json& j, const std::string& field) {
    try {
      parse_serving_chip(j, "bad.json");
    } catch (const InputError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(field), std::string::npos) << text;
      EXPECT_NE(text.find("bad.json"), std::string::npos) << text;
      return;
    }
    ADD_FAILURE() << "accepted " << j.dump();
  };
  refused({{"topology", "torus"}}, "topology");
  refused({{"chips", 2}, {"cores", 3000}}, "cores");
  refused({{"chips", 0}}, "chips");
  refused({{"chips", 1000}, {"link_gbps", 320}}, "chips");
  refused({{"link_gbps", -1}}, "link_gbps");
  refused({{"link_latency_ns", "fast"}}, "link_latency_ns");
  refused({{"hbm_gbps", -5}}, "hbm_gbps");
}

}  // namespace
}  // namespace mlsys::test
