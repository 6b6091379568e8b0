// ONNX through libonnx: the protobuf read (a regular file, within protobuf's 2 GiB) and checked
// for what libonnx cannot take (onnx_checks.h), ONNX's own shape inference (through the graph's
// shape computations: shape_folding.h), then one pass over the nodes in their (topological, as
// ONNX requires) order with a cost formula per operator type.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>

#include "footprint/model_graph.h"
#include "predict/einsum.h"
#include "predict/module.h"
#include "predict/onnx_checks.h"
#include "predict/onnx_proto.h"
#include "predict/predictors.h"
#include "predict/shape_folding.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint {
namespace {

using predict::FromInitializer;
using predict::IntAttribute;
using predict::IntsAttribute;
using predict::Tensor;
using predict::Tensors;

double Product(const std::vector<int64_t>& v, size_t from = 0) {
  double n = 1;
  for (size_t i = from; i < v.size(); ++i) n *= static_cast<double>(std::max<int64_t>(v[i], 0));
  return n;
}

// Recurrent cells (LSTM, GRU, RNN: X [seq, batch, input] or, with layout 1, [batch, seq,
// input]; W [directions, gates x hidden, input]; R [directions, gates x hidden, hidden]; B the
// biases): per step, direction and sample, gates x hidden x (input + hidden) MACs, and the
// elementwise work of the cell, counted as ONNX's definition of each cell computes it.
bool RecurrentCost(const onnx::NodeProto& node, const std::vector<const Tensor*>& in,
                   OperatorCost& c) {
  const std::string& type = node.op_type();
  const Tensor* x = in.size() > 0 ? in[0] : nullptr;
  const Tensor* w = in.size() > 1 ? in[1] : nullptr;
  if (!x || !w || x->dims.size() != 3 || w->dims.size() != 3 || !x->known || !w->known) {
    return false;
  }
  const int gates = type == "LSTM" ? 4 : type == "GRU" ? 3 : 1;
  const double directions = static_cast<double>(w->dims[0]);
  const double hidden = static_cast<double>(w->dims[1]) / gates;
  const double input = static_cast<double>(w->dims[2]);
  const double steps = static_cast<double>(x->dims[0] * x->dims[1]);  // seq x batch
  const bool biased = in.size() > 3 && in[3] != nullptr;
  // Per step and direction, in units of `hidden`: the sum of the two projections per gate,
  // then the cell. LSTM: 3 sigmoids and 2 tanh, c = f*c + i*g (3), h = o*tanh(c) (1). GRU: 2
  // sigmoids and a tanh, r applied to the recurrent projection (1), h = (1-z)*n + z*h (4).
  // RNN: its activation.
  const double cell = type == "LSTM" ? 4 + 9 : type == "GRU" ? 3 + 8 : 1 + 1;
  c.macs = directions * steps * gates * hidden * (input + hidden);
  const size_t sequence_axis = IntAttribute(node, "layout", 0) == 0 ? 0 : 1;
  c.sequential_steps = directions * static_cast<double>(x->dims[sequence_axis]);
  const Tensor* r = in.size() > 2 ? in[2] : nullptr;
  c.step_param_bytes = r && r->known ? r->bytes() / std::max(directions, 1.0) : 0;
  c.flops = 2 * c.macs + directions * steps * hidden * (cell + (biased ? 2.0 * gates : 0));
  return true;
}

// Einsum (einsum.h): a contraction's MACs, or the products of one without a sum.
bool EinsumCost(const onnx::NodeProto& node, const std::vector<const Tensor*>& in,
                OperatorCost& c) {
  const onnx::AttributeProto* equation = predict::Attribute(node, "equation");
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor* t : in) {
    if (!t || !t->known) return false;
    dims.push_back(t->dims);
  }
  const auto work = equation ? predict::ReadEinsum(equation->s(), dims) : std::nullopt;
  if (!work) return false;
  c.macs = work->macs;
  c.flops = 2 * work->macs + work->products;
  return true;
}

// Resize and Upsample: nearest copies, linear weighs 2 neighbours per resized axis and cubic
// 4 (a multiply each, and adds between them), per output element.
double ResizeFlops(const onnx::NodeProto& node, const Tensor* x, const Tensor* y) {
  const onnx::AttributeProto* mode = predict::Attribute(node, "mode");
  const std::string m = mode ? mode->s() : "nearest";
  if (m == "nearest" || !x || !y || x->dims.size() != y->dims.size()) return 0;
  double neighbours = 1;
  for (size_t d = 0; d < x->dims.size(); ++d) {
    if (x->dims[d] != y->dims[d]) neighbours *= m == "cubic" ? 4 : 2;
  }
  return y->elements() * (2 * neighbours - 1);
}

