#include "predict/calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "core/identity.h"
#include "footprint/env.h"
#include "predict/json_members.h"
#include "predict/machine.h"
#include "predict/predictors.h"
#include "util/host.h"
#include "util/json_bounded.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// A rate as a curve over a size (the rows of a GEMM, a tensor's bytes), by size.
using Curve = std::vector<std::pair<double, double>>;

// A rate over two sizes: a curve over the first (a GEMM's rows) per value of the second (its
// weights' bytes), by the second.
using Surface = std::vector<std::pair<double, Curve>>;

// The rates of a record, read once per graph.
struct Rates {
  // FLOP/s over M. conv and conv_1x1_onednn: 3x3 and 1x1 convolutions PyTorch runs through
  // oneDNN, over the GEMM's rows (pixels times images); conv_small (3x3) and conv_1x1: those it
  // runs image by image through im2col and the BLAS, over one image's pixels (UsesOneDnn).
  Curve conv, conv_small, conv_1x1, conv_1x1_onednn;
  // FLOP/s of products with weights over M, per the weights' bytes (their width).
  Surface gemm;
  // Bytes/s over the output's bytes: element-wise work, batch normalisation.
  Curve elementwise, batchnorm;
  // Bytes/s over the weights' bytes: a matrix-vector product's (from the caches to memory).
  Curve weights;
  // FLOP/s of products of two activations (attention) over each matrix's MACs.
  Curve attention;
  double conv_stream = 0, dwconv = 0;  // bytes/s
  double softmax = 0, layernorm = 0;   // FLOP/s
  double maxpool = 0, avgpool = 0;     // kernel elements/s
  double call = 0;                     // s: one bare operator call
  double blas_after_openmp = 0;        // s: a BLAS product's wait after an OpenMP region
  int threads = 1;                     // PyTorch's, as calibrated
};

Curve CurveOf(const json& points, const char* x, const char* rate) {
  Curve curve;
  for (const json& p : points.is_array() ? points : json::array()) {
    const double at = Number(p, x, 0), r = Number(p, rate, 0);
    if (at > 0 && r > 0) curve.emplace_back(at, r);
  }
  std::sort(curve.begin(), curve.end());
  return curve;
}

Surface SurfaceOf(const json& points) {
  std::map<double, json> by_weights;
  for (const json& p : points.is_array() ? points : json::array()) {
    if (const double w = Number(p, "weight_bytes", 0); w > 0) by_weights[w].push_back(p);
  }
  Surface surface;
  for (const auto& [weights, at] : by_weights) {
    surface.emplace_back(weights, CurveOf(at, "m", "flops_per_s"));
    if (surface.back().second.empty()) surface.pop_back();
  }
  return surface;
}

Rates RatesOf(const json& record) {
  const json r = Object(record, "rates");
  return {CurveOf(Member(r, "conv"), "m", "flops_per_s"),
          CurveOf(Member(r, "conv_small"), "m", "flops_per_s"),
          CurveOf(Member(r, "conv_1x1"), "m", "flops_per_s"),
          CurveOf(Member(r, "conv_1x1_onednn"), "m", "flops_per_s"),
          SurfaceOf(Member(r, "gemm")),
          CurveOf(Member(r, "elementwise"), "bytes", "bytes_per_s"),
          CurveOf(Member(r, "batchnorm"), "bytes", "bytes_per_s"),
          CurveOf(Member(r, "weights"), "bytes", "bytes_per_s"),
          CurveOf(Member(r, "attention"), "macs", "flops_per_s"),
          Number(r, "conv_weight_stream_bytes_per_s", 0),
          Number(r, "dwconv_bytes_per_s", 0),
          Number(r, "softmax_flops_per_s", 0),
          Number(r, "layernorm_flops_per_s", 0),
          Number(r, "maxpool_flops_per_s", 0),
          Number(r, "avgpool_flops_per_s", 0),
          Number(r, "operator_overhead_s", 0),
          Number(r, "blas_after_openmp_s", 0),
          static_cast<int>(Number(record, "threads", 1))};
}

