// Reading ONNX's protobuf, for the predict module's passes (onnx_graph.cc, shape_folding.cc):
// a node's attributes by name, and the graph's tensors with their shapes as far as known.
//
// Thread-safety: pure functions over the protos they are given.
#ifndef FOOTPRINT_PREDICT_ONNX_PROTO_H_
#define FOOTPRINT_PREDICT_ONNX_PROTO_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace footprint::predict {

// The attribute `name` of `node`, or nullptr.
const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, const std::string& name);
int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
// Empty when the node has no such attribute.
std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const std::string& name);

struct Tensor {
  std::vector<int64_t> dims;  // -1: unknown
  int elem_bytes = 4;
  bool known = false;  // every dimension known
  double elements() const;
  double bytes() const { return elements() * elem_bytes; }
};

Tensor FromValueInfo(const onnx::ValueInfoProto& v);
Tensor FromInitializer(const onnx::TensorProto& init);
// The graph's tensors by name: inputs, inferred intermediate values, outputs, initializers.
std::unordered_map<std::string, Tensor> Tensors(const onnx::GraphProto& g);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_ONNX_PROTO_H_
