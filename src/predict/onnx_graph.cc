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

// The MACs and FLOPs of `node` from its tensors; false when its type has no formula.
bool Cost(const onnx::NodeProto& node, const std::vector<const Tensor*>& in,
          const std::vector<const Tensor*>& out, OperatorCost& c) {
  const std::string& type = node.op_type();
  const double out_elems = out.empty() || !out[0] ? 0 : out[0]->elements();
  auto input = [&](size_t i) -> const Tensor* { return i < in.size() ? in[i] : nullptr; };
  if (type == "Conv" || type == "ConvTranspose") {
    const Tensor* x = input(0);
    const Tensor* w = input(1);
    if (!w || w->dims.size() < 3) return false;
    const double per_output = Product(w->dims, 1);  // C/group x kernel
    // Conv: every output element sums C/group x kernel products; ConvTranspose: every input
    // element spreads over M/group x kernel outputs.
    c.macs =
        type == "Conv" ? out_elems * per_output : (x ? x->elements() : 0) * Product(w->dims, 1);
    c.flops = 2 * c.macs + (input(2) ? out_elems : 0);
    c.depthwise = type == "Conv" && w->dims[1] == 1 && IntAttribute(node, "group", 1) > 1;
    return true;
  }
  if (type == "Gemm" || type == "MatMul" || type == "MatMulInteger") {
    const Tensor* a = input(0);
    if (!a || a->dims.empty()) return false;
    const bool trans_a = type == "Gemm" && IntAttribute(node, "transA", 0) != 0;
    const int64_t k = trans_a && a->dims.size() >= 2 ? a->dims[a->dims.size() - 2] : a->dims.back();
    c.macs = out_elems * static_cast<double>(std::max<int64_t>(k, 0));
    c.flops = 2 * c.macs + (type == "Gemm" && input(2) ? out_elems : 0);
    return true;
  }
  if (type == "BatchNormalization" || type == "InstanceNormalization" ||
      type == "LayerNormalization" || type == "GroupNormalization") {
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
  if (type == "Softmax" || type == "LogSoftmax") {
    c.flops = 3 * out_elems;  // exponent, sum, divide
    return true;
  }
  if (type == "Resize" || type == "Upsample") {
    c.flops = 4 * out_elems;  // up to bilinear interpolation
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
    const onnx::NodeProto& node = g.node(i);
    OperatorCost c;
    c.type = node.op_type();
    c.name = node.name().empty() ? c.type + "_" + std::to_string(i) : node.name();
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