// The value at `x` of `points` (by x, `value` reading each), linear in log x between them, the
// nearest one beyond them.
template <typename Point, typename Value>
double Interpolate(const std::vector<std::pair<double, Point>>& points, double x, Value value) {
  if (x <= points.front().first) return value(points.front().second);
  if (x >= points.back().first) return value(points.back().second);
  const auto hi = std::upper_bound(points.begin(), points.end(), x,
                                   [](double at, const auto& p) { return at < p.first; });
  const auto lo = hi - 1;
  const double share = std::log(x / lo->first) / std::log(hi->first / lo->first);
  return value(lo->second) + share * (value(hi->second) - value(lo->second));
}

// The rate of a curve at `x`.
double RateAt(const Curve& curve, double x) {
  return Interpolate(curve, x, [](double rate) { return rate; });
}

// The rate of a product of `m` rows with `weight_bytes` of weights.
double RateAt(const Surface& surface, double weight_bytes, double m) {
  return Interpolate(surface, weight_bytes, [m](const Curve& c) { return RateAt(c, m); });
}

// Whether a convolution's kernel is 1x1.
bool Pointwise(const OperatorCost& op) {
  return std::all_of(op.kernel.begin(), op.kernel.end(), [](int64_t side) { return side == 1; });
}

// Whether PyTorch (1.13, ConvParams::use_mkldnn) runs a float convolution of `batch` images on
// `threads` threads through oneDNN rather than image by image through im2col and the BLAS:
// a 1x1 convolution without stride of fewer than 16 images on one thread goes to the BLAS,
// and so does a convolution of one image with at most 20480 input values, one group and a
// kernel no side of which exceeds 3.
bool UsesOneDnn(const OperatorCost& op, int64_t batch, int threads) {
  constexpr double kSmallConvInput = 20480;  // values
  const bool large_kernel =
      std::all_of(op.kernel.begin(), op.kernel.end(), [](int64_t side) { return side > 3; });
  const double input_values = (op.bytes_read - op.param_bytes) / 4;  // float32
  return (op.strided || batch >= 16 || !Pointwise(op) || threads > 1) &&
         (op.groups > 1 || large_kernel || batch > 1 || input_values > kSmallConvInput);
}

// The seconds a product reads `weight_bytes` of weights in, at the rate of a matrix-vector
// product over weights of that size (from the caches, or from memory).
double WeightSeconds(double weight_bytes, const Rates& r) {
  return weight_bytes / RateAt(r.weights, weight_bytes);
}

// Whether a product of `macs` multiply-accumulates runs on OpenBLAS's threads: OpenBLAS (0.3,
// interface/gemm.c) runs a GEMM of at most 65536 x 4 of them (SMP_THRESHOLD_MIN times
// GEMM_MULTITHREAD_THRESHOLD) on the caller's thread alone.
bool ThreadedBlas(double macs, int threads) { return threads > 1 && macs > 65536.0 * 4; }

// The multiply-accumulates of each GEMM an operator becomes: a product of two activations'
// per matrix (attention: per head and image), another's all (PyTorch runs a Linear over every
// row of a batch in one GEMM).
double EachMacs(const OperatorCost& op) {
  return op.matrices > 0 && op.param_bytes <= 0 ? op.macs / op.matrices : op.macs;
}

// The seconds a dense convolution or product with weights computes at `r` (FLOPs at its
// kind's rate at its M, or its weights streamed, whichever is longer).
double DenseSeconds(const OperatorCost& op, int64_t batch, const Rates& r) {
  const double m = std::max(1.0, op.macs / (op.param_bytes / 4));  // float32 weights
  if (KindOf(op.type) != "conv") {
    return std::max(op.flops / RateAt(r.gemm, op.param_bytes, m), WeightSeconds(op.param_bytes, r));
  }
  const double rate =
      UsesOneDnn(op, batch, r.threads)
          ? RateAt(Pointwise(op) ? r.conv_1x1_onednn : r.conv, m)
          : RateAt(Pointwise(op) ? r.conv_1x1 : r.conv_small, std::max(1.0, m / batch));
  return std::max(op.flops / rate, op.param_bytes / r.conv_stream);
}

