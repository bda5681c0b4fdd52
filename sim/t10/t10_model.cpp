#include "sim/t10/t10_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "sim/violation.hpp"

namespace mlsys::t10 {
namespace {

using nlohmann::json;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
const char* kTensorName[] = {"C", "A", "B"};

std::string list(const std::array<int64_t, 3>& v) {
  return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "]";
}

std::string number(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

}  // namespace

void check_profile(const Problem& p, Profile profile, const std::string& file) {
  if (profile != Profile::EngDesign) return;
  const Chip d;
  auto fault = [&](const std::string& field, const std::string& value, const std::string& expected) {
    return InputError(file, "", "E_PROFILE",
                      "engdesign reproduces the benchmark's chip only: " + field + " = " + value +
                          ", expected " + expected);
  };
  if (p.dtype_bytes != 2) throw fault("dtype_bytes", std::to_string(p.dtype_bytes), "2");
  if (p.chip.cores != d.cores)
    throw fault("chip.cores", std::to_string(p.chip.cores), std::to_string(d.cores));
  if (p.chip.systolic != d.systolic)
    throw fault("chip.systolic", std::to_string(p.chip.systolic), std::to_string(d.systolic));
  if (p.chip.flops_per_cycle != d.flops_per_cycle)
    throw fault("chip.flops_per_cycle", number(p.chip.flops_per_cycle), number(d.flops_per_cycle));
  if (p.chip.local_bytes_per_cycle != d.local_bytes_per_cycle)
    throw fault("chip.local_bytes_per_cycle", number(p.chip.local_bytes_per_cycle),
                number(d.local_bytes_per_cycle));
  if (p.chip.noc_elems_per_cycle != d.noc_elems_per_cycle)
    throw fault("chip.noc_elems_per_cycle", number(p.chip.noc_elems_per_cycle),
                number(d.noc_elems_per_cycle));
}

Derived derive(const Problem& pr, const Plan& p) {
  Derived d;
  const auto [pm, pk, pn] = p.f_op;
  d.cores = pm * pk * pn;
  d.spatial = {ceil_div(pr.m, pm), ceil_div(pr.k, pk), ceil_div(pr.n, pn)};
  const auto [ms, ks, ns] = d.spatial;
  d.replication = {pk, pn, pm};
  d.ring_products = {p.cm * p.cn, p.am * p.ak, p.bk * p.bn};
  d.steps_per_dim = {std::max(p.am, p.cm), std::max(p.ak, p.bk), std::max(p.bn, p.cn)};
  d.steps = d.steps_per_dim[0] * d.steps_per_dim[1] * d.steps_per_dim[2];
  d.sub_task = {ceil_div(ms, d.steps_per_dim[0]), ceil_div(ks, d.steps_per_dim[1]),
                ceil_div(ns, d.steps_per_dim[2])};
  d.elems = {ceil_div(ms, p.cm) * ceil_div(ns, p.cn), ceil_div(ms, p.am) * ceil_div(ks, p.ak),
             ceil_div(ks, p.bk) * ceil_div(ns, p.bn)};
  for (int x = 0; x < 3; ++x) d.hot_bytes += pr.dtype_bytes * d.elems[x] * (d.rotates(x) ? 2 : 1);
  d.cold_bytes = pr.dtype_bytes * (d.elems[A] + d.elems[B]);
  // T15: per dimension m, k, n the factor pair (tensor, factor).
  struct Pair {
    char dim;
    int t1;
    int64_t f1;
    int t2;
    int64_t f2;
  };
  const Pair pairs[] = {{'m', C, p.cm, A, p.am}, {'k', A, p.ak, B, p.bk}, {'n', C, p.cn, B, p.bn}};
  std::vector<ShiftLevel> levels;
  for (const Pair& pair : pairs) {
    int64_t f[2] = {pair.f1, pair.f2};
    const int t[2] = {pair.t1, pair.t2};
    while (f[0] > 1 || f[1] > 1) {
      int64_t g = 0;
      for (int64_t v : f)
        if (v > 1) g = std::gcd(g, v);
      if (g == 1) {
        if (!d.misaligned) d.misaligned_dim = pair.dim;
        d.misaligned = true;
        break;
      }
      ShiftLevel level{pair.dim, g, "", 0, 0, 0, 1};
      for (int i = 0; i < 2; ++i)
        if (f[i] > 1) {
          level.tensors += kTensorName[t[i]];
          level.size += d.elems[t[i]];
          f[i] /= g;
        }
      levels.push_back(level);
    }
  }
  if (!d.misaligned) {
    std::stable_sort(levels.begin(), levels.end(),
                     [](const auto& a, const auto& b) { return a.size > b.size; });
    int64_t it = 1;
    for (size_t i = 0; i < levels.size(); ++i) {
      levels[i].iterations = it;
      levels[i].events = it * (levels[i].g - 1);
      // Q5: levels 2, 3, 4 take the ring-copy count of C, A, B by position, whatever tensors they move.
      if (i >= 2 && i <= 4)
        levels[i].hops =
            static_cast<double>(d.replication[i - 2]) / static_cast<double>(d.ring_products[i - 2]);
      it *= levels[i].g;
    }
    d.levels = levels;
  }
  return d;
}

size_t gray_advance(const std::vector<ShiftLevel>& levels, std::vector<int64_t>& digits,
                    std::vector<int64_t>& dir) {
  size_t j = levels.size();
  for (size_t i = levels.size(); i-- > 0;)
    if (digits[i] + dir[i] >= 0 && digits[i] + dir[i] < levels[i].g) {
      j = i;
      break;
    }
  for (size_t i = j + 1; i < levels.size(); ++i) dir[i] = -dir[i];
  digits[j] += dir[j];
  return j;
}

int64_t shift_cycles(const Derived& d, const std::vector<int64_t>& events, double noc) {
  double s = 0.0;
  for (size_t i = 0; i < d.levels.size(); ++i) {
    double x = static_cast<double>(events[i] * d.levels[i].size);  // it_i * (g_i - 1) * size_i, exact
    if (i >= 2) x = x * d.levels[i].hops;
    s = s + (x / noc) / (1.0 / (2.0 * static_cast<double>(i + 1)));
  }
  return static_cast<int64_t>(std::trunc(s));
}

EventCycles event_cycles(const Problem& pr, const Derived& d) {
  const double noc = pr.chip.noc_elems_per_cycle;
  EventCycles e{};
  e.sub_task =
      2.0 * static_cast<double>(d.sub_task[0] * d.sub_task[1] * d.sub_task[2]) / pr.chip.flops_per_cycle;
  for (int x : {A, B})
    if (d.rotates(x)) e.bcast[x] = static_cast<double>(d.elems[x] * (d.ring_products[x] - 1)) * 2 / noc;
  if (d.rotates(C)) {
    const double c = static_cast<double>(d.ring_products[C]), s_c = static_cast<double>(d.elems[C]);
    const double r = d.ring_products[C] == 2 ? s_c : s_c * (2 - 1.0 / c);
    e.reduce = r * 2 * (static_cast<double>(d.replication[C]) / c) / noc;
  }
  for (size_t i = 0; i < d.levels.size(); ++i)
    e.shift.push_back(static_cast<double>(d.levels[i].size) * d.levels[i].hops * 2 *
                      static_cast<double>(i + 1) / noc);
  return e;
}

Cost cost_of(const Problem& pr, const Plan&, const Derived& d) {
  // T21: binary64 in exactly this order.
  Cost c;
  const double e = static_cast<double>(pr.dtype_bytes), lsb = pr.chip.local_bytes_per_cycle;
  const double ts = static_cast<double>(pr.chip.systolic), noc = pr.chip.noc_elems_per_cycle;
  const double sm = static_cast<double>(d.sub_task[0]), sk = static_cast<double>(d.sub_task[1]),
               sn = static_cast<double>(d.sub_task[2]);
  c.compute = ((2 * (sm * sk * sn)) / pr.chip.flops_per_cycle) * static_cast<double>(d.steps);
  c.store = e * sm * sn * std::ceil(sk / ts) / lsb;
  c.load = e * sk * sm * std::ceil(sn / ts) / lsb + e * sk * sn * std::ceil(sm / ts) / lsb;
  c.comp = std::max({c.compute, c.load, c.store});
  double b = 0.0;
  for (int x : {A, B})
    b = b + ((static_cast<double>(d.elems[x] * (d.ring_products[x] - 1))) / noc) / (1.0 / (2.0 * 1.0));
  c.bcast = static_cast<int64_t>(std::trunc(b));
  const int64_t rings_c = d.ring_products[C];
  if (rings_c > 1) {
    const double rho = static_cast<double>(d.replication[C]) / static_cast<double>(rings_c);
    const double s_c = static_cast<double>(d.elems[C]), cc = static_cast<double>(rings_c);
    const double a = rings_c == 2 ? s_c : s_c * (1 + ((cc - 1) / cc));
    c.reduce = static_cast<int64_t>(std::trunc((a / noc) / (1.0 / (2.0 * rho))));
  }
  std::vector<int64_t> events;
  for (const ShiftLevel& l : d.levels) events.push_back(l.events);
  c.shift = shift_cycles(d, events, noc);
  c.total = c.comp + static_cast<double>(c.shift + c.bcast + c.reduce);
  return c;
}

std::optional<double> reference_cycles(const Problem& p) {
  if (p.reference_cycles) return p.reference_cycles;
  const Chip d;
  if (p.dtype_bytes != 2 || p.chip.cores != d.cores || p.chip.systolic != d.systolic ||
      p.chip.flops_per_cycle != d.flops_per_cycle ||
      p.chip.local_bytes_per_cycle != d.local_bytes_per_cycle ||
      p.chip.noc_elems_per_cycle != d.noc_elems_per_cycle)
    return std::nullopt;
  struct Ref {
    int64_t m, k, n;
    double cycles;
  };
  static const Ref table[] = {{32, 5120, 15360, 7018}, {128, 5120, 15360, 28672}, {16, 5120, 15360, 3658},
                              {128, 4096, 4096, 6378}, {2048, 2048, 2048, 26880}, {4, 4096, 4096, 269}};
  for (const Ref& r : table)
    if (r.m == p.m && r.k == p.k && r.n == p.n) return r.cycles;
  return std::nullopt;
}

double compute_lower_bound(const Problem& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.k) * static_cast<double>(p.n) /
         (p.chip.flops_per_cycle * static_cast<double>(p.chip.cores));
}

namespace {

// The rules `strict` adds to `engdesign` (T25): no dimension split finer than its length, aligned rings,
// the SRAM limit.
void add_strict_violations(const Problem& pr, const Plan& plan, const Derived& d, bool messages,
                           std::vector<Violation>& violations) {
  auto add = [&](const char* code, auto message) {
    violations.push_back({code, messages ? message() : std::string()});
  };
  const char* dims = "mkn";
  const int64_t lengths[] = {pr.m, pr.k, pr.n};
  for (int i = 0; i < 3; ++i)
    if (plan.f_op[i] > lengths[i])
      add("E_DIM_OVERSPLIT", [&] {
        return std::string(std::string("dimension ") + dims[i] + ": factor " + std::to_string(plan.f_op[i]) +
                           " > length " + std::to_string(lengths[i]));
      });
  if (d.misaligned) {
    const char dim = d.misaligned_dim;
    const std::string fields =
        dim == 'm'   ? "f_t_C_m = " + std::to_string(plan.cm) + ", f_t_A_m = " + std::to_string(plan.am)
        : dim == 'k' ? "f_t_A_k = " + std::to_string(plan.ak) + ", f_t_B_k = " + std::to_string(plan.bk)
                     : "f_t_C_n = " + std::to_string(plan.cn) + ", f_t_B_n = " + std::to_string(plan.bn);
    add("E_CHAIN", [&] {
      return std::string(std::string("dimension ") + dim + " is misaligned: " + fields +
                         " (both above 1, neither divides the other)");
    });
  }
  if (d.hot_bytes > pr.chip.sram_bytes_per_core) {
    std::string doubled;
    for (int x = 0; x < 3; ++x)
      if (d.rotates(x)) doubled += kTensorName[x];
    add("E_SRAM", [&] {
      return std::string("hot " + std::to_string(d.hot_bytes) + " B > capacity " +
                         std::to_string(pr.chip.sram_bytes_per_core) + " B per core (S_C " +
                         std::to_string(d.elems[C]) + ", S_A " + std::to_string(d.elems[A]) + ", S_B " +
                         std::to_string(d.elems[B]) +
                         " elements; doubled: " + (doubled.empty() ? "none" : doubled) + ")");
    });
  }
}

}  // namespace

Evaluation evaluate(const Problem& pr, const Plan& plan, Profile profile, bool messages) {
  Evaluation ev;
  Derived& d = ev.derived;
  d = derive(pr, plan);
  // Plain variables, not structured bindings: lambdas below capture them (clang 14, used for fuzzing, does
  // not capture bindings yet).
  const int64_t pm = plan.f_op[0], pk = plan.f_op[1], pn = plan.f_op[2];
  const int64_t ms = d.spatial[0], ks = d.spatial[1], ns = d.spatial[2];
  const int64_t tm = d.steps_per_dim[0], tk = d.steps_per_dim[1], tn = d.steps_per_dim[2];
  const int64_t sm = d.sub_task[0], sk = d.sub_task[1], sn = d.sub_task[2];
  const double cores = static_cast<double>(pr.chip.cores), D = 3;
  const double M = static_cast<double>(pr.m), K = static_cast<double>(pr.k), N = static_cast<double>(pr.n);
  const double V = M * K * N, mx = std::max({M, K, N});
  const double u = 0.01 * std::min(V / (V + 2 * cores), D * mx / 220);
  const double q = 0.01 * (std::min(V / (V + cores), D * mx / 220) * std::pow(D / 7, 1.0 / 18));
  auto dd = [](int64_t v) { return static_cast<double>(v); };
  const double ratio_s = (M / dd(ms * pm)) * (K / dd(ks * pk)) * (N / dd(ns * pn));
  const double ratio_t = (dd(ms) / dd(sm * tm)) * (dd(ks) / dd(sk * tk)) * (dd(ns) / dd(sn * tn));
  std::vector<Violation>& out = ev.engdesign_violations;
  auto add = [&](std::vector<Violation>& to, const char* code, auto message) {
    to.push_back({code, messages ? message() : std::string()});
  };
  bool spatial = false, temporal = false, six = false;
  if (d.cores > pr.chip.cores) {
    add(out, "E_CORES_MAX", [&] {
      return std::string("P = " + std::to_string(d.cores) + " cores for F_op " + list(plan.f_op) +
                         " exceeds the chip's " + std::to_string(pr.chip.cores) + " cores");
    });
    spatial = true;
  }
  if (dd(d.cores) / cores < u) {
    const int64_t min_p = static_cast<int64_t>(std::ceil(u * cores - 1e-9));
    add(out, "E_CORES_MIN", [&] {
      return std::string("P = " + std::to_string(d.cores) +
                         " cores is below the smallest accepted P = " + std::to_string(min_p));
    });
    spatial = true;
  }
  if (ratio_s < q) {
    add(out, "E_SPATIAL_PAD", [&] {
      return std::string("spatial padding ratio " + number(ratio_s) + " < q = " + number(q) +
                         "; padded sizes " + list({ms * pm, ks * pk, ns * pn}));
    });
    spatial = true;
  }
  const std::array<std::pair<int64_t, int64_t>, 3> factors{
      std::pair{plan.cm, plan.cn}, {plan.am, plan.ak}, {plan.bk, plan.bn}};
  const char* fop_name[] = {"F_op[1] (pk)", "F_op[2] (pn)", "F_op[0] (pm)"};
  for (int x = 0; x < 3; ++x)
    if (d.replication[x] % d.ring_products[x] != 0) {
      add(out, "E_REPLICA_DIV", [&] {
        return std::string(std::string("tensor ") + kTensorName[x] + ": temporal factors " +
                           std::to_string(factors[x].first) + " x " + std::to_string(factors[x].second) +
                           " = " + std::to_string(d.ring_products[x]) + " must divide " + fop_name[x] +
                           " = " + std::to_string(d.replication[x]));
      });
      temporal = true;
    }
  if (ratio_t < q) {
    add(out, "E_TEMPORAL_PAD", [&] {
      return std::string("temporal padding ratio " + number(ratio_t) + " < q = " + number(q) + "; steps " +
                         list(d.steps_per_dim) + ", sub-task " + list(d.sub_task) + ", spatial " +
                         list(d.spatial));
    });
    temporal = true;
  }
  if (!d.misaligned && d.levels.size() == 6) {
    add(out, "E_SHIFT_LEVELS", [&] {
      return std::string("the plan has 6 shift levels; the benchmark's model is defined for at most 5");
    });
    six = true;
  }
  const bool replica =
      std::any_of(out.begin(), out.end(), [](const auto& v) { return v.code == "E_REPLICA_DIV"; });
  if (!replica && !six) ev.cost = cost_of(pr, plan, d);
  ev.violations = out;
  if (profile == Profile::Strict) add_strict_violations(pr, plan, d, messages, ev.violations);
  ev.accepted = ev.violations.empty();
  // T29: the benchmark score follows engdesign whatever the profile.
  const auto ref = reference_cycles(pr);
  if (spatial)
    ev.score = 0.0;
  else if (temporal)
    ev.score = 20.0;
  else if (six || !ref)
    ev.score = std::nullopt;
  else
    ev.score = (0.0 + 20 + 20) + 60 * std::pow(*ref / ev.cost->total, 0.5);
  return ev;
}

}  // namespace mlsys::t10
