// ONNX's Einsum read from its equation ("bij,bjk->bik", with or without spaces, upper- and
// lower-case labels, an ellipsis for broadcast dimensions): the output's dimensions, which
// ONNX 1.12's shape inference leaves unknown (it gives the rank only), and the work.
//
// Thread-safety: pure functions.
#ifndef FOOTPRINT_PREDICT_EINSUM_H_
#define FOOTPRINT_PREDICT_EINSUM_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace footprint::predict {

struct EinsumWork {
  std::vector<int64_t> output_dims;
  // Multiply-accumulates: the product of every label's size when a label is summed over (a
  // contraction, as attention's q·k); 0 when none is (a transpose, an outer product).
  double macs = 0;
  // Products without a sum (no label summed over): one per operand beyond the first, per
  // element of the full index space.
  double products = 0;
};

// The work of `equation` over operands of `input_dims` (every dimension known); nullopt for an
// equation that does not parse or does not fit its operands (a label of two sizes, other than
// 1 for broadcasting).
std::optional<EinsumWork> ReadEinsum(std::string_view equation,
                                     const std::vector<std::vector<int64_t>>& input_dims);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_EINSUM_H_