// A recurrent operator as PyTorch runs it on a CPU: the input's projections of every step in
// one product (M: sequence x batch), then step after step the recurrent product (M: the batch)
// and the cell's element-wise operations, each a call of its own from C++ at a bare call's
// cost (an LSTM cell makes 11: the product, the sum, 3 sigmoids, 2 tanh, 3 products and a
// sum; a GRU's, counted alike, 12; a plain RNN's 3). Costed as one product, a 2-layer LSTM over 64
// steps was predicted at 12 ms here and took 51 (batch 1, Prescott's kernels). A step's
// product reads the recurrent weights at the rate of a matrix-vector product over weights of
// their size: a 512-unit LSTM's 4 MiB ran at a fifth of the rate of the 768-wide product in
// the caches that the gemm curve is measured on (at one thread, own kernel).
double RecurrentSeconds(const OperatorCost& op, int64_t batch, const Rates& r) {
  const double cell_calls = op.type == "LSTM" ? 11 : op.type == "GRU" ? 12 : 3;
  const double step_macs = static_cast<double>(batch) * op.step_param_bytes / 4;  // float32
  const double input_macs = std::max(0.0, op.macs - op.sequential_steps * step_macs);
  const double step_s =
      std::max(2 * step_macs / RateAt(r.gemm, op.step_param_bytes, static_cast<double>(batch)),
               WeightSeconds(op.step_param_bytes, r));
  const double input_weights = op.param_bytes - op.step_param_bytes;  // and the biases
  return 2 * input_macs / RateAt(r.gemm, input_weights, op.sequential_steps * batch) +
         op.sequential_steps * (step_s + cell_calls * r.call);
}

// The pass eager PyTorch makes over a convolution's output for the batch normalisation that
// the export folded into it; 0 for another operator.
double NormSeconds(const OperatorCost& op, const Rates& r) {
  return op.folded_norm ? 2 * op.bytes_written / RateAt(r.batchnorm, op.bytes_written) : 0;
}

// The seconds an operator of a graph at `batch` computes or moves at `r`, its call's overhead
// apart. A convolution with batch normalisation folded into it adds the pass PyTorch makes
// over its output (measured here: 11 % of MobileNetV2's time at batch 8, 128x128).
double OperatorSeconds(const OperatorCost& op, int64_t batch, const Rates& r) {
  const double bytes = op.bytes_read + op.bytes_written;
  if (op.depthwise) return bytes / r.dwconv + NormSeconds(op, r);
  const std::string_view kind = KindOf(op.type);
  if (kind == "conv" || kind == "gemm") {
    if (op.param_bytes <= 0 || op.macs <= 0) return op.flops / RateAt(r.attention, EachMacs(op));
    if (op.sequential_steps > 0) return RecurrentSeconds(op, batch, r);
    return DenseSeconds(op, batch, r) + NormSeconds(op, r);
  }
  if (op.type == "Softmax" || op.type == "LogSoftmax") return op.flops / r.softmax;
  if (op.type == "BatchNormalization") return bytes / RateAt(r.batchnorm, op.bytes_written);
  if (kind == "norm") return op.flops / r.layernorm;
  const double moved = bytes / RateAt(r.elementwise, op.bytes_written);
  // Pooling's loops (a fraction of a GFLOP/s) are slower than its bytes.
  if (op.type == "MaxPool") return std::max(op.flops / r.maxpool, moved);
  if (op.type == "AveragePool" || op.type == "LpPool") return std::max(op.flops / r.avgpool, moved);
  return moved;
}

// Whether eager PyTorch runs the operator at all: a view (Reshape, Flatten, ...) and the
// arithmetic on shapes that an export writes into the graph (a few bytes) cost no call there.
bool IsCall(const OperatorCost& op) {
  static const std::set<std::string_view> kViews = {
      "Reshape", "Flatten", "Squeeze",         "Unsqueeze", "Identity", "Shape",
      "Size",    "Dropout", "ConstantOfShape", "Constant",  "Range"};
  constexpr double kShapeBytes = 256;  // a shape: a few int64
  return !kViews.count(op.type) && op.bytes_read + op.bytes_written > kShapeBytes;
}

// The threads an operator runs on when PyTorch has more than one: its OpenMP workers
// (oneDNN's convolutions, and element-wise work above PyTorch's grain), OpenBLAS's threads
// (products through the BLAS above its threshold), or the caller's thread alone.
enum class Pool { kCaller, kOpenMp, kBlas };

