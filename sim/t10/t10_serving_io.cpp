// Reading the Elk artifact's model files (platformxlab/elk, models/original/*.json) as one decode step
// (docs/t10-serving.md#model-files). A file is a list of nodes [id, expression, type, [[input id, port]...]]
// whose expressions are einstein_v2 strings with the input shapes in an input_dict; 99 stands for the batch
// and 66 for the sequence (models/model_parser.py: BATCH_CODE, SEQ_LEN_CODE). One decode step has one query
// position: in a shape the first 66 is 1 and any later one the KV cache length L (the keys a query meets).
#include "sim/t10/t10_serving_io.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <tuple>

#include "sim/t10/t10_program.hpp"
#include "sim/violation.hpp"

namespace mlsys::t10 {
namespace {

constexpr int64_t kBatchCode = 99, kSequenceCode = 66;
// The views and bookkeeping nodes the artifact's parser drops (SHOULD_IGNORE_OP_TYPE) plus the embedding
// gather, which it drops for decoder LLMs (model_parser.py, GatherV2 for opt-, llam-, gemm-).
const std::set<std::string> kNoOperator = {"Parameter", "Constant",  "Result", "Reshape",
                                           "Convert",   "Broadcast", "Concat", "GatherV2"};
const std::set<std::string> kUnary = {"Relu", "Negative", "Sigmoid", "Sqrt", "Tanh", "Erf"};
const std::set<std::string> kBinary = {"Add", "Divide", "Multiply", "Power", "Subtract", "Maximum"};
const std::set<std::string> kRowWise = {"Sum", "SoftmaxBasic"};

struct Operand {
  std::vector<std::string> index;  // index names in the expression
  std::vector<int64_t> shape;      // from input_dict, codes not yet replaced
};

struct Expression {
  std::vector<std::string> output;
  std::vector<Operand> inputs;
};

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  std::string cur;
  for (char ch : list + ",") {
    if (ch == ',') {
      const auto b = cur.find_first_not_of(" "), e = cur.find_last_not_of(" ");
      names.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  return names;
}

std::vector<int64_t> split_ints(const std::string& list) {
  std::vector<int64_t> values;
  for (const std::string& s : split_names(list)) values.push_back(std::stoll(s));
  return values;
}

// The output's and each input's index names, and the inputs' shapes.
Expression parse_expression(const std::string& text, const std::function<void(const std::string&)>& fail) {
  Expression e;
  static const std::regex output(R"(output0\[([^\]]*)\])");
  static const std::regex input(R"(input(\d+)\[([^\]]*)\])");
  static const std::regex shape(R"re("input(\d+)"\s*:\s*\{[^}]*"shape"\s*:\s*\[([^\]]*)\])re");
  std::smatch m;
  if (!std::regex_search(text, m, output)) fail("no output0[...] in the expression");
  e.output = split_names(m[1]);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), shape); it != std::sregex_iterator(); ++it) {
    const size_t i = std::stoul((*it)[1]);
    if (i > 8) fail("input" + std::to_string(i) + ": more inputs than any operator has");
    if (e.inputs.size() <= i) e.inputs.resize(i + 1);
    e.inputs[i].shape = split_ints((*it)[2]);
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), input); it != std::sregex_iterator(); ++it) {
    const size_t i = std::stoul((*it)[1]);
    if (i < e.inputs.size() && e.inputs[i].index.empty()) e.inputs[i].index = split_names((*it)[2]);
  }
  if (e.inputs.empty()) fail("no input shapes in the input_dict");
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (e.inputs[i].shape.empty()) fail("input" + std::to_string(i) + " has no shape");
  return e;
}

// A shape for one decode step: 99 -> batch, the first 66 -> 1, later 66s -> L; multiples of 99 (a batch
// folded with heads or the sequence) -> that multiple of the batch.
std::vector<int64_t> decode_shape(const std::vector<int64_t>& shape, const ServingShape& at) {
  std::vector<int64_t> out;
  bool first_sequence = true;
  for (int64_t d : shape) {
    if (d == kSequenceCode) {
      out.push_back(first_sequence ? 1 : at.sequence);
      first_sequence = false;
    } else if (d == kBatchCode * kSequenceCode) {
      out.push_back(at.batch);
      first_sequence = false;
    } else if (d % kBatchCode == 0) {
      out.push_back(d / kBatchCode * at.batch);
    } else {
      out.push_back(d);
    }
  }
  return out;
}

