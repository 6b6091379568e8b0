// A model's graph read from ONNX (libonnx from Debian, with its shape inference), for
// `footprint predict`: the real data flow (each tensor from its producer to its consumers),
// and per operator its multiply-accumulates, FLOPs, bytes moved and parameters; for the graph,
// the totals, the peak of live activations over the operators' order, and what had to be
// assumed or could not be counted.
//
// Thread-safety: AnalyzeOnnx reads a file; the rest is pure.
#ifndef FOOTPRINT_MODEL_GRAPH_H_
#define FOOTPRINT_MODEL_GRAPH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "footprint/status.h"

namespace footprint {

struct OperatorCost {
  std::string name;  // the node's name (or OP_INDEX when it has none)
  std::string type;  // its op_type, e.g. Conv
  double macs = 0;   // multiply-accumulates (Conv, Gemm, MatMul); 0 for the others
  double flops = 0;  // every arithmetic operation: 2 per MAC, plus elementwise work
  double bytes_read = 0, bytes_written = 0;  // its inputs (weights included) and outputs
  double param_bytes = 0;                    // its inputs that are initializers (weights)
  bool known = true;  // false: an operator footprint has no cost formula for (fallback used)
  // A Conv with one input channel per group: few MACs per byte moved, so memory-bound where a
  // dense Conv is compute-bound; the predictors give it a kind of its own.
  bool depthwise = false;
  // A Conv's shape, by which PyTorch picks its kernel (oneDNN, or im2col and the BLAS image by
  // image: predict/calibration.cc): the kernel's sides, groups, whether strided or dilated.
  std::vector<int64_t> kernel;
  int64_t groups = 1;
  bool strided = false;
  // A Conv whose weights PyTorch's export made (named "onnx::..."): a batch normalisation was
  // folded into it, which eager PyTorch runs as a pass of its own over the output.
  bool folded_norm = false;
  // A recurrent operator (LSTM, GRU, RNN): the steps it takes one after the other (sequence x
  // directions), and the recurrent weights each of them reads (one direction's).
  double sequential_steps = 0, step_param_bytes = 0;
  // A MatMul's independent matrix products (its output's dimensions before the last two: the
  // batch and heads of attention), each of which PyTorch runs as a GEMM of its own; 0 for
  // another operator.
  double matrices = 0;
};

struct ModelGraph {
  std::string name;    // the graph's name, else the file's
  std::string sha256;  // of the file
  int64_t batch = 1;   // the first dimension of the inputs
  std::vector<OperatorCost> ops;
  double macs = 0, flops = 0, bytes = 0;   // summed over the operators
  double param_bytes = 0;                  // every initializer
  double input_bytes = 0;                  // the graph's inputs at this batch
  double activation_bytes = 0;             // every operator's outputs, summed
  double peak_activation_bytes = 0;        // the most alive at once, in the operators' order
  std::map<std::string, int> op_counts;    // by type
  std::map<std::string, int> unknown_ops;  // types without a formula, counted (fallback: one
                                           // operation per output element)
  std::vector<std::string> assumptions;    // what was assumed, one sentence each
};

// Reads and analyzes an ONNX model. A dynamic first dimension of an input takes `batch`; with
// `batch` given, every input's first dimension is set to it (said in `assumptions` when it was
// fixed to another value). InvalidArgument, one line, for a file that is not ONNX, a model
// whose shapes cannot be inferred, a model whose nodes or dimensions libonnx cannot take
// (predict/onnx_checks.h: checked before its shape inference sees them), a file that is not
// a regular one or is over 2 GiB, or a dynamic dimension without `batch`; NotFound for a file
// that cannot be read.
Result<ModelGraph> AnalyzeOnnx(const std::string& path, std::optional<int64_t> batch);

}  // namespace footprint

#endif  // FOOTPRINT_MODEL_GRAPH_H_