Pool PoolOf(const OperatorCost& op, int64_t batch, const Rates& r) {
  constexpr double kGrain = 32768;  // elements: at::internal::GRAIN_SIZE (PyTorch 1.13)
  if (r.threads <= 1 || !IsCall(op)) return Pool::kCaller;
  if (op.depthwise) return Pool::kOpenMp;
  const std::string_view kind = KindOf(op.type);
  if (kind == "conv" && op.param_bytes > 0 && UsesOneDnn(op, batch, r.threads)) {
    return Pool::kOpenMp;
  }
  if (kind == "conv" || kind == "gemm") {
    return ThreadedBlas(EachMacs(op), r.threads) ? Pool::kBlas : Pool::kCaller;
  }
  return op.bytes_written / 4 > kGrain ? Pool::kOpenMp : Pool::kCaller;  // float32
}

// What an operator's seconds are spent on, by the term of the roofline that costs them.
std::string TermOf(const OperatorCost& op) {
  if (op.depthwise) return "depthwise convolution";
  const std::string_view kind = KindOf(op.type);
  if (kind == "conv") return "convolution";
  if (kind == "gemm") {
    if (op.sequential_steps > 0) return "recurrent cell";
    return op.param_bytes <= 0 || op.macs <= 0 ? "attention product" : "matrix product";
  }
  if (op.type == "Softmax" || op.type == "LogSoftmax") return "softmax";
  if (op.type == "BatchNormalization") return "batch normalisation";
  if (kind == "norm") return "normalisation";
  if (kind == "pool") return "pooling";
  return "element-wise and copies";
}

// What a graph costs at a calibration's rates before the overhead per call: the seconds (the
// BLAS's waits after OpenMP regions included), by term, and the calls eager PyTorch makes.
struct Work {
  double seconds = 0, calls = 0;
  std::map<std::string, double> by_term;  // seconds
};

// The name of the term of the BLAS's waits after OpenMP regions.
constexpr char kBlasAfterOpenMp[] = "BLAS product after an OpenMP region";

Work WorkOf(const ModelGraph& g, const Rates& r) {
  Work w;
  Pool last = Pool::kCaller;
  for (const OperatorCost& op : g.ops) {
    const double seconds = OperatorSeconds(op, g.batch, r);
    w.seconds += seconds;
    w.by_term[TermOf(op)] += seconds;
    w.calls += (IsCall(op) ? 1 : 0) + (op.folded_norm ? 1 : 0);
    // A product on OpenBLAS's threads right after an OpenMP region waits for the cores
    // OpenMP's workers spin on (calibrate.py measures the wait; none on one thread).
    const Pool pool = PoolOf(op, g.batch, r);
    if (pool == Pool::kBlas && last == Pool::kOpenMp) {
      w.seconds += r.blas_after_openmp;
      w.by_term[kBlasAfterOpenMp] += r.blas_after_openmp;
    }
    if (pool != Pool::kCaller) last = pool;
  }
  return w;
}

Status CheckRates(const Rates& r) {
  for (double rate : {r.conv_stream, r.dwconv, r.softmax, r.layernorm, r.maxpool, r.avgpool}) {
    if (!(rate > 0)) return InvalidArgument("the calibration lacks a rate or holds one <= 0");
  }
  for (const Curve* curve : {&r.conv, &r.conv_small, &r.conv_1x1, &r.conv_1x1_onednn,
                             &r.elementwise, &r.batchnorm, &r.weights, &r.attention}) {
    if (curve->empty()) return InvalidArgument("the calibration lacks a curve of rates");
  }
  if (r.gemm.empty()) return InvalidArgument("the calibration lacks the products' rates");
  return Status::Ok();
}

// A reference model measured during the calibration, with its graph's terms.
struct Reference {
  std::string model;
  double measured_s = 0, compute_s = 0, calls = 0;
  std::map<std::string, double> by_term;
};

// The overhead per call that minimises the squared relative error over `refs` (all but
// `skip`), at least `floor` (a bare call's cost, measured).
double FitOverhead(const std::vector<Reference>& refs, const std::string& skip, double floor) {
  double num = 0, den = 0;
  for (const Reference& r : refs) {
    if (r.model == skip) continue;
    const double a = r.calls / r.measured_s;
    num += a * (1 - r.compute_s / r.measured_s);
    den += a * a;
  }
  return den > 0 ? std::max(floor, num / den) : floor;
}

}  // namespace

double CalibratedLatency(const ModelGraph& g, const json& record) {
  const Work w = WorkOf(g, RatesOf(record));
  return w.seconds + w.calls * Number(record, "overhead_s", 0);
}

