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

// The rates of a record, read once per graph.
struct Rates {
  // FLOP/s over M. conv: convolutions PyTorch runs through oneDNN, over the GEMM's rows (pixels
  // times images); conv_small (3x3) and conv_1x1: those it runs image by image through im2col
  // and the BLAS, over one image's pixels (UsesOneDnn); gemm: products with weights.
  Curve conv, conv_small, conv_1x1, gemm;
  // Bytes/s over the output's bytes: element-wise work, batch normalisation.
  Curve elementwise, batchnorm;
  double stream = 0, conv_stream = 0, dwconv = 0;    // bytes/s
  double attention = 0, softmax = 0, layernorm = 0;  // FLOP/s
  double maxpool = 0, avgpool = 0;                   // kernel elements/s
  double call = 0;                                   // s: one bare operator call
  int threads = 1;                                   // PyTorch's, as calibrated
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

Rates RatesOf(const json& record) {
  const json r = Object(record, "rates");
  return {CurveOf(Member(r, "conv"), "m", "flops_per_s"),
          CurveOf(Member(r, "conv_small"), "m", "flops_per_s"),
          CurveOf(Member(r, "conv_1x1"), "m", "flops_per_s"),
          CurveOf(Member(r, "gemm"), "m", "flops_per_s"),
          CurveOf(Member(r, "elementwise"), "bytes", "bytes_per_s"),
          CurveOf(Member(r, "batchnorm"), "bytes", "bytes_per_s"),
          Number(r, "weight_stream_bytes_per_s", 0),
          Number(r, "conv_weight_stream_bytes_per_s", 0),
          Number(r, "dwconv_bytes_per_s", 0),
          Number(r, "attention_flops_per_s", 0),
          Number(r, "softmax_flops_per_s", 0),
          Number(r, "layernorm_flops_per_s", 0),
          Number(r, "maxpool_flops_per_s", 0),
          Number(r, "avgpool_flops_per_s", 0),
          Number(r, "operator_overhead_s", 0),
          static_cast<int>(Number(record, "threads", 1))};
}

// The rate at `x`, linear in log x between the measured points, the nearest one beyond them.
double RateAt(const Curve& curve, double x) {
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  const auto hi = std::upper_bound(curve.begin(), curve.end(), std::make_pair(x, 0.0));
  const auto lo = hi - 1;
  const double share = std::log(x / lo->first) / std::log(hi->first / lo->first);
  return lo->second + share * (hi->second - lo->second);
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

// The seconds a dense convolution or product with weights computes at `r` (FLOPs at its
// kind's rate at its M, or its weights streamed, whichever is longer).
double DenseSeconds(const OperatorCost& op, int64_t batch, const Rates& r) {
  const double m = std::max(1.0, op.macs / (op.param_bytes / 4));  // float32 weights
  if (KindOf(op.type) != "conv") {
    return std::max(op.flops / RateAt(r.gemm, m), op.param_bytes / r.stream);
  }
  const double rate =
      UsesOneDnn(op, batch, r.threads)
          ? RateAt(r.conv, m)
          : RateAt(Pointwise(op) ? r.conv_1x1 : r.conv_small, std::max(1.0, m / batch));
  return std::max(op.flops / rate, op.param_bytes / r.conv_stream);
}

// A recurrent operator as PyTorch runs it on a CPU: the input's projections of every step in
// one product (M: sequence x batch), then step after step the recurrent product (M: the batch)
// and the cell's element-wise operations, each a call of its own from C++ at a bare call's
// cost (an LSTM cell makes 11: the product, the sum, 3 sigmoids, 2 tanh, 3 products and a
// sum; a GRU's, counted alike, 12; a plain RNN's 3). Costed as one product, a 2-layer LSTM over 64
// steps was predicted at 12 ms here and took 51 (batch 1, Prescott's kernels).
double RecurrentSeconds(const OperatorCost& op, int64_t batch, const Rates& r) {
  const double cell_calls = op.type == "LSTM" ? 11 : op.type == "GRU" ? 12 : 3;
  const double step_macs = static_cast<double>(batch) * op.step_param_bytes / 4;  // float32
  const double input_macs = std::max(0.0, op.macs - op.sequential_steps * step_macs);
  // Not streamed from memory: read at every step, the recurrent weights stay in the caches
  // (a 512-wide LSTM's 4 MiB at 64 MiB's streaming rate made the model twice its time).
  const double step_s = 2 * step_macs / RateAt(r.gemm, static_cast<double>(batch));
  return 2 * input_macs / RateAt(r.gemm, op.sequential_steps * batch) +
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
    if (op.param_bytes <= 0 || op.macs <= 0) return op.flops / r.attention;
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

// Seconds of compute and calls of `g`, before the overhead per call.
std::pair<double, double> Terms(const ModelGraph& g, const Rates& r) {
  double seconds = 0, calls = 0;
  for (const OperatorCost& op : g.ops) {
    seconds += OperatorSeconds(op, g.batch, r);
    calls += (IsCall(op) ? 1 : 0) + (op.folded_norm ? 1 : 0);
  }
  return {seconds, calls};
}

Status CheckRates(const Rates& r) {
  for (double rate : {r.stream, r.conv_stream, r.dwconv, r.attention, r.softmax, r.layernorm,
                      r.maxpool, r.avgpool}) {
    if (!(rate > 0)) return InvalidArgument("the calibration lacks a rate or holds one <= 0");
  }
  for (const Curve* curve :
       {&r.conv, &r.conv_small, &r.conv_1x1, &r.gemm, &r.elementwise, &r.batchnorm}) {
    if (curve->empty()) return InvalidArgument("the calibration lacks a curve of rates");
  }
  return Status::Ok();
}

// A reference model measured during the calibration, with its graph's terms.
struct Reference {
  std::string model;
  double measured_s = 0, compute_s = 0, calls = 0;
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
  const auto [seconds, calls] = Terms(g, RatesOf(record));
  return seconds + calls * Number(record, "overhead_s", 0);
}

Status FitCalibration(json& record) {
  const Rates rates = RatesOf(record);
  FP_RETURN_IF_ERROR(CheckRates(rates));
  std::vector<Reference> refs;
  for (const json& ref : Member(record, "references")) {
    const std::string onnx = Text(ref, "onnx", "");
    FP_ASSIGN_OR_RETURN(const ModelGraph g,
                        AnalyzeOnnx(onnx, static_cast<int64_t>(Number(ref, "batch", 1))));
    const auto [seconds, calls] = Terms(g, rates);
    refs.push_back({Text(ref, "model", onnx), Number(ref, "latency_s", 0), seconds, calls});
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
    errors.push_back({{"model", r.model},
                      {"batch", Number(Member(record, "references")[i], "batch", 1)},
                      {"measured_s", r.measured_s},
                      {"predicted_s", predicted},
                      {"relative_error", error}});
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