// A vector operator's rows (all but the last dimension) and columns (the last).
std::pair<int64_t, int64_t> rows_and_columns(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {1, 1};
  return {shape_elements(std::vector<int64_t>(shape.begin(), shape.end() - 1)), shape.back()};
}

bool is_activation(const std::vector<int64_t>& raw) {
  return std::any_of(raw.begin(), raw.end(),
                     [](int64_t d) { return d % kBatchCode == 0 || d == kSequenceCode; });
}

// A MatMul from Dot or BatchMatMul: batch dims are in both inputs and the output, m in input 0 and the
// output, n in input 1 and the output, k in both inputs only.
ServingOperator matmul(const Expression& e, const ServingShape& at, int64_t dtype,
                       const std::function<void(const std::string&)>& fail) {
  if (e.inputs.size() != 2) fail("a product needs two inputs");
  const Operand &a = e.inputs[0], &b = e.inputs[1];
  if (a.index.size() != a.shape.size() || b.index.size() != b.shape.size())
    fail("index names and shapes disagree");
  auto in = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  // By index name: the query rows (in input0 and the output only) are the one decoded position; any other
  // sequence index is the KV cache's length.
  auto length = [&](const std::string& name, int64_t raw) -> int64_t {
    if (raw == kSequenceCode)
      return in(e.output, name) && !in(b.index, name) && in(a.index, name) ? 1 : at.sequence;
    return decode_shape({raw}, at)[0];
  };
  ServingOperator op;
  op.op.type = OperatorType::MatMul;
  op.op.batch = op.op.m = op.op.k = op.op.n = 1;
  for (size_t i = 0; i < a.index.size(); ++i) {
    const std::string& name = a.index[i];
    const int64_t d = length(name, a.shape[i]);
    if (in(b.index, name) && in(e.output, name))
      op.op.batch *= d;
    else if (in(e.output, name))
      op.op.m *= d;
    else if (in(b.index, name))
      op.op.k *= d;
    else
      fail("index " + name + " of input0 is in neither input1 nor the output");
  }
  int64_t b_elements = 1;
  for (size_t i = 0; i < b.index.size(); ++i) {
    const int64_t d = length(b.index[i], b.shape[i]);
    b_elements *= d;
    if (!in(a.index, b.index[i]) && in(e.output, b.index[i])) op.op.n *= d;
  }
  op.hbm = is_activation(b.shape) ? HbmOperand::KvCache : HbmOperand::Weight;
  op.hbm_bytes = b_elements * dtype;
  return op;
}

// Layers: each has two products with the KV cache (scores and context). The products with a weight before the
// first of them (w of them: the Q, K and V projections, packed or not) open a layer, so layer i starts just
// after the weight product that precedes the w weight products before its first KV product: the operators
// between two layers' projections (the output projection, the MLP) stay with the layer they finish. Keeps the
// first `keep` layers (all when 0).
void assign_layers(ServingProgram& p, int keep, const std::string& file) {
  std::vector<int> kv_products, weight_products;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].hbm == HbmOperand::KvCache) kv_products.push_back(static_cast<int>(i));
    if (p.ops[i].hbm == HbmOperand::Weight) weight_products.push_back(static_cast<int>(i));
  }
  p.layers = std::max<int>(1, static_cast<int>(kv_products.size()) / 2);
  const auto before = [&](int op) {  // weight products before operator `op`
    return static_cast<int>(std::lower_bound(weight_products.begin(), weight_products.end(), op) -
                            weight_products.begin());
  };
  const int opening = kv_products.empty() ? 0 : before(kv_products[0]);
  std::vector<int> starts{0};  // the first operator of each layer
  for (int layer = 1; layer < p.layers; ++layer) {
    const int first_opening = before(kv_products[2 * layer]) - opening;  // index into weight_products
    starts.push_back(first_opening > 0 ? weight_products[first_opening - 1] + 1 : 0);
  }
  for (size_t i = 0, layer = 0; i < p.ops.size(); ++i) {
    while (layer + 1 < starts.size() && static_cast<int>(i) >= starts[layer + 1]) ++layer;
    p.ops[i].layer = static_cast<int>(layer);
  }
  if (keep > 0) {
    if (keep > p.layers)
      throw InputError(file, "--layers", "", "the file has " + std::to_string(p.layers) + " layers");
    p.ops.erase(
        std::remove_if(p.ops.begin(), p.ops.end(), [&](const ServingOperator& o) { return o.layer >= keep; }),
        p.ops.end());
    p.layers = keep;
  }
  p.program.ops.clear();
  for (const ServingOperator& o : p.ops) p.program.ops.push_back(o.op);
}

}  // namespace