// Operations per element of the fused operators, as ONNX's opset-13 decomposition that
// PyTorch exports them as counts them (so that one model counts the same in either form):
// Gelu x/sqrt(2), erf, +1, *x, *0.5; FastGelu's tanh form 9; LayerNormalization a mean, a
// subtraction, a square, a mean of squares, a division, a scale and a shift (and per row, an
// epsilon added and a square root: LayerNormRows); SkipLayerNormalization the sum before it;
// Softmax a max, a subtraction, an exponent, a sum and a division.
const std::unordered_map<std::string, double>& FusedOperationsPerElement() {
  static const std::unordered_map<std::string, double> kPerElement = {
      {"Gelu", 5},
      {"FastGelu", 9},
      {"BiasGelu", 6},
      {"LayerNormalization", 7},
      {"Softmax", 5},
      {"LogSoftmax", 5},
      {"SkipLayerNormalization", 8}};
  return kPerElement;
}

// Convolutions and matrix products: their MACs from the weights' and the output's shapes.
bool DenseCost(const onnx::NodeProto& node, const std::vector<const Tensor*>& in, double out_elems,
               OperatorCost& c) {
  const std::string& type = node.op_type();
  auto in_at = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  if (type == "Conv" || type == "ConvTranspose") {
    const Tensor* x = in_at(0);
    const Tensor* w = in_at(1);
    if (!w || w->dims.size() < 3) return false;
    const double per_output = Product(w->dims, 1);  // C/group x kernel
    // Conv: every output element sums C/group x kernel products; ConvTranspose: every input
    // element spreads over M/group x kernel outputs.
    c.macs =
        type == "Conv" ? out_elems * per_output : (x ? x->elements() : 0) * Product(w->dims, 1);
    c.flops = 2 * c.macs + (in_at(2) ? out_elems : 0);
    c.groups = IntAttribute(node, "group", 1);
    c.depthwise = type == "Conv" && w->dims[1] == 1 && c.groups > 1;
    c.kernel.assign(w->dims.begin() + 2, w->dims.end());
    for (const char* attribute : {"strides", "dilations"}) {
      for (int64_t step : IntsAttribute(node, attribute)) c.strided = c.strided || step > 1;
    }
    c.folded_norm = node.input(1).starts_with("onnx::");
    return true;
  }
  const Tensor* a = in_at(0);
  if (!a || a->dims.empty()) return false;
  const bool trans_a = type == "Gemm" && IntAttribute(node, "transA", 0) != 0;
  const int64_t k = trans_a && a->dims.size() >= 2 ? a->dims[a->dims.size() - 2] : a->dims.back();
  c.macs = out_elems * static_cast<double>(std::max<int64_t>(k, 0));
  c.flops = 2 * c.macs + (type == "Gemm" && in_at(2) ? out_elems : 0);
  return true;
}

// The rows a layer normalization normalizes (the dimensions before its axis); 0 for another
// operator.
double LayerNormRows(const onnx::NodeProto& node, const Tensor* x) {
  if (!node.op_type().ends_with("LayerNormalization") || !x) return 0;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = IntAttribute(node, "axis", -1);
  if (axis < 0) axis += rank;
  double rows = 1;
  for (int64_t d = 0; d < std::min(axis, rank); ++d) rows *= std::max<int64_t>(x->dims[d], 0);
  return rows;
}

