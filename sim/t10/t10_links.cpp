// The link model of chips joined by links (docs/t10-chips.md#pricing).
#include "sim/t10/t10_links.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace mlsys::t10 {

bool is_chip_topology(const std::string& name) {
  return name == "ring" || name == "all-to-all";
}

namespace {

bool is_ring(const Chip& chip) {
  return chip.topology == "ring";
}

}  // namespace

int64_t directed_links(const Chip& chip) {
  if (is_ring(chip)) return chip.chips == 2 ? 2 : 2 * chip.chips;
  return chip.chips * chip.chips;
}

double link_bytes_per_cycle(const Chip& chip) {
  // The GB/s of the HBM (1000 x 1024^2 B/s), split over the neighbours a chip's links reach.
  const double neighbours = is_ring(chip) ? (chip.chips == 2 ? 1 : 2) : static_cast<double>(chip.chips - 1);
  return chip.link_gbps * 1000.0 * 1024 * 1024 / chip.clock_hz / std::max(neighbours, 1.0);
}

double link_latency_cycles(const Chip& chip) {
  return chip.link_latency_ns * 1e-9 * chip.clock_hz;
}

void route(const Chip& chip, int64_t from, int64_t to, double sends, LinkLoad& load) {
  if (from == to || sends == 0) return;
  load.crossing += sends;
  auto add = [&](int64_t link) {
    for (auto& [l, s] : load.sends)
      if (l == link) {
        s += sends;
        return;
      }
    load.sends.emplace_back(link, sends);
  };
  const int64_t n = chip.chips;
  if (!is_ring(chip)) {
    add(from * n + to);
    load.hops = std::max<int64_t>(load.hops, 1);
    return;
  }
  if (n == 2) {
    add(from);  // 0 -> 1 is link 0, 1 -> 0 link 1
    load.hops = std::max<int64_t>(load.hops, 1);
    return;
  }
  const int64_t clockwise = ((to - from) % n + n) % n;
  const bool forward = clockwise <= n - clockwise;
  const int64_t hops = forward ? clockwise : n - clockwise;
  for (int64_t h = 0, at = from; h < hops; ++h) {
    add(forward ? at : n + at);  // clockwise at -> at+1 is link `at`; counter-clockwise at -> at-1 is n + at
    at = forward ? (at + 1) % n : (at + n - 1) % n;
  }
  load.hops = std::max(load.hops, hops);
}

const LinkLoad& ring_load(const Chip& chip, int64_t used, int64_t stride, int64_t group) {
  using Key = std::tuple<int64_t, int64_t, bool, int64_t, int64_t, int64_t>;
  thread_local std::map<Key, LinkLoad> cache;
  const Key key{chip.chips, chip.cores_per_chip, is_ring(chip), used, stride, group};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  LinkLoad load;
  if (group > 1 && stride > 0)
    for (int64_t id = 0; id < used; ++id) {
      const int64_t j = (id / stride) % group;
      const int64_t next = j + 1 < group ? id + stride : id - (group - 1) * stride;
      if (next < 0 || next >= used) continue;
      route(chip, id / chip.cores_per_chip, next / chip.cores_per_chip, 1, load);
    }
  return cache.emplace(key, std::move(load)).first->second;
}

LinkLoad spread_load(const Chip& chip, int64_t used) {
  LinkLoad load;
  const int64_t per = chip.cores_per_chip;
  auto on_chip = [&](int64_t c) { return std::clamp<int64_t>(used - c * per, 0, per); };
  for (int64_t a = 0; a < chip.chips; ++a)
    for (int64_t b = 0; b < chip.chips; ++b)
      if (a != b && on_chip(a) > 0 && on_chip(b) > 0)
        route(chip, a, b,
              static_cast<double>(on_chip(a)) * static_cast<double>(on_chip(b)) / static_cast<double>(used),
              load);
  return load;
}

LinkBytes bytes_per_link(const std::vector<LinkPattern>& patterns) {
  LinkBytes out;
  for (const LinkPattern& p : patterns) {
    if (!p.load || p.bytes_per_send <= 0) continue;
    out.hops = std::max(out.hops, p.load->hops);
    for (const auto& entry : p.load->sends) {  // not a structured binding: the lambda captures it
      const int64_t link = entry.first;
      auto it = std::find_if(out.per_link.begin(), out.per_link.end(),
                             [&](const auto& e) { return e.first == link; });
      if (it == out.per_link.end()) it = out.per_link.insert(out.per_link.end(), {link, 0.0});
      it->second += entry.second * p.bytes_per_send;
    }
  }
  return out;
}

double link_phase_cycles(const Chip& chip, const LinkBytes& bytes) {
  if (bytes.per_link.empty()) return 0;
  double busiest = 0;
  for (const auto& [link, b] : bytes.per_link) busiest = std::max(busiest, b);
  return busiest / link_bytes_per_cycle(chip) + static_cast<double>(bytes.hops) * link_latency_cycles(chip);
}

double crossed_bytes(const std::vector<LinkPattern>& patterns) {
  double bytes = 0;
  for (const LinkPattern& p : patterns)
    if (p.load && p.bytes_per_send > 0) bytes += p.load->crossing * p.bytes_per_send;
  return bytes;
}

double crossing_cycles(const Chip& chip, const std::vector<LinkPattern>& patterns, double* bytes) {
  if (bytes) *bytes = crossed_bytes(patterns);
  return link_phase_cycles(chip, bytes_per_link(patterns));
}

double all_reduce_cycles(const Chip& chip, int64_t chips, double bytes) {
  if (chips < 2 || bytes <= 0) return 0;
  // One phase of the reduce-scatter: all-to-all, each chip sends every other its share at once; a ring,
  // each sends a share to its neighbours (half each way beyond two chips), chips - 1 times.
  LinkLoad load;
  const bool ring = is_ring(chip);
  for (int64_t c = 0; c < chips; ++c) {
    if (!ring) {
      for (int64_t d = 0; d < chips; ++d) route(chip, c, d, 1, load);
    } else if (chips == 2) {
      route(chip, c, 1 - c, 2, load);
    } else {
      route(chip, c, (c + 1) % chips, 1, load);
      route(chip, c, (c + chips - 1) % chips, 1, load);
    }
  }
  const double share = bytes / static_cast<double>(chips) / 2;  // bytes per send in the ring's two ways
  const double phase = crossing_cycles(chip, {{&load, ring ? share : 2 * share}});
  return 2 * (ring ? static_cast<double>(chips - 1) : 1.0) * phase;
}

double transfer_cycles(const Chip& chip, double bytes) {
  LinkLoad load;
  route(chip, 0, 1, 1, load);
  return crossing_cycles(chip, {{&load, bytes}});
}

}  // namespace mlsys::t10
