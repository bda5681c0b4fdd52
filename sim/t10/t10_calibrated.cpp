// The calibrated timing (docs/t10-model.md#calibrated). Each function below restates one function of the
// published model (platformxlab/elk, TensorExpression.py, class TensorExpression); binary64 operations keep
// the model's order where the result could round differently.
#include "sim/t10/t10_calibrated.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/t10/t10_links.hpp"

namespace mlsys::t10 {

double exchange_scale(const Chip& chip) {
  return kIpuExchangeBytesPerCycle / chip.exchange_bytes_per_cycle;
}

namespace {

constexpr double kSyncCycles = 118;   // SYNC_CYCLES
constexpr double kBufferIters = 2;    // BUFFER_ITERS: every shift is double-buffered, two syncs
constexpr double kUtilThreshold = 0.9, kPadThreshold = 0.9;  // CORE_UTIL_THRESHOLD, DATA_PAD_THRESHOLD

// The plan in the model's indexing: dimensions (m, n, k), tensors (C, A, B).
struct Config {
  std::array<int64_t, 3> length{}, spatial{};            // dimension lengths and spatial parts
  std::array<std::array<int64_t, 3>, 3> temporal{};      // [dim][tensor]
  std::array<double, 3> spatial_length{}, sub_length{};  // ceil(length/parts); ceil(that/max temporal part)
  std::array<int64_t, 3> replicas{};                     // spatial_var_replicas: pk, pn, pm
  std::array<int64_t, 3> most{};                         // per dimension, its largest temporal factor
  std::array<int64_t, 3> var_size{};                     // get_sub_op_var_sizes: S_C, S_A, S_B
  // The batch, a dimension of every tensor that is split in space only: each core's products per step.
  int64_t batch = 1, batch_parts = 1, batch_local = 1;
  double shift_scale = 1;  // exchange_scale(chip)
  // The dimensions each tensor spans, as indices into (m, n, k).
  static constexpr int kVarDims[3][2] = {{0, 1}, {0, 2}, {2, 1}};
};

// get_sub_op_var_sizes: each tensor's partition, per dimension ceil(per-core length / its factor).
void set_var_sizes(Config& c) {
  for (int x = 0; x < 3; ++x) {
    c.var_size[x] = c.batch_local;
    for (int d : Config::kVarDims[x])
      c.var_size[x] *=
          static_cast<int64_t>(std::ceil(c.spatial_length[d] / static_cast<double>(c.temporal[d][x])));
  }
}

// A tensor's ring product (its temporal factors multiplied over the dimensions).
int64_t ring_of(const Config& c, int x) {
  return c.temporal[0][x] * c.temporal[1][x] * c.temporal[2][x];
}

// is_chain_divisible: a dimension's factors, sorted, each divide the next.
bool is_chain(std::array<int64_t, 3> factors) {
  std::sort(factors.begin(), factors.end());
  return factors[2] % factors[1] == 0 && factors[1] % factors[0] == 0;
}

Config configure(const Problem& pr, const Plan& plan) {
  Config c;
  c.length = {pr.m, pr.n, pr.k};
  c.spatial = {plan.f_op[0], plan.f_op[2], plan.f_op[1]};
  c.temporal = {{{plan.cm, plan.am, 1}, {plan.cn, 1, plan.bn}, {1, plan.ak, plan.bk}}};
  c.replicas = {plan.f_op[1], plan.f_op[2], plan.f_op[0]};
  c.shift_scale = exchange_scale(pr.chip);
  c.batch = pr.batch;
  c.batch_parts = plan.pb;
  c.batch_local = (pr.batch + plan.pb - 1) / std::max<int64_t>(plan.pb, 1);
  for (int d = 0; d < 3; ++d) {
    c.spatial_length[d] = std::ceil(static_cast<double>(c.length[d]) / static_cast<double>(c.spatial[d]));
    c.most[d] = *std::max_element(c.temporal[d].begin(), c.temporal[d].end());
    c.sub_length[d] = std::ceil(c.spatial_length[d] / static_cast<double>(c.most[d]));
  }
  set_var_sizes(c);
  return c;
}

// get_shift_time: elements to cycles.
// `scale`: 1 on the IPU's exchange; a chip variant's exchange_bytes_per_cycle scales it (kIpuExchange over
// it).
double shift_time(double elements, int64_t dtype_bytes, double scale) {
  return elements != 0 ? elements * static_cast<double>(dtype_bytes) / 2 * 0.56 * scale : 0;
}

// get_util_threshold and get_pad_threshold (NUM_DIMS_CORRELATION = 0 makes the dimension factor 1).
// The batch is one more dimension of the product and of the maximum (get_dim_lengths_product: all dims).
double dims_product(const Config& c) {
  return static_cast<double>(c.batch) * static_cast<double>(c.length[0] * c.length[1] * c.length[2]);
}
double dims_max(const Config& c) {
  return static_cast<double>(std::max(c.batch, *std::max_element(c.length.begin(), c.length.end())) *
                             (c.batch > 1 ? 4 : 3));
}
double util_threshold(const Config& c, int64_t cores) {
  const double prod = dims_product(c), maxi = dims_max(c);
  return kUtilThreshold * std::min(prod / (prod + 2 * static_cast<double>(cores)), maxi / 220);
}
double pad_threshold(const Config& c, int64_t cores) {
  const double prod = dims_product(c), maxi = dims_max(c);
  return kPadThreshold * std::min(prod / (prod + static_cast<double>(cores)), maxi / 220);
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// The search space's spatial rules (update_spatial_dim_parts_if_valid, get_all_spatial_configs' bounds).
// Rejection texts; a search (`messages` false) only needs to know that there is one, so the first is an
// empty marker and building the sentences is skipped.
struct Rejections {
  std::vector<std::string>& out;
  bool messages;
  bool* any = nullptr;  // without messages: set instead of adding a marker (no allocation per plan)
  template <typename MakeText>
  void add(MakeText make_text) {
    if (messages)
      out.push_back(make_text());
    else if (any)
      *any = true;
    else if (out.empty())
      out.emplace_back();
  }
};

void spatial_rejections(const Config& c, int64_t chip_cores, Rejections out) {
  const char* dim_name = "mnk";
  const int64_t used = c.batch_parts * c.spatial[0] * c.spatial[1] * c.spatial[2];
  const double util = util_threshold(c, chip_cores), pad = pad_threshold(c, chip_cores);
  if (used > chip_cores)
    out.add([&] {
      return std::string(std::to_string(used) + " cores, more than the chip's " + std::to_string(chip_cores));
    });
  if (static_cast<double>(used) / static_cast<double>(chip_cores) < util)
    out.add([&] {
      return std::string(std::to_string(used) + " cores use less than the threshold " + fixed(util) +
                         " of the chip");
    });
  for (int d = 0; d < 3; ++d)
    if (c.spatial[d] > c.length[d])
      out.add([&] {
        return std::string(std::string("dimension ") + dim_name[d] + " split in " +
                           std::to_string(c.spatial[d]) + " parts, more than its length " +
                           std::to_string(c.length[d]));
      });
  if (c.batch_parts > c.batch)
    out.add([&] {
      return std::string("batch split in " + std::to_string(c.batch_parts) + " parts, more than its " +
                         std::to_string(c.batch));
    });
  double spatial_ratio = static_cast<double>(c.batch) / static_cast<double>(c.batch_local * c.batch_parts);
  for (int d = 0; d < 3; ++d)
    spatial_ratio *=
        static_cast<double>(c.length[d]) / (c.spatial_length[d] * static_cast<double>(c.spatial[d]));
  if (spatial_ratio < pad)
    out.add([&] {
      return std::string("spatial padding keeps " + fixed(spatial_ratio) + " of the work, below " +
                         fixed(pad));
    });
}

// The temporal rules (valid_temporal_dim_var_parts, is_chain_divisible, is_temp_dim_valid_for_variables).
void temporal_rejections(const Config& c, int64_t chip_cores, Rejections out) {
  const char* dim_name = "mnk";
  const double pad = pad_threshold(c, chip_cores);
  for (int x = 0; x < 3; ++x) {
    const int64_t ring = ring_of(c, x);
    if (c.replicas[x] % ring != 0)
      out.add([&] {
        return std::string(std::string("tensor ") + "CAB"[x] + ": ring " + std::to_string(ring) +
                           " does not divide its " + std::to_string(c.replicas[x]) + " replicas");
      });
  }
  double temporal_ratio = 1;
  for (int d = 0; d < 3; ++d) {
    const auto& f = c.temporal[d];
    const int64_t most = c.most[d];
    temporal_ratio *= c.spatial_length[d] / (c.sub_length[d] * static_cast<double>(most));
    if (!is_chain(f))
      out.add([&] {
        std::array<int64_t, 3> sorted = f;
        std::sort(sorted.begin(), sorted.end());
        return std::string("dimension ") + dim_name[d] + ": ring factors " + std::to_string(sorted[1]) +
               " and " + std::to_string(sorted[2]) + " do not form a chain";
      });
    if (most > 1) {
      if (static_cast<double>(most) > c.spatial_length[d])
        out.add([&] {
          return std::string(std::string("dimension ") + dim_name[d] + ": ring factor " +
                             std::to_string(most) + " above the per-core length " +
                             fixed(c.spatial_length[d]));
        });
      const double kept = c.spatial_length[d] / (static_cast<double>(most) *
                                                 std::ceil(c.spatial_length[d] / static_cast<double>(most)));
      if (kept < pad)
        out.add([&] {
          return std::string(std::string("dimension ") + dim_name[d] + ": ring factor " +
                             std::to_string(most) + " pads to " + fixed(kept) + ", below " + fixed(pad));
        });
    }
  }
  if (temporal_ratio < pad)
    out.add([&] {
      return std::string("temporal padding keeps " + fixed(temporal_ratio) + " of the work, below " +
                         fixed(pad));
    });
}

// get_comp_time_per_iter_helper, MatMul branch (b, the product of the sub-task's batch dimensions, is 1 for
// a plain MatMul).
double compute_per_step(const Config& c, int64_t dtype_bytes) {
  double m = c.sub_length[0], n = c.sub_length[1];
  const double k = c.sub_length[2];
  if (n > m) std::swap(m, n);
  if (m <= 16) std::swap(m, n);
  const double e = static_cast<double>(dtype_bytes);
  const double m_div_6 = std::ceil(m / 6), k_div_16 = std::ceil(k / (32 / e)), n_div_16 = std::ceil(n / 16);
  return static_cast<double>(c.batch_local) *
         (e * 12 * m_div_6 * k_div_16 * n_div_16 + 514 * k_div_16 * n_div_16 + 113 * n_div_16 + 173);
}

// get_shift_info: per dimension, the gcd of the factors above 1 makes a level holding those tensors, until
// none is left; then the levels sorted by size, largest first (numpy's argsort of a handful is stable).
std::vector<CalibratedLevel> shift_levels(const Config& c, int64_t dtype_bytes) {
  std::vector<CalibratedLevel> levels;
  const char* dim_name = "mnk";
  for (int d = 0; d < 3; ++d) {
    std::array<int64_t, 3> f = c.temporal[d];
    while (std::any_of(f.begin(), f.end(), [](int64_t v) { return v > 1; })) {
      int64_t g = 0;
      for (int64_t v : f)
        if (v > 1) g = std::gcd(g, v);
      if (g == 1) return {};  // not a chain: rejected above
      CalibratedLevel level{dim_name[d], "", g, 0, 0, 0, 0, {}};
      for (int x = 0; x < 3; ++x)
        if (f[x] > 1) {
          level.tensors += "CAB"[x];
          level.size += c.var_size[x];
          f[x] /= g;
        }
      levels.push_back(level);
    }
  }
  std::stable_sort(levels.begin(), levels.end(),
                   [](const CalibratedLevel& a, const CalibratedLevel& b) { return a.size > b.size; });
  int64_t outer = 1;
  for (CalibratedLevel& level : levels) {
    level.events = outer * (level.g - 1);
    level.event_cycles = shift_time(static_cast<double>(level.size), dtype_bytes, c.shift_scale) +
                         kSyncCycles * kBufferIters * static_cast<double>(level.tensors.size());
    outer *= level.g;
  }
  return levels;
}

// The alignment ladder of the model's reduce (1 2 4 8 12 16 24 48 96 144 ...).
double aligned(double v) {
  if (v > 2) {
    v = std::max(4.0, v);
    if (v > 4) {
      v = std::max(8.0, v);
      if (v > 8) {
        v = std::max(12.0, v);
        if (v > 12) {
          v = std::max(16.0, v);
          if (v > 16) {
            v = std::max(24.0, v);
            if (v > 24) v = std::ceil(v / 48) * 48;
          }
        }
      }
    }
  }
  return v;
}

// get_comp_time_per_iter_helper, elementwise branch.
double elementwise_cycles(double elements) {
  return elements <= 16432 ? std::min(16434 * 0.5 + 300, elements * 0.75 + 290) : elements * 0.5 + 300;
}

// The reduce branch: `outputs` results, each of `batch` inputs (the same ladder as the shuffle's reduce).
double reduce_cycles(double outputs, double batch) {
  const double a = aligned(outputs);
  return a * batch <= 480 ? std::min(481 * 0.25 + 175, a * batch * 1.5 + 175) : a * batch * 0.25 + 175;
}

// get_shuffle_time's gather and reduce of `copies` partial outputs of `output` elements each.
void combine_copies(int64_t copies, double output, int64_t dtype_bytes, double scale, CalibratedCost& cost) {
  const double reduced = output / static_cast<double>(copies);
  if (copies == 2) {
    cost.gather = 2 * kSyncCycles + shift_time(std::floor(output / 2), dtype_bytes, scale);
    cost.reduce = elementwise_cycles(reduced);
  } else if (copies > 2) {
    cost.gather = static_cast<double>(copies) * kSyncCycles + shift_time(output, dtype_bytes, scale);
    cost.reduce = reduce_cycles(reduced, static_cast<double>(copies));
  }
}

// get_shuffle_time, MatMul branch.
void shuffle(const Config& c, int64_t dtype_bytes, CalibratedCost& cost) {
  const int64_t copies =
      std::llround(static_cast<double>(c.replicas[0]) / static_cast<double>(ring_of(c, 0)));
  combine_copies(copies, static_cast<double>(c.batch_local) * c.sub_length[0] * c.sub_length[1], dtype_bytes,
                 c.shift_scale, cost);  // the sub-task's C block
  cost.shuffle_output =
      shift_time(static_cast<double>(c.var_size[0]), dtype_bytes, c.shift_scale) + kBufferIters * kSyncCycles;
  cost.shuffle_sync = kSyncCycles * 4;
}

// get_warm_up_time from the layout without copies: each input's factor on k times its rho copies.
double warm_up(const Config& hot, int64_t dtype_bytes, int64_t& cold_bytes, std::array<int64_t, 2>& inputs) {
  Config cold = hot;
  for (int x : {1, 2}) cold.temporal[2][x] *= hot.replicas[x] / ring_of(hot, x);
  set_var_sizes(cold);
  inputs = {dtype_bytes * cold.var_size[1], dtype_bytes * cold.var_size[2]};
  cold_bytes = inputs[0] + inputs[1];
  double elements = 0, syncs = 0;
  for (int x = 0; x < 3; ++x) {
    double multiplier = 1;
    for (int d = 0; d < 3; ++d)
      multiplier *= static_cast<double>(cold.temporal[d][x]) / static_cast<double>(hot.temporal[d][x]);
    if (multiplier > 1) multiplier += 1;
    multiplier -= 1;
    if (x > 0) elements += multiplier * static_cast<double>(cold.var_size[x]);  // the output is not moved
    syncs += multiplier;
  }
  return shift_time(elements, dtype_bytes, hot.shift_scale) + syncs * kSyncCycles;
}

// Chips joined by links (docs/t10-chips.md#pricing). The plan's cores are its coordinates (b, m, n, k) laid
// on the core ids with b slowest and the others in one of six orders; a tensor rotates among its replicas
// (C along k, A along n, B along m), each ring's members consecutive in that coordinate by the levels'
// order (its first level the fastest digit). Each phase's crossing part is priced over the links and
// added where it is longer than the on-chip part; the order that adds least is the placement.
void link_terms(const Config& c, int64_t e, const Chip& chip, double overhead, CalibratedCost& cost,
                double& shift_link) {
  const std::array<int64_t, 4> size{c.spatial[0], c.spatial[1], c.spatial[2], c.batch_parts};  // m n k b
  const int64_t used = size[0] * size[1] * size[2] * size[3];
  constexpr int kReplicaCoordinate[3] = {2, 1, 0};  // C along k, A along n, B along m
  const int64_t copies =
      std::llround(static_cast<double>(c.replicas[0]) / static_cast<double>(ring_of(c, 0)));
  const double output = static_cast<double>(c.batch_local) * c.sub_length[0] * c.sub_length[1];
  const LinkLoad spread = spread_load(chip, used);
  std::array<int, 3> order{0, 1, 2};
  double best = -1;
  do {
    std::array<int64_t, 3> stride{};  // per coordinate m n k, in core ids
    int64_t s = 1;
    for (int d : order) stride[d] = s, s *= size[d];
    double shift_extra = 0, crossing = 0;
    std::vector<double> per_event;          // per level, what one event's crossing adds
    std::vector<LinkBytes> per_event_links;  // per level, one event's bytes over each link
    std::array<int64_t, 3> digit{1, 1, 1};  // per tensor, the stride of its next level within its coordinate
    for (const CalibratedLevel& level : cost.levels) {
      std::vector<LinkPattern> patterns;
      for (char t : level.tensors) {
        const int x = tensor_index(t);
        patterns.push_back({&ring_load(chip, used, digit[x] * stride[kReplicaCoordinate[x]], level.g),
                            static_cast<double>(c.var_size[x] * e)});
        digit[x] *= level.g;
      }
      per_event_links.push_back(bytes_per_link(patterns));
      const double cross = link_phase_cycles(chip, per_event_links.back());
      per_event.push_back(std::max(0.0, cross - level.event_cycles * overhead));
      shift_extra += static_cast<double>(level.events) * per_event.back();
      crossing += static_cast<double>(level.events) * crossed_bytes(patterns);
    }
    double gather_extra = 0;
    LinkBytes gather_links;
    if (copies >= 2) {  // the copies of C gathered along k, `ring_of(C)` apart
      const double elements = copies == 2 ? std::floor(output / 2) : output;
      const std::vector<LinkPattern> gather{
          {&ring_load(chip, used, ring_of(c, 0) * stride[2], copies), elements * static_cast<double>(e)}};
      gather_links = bytes_per_link(gather);
      gather_extra = std::max(0.0, link_phase_cycles(chip, gather_links) - cost.gather * overhead);
      crossing += crossed_bytes(gather);
    }
    // The output to the next operator's layout, spread over every core.
    const std::vector<LinkPattern> moved{{&spread, static_cast<double>(c.var_size[0] * e)}};
    LinkBytes output_links = bytes_per_link(moved);
    const double output_extra =
        std::max(0.0, link_phase_cycles(chip, output_links) - cost.shuffle_output * overhead);
    crossing += crossed_bytes(moved);
    const double extra = shift_extra + gather_extra + output_extra;
    if (best < 0 || extra < best) {
      best = extra;
      cost.link = best;
      cost.gather_link = gather_extra;
      cost.output_link = output_extra;
      for (size_t l = 0; l < cost.levels.size(); ++l) {
        cost.levels[l].link_cycles = per_event[l];
        cost.levels[l].link_bytes = per_event_links[l];
      }
      cost.gather_link_bytes = gather_links;
      cost.output_link_bytes = output_links;
      cost.crossing_bytes = crossing;
      cost.placement.clear();
      for (int d : order) cost.placement += "mnk"[d];
      shift_link = shift_extra;
    }
  } while (std::next_permutation(order.begin(), order.end()));
}

}  // namespace

std::vector<std::string> calibrated_spatial_rejections(const Problem& problem,
                                                       const std::array<int64_t, 3>& f_op, int64_t pb) {
  Plan plan;
  plan.f_op = f_op;
  plan.pb = pb;
  std::vector<std::string> out;
  spatial_rejections(configure(problem, plan), problem.chip.cores, {out, true});
  return out;
}

bool ring_factors_chain(std::array<int64_t, 3> factors) { return is_chain(factors); }

bool calibrated_spatial_accepts(const Problem& problem, const std::array<int64_t, 3>& f_op, int64_t pb) {
  Plan plan;
  plan.f_op = f_op;
  plan.pb = pb;
  std::vector<std::string> unused;
  bool rejected = false;
  spatial_rejections(configure(problem, plan), problem.chip.cores, {unused, false, &rejected});
  return !rejected;
}

CalibratedCost calibrated_cost(const Problem& pr, const Plan& plan, bool messages) {
  CalibratedCost cost;
  const Config c = configure(pr, plan);
  const int64_t e = pr.dtype_bytes;
  // get_byte_per_core_with_buffer (BUFFER_SIZE_RATIO = 1) and get_byte_per_core_idle (the output ignored).
  for (int x = 0; x < 3; ++x) {
    cost.hot_bytes += e * c.var_size[x] * (ring_of(c, x) > 1 ? 2 : 1);  // a receive buffer when it rotates
    if (x > 0) cost.cold_bytes += e * c.var_size[x];
    if (x > 0) cost.cold_input_bytes[x - 1] = e * c.var_size[x];
  }
  // search_optimal_config keeps only plans whose hot bytes fit a core (max_byte_per_core). A search asks
  // only whether some rule rejects the plan, so it tests this, the cheapest, first.
  const bool over_sram = cost.hot_bytes > pr.chip.sram_bytes_per_core;
  if (!messages && over_sram) {
    cost.rejected = true;
    return cost;
  }
  spatial_rejections(c, pr.chip.cores, {cost.rejections, messages, &cost.rejected});
  temporal_rejections(c, pr.chip.cores, {cost.rejections, messages, &cost.rejected});
  if (!messages && cost.rejected) return cost;
  if (over_sram) {
    cost.rejections.push_back("hot " + std::to_string(cost.hot_bytes) + " B per core, above the SRAM's " +
                              std::to_string(pr.chip.sram_bytes_per_core) + " B");
  }
  cost.levels = shift_levels(c, e);
  for (int d = 0; d < 3; ++d)
    if (!is_chain(c.temporal[d])) return cost;
  cost.steps = 1;
  for (int d = 0; d < 3; ++d) cost.steps *= c.most[d];
  cost.compute_per_step = compute_per_step(c, e);
  cost.compute = cost.compute_per_step * static_cast<double>(cost.steps);
  double tensor_shifts = 0;
  for (const CalibratedLevel& level : cost.levels) {
    cost.shift_elements += level.events * level.size;
    tensor_shifts += static_cast<double>(level.events) * static_cast<double>(level.tensors.size());
  }
  cost.shift = shift_time(static_cast<double>(cost.shift_elements), e, c.shift_scale);
  cost.sync = kSyncCycles * kBufferIters * tensor_shifts;
  cost.sync_shift = cost.sync + cost.shift;
  shuffle(c, e, cost);
  cost.shuffle = cost.shuffle_output + cost.shuffle_sync + cost.gather + cost.reduce;
  if (pr.chip.cores > pr.chip.cores_per_chip) {
    cost.inter_chip = pr.chip.inter_chip_overhead;
    cost.sync_shift *= cost.inter_chip;
    cost.shuffle *= cost.inter_chip;
  }
  if (pr.chip.linked() && plan.pb * plan.f_op[0] * plan.f_op[1] * plan.f_op[2] > pr.chip.cores_per_chip) {
    double shift_link = 0;
    link_terms(c, e, pr.chip, cost.inter_chip, cost, shift_link);
    cost.sync_shift += shift_link;
    cost.shuffle += cost.link - shift_link;
  }
  cost.total = cost.compute + cost.sync_shift + cost.shuffle;
  cost.warm_up = warm_up(c, e, cost.no_copy_cold_bytes, cost.no_copy_input_bytes);
  return cost;
}

int64_t vector_units(const VectorOp& op) {
  return op.kind == VectorKind::RowWise ? op.rows : op.rows * op.cols;
}

VectorBlockCycles vector_block_cycles(VectorKind kind, int64_t rows, int64_t cols) {
  const double elements = static_cast<double>(rows) * static_cast<double>(cols);
  switch (kind) {
    case VectorKind::Elementwise:
      return {0, elementwise_cycles(elements)};
    case VectorKind::Relu:
      return {0, elements * 0.5 + 200};
    case VectorKind::RowWise:
      return {reduce_cycles(static_cast<double>(rows), static_cast<double>(cols)), elementwise_cycles(elements)};
  }
  return {};
}

void vector_combine_cost(int64_t col_parts, int64_t rows, int64_t dtype_bytes, const Chip& chip,
                         CalibratedCost& cost) {
  combine_copies(col_parts, static_cast<double>(rows * col_parts), dtype_bytes, exchange_scale(chip), cost);
}

CalibratedCost calibrated_vector_cost(const VectorOp& op, int64_t parts, int64_t e, const Chip& chip,
                                      int64_t col_parts) {
  CalibratedCost cost;
  const int64_t chip_cores = chip.cores;
  const double scale = exchange_scale(chip);
  const int64_t units = vector_units(op);
  if (op.kind != VectorKind::RowWise) col_parts = 1;
  if (col_parts < 1 || col_parts > op.cols || parts * col_parts > chip_cores)
    cost.rejections.push_back(std::to_string(col_parts) + " column parts of " + std::to_string(op.cols) +
                              " columns with " + std::to_string(parts) + " row parts on " +
                              std::to_string(chip_cores) + " cores");
  col_parts = std::clamp<int64_t>(col_parts, 1, std::max<int64_t>(op.cols, 1));
  const int64_t cols = (op.cols + col_parts - 1) / col_parts;
  if (parts < 1 || parts > units || parts > chip_cores)
    cost.rejections.push_back(std::to_string(parts) + " parts for " + std::to_string(units) +
                              (op.kind == VectorKind::RowWise ? " rows" : " elements") + " on " +
                              std::to_string(chip_cores) + " cores");
  parts = std::clamp<int64_t>(parts, 1, std::max<int64_t>(units, 1));
  const int64_t rows = op.kind == VectorKind::RowWise ? (op.rows + parts - 1) / parts : 1;
  const int64_t elements = op.kind == VectorKind::RowWise ? rows * cols : (units + parts - 1) / parts;
  cost.steps = 1;
  // The busiest core's block: the first one, of the ceilings.
  cost.compute_per_step = (op.kind == VectorKind::RowWise ? vector_block_cycles(op.kind, rows, cols)
                                                          : vector_block_cycles(op.kind, 1, elements))
                              .total();
  switch (op.kind) {
    case VectorKind::Elementwise:
    case VectorKind::Relu:
      cost.shuffle_sync = kSyncCycles;
      break;
    case VectorKind::RowWise:
      // Rows split over column parts: each row's partial statistic gathered and reduced over its copies.
      vector_combine_cost(col_parts, rows, e, chip, cost);
      // get_shuffle_time's general branch with one output copy: the output moved and its syncs.
      cost.shuffle_output = shift_time(static_cast<double>(elements), e, scale) + kBufferIters * kSyncCycles;
      cost.shuffle_sync = kSyncCycles * 4;
      break;
  }
  cost.compute = cost.compute_per_step + cost.gather + cost.reduce;
  cost.shuffle = cost.shuffle_output + cost.shuffle_sync;
  if (chip.linked() && op.kind == VectorKind::RowWise && parts * col_parts > chip.cores_per_chip) {
    // A row's column parts lie on consecutive cores and gather their statistics; the output goes to the
    // next operator's layout over every core (link_terms' rules for a product).
    const int64_t used = parts * col_parts;
    const LinkLoad spread = spread_load(chip, used);
    double gather_bytes = 0, output_bytes = 0;
    const double gather = crossing_cycles(
        chip, {{&ring_load(chip, used, 1, col_parts), static_cast<double>(rows * e)}}, &gather_bytes);
    const double output =
        crossing_cycles(chip, {{&spread, static_cast<double>(elements * e)}}, &output_bytes);
    const double gather_extra = col_parts > 1 ? std::max(0.0, gather - cost.gather) : 0;
    cost.gather_link = gather_extra;
    cost.output_link = std::max(0.0, output - cost.shuffle_output);
    cost.link = cost.gather_link + cost.output_link;
    cost.crossing_bytes = (col_parts > 1 ? gather_bytes : 0) + output_bytes;
    cost.compute += gather_extra;
    cost.shuffle += cost.link - gather_extra;
  }
  cost.total = cost.compute + cost.shuffle;
  cost.cold_bytes = e * elements * op.inputs;
  cost.hot_bytes = cost.cold_bytes + e * elements;
  return cost;
}

}  // namespace mlsys::t10