// The MACs and FLOPs of `node` from its tensors; false when its type has no formula.
bool Cost(const onnx::NodeProto& node, const std::vector<const Tensor*>& in,
          const std::vector<const Tensor*>& out, OperatorCost& c) {
  const std::string& type = node.op_type();
  auto input = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  const Tensor* first_out = out.empty() ? nullptr : out[0];
  double out_elems = first_out ? first_out->elements() : 0;
  // A fused operator of another domain (com.microsoft's) has no inferred shape: it keeps its
  // input's.
  if ((!first_out || !first_out->known) && input(0) && FusedOperationsPerElement().count(type)) {
    out_elems = input(0)->elements();
  }
  if (type == "MatMul" || type == "MatMulInteger") {
    if (first_out && first_out->dims.size() > 2) {
      c.matrices = Product({first_out->dims.begin(), first_out->dims.end() - 2});
    } else {
      c.matrices = 1;
    }
  }
  if (type == "Conv" || type == "ConvTranspose" || type == "Gemm" || type == "MatMul" ||
      type == "MatMulInteger") {
    return DenseCost(node, in, out_elems, c);
  }
  if (type == "Einsum") return EinsumCost(node, in, c);
  if (type == "LSTM" || type == "GRU" || type == "RNN") return RecurrentCost(node, in, c);
  if (auto fused = FusedOperationsPerElement().find(type);
      fused != FusedOperationsPerElement().end()) {
    c.flops = fused->second * out_elems + 2 * LayerNormRows(node, input(0));
    return true;
  }
  if (type == "BatchNormalization" || type == "InstanceNormalization" ||
      type == "GroupNormalization") {
    c.flops = 2 * out_elems;  // a scale and a shift per element once folded
    return true;
  }
  if (type == "MaxPool" || type == "AveragePool" || type == "LpPool") {
    c.flops = out_elems * Product(IntsAttribute(node, "kernel_shape"));
    return true;
  }
  if (type.starts_with("Global") || type.starts_with("Reduce")) {
    c.flops = input(0) ? input(0)->elements() : 0;
    return true;
  }
  if (type == "Resize" || type == "Upsample") {
    c.flops = ResizeFlops(node, input(0), first_out);
    return true;
  }
  if (type == "Gather" || type == "GatherElements" || type == "GatherND") {
    // It reads the rows it gathers, not the whole table (an embedding of 30522 words x 768).
    c.bytes_read = (input(1) ? input(1)->bytes() : 0) + (first_out ? first_out->bytes() : 0);
    return true;
  }
  const std::string_view kind = predict::KindOf(type);
  if (kind == "elementwise") {
    c.flops = out_elems;
    return true;
  }
  if (kind == "movement") return true;
  c.flops = out_elems;  // the fallback, named in the answer
  return false;
}

// Sets the first dimension of every graph input (not an initializer) to `batch`, or refuses a
// dynamic one when there is no batch.
Status ApplyBatch(onnx::GraphProto& g, std::optional<int64_t> batch, ModelGraph& out) {
  std::set<std::string> initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  for (auto& input : *g.mutable_input()) {
    if (initializers.count(input.name())) continue;
    // Only a tensor with a known rank has a batch dimension to set (a sequence or a map, or a
    // tensor of unknown rank, is left to shape inference as it is).
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
    auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0) continue;
    for (int i = 1; i < shape->dim_size(); ++i) {
      if (!shape->dim(i).has_dim_value()) {
        return InvalidArgument("input '" + input.name() + "' has a dynamic dimension " +
                               std::to_string(i) +
                               " besides the batch: export the model with a fixed input size");
      }
    }
    auto* first = shape->mutable_dim(0);
    const bool dynamic = !first->has_dim_value() || first->dim_value() <= 0;
    if (dynamic && !batch) {
      return InvalidArgument("input '" + input.name() + "' has a dynamic first dimension" +
                             (first->dim_param().empty() ? "" : " ('" + first->dim_param() + "')") +
                             ": give the batch size with --batch N");
    }
    if (!batch) {
      out.batch = first->dim_value();
      continue;
    }
    if (!dynamic && first->dim_value() != *batch) {
      out.assumptions.push_back("input '" + input.name() + "' was exported with batch " +
                                std::to_string(first->dim_value()) + "; analyzed at batch " +
                                std::to_string(*batch));
    }
    first->set_dim_value(*batch);
    out.batch = *batch;
  }
  return Status::Ok();
}

// The most activation bytes alive at once: a tensor lives from the operator that makes it (or
// the start, for an input) to its last reader (or the end, for an output).
double PeakActivations(const onnx::GraphProto& g, const std::unordered_map<std::string, Tensor>& t,
                       const std::set<std::string>& constants) {
  std::unordered_map<std::string, int> last_use;
  const int n = g.node_size();
  for (int i = 0; i < n; ++i) {
    for (const auto& name : g.node(i).input()) last_use[name] = i;
  }
  for (const auto& v : g.output()) last_use[v.name()] = n;
  auto bytes = [&](const std::string& name) {
    auto it = t.find(name);
    return it == t.end() || constants.count(name) ? 0.0 : it->second.bytes();
  };
  std::vector<double> freed(n + 1, 0);
  double live = 0;
  for (const auto& v : g.input()) {
    if (constants.count(v.name())) continue;
    live += bytes(v.name());
    auto it = last_use.find(v.name());
    freed[it == last_use.end() ? 0 : it->second] += bytes(v.name());
  }
  double peak = live;
  for (int i = 0; i < n; ++i) {
    for (const auto& name : g.node(i).output()) {
      live += bytes(name);
      auto it = last_use.find(name);
      freed[it == last_use.end() ? i : it->second] += bytes(name);
    }
    peak = std::max(peak, live);
    live -= freed[i];
  }
  return peak;
}