namespace {

// The terms `errors` (FitCalibration's, per reference) spend kExercisedShare of a reference's
// compute time or more on.
std::set<std::string> ExercisedTerms(const json& errors) {
  std::set<std::string> exercised;
  for (const json& e : errors) {
    const json terms = Object(e, "terms");
    for (const auto& [term, share] : terms.items()) {
      if (share.is_number() && share.get<double>() >= kExercisedShare) exercised.insert(term);
    }
  }
  return exercised;
}

// The sentence for the share of `w`'s compute time in terms `exercised` lacks; empty below
// kUncoveredShare.
std::string UncoveredTerms(const Work& w, const std::set<std::string>& exercised) {
  double uncovered = 0;
  std::string names;
  for (const auto& [term, seconds] : w.by_term) {
    if (exercised.count(term) || !(seconds > 0)) continue;
    uncovered += seconds;
    names += (names.empty() ? "" : ", ") + term;
  }
  if (!(w.seconds > 0) || uncovered / w.seconds < kUncoveredShare) return "";
  return std::to_string(std::lround(100 * uncovered / w.seconds)) +
         " % of the predicted compute time is in terms none of the calibration's reference "
         "models spends " +
         std::to_string(std::lround(100 * kExercisedShare)) + " % of its time on (" + names +
         "): no reference checks them";
}

}  // namespace

std::vector<std::string> CalibrationGaps(const ModelGraph& g, const json& record) {
  std::vector<std::string> gaps;
  const json errors = Member(record, "errors");
  if (!errors.is_array() || errors.empty()) return {"the calibration holds no reference errors"};
  double least = Number(errors[0], "batch", 1), most = least, worst = 0;
  const json* worst_reference = nullptr;
  for (const json& e : errors) {
    least = std::min(least, Number(e, "batch", 1));
    most = std::max(most, Number(e, "batch", 1));
    if (const double error = std::abs(Number(e, "relative_error", 0)); error > worst) {
      worst = error;
      worst_reference = &e;
    }
  }
  if (g.batch < least || g.batch > most) {
    gaps.push_back("batch " + std::to_string(g.batch) + " is outside the batches the " +
                   "calibration's reference models were timed at (" +
                   std::to_string(std::lround(least)) + " to " + std::to_string(std::lround(most)) +
                   ")");
  }
  if (std::string uncovered = UncoveredTerms(WorkOf(g, RatesOf(record)), ExercisedTerms(errors));
      !uncovered.empty()) {
    gaps.push_back(std::move(uncovered));
  }
  if (worst > kLeastCalibratedBand && worst_reference != nullptr) {
    gaps.push_back("the calibration's own reference " + Text(*worst_reference, "model", "?") +
                   " at batch " +
                   std::to_string(std::lround(Number(*worst_reference, "batch", 1))) +
                   " was off by " + std::to_string(std::lround(100 * worst)) + " % (more than " +
                   std::to_string(std::lround(100 * kLeastCalibratedBand)) +
                   " %): this machine's rates do not explain its own references");
  }
  return gaps;
}

Status FitCalibration(json& record) {
  const Rates rates = RatesOf(record);
  FP_RETURN_IF_ERROR(CheckRates(rates));
  std::vector<Reference> refs;
  for (const json& ref : Member(record, "references")) {
    const std::string onnx = Text(ref, "onnx", "");
    FP_ASSIGN_OR_RETURN(const ModelGraph g,
                        AnalyzeOnnx(onnx, static_cast<int64_t>(Number(ref, "batch", 1))));
    const Work w = WorkOf(g, rates);
    refs.push_back(
        {Text(ref, "model", onnx), Number(ref, "latency_s", 0), w.seconds, w.calls, w.by_term});
    if (!(refs.back().measured_s > 0)) {
      return InvalidArgument("the calibration's reference " + onnx + " has no latency");
    }
  }
  if (refs.size() < 2) return InvalidArgument("the calibration holds fewer than 2 references");
  const double floor = Number(Object(record, "rates"), "operator_overhead_s", 0);
  json errors = json::array();
  double band = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const Reference& r = refs[i];
    const double predicted = r.compute_s + r.calls * FitOverhead(refs, r.model, floor);
    const double error = (predicted - r.measured_s) / r.measured_s;
    band = std::max(band, std::abs(error));
    json terms = json::object();  // the share of its compute seconds per term
    for (const auto& [term, seconds] : r.by_term) {
      if (r.compute_s > 0) terms[term] = seconds / r.compute_s;
    }
    errors.push_back({{"model", r.model},
                      {"batch", Number(Member(record, "references")[i], "batch", 1)},
                      {"measured_s", r.measured_s},
                      {"predicted_s", predicted},
                      {"relative_error", error},
                      {"terms", terms}});
  }
  record["overhead_s"] = FitOverhead(refs, "", floor);
  record["errors"] = errors;
  record["worst_reference_error"] = band;
  record["band"] = std::max(band, kLeastCalibratedBand);
  return Status::Ok();
}

