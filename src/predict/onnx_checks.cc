#include "predict/onnx_checks.h"

#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string_view>
#include <vector>

#include "predict/onnx_proto.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

// The integers an attribute or a constant input may hold.
struct IntRange {
  int64_t low, high;
  bool Contains(int64_t v) const { return v >= low && v <= high; }
  std::string Text() const { return std::to_string(low) + " to " + std::to_string(high); }
};
constexpr IntRange kPositive{1, kMaxExtent}, kNonNegative{0, kMaxExtent}, kFlag{0, 1};

struct AttributeRule {
  std::string_view name;
  IntRange range;
};

// Convolutions and pooling: what libonnx's convPoolShapeInference and
// convTransposeShapeInference divide by and size with, and the cost formulas multiply.
constexpr AttributeRule kWindowRules[] = {{"strides", kPositive},
                                          {"dilations", kPositive},
                                          {"kernel_shape", kPositive},
                                          {"pads", kNonNegative},
                                          {"output_padding", kNonNegative},
                                          {"output_shape", kNonNegative},
                                          {"group", kPositive},
                                          {"ceil_mode", kFlag},
                                          {"storage_order", kFlag}};
constexpr AttributeRule kBlockRules[] = {{"blocksize", kPositive}};  // inference squares it
constexpr AttributeRule kSplitRules[] = {{"split", kNonNegative}};   // the outputs' dimensions
constexpr AttributeRule kShapeRules[] = {{"shape", kNonNegative}};   // the output's dimensions
constexpr std::string_view kAutoPads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};

bool IsWindowOp(std::string_view op) {
  static constexpr std::string_view kOps[] = {"Conv",          "ConvInteger", "QLinearConv",
                                              "ConvTranspose", "MaxPool",     "AveragePool",
                                              "LpPool",        "MaxUnpool"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

std::span<const AttributeRule> RulesOf(std::string_view op) {
  if (IsWindowOp(op)) return kWindowRules;
  if (op == "DepthToSpace" || op == "SpaceToDepth") return kBlockRules;
  if (op == "Split") return kSplitRules;
  if (op == "RandomNormal" || op == "RandomUniform") return kShapeRules;
  return {};
}

// `node` for people: node 'conv1' (Conv), or node 3 (Conv) when it has no name.
std::string NodeText(const onnx::NodeProto& node, int index) {
  return "node " + (node.name().empty() ? std::to_string(index) : QuotedInert(node.name())) + " (" +
         Inert(node.op_type()) + ")";
}

// The attributes of `node` that footprint has rules for. Every integer libonnx may read from
// one is checked (its ints, and its i where set), whatever type the attribute declares.
Status CheckAttributes(const onnx::NodeProto& node, const std::string& text) {
  const std::span<const AttributeRule> rules = RulesOf(node.op_type());
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "auto_pad" && IsWindowOp(node.op_type()) &&
        std::find(std::begin(kAutoPads), std::end(kAutoPads), a.s()) == std::end(kAutoPads)) {
      return InvalidArgument(text + ": attribute auto_pad is " + QuotedInert(a.s()) +
                             ", allowed are NOTSET, SAME_UPPER, SAME_LOWER and VALID");
    }
    const auto rule = std::find_if(rules.begin(), rules.end(),
                                   [&](const AttributeRule& r) { return r.name == a.name(); });
    if (rule == rules.end()) continue;
    auto refuse = [&](int64_t v) {
      return InvalidArgument(text + ": attribute " + a.name() + " holds " + std::to_string(v) +
                             ", allowed are " + rule->range.Text());
    };
    if (a.has_i() && !rule->range.Contains(a.i())) return refuse(a.i());
    for (int64_t v : a.ints()) {
      if (!rule->range.Contains(v)) return refuse(v);
    }
  }
  return Status::Ok();
}

// The opset version each domain of the model imports.
using Opsets = std::map<std::string, int64_t>;

