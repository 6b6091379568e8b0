// A node's attributes by name, for the ONNX passes of the predict module.
#ifndef FOOTPRINT_PREDICT_ONNX_ATTRIBUTES_H_
#define FOOTPRINT_PREDICT_ONNX_ATTRIBUTES_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace footprint::predict {

// The attribute `name` of `node`, or nullptr.
inline const onnx::AttributeProto* Attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

inline int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name,
                            int64_t fallback) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a ? a->i() : fallback;
}

// Empty when the node has no such attribute.
inline std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = Attribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_ONNX_ATTRIBUTES_H_
