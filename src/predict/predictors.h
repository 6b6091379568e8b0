// The predictors of `footprint predict`, fitted on footprint's own measurements: a row per
// (model, batch) with the graph's features (model_graph.h) and what was measured. Latency:
//   flops_linear  t = a + b * FLOPs                                   (the baseline)
//   roofline      t = a + sum over operator kinds of FLOPs_k / rate_k + bytes / bandwidth
//                 + weights streamed (recurrent ones at every step) / their bandwidth, every
//                 term non-negative (fitted per kind: convolutions, matrix products, ...)
//   trees         gradient-boosted trees (xgboost) over the per-kind aggregates, on log t
// Peak memory: m = a + b * parameter bytes + c * peak live activations (non-negative).
// Energy per query (where the dataset has it, from a GPU's counter): the latency's predictors.
// Fits minimise the squared relative error, so small and large models count alike.
//
// Thread-safety: a fitted Predictor is read-only; fitting and xgboost calls are not shared.
#ifndef FOOTPRINT_PREDICT_PREDICTORS_H_
#define FOOTPRINT_PREDICT_PREDICTORS_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/model_graph.h"
#include "footprint/status.h"
#include "predict/novelty.h"

namespace footprint::predict {

// The graph's features, by name: totals and FLOPs and bytes per operator kind, where a
// depthwise Conv (OperatorCost::depthwise) is the kind "dwconv", and recurrent_weight_bytes,
// the recurrent weights a cell reads at every step, summed over the steps.
std::map<std::string, double> Features(const ModelGraph& graph);
// The operator kinds the features group types into ("conv", "gemm", "norm", "elementwise",
// "pool", "movement", "other"), by type alone.
std::string_view KindOf(std::string_view op_type);

// The CPU machine a row was measured on, as the agent recorded it with the measurement (empty
// or 0: not recorded): the CPU's model name, its ISA flags that matter to the kernels
// (space-separated), its cores, and the BLAS the framework ran (the library's path, OpenBLAS's
// kernel, e.g. Haswell, and its threads).
struct RowMachine {
  std::string cpu_model, isa, blas_library, blas_kernel;
  int cores = 0, blas_threads = 0;
};

struct Row {
  std::string family, model, split;  // split: "train" or "held-out"
  std::string device;                // the measuring device's name; empty: the CPU
  int threads = 0;                   // the framework's threads; 0: not recorded
  RowMachine machine;
  std::map<std::string, double> features;
  double latency_s = 0, peak_memory_bytes = 0, latency_cv = 0;
  double energy_j = 0;  // per query; 0: not measured
};

// Reads the CSV that scripts/predict-dataset writes. InvalidArgument, one line, when it lacks a
// column or a value is not a number.
Result<std::vector<Row>> ReadDataset(const std::string& path);

// One fitted model of one target.
class Predictor {
 public:
  virtual ~Predictor() = default;
  virtual std::string kind() const = 0;
  virtual double Predict(const std::map<std::string, double>& features) const = 0;
  virtual nlohmann::json ToJson() const = 0;
};

enum class Target { kLatency, kPeakMemory, kEnergy };
// Fit refuses fewer rows than this.
inline constexpr size_t kFewestRows = 4;
// The rows that have a measurement of `target` (energy may be missing: a GPU's load window
// shorter than its counter's period, a CPU without RAPL).
std::vector<Row> MeasuredRows(const std::vector<Row>& rows, Target target);
// The predictors of latency, and of energy where it was measured.
inline constexpr const char* kWorkPredictors[] = {"flops_linear", "roofline", "trees"};

// Fits predictor `kind` for `target` on `rows`. InvalidArgument for an unknown kind or too few
// rows.
Result<std::unique_ptr<Predictor>> Fit(std::string_view kind, Target target,
                                       const std::vector<Row>& rows);
// A predictor back from ToJson.
Result<std::unique_ptr<Predictor>> FromJson(const nlohmann::json& j);

// How well a predictor does on rows it was not fitted on.
struct Errors {
  std::map<std::string, double> family_mape;  // mean absolute percentage error per family
  double mean_family_mape = 0, worst_family_mape = 0;
  std::string worst_family;
  double within_10pct = 0;        // share of rows within +-10 %
  double spearman = 0;            // rank correlation of predicted and measured
  double p80_relative_error = 0;  // FamilyBandError (novelty.h): the band, 1 + it either side
  size_t rows = 0;
};
// Leave-one-family-out over `rows`: each family predicted by a fit on the others.
Result<Errors> LeaveOneFamilyOut(std::string_view kind, Target target,
                                 const std::vector<Row>& rows);
// Leave-one-family-out row by row: each family's rows predicted by a fit on the others, with
// their novelty against the other families' rows (novelty.h).
Result<std::vector<LeftOutPrediction>> PredictLeftOut(std::string_view kind, Target target,
                                                      const std::vector<Row>& rows);
// `rows` predicted by `p`, each with its novelty against `training` (novelty.h).
std::vector<LeftOutPrediction> PredictRows(const Predictor& p, Target target,
                                           const std::vector<Row>& rows,
                                           const std::vector<Mix>& training);
// The errors of predictions (of rows a fit did not see).
Errors ErrorsOf(const std::vector<LeftOutPrediction>& predictions);
// The rows' mixes (novelty.h), in their order.
std::vector<Mix> MixesOf(const std::vector<Row>& rows);
// A random split (seeded): fit on `train_share` of the rows, errors on the rest, every family
// possibly on both sides (DIPPM's setting, reported apart).
Result<Errors> RandomSplit(std::string_view kind, Target target, const std::vector<Row>& rows,
                           double train_share, uint64_t seed);
// Errors of a fitted predictor on `rows`.
Errors Score(const Predictor& p, Target target, const std::vector<Row>& rows);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_PREDICTORS_H_