json CalibrationMachine(const json& record) {
  const json m = Object(record, "machine");
  json blas = json::object();
  if (const std::string library = Text(m, "blas_library", ""); !library.empty()) {
    blas["library"] = library;
  }
  if (const std::string kernel = Text(m, "blas_kernel", ""); !kernel.empty()) {
    blas["kernel"] = kernel;
  }
  if (const double threads = Number(m, "blas_threads", 0); threads > 0) blas["threads"] = threads;
  json out = {{"cpu_model", Text(m, "device_name", "")},
              {"isa", Member(m, "isa").is_array() ? Member(m, "isa") : json::array()},
              {"cores", Number(m, "cores", 0)},
              {"threads", Number(m, "threads", 0)}};
  if (!blas.empty()) out["blas"] = blas;
  return out;
}

Result<std::string> StoreCalibration(Store& store, const json& record,
                                     const std::vector<std::string>& command, double cpu_user_s,
                                     double cpu_system_s) {
  const auto now = [] { return Env::Default().RealtimeNs(); };
  RunRecord run;
  run.id = NewRunId();
  run.name = kCalibrationRun;
  run.description = "footprint predict --calibrate: this machine's rates for predict";
  run.command = command;
  run.cwd = CurrentDir();
  run.host = HostName();
  run.user = UserName(Env::Default().Var("USER"));
  const double wall_s = Number(record, "wall_s", 0);
  run.ended_at_ns = now();
  run.started_at_ns = *run.ended_at_ns - static_cast<int64_t>(wall_s * 1e9);
  run.meta_json = json{{"calibration", {{"band", record["band"]}}}}.dump();
  FP_RETURN_IF_ERROR(store.CreateRun(run));
  ValueRecord value;
  value.run_id = run.id;
  value.name = "calibration";
  value.t_ns = *run.ended_at_ns;
  value.data_json = record.dump();
  FP_RETURN_IF_ERROR(store.InsertValue(value));
  run.status = RunStatus::kOk;
  run.exit_code = 0;
  FP_RETURN_IF_ERROR(store.FinishRun(
      run, {{"duration_s", wall_s}, {"cpu_user_s", cpu_user_s}, {"cpu_system_s", cpu_system_s}}));
  return run.id;
}

Result<std::optional<Calibration>> NewestCalibration(const std::string& location,
                                                     const json& here) {
  if (!IsServerLocation(location) && !std::filesystem::exists(location)) {
    return std::optional<Calibration>();
  }
  StoreOptions options;
  options.read_only = true;
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(location, options));
  RunQuery query;
  query.status = RunStatus::kOk;
  query.text = kCalibrationRun;
  FP_ASSIGN_OR_RETURN(const RunPage page, store->ListRunsPage(query));
  for (const RunRecord& run : page.runs) {  // newest first
    if (run.name != kCalibrationRun) continue;
    FP_ASSIGN_OR_RETURN(const auto values, store->ListValues(run.id));
    for (const ValueRecord& v : values) {
      if (v.name != "calibration") continue;
      Result<json> record = ParseBoundedJson(v.data_json);
      // A record without every rate (edited, or of an older calibrate.py) is not used.
      if (!record.ok() || !record->is_object() || !CheckRates(RatesOf(*record)).ok()) continue;
      json machine = CalibrationMachine(*record);
      if (CompareMachines(machine, here).matches()) {
        return std::optional<Calibration>(Calibration{*record, run.id});
      }
    }
  }
  return std::optional<Calibration>();
}

}  // namespace footprint::predict
