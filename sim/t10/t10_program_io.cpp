// The whole-model program's files (docs/t10-programs.md#format): the T10 model file the importer writes, a
// graph problem read as a program, and the compiled program's JSON.
#include <algorithm>
#include <cmath>
#include <set>

#include "sim/graph.hpp"
#include "sim/json_io.hpp"
#include "sim/problem.hpp"
#include "sim/t10/t10_program.hpp"
#include "sim/violation.hpp"

namespace mlsys::t10 {
namespace {

using nlohmann::json;

constexpr const char* kRule = "E_PROGRAM";

int64_t positive(const json& op, const char* key, const std::string& where, const std::string& file,
                 std::optional<int64_t> fallback) {
  auto it = op.find(key);
  if (it == op.end()) {
    if (fallback) return *fallback;
    throw InputError(file, where + "." + key, kRule, "required");
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxOperatorDimension)
    throw InputError(
        file, where + "." + key, kRule,
        "must be an integer from 1 to " + std::to_string(kMaxOperatorDimension) + ", got " + it->dump());
  return it->get<int64_t>();
}

std::vector<int64_t> parse_shape(const json& j, const std::string& where, const std::string& file) {
  if (!j.is_array() || j.size() > 16)
    throw InputError(file, where, kRule, "must be a list of up to 16 dimensions");
  std::vector<int64_t> shape;
  for (const json& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxOperatorDimension * 64)
      throw InputError(file, where, kRule, "dimensions must be integers from 0 to 2^30, got " + d.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// A view: an op name alone (older files: no index map), or {"op", "shape", "perm" | "slices" | the Im2col's
// "kernel", "strides", "pads", "dilations", "out", "unmapped"}.
ViewStep parse_view(const json& j, const std::string& where, const std::string& file) {
  ViewStep step;
  if (j.is_string()) {
    step.op = j.get<std::string>();
    step.unmapped = "the file gives no index map";
    return step;
  }
  if (!j.is_object() || !j.contains("op") || !j["op"].is_string())
    throw InputError(file, where, kRule, "must be a view {\"op\", \"shape\", ...} or an op name");
  step.op = j["op"].get<std::string>();
  if (j.contains("shape")) step.shape = parse_shape(j["shape"], where + ".shape", file);
  if (j.contains("perm")) {
    step.perm = parse_shape(j["perm"], where + ".perm", file);
    std::vector<int64_t> sorted = step.perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t a = 0; a < sorted.size(); ++a)
      if (sorted[a] != static_cast<int64_t>(a) || sorted.size() != step.shape.size())
        throw InputError(file, where + ".perm", kRule, "must be a permutation of the shape's axes");
  }
  if (j.contains("slices")) {
    if (!j["slices"].is_array() || j["slices"].size() > 16)
      throw InputError(file, where + ".slices", kRule, "must be a list of [axis, start, end]");
    for (const json& r : j["slices"]) {
      const std::vector<int64_t> v = parse_shape(r, where + ".slices", file);
      if (v.size() != 3 || v[1] > v[2])
        throw InputError(file, where + ".slices", kRule,
                         "each slice is [axis, start, end] with start <= end");
      step.slices.push_back({v[0], v[1], v[2]});
    }
  }
  for (auto [key, field] :
       {std::pair{"kernel", &step.kernel}, std::pair{"strides", &step.strides}, std::pair{"pads", &step.pads},
        std::pair{"dilations", &step.dilations}, std::pair{"out", &step.out}})
    if (j.contains(key)) {
      *field = parse_shape(j[key], where + "." + key, file);
      if (field->size() != 2) throw InputError(file, where + "." + key, kRule, "must have two values");
    }
  if (j.contains("unmapped"))
    step.unmapped = j["unmapped"].is_string() ? j["unmapped"].get<std::string>() : "unmapped";
  if (step.shape.empty() && step.unmapped.empty()) step.unmapped = "no shape";
  return step;
}

// A compute graph's input: {"node": j} (an earlier node), {"read": j}, {"param": NAME}, {"value": [...]}
// (numbers, or "inf", "-inf", "nan"), {"unknown": NAME}, or null (an omitted optional input).
ComputeArg parse_compute_arg(const json& j, size_t node, const std::string& where, const std::string& file) {
  ComputeArg a;
  if (j.is_null()) return a;
  if (!j.is_object()) throw InputError(file, where, kRule, "must be an object or null, got " + j.dump());
  auto index = [&](const char* key, int64_t limit) {
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= limit)
      throw InputError(file, where + "." + key, kRule,
                       std::string(key) + " must be an integer from 0 to " + std::to_string(limit - 1));
    return v.get<int64_t>();
  };
  if (j.contains("shape")) a.shape = parse_shape(j["shape"], where + ".shape", file);
  if (j.contains("node")) {
    a.kind = ComputeArg::Kind::Node, a.index = index("node", static_cast<int64_t>(node));
  } else if (j.contains("read")) {
    a.kind = ComputeArg::Kind::Read, a.index = index("read", 64);
  } else if (j.contains("param") || j.contains("unknown")) {
    const char* key = j.contains("param") ? "param" : "unknown";
    if (!j[key].is_string()) throw InputError(file, where + "." + key, kRule, "must be a name");
    a.kind = j.contains("param") ? ComputeArg::Kind::Param : ComputeArg::Kind::Unknown;
    a.name = j[key].get<std::string>();
  } else if (j.contains("value")) {
    const json& v = j["value"];
    if (!v.is_array() || v.size() > (size_t{1} << 20))
      throw InputError(file, where + ".value", kRule, "must be a list of up to 2^20 numbers");
    a.kind = ComputeArg::Kind::Value;
    for (const json& x : v) {
      if (x.is_number()) {
        a.values.push_back(x.get<double>());
      } else if (x == "inf" || x == "-inf" || x == "nan") {
        const std::string t = x.get<std::string>();
        a.values.push_back(t == "nan" ? std::nan("") : t == "inf" ? HUGE_VAL : -HUGE_VAL);
      } else {
        throw InputError(file, where + ".value", kRule, "numbers, \"inf\", \"-inf\" or \"nan\", got " + x.dump());
      }
    }
  } else {
    throw InputError(file, where, kRule, "must have one of node, read, param, value, unknown");
  }
  return a;
}

VectorCompute parse_compute(const json& j, const std::string& where, const std::string& file) {
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty() ||
      j["nodes"].size() > 1000)
    throw InputError(file, where, kRule, "must be {\"nodes\": [1 to 1000 nodes], \"shape\": [...]}");
  VectorCompute c;
  if (j.contains("shape")) c.shape = parse_shape(j["shape"], where + ".shape", file);
  for (size_t n = 0; n < j["nodes"].size(); ++n) {
    const json& node = j["nodes"][n];
    const std::string at = where + ".nodes[" + std::to_string(n) + "]";
    if (!node.is_object() || !node.contains("op") || !node["op"].is_string() || !node.contains("in") ||
        !node["in"].is_array() || node["in"].size() > 64)
      throw InputError(file, at, kRule, "must be {\"op\": TYPE, \"in\": [up to 64 inputs], \"attrs\": {...}}");
    ComputeNode out;
    out.op = node["op"].get<std::string>();
    for (size_t i = 0; i < node["in"].size(); ++i)
      out.in.push_back(parse_compute_arg(node["in"][i], n, at + ".in[" + std::to_string(i) + "]", file));
    if (node.contains("attrs")) {
      if (!node["attrs"].is_object()) throw InputError(file, at + ".attrs", kRule, "must be an object");
      out.attrs = node["attrs"];
    }
    c.nodes.push_back(std::move(out));
  }
  return c;
}

TensorOperator parse_operator(const json& op, size_t index, const std::string& file) {
  const std::string where = "ops[" + std::to_string(index) + "]";
  if (!op.is_object()) throw InputError(file, where, kRule, "must be an object, got " + op.dump());
  TensorOperator t;
  auto name = op.find("name");
  t.name = name != op.end() && name->is_string() ? name->get<std::string>() : where;
  auto type = op.find("type");
  if (type == op.end() || !type->is_string() || !operator_type_from(type->get<std::string>()))
    throw InputError(file, where + ".type", kRule,
                     "must be \"matmul\", \"elementwise\", \"relu\" or \"rowwise\", got " +
                         (type == op.end() ? std::string("nothing") : type->dump()));
  t.type = *operator_type_from(type->get<std::string>());
  const bool matmul = t.type == OperatorType::MatMul;
  t.batch = positive(op, "batch", where, file, 1);
  t.m = positive(op, "m", where, file, std::nullopt);
  t.n = positive(op, "n", where, file, std::nullopt);
  t.k = matmul ? positive(op, "k", where, file, std::nullopt) : 1;
  t.inputs = matmul ? 2 : positive(op, "inputs", where, file, 1);
  if (auto reduces = op.find("reduces"); reduces != op.end()) {
    if (!reduces->is_boolean() || (reduces->get<bool>() && t.type != OperatorType::RowWise))
      throw InputError(file, where + ".reduces", kRule,
                       "true only for a row-wise operator, got " + reduces->dump());
    t.reduces = reduces->get<bool>();
  }
  if (t.batch * t.m > kMaxOperatorDimension * 64)
    throw InputError(file, where + ".batch", kRule,
                     "batch x m above " + std::to_string(kMaxOperatorDimension * 64));
  if (auto function = op.find("function"); function != op.end()) {
    if (!function->is_array() || function->size() > 1000 || t.type == OperatorType::MatMul)
      throw InputError(file, where + ".function", kRule, "a vector operator's list of ONNX operator types");
    for (const json& f : *function) {
      if (!f.is_string()) throw InputError(file, where + ".function", kRule, "must list strings, got " + f.dump());
      t.function.push_back(f.get<std::string>());
    }
  }
  if (auto compute = op.find("compute"); compute != op.end()) {
    if (matmul) throw InputError(file, where + ".compute", kRule, "a vector operator's, not a MatMul's");
    t.compute = parse_compute(*compute, where + ".compute", file);
  }
  if (auto weight = op.find("weight"); weight != op.end()) {
    const json& w = *weight;
    if (!matmul || !w.is_object() || !w.contains("name") || !w["name"].is_string() || !w.contains("shape"))
      throw InputError(file, where + ".weight", kRule, "a MatMul's {\"name\", \"shape\", \"layout\"}");
    WeightSource source;
    source.name = w["name"].get<std::string>();
    source.shape = parse_shape(w["shape"], where + ".weight.shape", file);
    if (w.contains("layout") && !w["layout"].is_string())
      throw InputError(file, where + ".weight.layout", kRule, "must be \"kn\", \"nk\" or \"conv\"");
    source.layout = w.value("layout", std::string("kn"));
    if (source.layout != "kn" && source.layout != "nk" && source.layout != "conv")
      throw InputError(file, where + ".weight.layout", kRule, "must be \"kn\", \"nk\" or \"conv\"");
    t.weight = source;
  }
  if (auto reads = op.find("reads"); reads != op.end()) {
    if (!reads->is_array() || reads->size() > 64)
      throw InputError(file, where + ".reads", kRule, "must be a list of up to 64 {\"from\", \"through\"}");
    for (size_t slot = 0; slot < reads->size(); ++slot) {
      const json& r = (*reads)[slot];
      const std::string at = where + ".reads[" + std::to_string(slot) + "]";
      if (!r.is_object())
        throw InputError(file, at, kRule, "must be {\"from\": NAME or null, \"through\": [...]}");
      TensorOperator::Read read;
      if (r.contains("from") && !r["from"].is_null()) {
        if (!r["from"].is_string())
          throw InputError(file, at + ".from", kRule, "must be an operator name or null");
        read.from = r["from"].get<std::string>();
      }
      if (r.contains("input")) {
        if (!r["input"].is_string() || !read.from.empty())
          throw InputError(file, at + ".input", kRule, "must be a graph input's name, for a read from null");
        read.input = r["input"].get<std::string>();
      }
      if (r.contains("through")) {
        if (!r["through"].is_array() || r["through"].size() > 1000)
          throw InputError(file, at + ".through", kRule, "must be a list of views");
        for (size_t v = 0; v < r["through"].size(); ++v)
          read.through.push_back(
              parse_view(r["through"][v], at + ".through[" + std::to_string(v) + "]", file));
      }
      if (r.contains("from_shape")) read.from_shape = parse_shape(r["from_shape"], at + ".from_shape", file);
      if (r.contains("from_order")) {
        if (r["from_order"] != "nhwc" || read.from_shape.size() != 4)
          throw InputError(file, at + ".from_order", kRule, "\"nhwc\" is the one order, of a 4-D from_shape");
        read.from_channels_last = true;
      }
      t.reads.push_back(std::move(read));
    }
  }
  if (auto after = op.find("after"); after != op.end()) {
    if (!after->is_array())
      throw InputError(file, where + ".after", kRule, "must be a list of operator names");
    for (const json& a : *after)
      if (a.is_string()) t.after.push_back(a.get<std::string>());
  }
  return t;
}

}  // namespace

