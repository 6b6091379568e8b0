// What footprint checks in an ONNX graph before libonnx sees it. libonnx 1.12's shape inference
// trusts what it reads: a Conv or a MaxPool with strides 0 divides by zero (SIGFPE), a Split
// without outputs takes a remainder by 0, a DepthToSpace block of 2^32 squares to 0, weights of a
// higher rank than the convolution's input index past the input's dimensions, and raw data of 7
// bytes for 8-byte integers is copied past its end. Such a model is refused with one line that
// names the node (or the tensor), the attribute (or the input) and what is allowed:
// - CheckModelForInference, before inference: the attributes that inference or footprint's cost
//   formulas divide by or size with, each node's number of inputs and outputs, the dimensions
//   the graph declares and the size of the data it holds, in subgraphs too;
// - CheckedSchemas, during inference, just before an operator's own inference function runs,
//   for what is only known then: the constant inputs that inference reads as sizes (a
//   Reshape's shape, a Tile's repeats, a Resize's scales, ...; shape_folding.h's computed
//   ones too), and the ranks of a convolution's input and weights.
//
// Thread-safety: CheckModelForInference is pure; a CheckedSchemas serves one inference at a time.
#ifndef FOOTPRINT_PREDICT_ONNX_CHECKS_H_
#define FOOTPRINT_PREDICT_ONNX_CHECKS_H_

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "footprint/status.h"

namespace footprint::predict {

// The largest dimension, kernel size, stride, dilation, pad or block accepted: the product of
// two stays far within int64, whatever libonnx's inference computes from them.
inline constexpr int64_t kMaxExtent = int64_t{1} << 31;
// The most elements a tensor the graph declares may hold (2^53: a double counts them exactly).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 53;

// InvalidArgument, one line, for the first node or declared tensor of `model` (subgraphs
// included) that libonnx's shape inference or footprint's cost formulas cannot take. A graph
// input's first dimension may be 0 or less: dynamic, set by --batch.
Status CheckModelForInference(const onnx::ModelProto& model);

// ONNX's operator schemas, where footprint checks an operator's inputs, with that check run
// before the operator's inference function: a node that fails it is left without shapes (the
// check throws ONNX's InferenceError, which inference catches) and `refusal` says why.
class CheckedSchemas final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& op_type, int max_inclusive_version,
                                  const std::string& domain) const override;
  // What the first node refused held (empty: none was).
  const std::string& refusal() const { return refusal_; }

 private:
  // The checked copies, by the schema they copy: made on first use, alive as long as this.
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> checked_;
  mutable std::string refusal_;
};

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_ONNX_CHECKS_H_
