#include "sim/json_io.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/violation.hpp"

namespace mlsys {
namespace {

using nlohmann::json;

// The accepted ranges (README, "Accepted input ranges"). They keep every element count of the model inside 64
// bits (a working set adds at most a few forms of each tensor, and all tensors together hold at most 2^60
// elements) and every time finite (a total is at most ~1e70 even at the extremes).
constexpr int64_t kMaxDimension = int64_t{1} << 30;
constexpr int64_t kMaxTotalElements = int64_t{1} << 60;
constexpr double kMaxBaseCost = 1e15;
constexpr double kMinBandwidth = 1e-9, kMaxBandwidth = 1e18;
constexpr double kMaxCapacity = 4611686018427387904.0;  // 2^62

std::string type_name(const json& j) { return j.type_name(); }

struct Reader {
  const std::string& file;
  const char* rule;

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw InputError(file, field, rule, message);
  }

  const json& key(const json& obj, const char* name) const {
    auto it = obj.find(name);
    if (it == obj.end()) fail(name, "missing required key");
    return *it;
  }

  const json& array(const json& j, const std::string& field) const {
    if (!j.is_array()) fail(field, "expected an array, got " + type_name(j));
    return j;
  }

  // "Integer" = a JSON number with no fractional part (M1): 128 and 128.0 both count.
  int64_t integer(const json& j, const std::string& field) const {
    if (j.is_number_integer() || j.is_number_unsigned()) {
      if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        fail(field, "integer out of range");
      return j.get<int64_t>();
    }
    if (j.is_number_float()) {
      double v = j.get<double>();
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<int64_t>(v);
      fail(field, "expected an integer, got " + j.dump());
    }
    fail(field, "expected an integer, got " + type_name(j));
  }

  double number(const json& j, const std::string& field) const {
    if (!j.is_number()) fail(field, "expected a number, got " + type_name(j));
    double v = j.get<double>();
    if (!std::isfinite(v)) fail(field, "expected a finite number");
    return v;
  }

  int index(const json& j, const std::string& field, int limit, const char* what) const {
    int64_t v = integer(j, field);
    if (v < 0 || v >= limit)
      fail(field, std::string(what) + " index " + std::to_string(v) + " out of range [0, " +
                      std::to_string(limit) + ")");
    return static_cast<int>(v);
  }
};

std::string at(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

}  // namespace

json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann reports the byte offset; turn it into line and column (M1).
    size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    auto colon = what.rfind(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    throw InputError(file, "", "M1",
                     "JSON syntax error at line " + std::to_string(line) + ", column " +
                         std::to_string(column) + ": " + detail);
  } catch (const json::exception& e) {
    // Not a syntax error but still unreadable, e.g. a number too large for a double ("128e1128"); found by
    // fuzzing (tests/fuzz/regressions), where it escaped as an uncaught exception.
    const std::string what = e.what();
    const auto close = what.find("] ");
    throw InputError(file, "", "M1",
                     "JSON error: " + (close == std::string::npos ? what : what.substr(close + 2)));
  }
}

json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "", "cannot open file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

namespace {

// The names section is informational (M1: unknown keys are ignored): a list is kept only if it has one string
// per op or tensor, and nothing in it can make a problem invalid.
std::vector<std::string> string_list(const json& names, const char* key, size_t expected) {
  const auto it = names.find(key);
  if (it == names.end() || !it->is_array() || it->size() != expected) return {};
  std::vector<std::string> out;
  for (const json& item : *it) {
    if (!item.is_string()) return {};
    out.push_back(item.get<std::string>());
  }
  return out;
}

void read_names(const json& doc, Problem& p) {
  const auto it = doc.find("names");
  if (it == doc.end() || !it->is_object()) return;
  p.names.ops = string_list(*it, "ops", p.op_types.size());
  p.names.op_kinds = string_list(*it, "op_kinds", p.op_types.size());
  p.names.tensors = string_list(*it, "tensors", p.widths.size());
  for (auto [key, out] : {std::pair{"model", &p.names.model}, {"hardware", &p.names.hardware}}) {
    const auto field = it->find(key);
    if (field != it->end() && field->is_string()) *out = field->get<std::string>();
  }
}

}  // namespace