// ONNX's schema of `node` at the model's opset, or nullptr (another domain, an unknown type).
const onnx::OpSchema* SchemaOf(const onnx::NodeProto& node, const Opsets& opsets) {
  auto it = opsets.find(node.domain());
  if (it == opsets.end() && node.domain().empty()) it = opsets.find("ai.onnx");
  if (it == opsets.end()) return nullptr;
  const auto version = static_cast<int>(std::clamp<int64_t>(it->second, 0, 1 << 30));
  return onnx::OpSchemaRegistry::Instance()->GetSchema(node.op_type(), version, node.domain());
}

// Inference reads a node's inputs and outputs by position, as many as its schema declares.
Status CheckArity(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                  const std::string& text) {
  auto check = [&](const char* what, int n, int low, int high) {
    if (n >= low && n <= high) return Status::Ok();
    return InvalidArgument(text + " has " + std::to_string(n) + " " + what + ", ONNX's " +
                           Inert(node.op_type()) + " takes " +
                           (high == std::numeric_limits<int>::max()
                                ? "at least " + std::to_string(low)
                                : std::to_string(low) + " to " + std::to_string(high)));
  };
  FP_RETURN_IF_ERROR(check("inputs", node.input_size(), schema.min_input(), schema.max_input()));
  return check("outputs", node.output_size(), schema.min_output(), schema.max_output());
}

// The dimensions of a tensor the graph declares (unknown ones are none), and their product. A
// graph input's first may be 0 or less: dynamic, set by --batch.
Status CheckDims(const std::string& what, std::span<const std::optional<int64_t>> dims,
                 bool dynamic_first) {
  double elements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i] || (i == 0 && dynamic_first && *dims[i] <= 0)) continue;
    if (!kNonNegative.Contains(*dims[i])) {
      return InvalidArgument(what + " has dimension " + std::to_string(i) + " of " +
                             std::to_string(*dims[i]) + ", allowed are " + kNonNegative.Text() +
                             " (or a name, for one that is not fixed)");
    }
    elements *= static_cast<double>(*dims[i]);
  }
  if (elements > static_cast<double>(kMaxTensorElements)) {
    return InvalidArgument(what + " holds more than 2^53 elements, the most allowed");
  }
  return Status::Ok();
}

Status CheckValueInfo(const onnx::ValueInfoProto& v, const char* what, bool dynamic_first) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return Status::Ok();
  std::vector<std::optional<int64_t>> dims;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    dims.push_back(d.has_dim_value() ? std::optional(d.dim_value()) : std::nullopt);
  }
  return CheckDims(std::string(what) + " " + QuotedInert(v.name()), dims, dynamic_first);
}

// The bytes of an element of the types whose raw data libonnx's inference parses (it copies the
// raw bytes whole into elements, past the last one where they do not fill it); 0 for others.
size_t ParsedElementBytes(int32_t type) {
  switch (type) {
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::FLOAT:
      return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::DOUBLE:
      return 8;
    default:
      return 0;
  }
}

// A tensor the file holds: its dimensions, and raw data of the size they and its type need.
Status CheckTensor(const onnx::TensorProto& t, const std::string& what) {
  const std::vector<std::optional<int64_t>> dims(t.dims().begin(), t.dims().end());
  FP_RETURN_IF_ERROR(CheckDims(what, dims, false));
  const size_t element_bytes = ParsedElementBytes(t.data_type());
  if (!t.has_raw_data() || element_bytes == 0) return Status::Ok();
  uint64_t needed = element_bytes;  // at most 2^56 once CheckDims passed (or 0)
  for (int64_t d : t.dims()) needed *= static_cast<uint64_t>(d);
  if (t.raw_data().size() == needed) return Status::Ok();
  return InvalidArgument(what + " holds " + std::to_string(t.raw_data().size()) +
                         " bytes of data where its dimensions and type need " +
                         std::to_string(needed));
}

Status CheckGraph(const onnx::GraphProto& g, const Opsets& opsets);