// The ONNX file at `path`: a regular file read whole, within protobuf's limit on a message,
// parsed and checked for what libonnx cannot take (onnx_checks.h); `sha256` its digest.
Result<onnx::ModelProto> ReadModel(const std::string& path, std::string& sha256) {
  FP_ASSIGN_OR_RETURN(const std::string bytes,
                      ReadInputFile(path, std::numeric_limits<int>::max(), "the model"));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes) || !model.has_graph() || model.graph().node_size() == 0) {
    return InvalidArgument(path + ": not an ONNX model (no graph could be read from it)");
  }
  if (Status st = predict::CheckModelForInference(model); !st.ok()) {
    return InvalidArgument(path + ": " + st.message());
  }
  Sha256 digest;
  digest.Update(bytes.data(), bytes.size());
  sha256 = digest.Hex();
  return model;
}

// The shapes of `model`'s tensors (shape_folding.h), or one line saying why there are none.
Result<onnx::ModelProto> ShapesOf(onnx::ModelProto& model) {
  try {
    return predict::InferShapesThroughShapeComputations(model);
  } catch (const std::exception& e) {
    return InvalidArgument("ONNX's shape inference failed: " +
                           std::string(Trim(std::string_view(e.what()).substr(0, 200))));
  }
}

// The cost of `node`, the graph's `index`th: its bytes from the shapes in `tensors` (a read of
// one of `constants` is a parameter's), then its type's formula (Cost). A Constant's outputs
// join `constants`; the type of a node with an output of no known shape joins `unknown_shapes`.
OperatorCost NodeCost(const onnx::NodeProto& node, int index,
                      const std::unordered_map<std::string, Tensor>& tensors,
                      std::set<std::string>& constants, std::set<std::string>& unknown_shapes) {
  OperatorCost c;
  c.type = node.op_type();
  c.name = node.name().empty() ? c.type + "_" + std::to_string(index) : node.name();
  std::vector<const Tensor*> ins, outs;
  for (const auto& name : node.input()) {
    auto it = tensors.find(name);
    ins.push_back(name.empty() || it == tensors.end() ? nullptr : &it->second);
    if (ins.back()) {
      c.bytes_read += ins.back()->bytes();
      if (constants.count(name)) c.param_bytes += ins.back()->bytes();
    }
  }
  for (const auto& name : node.output()) {
    auto it = tensors.find(name);
    outs.push_back(it == tensors.end() ? nullptr : &it->second);
    if (outs.back() && outs.back()->known) {
      c.bytes_written += outs.back()->bytes();
    } else {
      unknown_shapes.insert(c.type);
    }
    if (c.type == "Constant") constants.insert(name);
  }
  c.known = Cost(node, ins, outs, c);
  return c;
}

}  // namespace

Result<ModelGraph> AnalyzeOnnx(const std::string& path, std::optional<int64_t> batch) {
  if (batch && (*batch < 1 || *batch > predict::kMaxBatch)) {
    return InvalidArgument("--batch must be 1 to " + std::to_string(predict::kMaxBatch));
  }
  ModelGraph out;
  FP_ASSIGN_OR_RETURN(onnx::ModelProto model, ReadModel(path, out.sha256));
  out.name = model.graph().name().empty() ? std::filesystem::path(path).stem().string()
                                          : model.graph().name();
  onnx::GraphProto& g = *model.mutable_graph();
  if (Status st = ApplyBatch(g, batch, out); !st.ok())
    return InvalidArgument(path + ": " + st.message());
  Result<onnx::ModelProto> shaped = ShapesOf(model);
  if (!shaped.ok()) return InvalidArgument(path + ": " + shaped.status().message());
  const std::unordered_map<std::string, Tensor> tensors = Tensors(shaped->graph());
  std::set<std::string> constants;
  for (const auto& init : g.initializer()) {
    constants.insert(init.name());
    out.param_bytes += FromInitializer(init).bytes();
  }
  for (const auto& v : g.input()) {
    if (!constants.count(v.name())) out.input_bytes += tensors.at(v.name()).bytes();
  }
  std::set<std::string> unknown_shapes;
  for (int i = 0; i < g.node_size(); ++i) {
    OperatorCost c = NodeCost(g.node(i), i, tensors, constants, unknown_shapes);
    if (!c.known) ++out.unknown_ops[c.type];
    ++out.op_counts[c.type];
    out.macs += c.macs;
    out.flops += c.flops;
    out.bytes += c.bytes_read + c.bytes_written;
    out.activation_bytes += c.bytes_written;
    out.ops.push_back(std::move(c));
  }
  out.peak_activation_bytes = PeakActivations(g, tensors, constants);
  if (!unknown_shapes.empty()) {
    std::string types;
    for (const std::string& t : unknown_shapes) types += (types.empty() ? "" : ", ") + t;
    out.assumptions.push_back("shape inference left some outputs without a shape (of " + types +
                              "): their bytes and FLOPs count as 0");
  }
  return out;
}

}  // namespace footprint
