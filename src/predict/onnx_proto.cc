#include "predict/onnx_proto.h"

#include <algorithm>

namespace footprint::predict {
namespace {

int ElemBytes(int32_t type) {
  switch (type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
      return 8;
    default:
      return 4;
  }
}

}  // namespace

const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a ? a->i() : fallback;
}

std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

double Tensor::elements() const {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 0));
  return n;
}

Tensor FromValueInfo(const onnx::ValueInfoProto& v) {
  Tensor t;
  const auto& type = v.type().tensor_type();
  t.elem_bytes = ElemBytes(type.elem_type());
  if (!type.has_shape()) return t;
  t.known = true;
  for (const auto& d : type.shape().dim()) {
    t.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (!d.has_dim_value()) t.known = false;
  }
  return t;
}

Tensor FromInitializer(const onnx::TensorProto& init) {
  Tensor t;
  t.elem_bytes = ElemBytes(init.data_type());
  t.known = true;
  t.dims.assign(init.dims().begin(), init.dims().end());
  return t;
}

std::unordered_map<std::string, Tensor> Tensors(const onnx::GraphProto& g) {
  std::unordered_map<std::string, Tensor> t;
  for (const auto& v : g.input()) t[v.name()] = FromValueInfo(v);
  for (const auto& v : g.value_info()) t[v.name()] = FromValueInfo(v);
  for (const auto& v : g.output()) t[v.name()] = FromValueInfo(v);
  for (const auto& init : g.initializer()) t[init.name()] = FromInitializer(init);
  return t;
}

}  // namespace footprint::predict
