// `footprint predict --calibrate`: this machine's rates, measured in minutes through PyTorch
// (python/footprint/calibrate.py), stored as a run named `predict-calibration`, and the latency
// a graph takes at those rates. A predictor fitted elsewhere (another CPU, BLAS kernel or thread
// count) then holds here.
//
// The latency is a roofline per operator:
//   t = sum over operators of max(FLOPs / rate(kind, M), weight bytes / rate(weight bytes))
//       + the BLAS's waits after OpenMP regions + an overhead per operator call,
// where dense convolutions and matrix products with weights take the rate of their kind at
// their M (the rows of the GEMM they become: multiply-accumulates / weights), a product the
// rate at its M and its weights' size (its width), a convolution the curve of the kernel
// PyTorch picks for it (oneDNN, 3x3 and 1x1 apart, or image by image through im2col and the
// BLAS: 1x1 ones on one thread, small ones of one image), a product's weights the rate of a
// matrix-vector product over weights of their size (caches to memory), matrix products of two
// activations (attention) the batched product's rate, softmax and layer normalisation their
// FLOP rates, depthwise convolutions their bytes at their bandwidth, and the rest (element-wise,
// batch normalisation, pooling, copies) their bytes at a bandwidth measured as a curve over
// the tensor's size (caches to memory). A convolution with batch normalisation folded into it
// by the export adds the pass and the call PyTorch makes for it; a recurrent operator is its
// input's projections in one product, then step by step a product of M = the batch (its
// recurrent weights read at their size's rate) and the cell's calls. On more than one thread,
// a product on OpenBLAS's threads that follows an OpenMP region (oneDNN, element-wise work
// above PyTorch's grain) waits for the cores OpenMP's workers spin on: a wait measured by the
// calibration. The overhead per call is the one figure no microbenchmark gives (a module's
// call from Python): it is fitted on the reference models timed during the calibration, and
// each reference's error is that of an overhead fitted on the other models: the band is their
// worst error, at least kLeastCalibratedBand.
//
// Thread-safety: the functions read files and a store; nothing shared.
#ifndef FOOTPRINT_PREDICT_CALIBRATION_H_
#define FOOTPRINT_PREDICT_CALIBRATION_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/model_graph.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint::predict {

// The least band a calibrated prediction is given: three references say less than the models
// beside them show (docs/prediction.md, "Another machine": after calibrating, models none of
// the references is were off by up to this much).
inline constexpr double kLeastCalibratedBand = 0.35;

// The name of the runs a calibration is stored as.
inline constexpr char kCalibrationRun[] = "predict-calibration";

// A calibration as stored: what calibrate.py measured ("rates", "references", "machine", ...)
// with the fitted "overhead_s", the references' "errors", the "worst_reference_error" and the
// "band" (that, at least kLeastCalibratedBand), and the run it is stored in.
struct Calibration {
  nlohmann::json record;
  std::string run_id;
};

// The latency of `g` at a calibration's rates and overhead.
double CalibratedLatency(const ModelGraph& g, const nlohmann::json& record);

// A term of the roofline is exercised by the calibration's references where one of them spends
// at least this share of its compute time in it; a prediction with kUncoveredShare of its
// compute time or more in terms none exercises stands where the references do not check it.
inline constexpr double kExercisedShare = 0.05;
inline constexpr double kUncoveredShare = 0.25;

// Where a calibrated prediction of `g` stands on ground the calibration's evidence does not
// cover, one sentence each, none where it does: a batch outside those the references were timed
// at; kUncoveredShare of the predicted compute time or more in terms no reference exercises
// (an LSTM's recurrent cells: no reference has one); a reference the calibration's own rates
// missed by more than kLeastCalibratedBand (with the overhead fitted on the others): the band
// then rests on references this machine's rates do not explain.
std::vector<std::string> CalibrationGaps(const ModelGraph& g, const nlohmann::json& record);

// Adds the overhead per operator call, the references' errors and the band to what
// calibrate.py wrote (its ONNX references are read here). InvalidArgument when a rate is
// missing or not positive, or no reference could be read.
Status FitCalibration(nlohmann::json& record);

// Stores a fitted calibration as a run named kCalibrationRun (ok, its wall and CPU seconds as
// the totals duration_s and cpu_user_s + cpu_system_s, the record as the value "calibration"),
// in one transaction: a calibration that fails before this stores nothing.
Result<std::string> StoreCalibration(Store& store, const nlohmann::json& record,
                                     const std::vector<std::string>& command, double cpu_user_s,
                                     double cpu_system_s);

// The newest calibration in the store at `location` whose machine matches `here` (machine.h's
// record of this machine): the CPU model, ISA flags and BLAS kernel. None where the location
// is a file that does not exist or holds none.
Result<std::optional<Calibration>> NewestCalibration(const std::string& location,
                                                     const nlohmann::json& here);

// A calibration's machine (calibrate.py records the agent's description) as machine.h's record.
nlohmann::json CalibrationMachine(const nlohmann::json& record);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_CALIBRATION_H_