Status CheckNode(const onnx::NodeProto& node, int index, const Opsets& opsets) {
  const std::string text = NodeText(node, index);
  if (const onnx::OpSchema* schema = SchemaOf(node, opsets)) {
    FP_RETURN_IF_ERROR(CheckArity(node, *schema, text));
  }
  FP_RETURN_IF_ERROR(CheckAttributes(node, text));
  for (const onnx::AttributeProto& a : node.attribute()) {
    const std::string what = text + ": attribute " + Inert(a.name());
    if (a.has_t()) FP_RETURN_IF_ERROR(CheckTensor(a.t(), what));
    for (const auto& t : a.tensors()) FP_RETURN_IF_ERROR(CheckTensor(t, what));
    if (a.has_g()) FP_RETURN_IF_ERROR(CheckGraph(a.g(), opsets));
    for (const auto& g : a.graphs()) FP_RETURN_IF_ERROR(CheckGraph(g, opsets));
  }
  return Status::Ok();
}

Status CheckGraph(const onnx::GraphProto& g, const Opsets& opsets) {
  for (const auto& v : g.input()) FP_RETURN_IF_ERROR(CheckValueInfo(v, "input", true));
  for (const auto& v : g.output()) FP_RETURN_IF_ERROR(CheckValueInfo(v, "output", false));
  for (const auto& v : g.value_info()) FP_RETURN_IF_ERROR(CheckValueInfo(v, "value", false));
  for (const auto& init : g.initializer()) {
    FP_RETURN_IF_ERROR(CheckTensor(init, "initializer " + QuotedInert(init.name())));
  }
  for (int i = 0; i < g.node_size(); ++i) FP_RETURN_IF_ERROR(CheckNode(g.node(i), i, opsets));
  return Status::Ok();
}

// A constant input that inference reads as sizes: its values become dimensions.
struct SizesInput {
  std::string_view op;
  size_t index;
  std::string_view name;
  IntRange range;
};
constexpr SizesInput kSizesInputs[] = {
    {"Reshape", 1, "shape", {-1, kMaxExtent}},
    {"Tile", 1, "repeats", kNonNegative},
    {"Expand", 1, "shape", kNonNegative},
    {"ConstantOfShape", 0, "shape", kNonNegative},
    {"Split", 1, "split", kNonNegative},
    {"SplitToSequence", 1, "split", kPositive},  // a scalar split is a divisor
    {"Resize", 3, "sizes", kNonNegative}};

// The integers of constant input `index` (INT64 or INT32) as inference reads them; none when it
// is not a constant.
std::vector<int64_t> ConstantIntegers(onnx::InferenceContext& ctx, size_t index) {
  const onnx::TensorProto* t = index < ctx.getNumInputs() ? ctx.getInputData(index) : nullptr;
  if (t == nullptr) return {};
  if (t->data_type() == onnx::TensorProto::INT64) return onnx::ParseData<int64_t>(t);
  if (t->data_type() != onnx::TensorProto::INT32) return {};
  const std::vector<int32_t> values = onnx::ParseData<int32_t>(t);
  return {values.begin(), values.end()};
}

std::string SizesProblem(onnx::InferenceContext& ctx, const SizesInput& input) {
  for (int64_t v : ConstantIntegers(ctx, input.index)) {
    if (!input.range.Contains(v)) {
      return "a " + std::string(input.op) + " node's input " + std::string(input.name) + " holds " +
             std::to_string(v) + ", allowed are " + input.range.Text();
    }
  }
  return "";
}

// Inference multiplies the input's dimensions by the scales.
std::string ScalesProblem(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  const size_t index = schema.Name() == "Resize" && schema.SinceVersion() >= 11 ? 2 : 1;
  const onnx::TensorProto* t = index < ctx.getNumInputs() ? ctx.getInputData(index) : nullptr;
  if (t == nullptr || t->data_type() != onnx::TensorProto::FLOAT) return "";
  for (float scale : onnx::ParseData<float>(t)) {
    if (!(std::isfinite(scale) && scale > 0 && scale <= static_cast<float>(kMaxExtent))) {
      std::ostringstream text;
      text << "a " << schema.Name() << " node's input scales holds " << scale
           << ", allowed are numbers above 0 up to " << kMaxExtent;
      return text.str();
    }
  }
  return "";
}