TensorProgram parse_program(const json& doc, const std::string& file) {
  const json* body = &doc;
  if (doc.is_object() && doc.contains("t10_program")) body = &doc["t10_program"];
  if (!body->is_object() || !body->contains("ops"))
    throw InputError(file, "t10_program", kRule,
                     "a T10 model file is {\"t10_program\": {\"ops\": [...]}} (docs/t10-programs.md#format)");
  const json& ops = (*body)["ops"];
  if (!ops.is_array() || ops.empty())
    throw InputError(file, "ops", kRule, "must be a non-empty list of operators");
  if (ops.size() > kMaxProgramOperators)
    throw InputError(
        file, "ops", kRule,
        std::to_string(ops.size()) + " operators, above the limit " + std::to_string(kMaxProgramOperators));
  TensorProgram program;
  if (auto name = body->find("name"); name != body->end() && name->is_string()) program.name = *name;
  if (body->contains("chip")) program.chip = parse_chip((*body)["chip"], "chip", kRule, file);
  if (body->contains("dtype_bytes"))
    program.dtype_bytes = positive(*body, "dtype_bytes", "t10_program", file, std::nullopt);
  std::set<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    program.ops.push_back(parse_operator(ops[i], i, file));
    std::vector<std::string> producers = program.ops.back().after;
    for (const TensorOperator::Read& r : program.ops.back().reads)
      if (!r.from.empty()) producers.push_back(r.from);
    for (const std::string& producer : producers)
      if (!names.count(producer))
        throw InputError(
            file, "ops[" + std::to_string(i) + "].after", kRule,
            "'" + producer + "' is not an earlier operator (operators are listed in execution order)");
    if (!names.insert(program.ops.back().name).second)
      throw InputError(file, "ops[" + std::to_string(i) + "].name", kRule,
                       "'" + program.ops.back().name + "' names two operators");
  }
  return program;
}

