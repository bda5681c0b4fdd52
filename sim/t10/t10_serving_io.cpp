// Reading the Elk artifact's model files (platformxlab/elk, models/original/*.json) as one decode step
// (docs/t10-serving.md#model-files). A file is a list of nodes [id, expression, type, [[input id, port]...]]
// whose expressions are einstein_v2 strings with the input shapes in an input_dict; 99 stands for the batch
// and 66 for the sequence (models/model_parser.py: BATCH_CODE, SEQ_LEN_CODE). One decode step has one query
// position: in a shape the first 66 is 1 and any later one the KV cache length L (the keys a query meets).
#include "sim/t10/t10_serving_io.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>

#include "sim/number_format.hpp"
#include "sim/t10/t10_program.hpp"
#include "sim/violation.hpp"

namespace mlsys::t10 {

// Named, not anonymous: ServingModel::Node, declared in the header, holds an Expression.
namespace elk_file {
struct Operand {
  std::vector<std::string> index;  // index names in the expression
  std::vector<int64_t> shape;      // from input_dict, codes not yet replaced
};

struct Expression {
  std::vector<std::string> output;
  std::vector<Operand> inputs;
};
}  // namespace elk_file
using elk_file::Expression;
using elk_file::Operand;

namespace {

constexpr int64_t kBatchCode = 99, kSequenceCode = 66;
// The views and bookkeeping nodes the artifact's parser drops (SHOULD_IGNORE_OP_TYPE) plus the embedding
// gather, which it drops for decoder LLMs (model_parser.py, GatherV2 for opt-, llam-, gemm-).
const std::set<std::string> kNoOperator = {"Parameter", "Constant",  "Result", "Reshape",
                                           "Convert",   "Broadcast", "Concat", "GatherV2"};
const std::set<std::string> kUnary = {"Relu", "Negative", "Sigmoid", "Sqrt", "Tanh", "Erf"};
const std::set<std::string> kBinary = {"Add", "Divide", "Multiply", "Power", "Subtract", "Maximum"};
const std::set<std::string> kRowWise = {"Sum", "SoftmaxBasic"};

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

// What the codes stand for in one instantiation: 99 the batch (requests), the first 66 of a shape the query
// positions each request adds, a later 66 the keys it attends over (its context).
struct Dims {
  int64_t batch = 1, query = 1, context = 1;
};

// 99 -> batch, the first 66 -> query, later 66s -> context; 99 x 66 (the batch folded with the sequence) ->
// batch x query; other multiples of 99 (a batch folded with heads) -> that multiple of the batch.
std::vector<int64_t> decode_shape(const std::vector<int64_t>& shape, const Dims& at) {
  std::vector<int64_t> out;
  bool first_sequence = true;
  for (int64_t d : shape) {
    if (d == kSequenceCode) {
      out.push_back(first_sequence ? at.query : at.context);
      first_sequence = false;
    } else if (d == kBatchCode * kSequenceCode) {
      out.push_back(at.batch * at.query);
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
ServingOperator matmul(const Expression& e, const Dims& at, int64_t dtype,
                       const std::function<void(const std::string&)>& fail) {
  if (e.inputs.size() != 2) fail("a product needs two inputs");
  const Operand &a = e.inputs[0], &b = e.inputs[1];
  if (a.index.size() != a.shape.size() || b.index.size() != b.shape.size())
    fail("index names and shapes disagree");
  auto in = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  // By index name: the query rows (in input0 and the output only) are the new positions; any other sequence
  // index is the context the queries attend over.
  auto length = [&](const std::string& name, int64_t raw) -> int64_t {
    if (raw == kSequenceCode)
      return in(e.output, name) && !in(b.index, name) && in(a.index, name) ? at.query : at.context;
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

struct ServingModel::Node {
  std::string type, name;
  Expression e;
  std::vector<int64_t> slice_extent;  // a Slice's where clause, codes not yet replaced
  bool per_request = false;           // a product with the KV cache, or an operator over scores
  bool kv_product = false;
  int layer = 0;
  TensorShard shard = TensorShard::Replicated;
};

namespace {

// The file's data flow, by position in the file: each node's inputs, and the operators among the nodes. Ids
// are not unique in every Elk file (llama2-70 reuses 3,273 of them), so a reference names the nearest node
// before it with that id (the file lists nodes in order), or else the first after it; -1 is a parameter.
struct DataFlow {
  std::vector<std::vector<int64_t>> ids;              // per position, the ids its inputs name
  std::map<int64_t, std::vector<int64_t>> positions;  // per id, where nodes with it are, in order
  std::vector<std::vector<int64_t>> inputs;           // per position, its inputs' positions
  std::map<int64_t, ServingModel::Node*> operators;
  std::map<int64_t, int64_t> concat_elements;  // per Concat, its inputs' elements together

  void resolve() {
    inputs.assign(ids.size(), {});
    for (size_t at = 0; at < ids.size(); ++at)
      for (int64_t id : ids[at]) {
        auto found = positions.find(id);
        int64_t from = -1;
        if (found != positions.end()) {
          const std::vector<int64_t>& p = found->second;
          const int64_t here = static_cast<int64_t>(at);
          if (auto first = std::lower_bound(p.begin(), p.end(), here); first != p.begin())
            from = *std::prev(first);
          else if (auto later = std::upper_bound(p.begin(), p.end(), here); later != p.end())
            from = *later;
        }
        inputs[at].push_back(from);
      }
  }
};

// Megatron's split of a transformer over chips (docs/t10-chips.md#tensor), read from the data flow: a product
// with a weight whose input is whole splits its weight's columns (its output is split), one whose input is
// split splits the weight's rows (its output is a partial sum, all-reduced: whole again); a product with the
// KV cache splits its heads; a vector operator is split when an input is. Views pass their input's state
// through. Walked without recursion; a cycle (a hostile file) reads as whole.
void assign_shards(DataFlow& flow) {
  std::map<int64_t, int> state{{-1, 2}};  // 1 visiting, 2 whole, 3 split
  for (int64_t root = 0; root < static_cast<int64_t>(flow.inputs.size()); ++root) {
    if (state[root] != 0) continue;
    state[root] = 1;
    std::vector<std::pair<int64_t, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      const int64_t id = stack.back().first;
      const std::vector<int64_t>& ins = flow.inputs[id];
      if (stack.back().second < ins.size()) {
        const int64_t child = ins[stack.back().second++];
        if (state[child] == 0) {
          state[child] = 1;
          stack.emplace_back(child, 0);
        }
        continue;
      }
      auto split = [&](int64_t in) { return state[in] == 3; };
      bool out = std::any_of(ins.begin(), ins.end(), split);
      if (auto op = flow.operators.find(id); op != flow.operators.end()) {
        ServingModel::Node& n = *op->second;
        if (n.type == "Dot" || n.type == "BatchMatMul") {
          const bool a_split = !ins.empty() && split(ins[0]);
          n.shard = n.kv_product ? TensorShard::Heads : a_split ? TensorShard::Row : TensorShard::Column;
          out = n.shard != TensorShard::Row;
        } else {
          n.shard = out ? TensorShard::Split : TensorShard::Replicated;
        }
      }
      state[id] = out ? 3 : 2;
      stack.pop_back();
    }
  }
}

// Whether a raw shape names the sequence twice (queries against keys: attention scores).
bool names_sequence_twice(const std::vector<int64_t>& raw) {
  return std::count(raw.begin(), raw.end(), kSequenceCode) >= 2;
}

// One node at the given dimensions. `fail` names the node.
ServingOperator instantiate_node(const ServingModel::Node& n, const Dims& at, int64_t dtype,
                                 const std::function<void(const std::string&)>& fail) {
  ServingOperator op;
  if (n.type == "Dot" || n.type == "BatchMatMul") {
    op = matmul(n.e, at, dtype, fail);
  } else {
    std::vector<int64_t> shape = decode_shape(n.e.inputs[0].shape, at);
    for (const Operand& in : n.e.inputs)  // a broadcast operand is the smaller one
      if (shape_elements(decode_shape(in.shape, at)) > shape_elements(shape)) shape = decode_shape(in.shape, at);
    if (shape.empty()) fail("an operand without dimensions");
    op.op.type = kRowWise.count(n.type) ? OperatorType::RowWise
                 : kUnary.count(n.type) ? OperatorType::Relu
                                        : OperatorType::Elementwise;
    std::tie(op.op.m, op.op.n) = rows_and_columns(shape);
    if (n.type == "Slice" && n.slice_extent.size() == shape.size())  // the output's size
      std::tie(op.op.m, op.op.n) = rows_and_columns(decode_shape(n.slice_extent, at));
    op.op.inputs = static_cast<int64_t>(kBinary.count(n.type) ? 2 : 1);
  }
  if (op.op.m < 1 || op.op.n < 1 || op.op.k < 1 || op.op.batch < 1 || op.op.m > kMaxOperatorDimension ||
      op.op.n > kMaxOperatorDimension || op.op.k > kMaxOperatorDimension)
    fail("a dimension outside 1 to 2^24");
  op.op.name = n.name;
  op.layer = n.layer;
  op.shard = n.shard;
  return op;
}

// All elements of a node's operands, from its input_dict's shapes. Read by hand, not with std::regex, whose
// recursion per character could overflow the stack on a hostile file's long lists.
constexpr int64_t kElementCap = int64_t{1} << 50;  // beyond any real operand; products saturate here

int64_t capped_product(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > kElementCap / b ? kElementCap : std::min(a * b, kElementCap);
}

int64_t operand_elements(const std::string& expression) {
  constexpr int64_t kCap = kElementCap;
  int64_t total = 0;
  // Each search starts after the last list read, so a hostile expression is still read in one pass.
  for (size_t at = expression.find("\"shape\""); at != std::string::npos;) {
    const size_t open = expression.find('[', at), close = expression.find(']', open);
    if (open == std::string::npos || close == std::string::npos) break;
    at = expression.find("\"shape\"", close);
    int64_t elements = 1, dim = 0;
    for (size_t i = open + 1; i <= close; ++i) {
      const char c = expression[i];
      if (c >= '0' && c <= '9') {
        dim = std::min<int64_t>(dim * 10 + (c - '0'), kCap);
      } else if (c == ',' || c == ']') {
        elements = capped_product(elements, std::max<int64_t>(dim, 1));
        dim = 0;
      }
    }
    total = std::min<int64_t>(total + elements, kCap);
  }
  return total;
}

// Products whose weight operand is smaller or larger than the Concat that builds it: the file contradicts
// itself, and the product's own shape is what gets priced (as the artifact does). One line per mismatch.
std::vector<std::string> concat_mismatches(const DataFlow& flow, const std::vector<std::string>& fields) {
  std::vector<std::string> out;
  size_t kept = 0;
  for (const auto& [at, node] : flow.operators) {
    const size_t field = kept++;
    if ((node->type != "Dot" && node->type != "BatchMatMul") || node->kv_product) continue;
    const std::vector<int64_t>& ins = flow.inputs[static_cast<size_t>(at)];
    if (ins.size() < 2) continue;
    auto concat = flow.concat_elements.find(ins[1]);
    if (concat == flow.concat_elements.end()) continue;
    int64_t declared = 1;
    for (int64_t d : node->e.inputs[1].shape) declared = capped_product(declared, d);
    if (declared == concat->second) continue;
    out.push_back(fields[field] + " " + node->name + ": its weight has " + std::to_string(declared) +
                  " elements, the Concat it reads builds " + std::to_string(concat->second));
  }
  return out;
}

}  // namespace

ServingModel ServingModel::read_elk(const nlohmann::json& doc, const std::string& file, int keep_layers,
                                    const ServingChip& chip) {
  if (!doc.is_array())
    throw InputError(file, "", "", "an Elk model file is a list of nodes [id, expression, type, inputs]");
  if (doc.size() > kMaxProgramOperators)
    throw InputError(file, "", "", "more than " + std::to_string(kMaxProgramOperators) + " nodes");
  ServingModel model;
  model.chip_ = chip;
  std::vector<std::string> fields;  // per node kept, its "[i]"
  DataFlow flow;
  for (size_t i = 0; i < doc.size(); ++i) {
    const std::string field = "[" + std::to_string(i) + "]";
    auto fail = [&](const std::string& why) { throw InputError(file, field, "", why); };
    const nlohmann::json& node = doc[i];
    if (!node.is_array() || node.size() < 3 || !node[1].is_string() || !node[2].is_string())
      fail("expected [id, expression, type, inputs]");
    const std::string type = node[2].get<std::string>();
    const int64_t id = node[0].is_number_integer() ? node[0].get<int64_t>() : -1 - static_cast<int64_t>(i);
    std::vector<int64_t>& ins = flow.ids.emplace_back();
    flow.positions[id].push_back(static_cast<int64_t>(i));
    if (node.size() > 3 && node[3].is_array())
      for (const nlohmann::json& in : node[3])
        if (in.is_array() && !in.empty() && in[0].is_number_integer()) ins.push_back(in[0].get<int64_t>());
    if (type == "Concat")
      flow.concat_elements[static_cast<int64_t>(i)] = operand_elements(node[1].get<std::string>());
    if (kNoOperator.count(type)) continue;
    auto n = std::make_shared<Node>();
    flow.operators[static_cast<int64_t>(i)] = n.get();
    n->type = type;
    n->e = parse_expression(node[1].get<std::string>(), fail);
    if (type == "Dot" || type == "BatchMatMul") {
      if (n->e.inputs.size() != 2) fail("a product needs two inputs");
      n->kv_product = is_activation(n->e.inputs[1].shape);
      n->per_request = n->kv_product;
    } else if (kUnary.count(type) || kBinary.count(type) || kRowWise.count(type) || type == "Slice") {
      for (const Operand& in : n->e.inputs) n->per_request = n->per_request || names_sequence_twice(in.shape);
      if (type == "Slice") {
        static const std::regex where(R"(in\s+(\d+))");
        const std::string text = node[1].get<std::string>();
        for (auto it = std::sregex_iterator(text.begin(), text.end(), where); it != std::sregex_iterator(); ++it)
          n->slice_extent.push_back(std::stoll((*it)[1]));
      }
    } else {
      fail("operator type " + type +
           " is not one a decode step has (Dot, BatchMatMul, elementwise, Sum, SoftmaxBasic, Slice)");
    }
    n->name = type + "#" + std::to_string(node[0].is_number_integer() ? node[0].get<int64_t>() : int64_t(i));
    model.nodes_.push_back(std::move(n));
    fields.push_back(field);
  }
  if (model.nodes_.empty()) throw InputError(file, "", "", "no operator of a decode step in the file");
  flow.resolve();
  assign_shards(flow);
  model.warnings_ = concat_mismatches(flow, fields);
  // Layers from one reference instantiation (one request, one position, one key): one operator per node.
  ServingProgram reference;
  reference.program.dtype_bytes = 2;
  const Dims unit{1, 1, 1};
  for (size_t i = 0; i < model.nodes_.size(); ++i)
    reference.ops.push_back(instantiate_node(*model.nodes_[i], unit, 2, [&](const std::string& why) {
      throw InputError(file, fields[i], "", why);
    }));
  assign_layers(reference, 0, file);
  if (keep_layers > reference.layers)
    throw InputError(file, "--layers", "", "the file has " + std::to_string(reference.layers) + " layers");
  std::vector<std::shared_ptr<const Node>> kept;
  for (size_t i = 0; i < model.nodes_.size(); ++i) {
    auto n = std::make_shared<Node>(*model.nodes_[i]);
    n->layer = reference.ops[i].layer;
    if (keep_layers > 0 && n->layer >= keep_layers) continue;
    // At one key and one request, a KV product's operand is one position's key or value rows.
    if (n->kv_product) model.kv_bytes_per_token_ += reference.ops[i].hbm_bytes;
    if (!n->per_request && reference.ops[i].hbm == HbmOperand::Weight)
      model.weight_bytes_ += reference.ops[i].hbm_bytes;
    kept.push_back(std::move(n));
  }
  model.nodes_ = std::move(kept);
  model.layers_ = keep_layers > 0 ? keep_layers : reference.layers;
  return model;
}

ServingProgram ServingModel::instantiate(const IterationShape& shape, int first_layers) const {
  ServingProgram p;
  p.program.chip = chip_.chip;
  p.program.dtype_bytes = 2;  // the calibrated model's FP16
  const bool sample = first_layers > 0 && first_layers + 1 < layers_;
  p.layers = sample ? first_layers + 1 : layers_;
  for (const auto& node : nodes_) {
    if (sample && node->layer >= first_layers && node->layer != layers_ - 1) continue;
    auto fail = [&](const std::string& why) { throw std::invalid_argument(node->name + ": " + why); };
    if (!node->per_request) {
      if (shape.tokens > 0) p.ops.push_back(instantiate_node(*node, {shape.tokens, 1, 1}, p.program.dtype_bytes, fail));
      continue;
    }
    for (size_t g = 0; g < shape.groups.size(); ++g) {
      const AttentionGroup& group = shape.groups[g];
      ServingOperator op =
          instantiate_node(*node, {group.requests, group.query, group.context}, p.program.dtype_bytes, fail);
      if (shape.groups.size() > 1) op.op.name += "/" + std::to_string(g);
      if (node->kv_product) {
        // The operand holds `context` positions of every request: `cached` of them come from HBM, and the
        // `query` new ones, computed in this iteration, are written there.
        const int64_t per_position = op.hbm_bytes / group.context;
        op.hbm_bytes = per_position * group.cached;
        op.hbm_write_bytes = per_position * group.query;
        if (group.cached == 0) op.hbm = HbmOperand::None;
      }
      p.ops.push_back(std::move(op));
    }
  }
  for (const ServingOperator& o : p.ops) p.program.ops.push_back(o.op);
  return p;
}

ServingProgram read_elk_model(const nlohmann::json& doc, const std::string& file, const ServingShape& at,
                              const ServingChip& chip) {
  if (at.batch < 1 || at.batch > (1 << 20)) throw InputError(file, "--batch", "", "expected 1 to 2^20");
  if (at.sequence < 1 || at.sequence > (1 << 24)) throw InputError(file, "--seq", "", "expected 1 to 2^24");
  const ServingModel model = ServingModel::read_elk(doc, file, at.layers, chip);
  ServingProgram p;
  try {
    p = model.instantiate({at.batch, {{at.batch, 1, at.sequence, at.sequence}}});
  } catch (const std::invalid_argument& e) {
    throw InputError(file, "--batch", "", std::string("at this batch and --seq: ") + e.what());
  }
  p.batch = at.batch;
  p.sequence = at.sequence;
  p.warnings = model.warnings();
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

ServingChip parse_serving_chip(const nlohmann::json& j, const std::string& file) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw InputError(file, field, "", why);
  };
  if (!j.is_object()) fail("", "a chip file is a JSON object");
  ServingChip c = *serving_chip_preset("elk-1472");
  if (j.contains("preset")) {
    if (!j["preset"].is_string() || !serving_chip_preset(j["preset"].get<std::string>()))
      fail("preset", "not a preset name");
    c = *serving_chip_preset(j["preset"].get<std::string>());
  }
  c.chip = parse_chip(j, "", "", file, c.chip);
  for (auto [key, out, low, high] : {std::tuple{"hbm_gbps", &c.hbm_gbps, 0.0, 1e7},
                                     {"hbm_capacity_bytes", &c.hbm_capacity_bytes, 0.0, 1e15},
                                     {"noc_gib_per_core", &c.noc_gib_per_core, 1e-3, 1e4},
                                     {"host_link_gbps", &c.host_link_gbps, 0.0, 1e7}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number() || !(j[key].get<double>() >= low) || !(j[key].get<double>() <= high))
      fail(key, "expected a number in [" + format_number(low) + ", " + format_number(high) + "]");
    *out = j[key].get<double>();
  }
  if (!j.contains("name")) c.chip.name = file;
  return c;
}

ServingProgram read_serving_model(const nlohmann::json& doc, const std::string& file, const ServingShape& at,
                                  const ServingChip& chip) {
  if (doc.is_object()) return read_imported_model(doc, file, at, chip);
  if (at.batch < 1) throw InputError(file, "--batch", "", "required for an Elk model file");
  if (at.sequence < 1) throw InputError(file, "--seq", "", "required for an Elk model file");
  return read_elk_model(doc, file, at, chip);
}

}  // namespace mlsys::t10