// Without kernel_shape, inference takes the kernel from the weights' shape and indexes the
// input's dimensions with it.
std::string ConvRanksProblem(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  const size_t weights = schema.Name() == "QLinearConv" ? 3 : 1;
  if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, weights)) return "";
  const int x = ctx.getInputType(0)->tensor_type().shape().dim_size();
  const int w = ctx.getInputType(weights)->tensor_type().shape().dim_size();
  if (x >= 3 && x == w) return "";
  return "a " + schema.Name() + " node's input has rank " + std::to_string(x) +
         " and its weights rank " + std::to_string(w) +
         ": they must be equal, at least 3 (N, C and a spatial dimension)";
}

// Inference divides by the product of the input's dimensions, which an earlier node's
// inference may have made negative.
std::string ReshapeProblem(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  if (!onnx::hasInputShape(ctx, 0)) return "";
  const auto& dims = ctx.getInputType(0)->tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i].has_dim_value() && dims[i].dim_value() < 0) {
      return "a " + schema.Name() + " node's input has dimension " + std::to_string(i) + " of " +
             std::to_string(dims[i].dim_value()) + " after inference: dimensions are 0 or more";
    }
  }
  return "";
}

struct OpCheck {
  std::string_view op;
  std::string (*problem)(const onnx::OpSchema&, onnx::InferenceContext&);
};
constexpr OpCheck kOpChecks[] = {
    {"Conv", ConvRanksProblem},          {"ConvInteger", ConvRanksProblem},
    {"ConvTranspose", ConvRanksProblem}, {"QLinearConv", ConvRanksProblem},
    {"Resize", ScalesProblem},           {"Upsample", ScalesProblem},
    {"Reshape", ReshapeProblem}};

bool Checked(std::string_view op) {
  return std::any_of(std::begin(kOpChecks), std::end(kOpChecks),
                     [&](const OpCheck& c) { return c.op == op; }) ||
         std::any_of(std::begin(kSizesInputs), std::end(kSizesInputs),
                     [&](const SizesInput& s) { return s.op == op; });
}

// What is wrong with the inputs of a node of `schema`'s operator as inference sees them; empty
// when nothing is.
std::string InputsProblem(const onnx::OpSchema& schema, onnx::InferenceContext& ctx) {
  for (const OpCheck& check : kOpChecks) {
    if (check.op != schema.Name()) continue;
    if (std::string problem = check.problem(schema, ctx); !problem.empty()) return problem;
  }
  for (const SizesInput& input : kSizesInputs) {
    if (input.op != schema.Name()) continue;
    if (std::string problem = SizesProblem(ctx, input); !problem.empty()) return problem;
  }
  return "";
}

}  // namespace

Status CheckModelForInference(const onnx::ModelProto& model) {
  Opsets opsets;
  for (const auto& opset : model.opset_import()) opsets[opset.domain()] = opset.version();
  return CheckGraph(model.graph(), opsets);
}

const onnx::OpSchema* CheckedSchemas::GetSchema(const std::string& op_type,
                                                int max_inclusive_version,
                                                const std::string& domain) const {
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Instance()->GetSchema(op_type, max_inclusive_version, domain);
  if (schema == nullptr || !schema->has_type_and_shape_inference_function() ||
      !Checked(schema->Name())) {
    return schema;
  }
  std::unique_ptr<onnx::OpSchema>& checked = checked_[schema];
  if (!checked) {
    checked = std::make_unique<onnx::OpSchema>(*schema);
    checked->TypeAndShapeInferenceFunction(
        [this, schema,
         infer = schema->GetTypeAndShapeInferenceFunction()](onnx::InferenceContext& ctx) {
          if (std::string problem = InputsProblem(*schema, ctx); !problem.empty()) {
            if (refusal_.empty()) refusal_ = problem;
            fail_shape_inference(problem);
          }
          infer(ctx);
        });
  }
  return checked.get();
}

}  // namespace footprint::predict
