// Predictor files: which one a device's prediction reads when none is named, and reading one,
// through the Env (so that tests serve files cut short or unreadable).
#ifndef FOOTPRINT_PREDICT_PREDICTOR_FILE_H_
#define FOOTPRINT_PREDICT_PREDICTOR_FILE_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint::predict {

// 2: depthwise convolutions are a kind of their own ("dwconv"), no longer in "conv".
// 3: a CPU predictor records its machine (machine.h); Einsum and recurrent cells count as
// matrix products, Gather reads the rows it gathers. A version-2 file is read as one without a
// machine record: the features of the families it was fitted on did not change.
inline constexpr int kPredictorVersion = 3;
inline constexpr int kOldestPredictorVersion = 2;

// A predictor file weighs a few hundred KB, its trees included.
inline constexpr size_t kMaxPredictorBytes = size_t{64} << 20;

// The shipped predictor of `device`: the Env's FOOTPRINT_PREDICTOR, else DEVICE-predictor.json
// (cpu-predictor.json, h100-80gb-predictor.json) in the first of `folders` where it can be
// read; empty when none has one.
std::string DefaultPredictor(const std::string& device, const std::vector<std::string>& folders,
                             Env& env);

// A JSON object from a file (`what` names it for people: "the predictor"): a regular file of at
// most kMaxPredictorBytes, read through `env`. NotFound when it cannot be read, InvalidArgument
// when it is too large or not a JSON object (a file cut short); one line naming `what` and the
// path.
Result<nlohmann::json> ReadJsonFile(const std::string& path, const std::string& what, Env& env);

// The predictor file at `path` for `device`: ReadJsonFile's errors, and InvalidArgument, one
// line with what to do, for one of a version this footprint does not read or of another device.
Result<nlohmann::json> ReadPredictor(const std::string& path, const std::string& device, Env& env);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_PREDICTOR_FILE_H_