Problem parse_problem(const json& doc, const std::string& file) {
  Reader r{file, "M1"};
  if (!doc.is_object()) r.fail("", "a problem must be a JSON object, got " + type_name(doc));
  Problem p;
  const json& widths = r.array(r.key(doc, "widths"), "widths");
  const json& heights = r.array(r.key(doc, "heights"), "heights");
  if (widths.empty()) r.fail("widths", "needs at least one tensor");
  if (widths.size() != heights.size())
    r.fail("heights", "length " + std::to_string(heights.size()) + " differs from widths length " +
                          std::to_string(widths.size()));
  for (size_t i = 0; i < widths.size(); ++i) {
    for (auto [arr, name, out] : {std::tuple{&widths, "widths", &p.widths}, {&heights, "heights", &p.heights}}) {
      int64_t v = r.integer((*arr)[i], at(name, i));
      if (v < 1) r.fail(at(name, i), "must be >= 1, got " + std::to_string(v));
      if (v > kMaxDimension) r.fail(at(name, i), "must be <= 2^30, got " + std::to_string(v));
      out->push_back(v);
    }
  }
  {
    int64_t total = 0;  // each size is below 2^60, so the sum of two cannot overflow before the check
    for (size_t i = 0; i < widths.size(); ++i) {
      total += p.widths[i] * p.heights[i];
      if (total > kMaxTotalElements)
        r.fail(at("widths", i), "the tensors up to this one hold more than 2^60 elements together (" +
                                    std::to_string(total) + "); the model counts elements in 64 bits");
    }
  }
  const int T = static_cast<int>(widths.size());
  const json& inputs = r.array(r.key(doc, "inputs"), "inputs");
  const json& outputs = r.array(r.key(doc, "outputs"), "outputs");
  const json& bases = r.array(r.key(doc, "base_costs"), "base_costs");
  const json& types = r.array(r.key(doc, "op_types"), "op_types");
  if (inputs.empty()) r.fail("inputs", "needs at least one op");
  const size_t N = inputs.size();
  for (auto [arr, name] : {std::pair{&outputs, "outputs"}, {&bases, "base_costs"}, {&types, "op_types"}})
    if (arr->size() != N)
      r.fail(name, "length " + std::to_string(arr->size()) + " differs from inputs length " + std::to_string(N));
  for (size_t o = 0; o < N; ++o) {
    for (auto [arr, name, out] : {std::tuple{&inputs, "inputs", &p.inputs}, {&outputs, "outputs", &p.outputs}}) {
      const json& list = r.array((*arr)[o], at(name, o));
      std::vector<int> tensors;
      for (size_t i = 0; i < list.size(); ++i)
        tensors.push_back(r.index(list[i], at(at(name, o), i), T, "tensor"));
      out->push_back(std::move(tensors));
    }
    double base = r.number(bases[o], at("base_costs", o));
    if (!(base > 0) || base > kMaxBaseCost)
      r.fail(at("base_costs", o), "must be in (0, 1e15], got " + bases[o].dump());
    p.base_costs.push_back(base);
    const json& type = types[o];
    if (!type.is_string()) r.fail(at("op_types", o), "expected a string, got " + type_name(type));
    const std::string name = type.get<std::string>();
    if (name == "MatMul") {
      p.op_types.push_back(OpType::MatMul);
    } else if (name == "Pointwise") {
      p.op_types.push_back(OpType::Pointwise);
    } else {
      throw InputError(file, at("op_types", o), "M2", "unknown op type \"" + name + "\"");
    }
  }
  p.fast_memory_capacity = r.number(r.key(doc, "fast_memory_capacity"), "fast_memory_capacity");
  if (!(p.fast_memory_capacity > 0) || p.fast_memory_capacity > kMaxCapacity)
    r.fail("fast_memory_capacity", "must be in (0, 2^62], got " + doc["fast_memory_capacity"].dump());
  p.slow_memory_bandwidth = r.number(r.key(doc, "slow_memory_bandwidth"), "slow_memory_bandwidth");
  if (!(p.slow_memory_bandwidth >= kMinBandwidth) || p.slow_memory_bandwidth > kMaxBandwidth)
    r.fail("slow_memory_bandwidth", "must be in [1e-9, 1e18], got " + doc["slow_memory_bandwidth"].dump());
  const json& native = r.array(r.key(doc, "native_granularity"), "native_granularity");
  if (native.size() != 2) r.fail("native_granularity", "expected exactly 2 integers");
  p.native_w = r.integer(native[0], "native_granularity[0]");
  p.native_h = r.integer(native[1], "native_granularity[1]");
  if (p.native_w < 1 || p.native_w > kMaxDimension) r.fail("native_granularity[0]", "must be in [1, 2^30]");
  if (p.native_h < 1 || p.native_h > kMaxDimension) r.fail("native_granularity[1]", "must be in [1, 2^30]");
  read_names(doc, p);
  return p;
}

Problem load_problem(const std::string& path) { return parse_problem(read_json_file(path), path); }

