// Shape inference that sees through shape computations. Once every input's shape is fixed, the
// small integer tensors a graph computes from shapes (Shape -> Gather -> Div -> Cast -> Mul ->
// Concat -> Reshape, as PyTorch exports vision transformers) are constants; ONNX 1.12's own
// data propagation stops at Div and Cast, which leaves every later MatMul without a shape and
// uncounted. InferShapesThroughShapeComputations evaluates them, replaces each evaluated node by
// a Constant and runs ONNX's shape inference again, until nothing more becomes known.
//
// Thread-safety: none needed; it works on the model it is given.
#ifndef FOOTPRINT_PREDICT_SHAPE_FOLDING_H_
#define FOOTPRINT_PREDICT_SHAPE_FOLDING_H_

#include <onnx/onnx_pb.h>

#include "footprint/status.h"

namespace footprint::predict {

// A copy of `model`, without the data of its large initializers (their names, types and shapes
// kept), whose value_info holds every shape found; its shape computations are Constant nodes, so
// read only the shapes from it. `model` is left as it was (it is borrowed to copy it without its
// weights). Inference runs through CheckedSchemas (onnx_checks.h): InvalidArgument, one line,
// for a node it refused; `model` must have passed CheckModelForInference. Throws what
// onnx::shape_inference::InferShapes throws.
Result<onnx::ModelProto> InferShapesThroughShapeComputations(onnx::ModelProto& model);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_SHAPE_FOLDING_H_