TensorProgram program_from_graph(const mlsys::Problem& problem, const Chip& chip, const std::string& name) {
  const Graph graph = analyze_graph(problem, name);
  TensorProgram program;
  program.name = problem.names.model.empty() ? name : problem.names.model;
  program.chip = chip;
  auto op_name = [&](int op) {
    return op < static_cast<int>(problem.names.ops.size()) ? problem.names.ops[op]
                                                           : "op" + std::to_string(op);
  };
  for (int op : graph.topological_order) {
    const int out = problem.outputs[op][0];
    TensorOperator t;
    t.name = op_name(op);
    t.m = problem.heights[out];
    t.n = problem.widths[out];
    if (problem.is_matmul(op)) {
      t.type = OperatorType::MatMul;
      t.k = problem.widths[problem.inputs[op][0]];
    } else {
      t.type = OperatorType::Elementwise;
      t.inputs = static_cast<int64_t>(problem.inputs[op].size());
    }
    for (int in : problem.inputs[op])
      if (graph.producer[in] >= 0) t.after.push_back(op_name(graph.producer[in]));
    program.ops.push_back(std::move(t));
  }
  return program;
}

TensorProgram program_from_document(const json& doc, const std::string& file, const std::string& name) {
  TensorProgram program = doc.is_object() && doc.contains("widths")
                              ? program_from_graph(mlsys::parse_problem(doc, file), Chip{}, name)
                              : parse_program(doc, file);
  if (program.name.empty()) program.name = name;
  return program;
}