ServingProgram read_elk_model(const nlohmann::json& doc, const std::string& file, const ServingShape& at,
                              const ServingChip& chip) {
  if (!doc.is_array())
    throw InputError(file, "", "", "an Elk model file is a list of nodes [id, expression, type, inputs]");
  if (doc.size() > kMaxProgramOperators)
    throw InputError(file, "", "", "more than " + std::to_string(kMaxProgramOperators) + " nodes");
  if (at.batch < 1 || at.batch > (1 << 20)) throw InputError(file, "--batch", "", "expected 1 to 2^20");
  if (at.sequence < 1 || at.sequence > (1 << 24)) throw InputError(file, "--seq", "", "expected 1 to 2^24");
  ServingProgram p;
  p.program.chip = chip.chip;
  p.program.dtype_bytes = 2;  // the calibrated model's FP16
  p.batch = at.batch;
  p.sequence = at.sequence;
  for (size_t i = 0; i < doc.size(); ++i) {
    const std::string field = "[" + std::to_string(i) + "]";
    auto fail = [&](const std::string& why) { throw InputError(file, field, "", why); };
    const nlohmann::json& node = doc[i];
    if (!node.is_array() || node.size() < 3 || !node[1].is_string() || !node[2].is_string())
      fail("expected [id, expression, type, inputs]");
    const std::string type = node[2].get<std::string>();
    if (kNoOperator.count(type)) continue;
    const Expression e = parse_expression(node[1].get<std::string>(), fail);
    ServingOperator op;
    if (type == "Dot" || type == "BatchMatMul") {
      op = matmul(e, at, p.program.dtype_bytes, fail);
    } else if (kUnary.count(type) || kBinary.count(type) || kRowWise.count(type) || type == "Slice") {
      std::vector<int64_t> shape = decode_shape(e.inputs[0].shape, at);
      for (const Operand& in : e.inputs)  // a broadcast operand is the smaller one
        if (shape_elements(decode_shape(in.shape, at)) > shape_elements(shape))
          shape = decode_shape(in.shape, at);
      if (shape.empty()) fail("an operand without dimensions");
      op.op.type = kRowWise.count(type) ? OperatorType::RowWise
                   : kUnary.count(type) ? OperatorType::Relu
                                        : OperatorType::Elementwise;
      std::tie(op.op.m, op.op.n) = rows_and_columns(shape);
      if (type == "Slice") {  // the slice's extent is its where clause: the output's size
        static const std::regex where(R"(in\s+(\d+))");
        const std::string text = node[1].get<std::string>();
        std::vector<int64_t> extent;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), where); it != std::sregex_iterator();
             ++it)
          extent.push_back(std::stoll((*it)[1]));
        if (extent.size() == shape.size()) {
          extent = decode_shape(extent, at);
          std::tie(op.op.m, op.op.n) = rows_and_columns(extent);
        }
      }
      op.op.inputs = static_cast<int64_t>(kBinary.count(type) ? 2 : 1);
    } else {
      fail("operator type " + type +
           " is not one a decode step has (Dot, BatchMatMul, elementwise, Sum, SoftmaxBasic, Slice)");
    }
    if (op.op.m < 1 || op.op.n < 1 || op.op.k < 1 || op.op.batch < 1 || op.op.m > kMaxOperatorDimension ||
        op.op.n > kMaxOperatorDimension || op.op.k > kMaxOperatorDimension)
      fail("a dimension outside 1 to 2^24");
    op.op.name =
        type + "#" + std::to_string(node[0].is_number_integer() ? node[0].get<int64_t>() : int64_t(i));
    p.ops.push_back(op);
  }
  if (p.ops.empty()) throw InputError(file, "", "", "no operator of a decode step in the file");
  assign_layers(p, at.layers, file);
  return p;
}

