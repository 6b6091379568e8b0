// The predict module: `footprint predict` runs from libfootprint-predict.so, loaded when the
// subcommand runs (cli/modules.h), so that protobuf, ONNX and xgboost weigh on no other
// subcommand. Both sides come from the same build, so the entry point passes C++ types.
#ifndef FOOTPRINT_PREDICT_MODULE_H_
#define FOOTPRINT_PREDICT_MODULE_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "footprint/status.h"

namespace footprint::predict {

inline constexpr char kModuleFile[] = "libfootprint-predict.so";
inline constexpr char kEntrySymbol[] = "footprint_predict_entry";

// The largest --batch: far above any batch measured, far below what overflows the products of
// dimensions it multiplies.
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;
// The largest --margin, a share of the predicted memory (10: 1000 %).
inline constexpr double kMaxMargin = 10;

struct PredictOptions {
  std::string model;             // an ONNX file
  std::optional<int64_t> batch;  // 1 to kMaxBatch
  std::string device = "cpu";    // cpu, or a GPU with a MIG table (H100-80GB, ...)
  bool json = false;
  bool features = false;  // the graph's features only, no prediction
  std::string predictor;  // a predictor file; empty: the shipped one
  std::string train;      // a dataset to fit a predictor on ...
  std::string out;        // ... written here
  std::string evaluate;   // a dataset to evaluate every predictor on
  double margin = 0.1;    // on predicted memory, for the MIG profile: 0 to kMaxMargin
  // --calibrate: measure this machine's rates (predict/calibration.h) with `threads` threads
  // (--quick: in seconds, for tests) and store them as a run in `db`, where a prediction on a
  // CPU looks for the newest calibration of this machine.
  bool calibrate = false;
  bool quick = false;
  int threads = 1;  // 1 to kMaxCalibrationThreads
  std::string db;
};

inline constexpr int kMaxCalibrationThreads = 1024;

// Runs `footprint predict`: its exit status, or the error that Fail turns into one line.
using Entry = Result<int> (*)(const PredictOptions& options, std::ostream& out);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_MODULE_H_