Schedule parse_schedule(const json& doc, const std::string& file, const Problem& problem) {
  Reader r{file, "M4"};
  if (!doc.is_object()) r.fail("", "a solution must be a JSON object, got " + type_name(doc));
  Schedule s;
  if (doc.empty()) return s;  // {} = "no solution"; M5 rejects it
  const json& subgraphs = r.array(r.key(doc, "subgraphs"), "subgraphs");
  const size_t n = subgraphs.size();
  auto same_length = [&](const char* name) -> const json* {
    auto it = doc.find(name);
    if (it == doc.end()) return nullptr;
    r.array(*it, name);
    if (it->size() != n)
      r.fail(name, "length " + std::to_string(it->size()) + " differs from subgraphs length " + std::to_string(n));
    return &*it;
  };
  const json* grans = same_length("granularities");
  if (!grans) r.fail("granularities", "missing required key");
  const json* retain = same_length("tensors_to_retain");
  const json* orders = same_length("traversal_orders");
  const json* latencies = same_length("subgraph_latencies");
  s.subgraphs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    SubgraphSpec& sg = s.subgraphs[i];
    const json& ops = r.array(subgraphs[i], at("subgraphs", i));
    for (size_t j = 0; j < ops.size(); ++j)
      sg.ops.push_back(r.index(ops[j], at(at("subgraphs", i), j), problem.num_ops(), "op"));
    const json& g = r.array((*grans)[i], at("granularities", i));
    if (g.size() != 3) r.fail(at("granularities", i), "expected [w, h, k], got " + std::to_string(g.size()) + " values");
    sg.granularity = {r.integer(g[0], at(at("granularities", i), 0)), r.integer(g[1], at(at("granularities", i), 1)),
                      r.integer(g[2], at(at("granularities", i), 2))};
    if (retain) {
      const json& list = r.array((*retain)[i], at("tensors_to_retain", i));
      for (size_t j = 0; j < list.size(); ++j)
        sg.retain.push_back(r.index(list[j], at(at("tensors_to_retain", i), j), problem.num_tensors(), "tensor"));
    }
    if (orders && !(*orders)[i].is_null()) {
      const json& list = (*orders)[i];
      if (!list.is_array())
        r.fail(at("traversal_orders", i), "expected null or an array, got " + type_name(list));
      std::vector<int64_t> order;
      order.reserve(list.size());
      for (size_t j = 0; j < list.size(); ++j) order.push_back(r.integer(list[j], at(at("traversal_orders", i), j)));
      sg.traversal = std::move(order);
    }
  }
  if (latencies) {
    std::vector<double> values;
    for (size_t i = 0; i < n; ++i) values.push_back(r.number((*latencies)[i], at("subgraph_latencies", i)));
    s.reported_latencies = std::move(values);
  }
  return s;
}

Schedule load_schedule(const std::string& path, const Problem& problem) {
  return parse_schedule(read_json_file(path), path, problem);
}

json schedule_to_json(const Schedule& schedule) {
  json subgraphs = json::array(), grans = json::array(), retain = json::array(), orders = json::array(),
       latencies = json::array();
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    const SubgraphSpec& sg = schedule.subgraphs[i];
    subgraphs.push_back(sg.ops);
    grans.push_back({sg.granularity.w, sg.granularity.h, sg.granularity.k});
    retain.push_back(sg.retain);
    orders.push_back(sg.traversal ? json(*sg.traversal) : json(nullptr));
    latencies.push_back(schedule.reported_latencies ? (*schedule.reported_latencies)[i] : 0.0);
  }
  return {{"subgraphs", subgraphs},
          {"granularities", grans},
          {"tensors_to_retain", retain},
          {"traversal_orders", orders},
          {"subgraph_latencies", latencies}};
}

namespace {
void append_ints(std::string& out, const std::vector<int64_t>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  out += ']';
}
void append_ints(std::string& out, const std::vector<int>& values) {
  append_ints(out, std::vector<int64_t>(values.begin(), values.end()));
}
}  // namespace

std::string schedule_text(const Schedule& schedule) {
  if (schedule.subgraphs.size() <= kIndentedSubgraphs) return schedule_to_json(schedule).dump(1) + "\n";
  // The keys in the document's (sorted) order; numbers as the document prints them.
  std::string out = "{\"granularities\":[";
  const auto& sgs = schedule.subgraphs;
  for (size_t i = 0; i < sgs.size(); ++i) {
    if (i) out += ',';
    append_ints(out, std::vector<int64_t>{sgs[i].granularity.w, sgs[i].granularity.h, sgs[i].granularity.k});
  }
  out += "],\"subgraph_latencies\":[";
  for (size_t i = 0; i < sgs.size(); ++i) {
    if (i) out += ',';
    out += json(schedule.reported_latencies ? (*schedule.reported_latencies)[i] : 0.0).dump();
  }
  out += "],\"subgraphs\":[";
  for (size_t i = 0; i < sgs.size(); ++i) {
    if (i) out += ',';
    append_ints(out, sgs[i].ops);
  }
  out += "],\"tensors_to_retain\":[";
  for (size_t i = 0; i < sgs.size(); ++i) {
    if (i) out += ',';
    append_ints(out, sgs[i].retain);
  }
  out += "],\"traversal_orders\":[";
  for (size_t i = 0; i < sgs.size(); ++i) {
    if (i) out += ',';
    if (sgs[i].traversal)
      append_ints(out, *sgs[i].traversal);
    else
      out += "null";
  }
  out += "]}\n";
  return out;
}

json problem_to_json(const Problem& p) {
  json types = json::array();
  for (OpType t : p.op_types) types.push_back(t == OpType::MatMul ? "MatMul" : "Pointwise");
  return {{"widths", p.widths},
          {"heights", p.heights},
          {"inputs", p.inputs},
          {"outputs", p.outputs},
          {"base_costs", p.base_costs},
          {"op_types", types},
          {"fast_memory_capacity", p.fast_memory_capacity},
          {"slow_memory_bandwidth", p.slow_memory_bandwidth},
          {"native_granularity", {p.native_w, p.native_h}}};
}

}  // namespace mlsys