ServingProgram read_imported_model(const nlohmann::json& doc, const std::string& file, const ServingShape& at,
                                   const ServingChip& chip) {
  if (at.batch > 0 || at.sequence > 0)
    throw InputError(
        file, at.batch > 0 ? "--batch" : "--seq", "",
        "an imported model's shapes were fixed when it was imported: choose them with mlsys-import "
        "--dim (docs/t10-serving.md#onnx)");
  ServingProgram p;
  p.program = parse_program(doc, file);
  p.program.chip = chip.chip;
  p.name = p.program.name;
  const nlohmann::json& ops = doc.contains("t10_program") ? doc["t10_program"]["ops"] : doc["ops"];
  bool loads = false;
  for (size_t i = 0; i < p.program.ops.size(); ++i) {
    const std::string where = "ops[" + std::to_string(i) + "]";
    ServingOperator op;
    op.op = p.program.ops[i];
    const nlohmann::json& j = ops[i];
    if (j.contains("hbm")) {
      const nlohmann::json& kind = j["hbm"];
      if (!kind.is_string() || (kind != "weight" && kind != "kv_cache"))
        throw InputError(file, where + ".hbm", "", "expected \"weight\" or \"kv_cache\", got " + kind.dump());
      if (op.op.type != OperatorType::MatMul)
        throw InputError(file, where + ".hbm", "", "only a product loads an operand from HBM (its second)");
      op.hbm = kind == "weight" ? HbmOperand::Weight : HbmOperand::KvCache;
      // Operand B's bytes; dimensions up to 2^24 each would overflow 64 bits, so the bound is in 128.
      const __int128 whole = static_cast<__int128>(op.op.batch) * op.op.k * op.op.n * p.program.dtype_bytes;
      const int64_t operand = static_cast<int64_t>(std::min<__int128>(whole, int64_t{1} << 62));
      const nlohmann::json* bytes = j.contains("hbm_bytes") ? &j["hbm_bytes"] : nullptr;
      if (!bytes || !bytes->is_number_integer() || bytes->get<int64_t>() < 1 ||
          bytes->get<int64_t>() > operand)
        throw InputError(file, where + ".hbm_bytes", "",
                         "expected an integer from 1 to the operand's " + std::to_string(operand) + " B" +
                             (bytes ? ", got " + bytes->dump() : ""));
      op.hbm_bytes = bytes->get<int64_t>();
      loads = true;
    } else if (j.contains("hbm_bytes")) {
      throw InputError(file, where + ".hbm_bytes", "", "given without \"hbm\" (weight or kv_cache)");
    }
    p.ops.push_back(op);
  }
  if (!loads)
    throw InputError(file, "ops", "",
                     "no product says what it loads from HBM (\"hbm\"): import the model again with this "
                     "version of mlsys-import --t10");
  p.program.ops.clear();
  assign_layers(p, at.layers, file);
  return p;
}

ServingProgram read_serving_model(const nlohmann::json& doc, const std::string& file, const ServingShape& at,
                                  const ServingChip& chip) {
  if (doc.is_object()) return read_imported_model(doc, file, at, chip);
  if (at.batch < 1) throw InputError(file, "--batch", "", "required for an Elk model file");
  if (at.sequence < 1) throw InputError(file, "--seq", "", "required for an Elk model file");
  return read_elk_model(doc, file, at, chip);
}

}  // namespace mlsys::t10