json program_to_json(const TensorProgram& program, const CompiledProgram& compiled) {
  json ops = json::array();
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const TensorOperator& op = program.ops[i];
    const OperatorOption& o = compiled.chosen[i];
    json j = {{"name", op.name}, {"type", to_string(op.type)}, {"m", op.m}, {"n", op.n}};
    if (op.type == OperatorType::MatMul) {
      j["k"] = op.k;
      j["plan"] = plan_to_json(o.plan);
      if (op.batch > 1) j["plan"]["pb"] = o.plan.pb;
    } else {
      j["inputs"] = op.inputs;
      j["plan"] = {{"cores", o.plan.f_op[0]}};
    }
    if (op.batch > 1) j["batch"] = op.batch;
    j["cycles"] = {{"compute", o.cost.compute},
                   {"sync_shift", o.cost.sync_shift},
                   {"shuffle", o.cost.shuffle},
                   {"warm_up", o.warm_up},
                   {"total", o.time()}};
    j["cold_bytes"] = o.cold;
    j["hot_bytes"] = o.hot;
    j["cold_layout"] = o.cold_is_hot ? "hot plan's" : "no copies";
    ops.push_back(std::move(j));
  }
  // One transition per edge of the data flow. Its time is the producer's shuffle and the consumer's warm-up,
  // which the calibrated model prices once per operator however many edges share them.
  json transitions = json::array();
  const std::vector<std::vector<DataEdge>> flow = data_flow(program);
  for (size_t i = 0; i < flow.size(); ++i)
    for (const DataEdge& e : flow[i])
      transitions.push_back({{"from", program.ops[e.producer].name},
                             {"to", program.ops[i].name},
                             {"shuffle", compiled.chosen[e.producer].cost.shuffle},
                             {"warm_up", compiled.chosen[i].warm_up}});
  return {{"t10_compiled", true},
          {"name", program.name},
          {"chip",
           {{"name", program.chip.name},
            {"cores", program.chip.cores},
            {"sram_bytes_per_core", program.chip.sram_bytes_per_core}}},
          {"timing", "calibrated"},
          {"reconciliation", compiled.reconciliation},
          {"ops", std::move(ops)},
          {"transitions", std::move(transitions)},
          {"total_cycles", compiled.total_cycles},
          {"lower_bound_cycles", compiled.lower_bound},
          {"proven_gap", compiled.lower_bound > 0 ? compiled.total_cycles / compiled.lower_bound - 1 : 0.0},
          {"cold_bytes_per_core", compiled.cold_bytes},
          {"peak_extra_bytes_per_core", compiled.peak_extra_bytes},
          {"peak_sram_bytes", compiled.peak_sram_bytes()}};
}

}  // namespace mlsys::t10
