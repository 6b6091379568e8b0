#include "predict/predictors.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <random>
#include <set>

#include "experiment/plan.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

const char* const kKinds[] = {"conv",        "dwconv", "gemm",     "norm",
                              "elementwise", "pool",   "movement", "other"};

double TargetOf(const Row& r, Target t) {
  switch (t) {
    case Target::kLatency:
      return r.latency_s;
    case Target::kPeakMemory:
      return r.peak_memory_bytes;
    case Target::kEnergy:
      return r.energy_j;
  }
  return 0;
}

// The feature `name`, or the sum of the features a '+' joins ("flops.conv+flops.gemm"); 0 for
// one the row lacks.
double At(const std::map<std::string, double>& f, const std::string& name) {
  double sum = 0;
  for (size_t from = 0; from <= name.size();) {
    const size_t plus = std::min(name.find('+', from), name.size());
    auto it = f.find(name.substr(from, plus - from));
    if (it != f.end()) sum += it->second;
    from = plus + 1;
  }
  return sum;
}

// Least squares of the relative error with every coefficient >= 0 (an active set: the most
// negative one is dropped and the rest refitted): minimises sum((x . b / y - 1)^2), the rows
// divided by their target. Columns are scaled to their largest value first, so that FLOPs
// (1e9) and a constant (1) solve together.
std::vector<double> NonNegativeRelativeFit(const std::vector<std::vector<double>>& x,
                                           const std::vector<double>& y) {
  const size_t k = x.empty() ? 0 : x[0].size();
  std::vector<std::vector<double>> z = x;
  std::vector<double> scale(k, 0);
  for (size_t i = 0; i < z.size(); ++i) {
    for (size_t j = 0; j < k; ++j) {
      z[i][j] /= y[i];
      scale[j] = std::max(scale[j], std::abs(z[i][j]));
    }
  }
  std::vector<bool> active(k);
  for (size_t j = 0; j < k; ++j) active[j] = scale[j] > 0;
  std::vector<double> beta(k, 0);
  for (size_t round = 0; round <= k; ++round) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < k; ++j) {
      if (active[j]) cols.push_back(j);
    }
    const size_t m = cols.size();
    std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0));
    for (const auto& row : z) {
      for (size_t p = 0; p < m; ++p) {
        const double zp = row[cols[p]] / scale[cols[p]];
        for (size_t q = 0; q < m; ++q) a[p][q] += zp * row[cols[q]] / scale[cols[q]];
        a[p][m] += zp;
      }
    }
    for (size_t p = 0; p < m; ++p) a[p][p] += 1e-9;  // a little ridge: collinear kinds
    for (size_t p = 0; p < m; ++p) {                 // Gauss-Jordan with partial pivoting
      size_t pivot = p;
      for (size_t r = p + 1; r < m; ++r) {
        if (std::abs(a[r][p]) > std::abs(a[pivot][p])) pivot = r;
      }
      std::swap(a[p], a[pivot]);
      for (size_t r = 0; r < m; ++r) {
        if (r == p || a[p][p] == 0) continue;
        const double f = a[r][p] / a[p][p];
        for (size_t c = p; c <= m; ++c) a[r][c] -= f * a[p][c];
      }
    }
    std::fill(beta.begin(), beta.end(), 0);
    size_t most_negative = k;
    for (size_t p = 0; p < m; ++p) {
      beta[cols[p]] = a[p][p] == 0 ? 0 : a[p][m] / a[p][p] / scale[cols[p]];
      if (beta[cols[p]] < 0 && (most_negative == k || beta[cols[p]] < beta[most_negative])) {
        most_negative = cols[p];
      }
    }
    if (most_negative == k) break;
    active[most_negative] = false;
  }
  return beta;
}

// A linear model over named terms ("1" is the constant).
class Linear final : public Predictor {
 public:
  Linear(std::string kind, std::vector<std::string> terms, std::vector<double> coefficients)
      : kind_(std::move(kind)), terms_(std::move(terms)), coefficients_(std::move(coefficients)) {}
  std::string kind() const override { return kind_; }
  double Predict(const std::map<std::string, double>& f) const override {
    double sum = 0;
    for (size_t j = 0; j < terms_.size(); ++j) {
      sum += coefficients_[j] * (terms_[j] == "1" ? 1.0 : At(f, terms_[j]));
    }
    return sum;
  }
  json ToJson() const override {
    return {{"kind", kind_}, {"terms", terms_}, {"coefficients", coefficients_}};
  }
  static std::unique_ptr<Predictor> Fit(std::string kind, std::vector<std::string> terms,
                                        Target target, const std::vector<Row>& rows) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const Row& r : rows) {
      std::vector<double> v;
      for (const std::string& t : terms) v.push_back(t == "1" ? 1.0 : At(r.features, t));
      x.push_back(std::move(v));
      y.push_back(TargetOf(r, target));
    }
    return std::make_unique<Linear>(std::move(kind), std::move(terms),
                                    NonNegativeRelativeFit(x, y));
  }

 private:
  std::string kind_;
  std::vector<std::string> terms_;
  std::vector<double> coefficients_;
};

// The terms of `kind` for `target` on rows measured on a CPU (`cpu`) or a GPU.
std::vector<std::string> TermsOf(std::string_view kind, Target target, bool cpu) {
  if (target == Target::kPeakMemory) return {"1", "param_bytes", "peak_activation_bytes"};
  if (kind == "flops_linear") return {"1", "flops"};
  // Dense convolutions and matrix products run on the same GEMM kernels, so they share a rate:
  // fitted apart, the rate of matrix products came from classifiers alone (memory-bound at
  // batch 1) and ConvNeXt's pointwise layers, held out, were predicted 13x too slow. A depthwise
  // convolution does a few MACs per byte: its time is its bytes. Weights are streamed from
  // memory, once per query and a recurrent cell's at every step, at a rate of their own: at
  // batch 1 a cell's step is a matrix-vector product, bound by its weights' bytes, and an LSTM
  // of 64 steps, costed by its FLOPs, was predicted 2-6x too fast. On a GPU the weights come
  // from memory of terabytes per second and the launches set the time: there the term took
  // VGG's time from its weights, and VGG left out was 150 % off (44 % without it).
  std::vector<std::string> terms = {"1",
                                    "bytes",
                                    "flops.conv+flops.gemm",
                                    "bytes.dwconv",
                                    "flops.norm",
                                    "flops.elementwise",
                                    "flops.pool",
                                    "flops.other",
                                    "operators"};  // a launch cost per operator
  if (cpu) terms.push_back("param_bytes+recurrent_weight_bytes");
  return terms;
}

// Gradient-boosted trees (xgboost's C API) on log(target) over log1p of the features.
class Trees final : public Predictor {
 public:
  Trees(std::vector<std::string> names, BoosterHandle booster)
      : names_(std::move(names)), booster_(booster) {}
  ~Trees() override { XGBoosterFree(booster_); }
  std::string kind() const override { return "trees"; }
  double Predict(const std::map<std::string, double>& f) const override {
    const std::vector<float> x = Vector(names_, f);
    DMatrixHandle m = nullptr;
    if (XGDMatrixCreateFromMat(x.data(), 1, x.size(), NAN, &m) != 0) return NAN;
    bst_ulong n = 0;
    const float* out = nullptr;
    const bool ok = XGBoosterPredict(booster_, m, 0, 0, 0, &n, &out) == 0 && n == 1;
    const double y = ok ? std::exp(static_cast<double>(out[0])) : NAN;
    XGDMatrixFree(m);
    return y;
  }
  json ToJson() const override {
    bst_ulong len = 0;
    const char* buf = nullptr;
    if (XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &len, &buf) != 0) {
      return {{"kind", "trees"}, {"error", XGBGetLastError()}};  // FromJson refuses it
    }
    return {{"kind", "trees"}, {"features", names_}, {"xgboost", std::string(buf, len)}};
  }
  static std::vector<float> Vector(const std::vector<std::string>& names,
                                   const std::map<std::string, double>& f) {
    std::vector<float> x;
    for (const std::string& n : names) x.push_back(static_cast<float>(std::log1p(At(f, n))));
    return x;
  }
  static Result<std::unique_ptr<Predictor>> Fit(Target target, const std::vector<Row>& rows) {
    std::vector<std::string> names = {"flops",
                                      "macs",
                                      "bytes",
                                      "param_bytes",
                                      "input_bytes",
                                      "activation_bytes",
                                      "peak_activation_bytes",
                                      "operators"};
    for (const char* k : kKinds) {
      names.push_back(std::string("flops.") + k);
      names.push_back(std::string("count.") + k);
    }
    std::vector<float> x, y;
    for (const Row& r : rows) {
      const auto v = Vector(names, r.features);
      x.insert(x.end(), v.begin(), v.end());
      y.push_back(static_cast<float>(std::log(TargetOf(r, target))));
    }
    DMatrixHandle m = nullptr;
    BoosterHandle booster = nullptr;
    bool ok = XGDMatrixCreateFromMat(x.data(), rows.size(), names.size(), NAN, &m) == 0 &&
              XGDMatrixSetFloatInfo(m, "label", y.data(), y.size()) == 0 &&
              XGBoosterCreate(&m, 1, &booster) == 0;
    for (const auto& [k, v] : {std::pair{"max_depth", "3"},
                               {"eta", "0.1"},
                               {"nthread", "1"},
                               {"seed", "0"},
                               {"min_child_weight", "1"},
                               {"lambda", "1"}}) {
      ok = ok && XGBoosterSetParam(booster, k, v) == 0;
    }
    for (int i = 0; ok && i < 300; ++i) ok = XGBoosterUpdateOneIter(booster, i, m) == 0;
    const std::string error = ok ? "" : XGBGetLastError();
    if (m != nullptr) XGDMatrixFree(m);
    if (!ok) {
      if (booster != nullptr) XGBoosterFree(booster);
      return InternalError("xgboost could not fit the trees: " + error);
    }
    return std::unique_ptr<Predictor>(new Trees(std::move(names), booster));
  }
  static Result<std::unique_ptr<Predictor>> Load(const json& j) {
    BoosterHandle booster = nullptr;
    if (XGBoosterCreate(nullptr, 0, &booster) != 0) {
      return InternalError(std::string("xgboost: ") + XGBGetLastError());
    }
    const std::string model = j.value("xgboost", std::string());
    if (XGBoosterLoadModelFromBuffer(booster, model.data(), model.size()) != 0) {
      XGBoosterFree(booster);
      return InvalidArgument(std::string("the trees cannot be read: ") + XGBGetLastError());
    }
    return std::unique_ptr<Predictor>(
        new Trees(j.value("features", std::vector<std::string>{}), booster));
  }

 private:
  std::vector<std::string> names_;
  BoosterHandle booster_;
};

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<double>(i);
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double d2 = 0;
  for (size_t i = 0; i < ra.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return n < 2 ? 0 : 1 - 6 * d2 / (n * (n * n - 1));
}

// Errors of predictions of rows a fit did not see.
Errors Summarize(const std::vector<LeftOutPrediction>& results) {
  Errors e;
  std::map<std::string, std::pair<double, int>> by_family;
  std::vector<double> predicted, measured;
  for (const LeftOutPrediction& r : results) {
    const double ape = std::abs(r.predicted - r.measured) / r.measured;
    by_family[r.family].first += ape;
    ++by_family[r.family].second;
    predicted.push_back(r.predicted);
    measured.push_back(r.measured);
    e.within_10pct += ape <= 0.10 ? 1 : 0;
  }
  e.rows = results.size();
  if (e.rows == 0) return e;
  e.within_10pct /= static_cast<double>(e.rows);
  for (const auto& [family, sum] : by_family) {
    const double mape = 100 * sum.first / sum.second;
    e.family_mape[family] = mape;
    e.mean_family_mape += mape / static_cast<double>(by_family.size());
    if (mape >= e.worst_family_mape) {
      e.worst_family_mape = mape;
      e.worst_family = family;
    }
  }
  e.p80_relative_error = FamilyBandError(results);
  e.spearman = Spearman(predicted, measured);
  return e;
}

// The types KindOf groups as "elementwise": activations, arithmetic, comparisons and logic,
// and the few (Softmax, Resize, Upsample) whose work is likewise a few FLOPs per element.
bool IsElementwiseOp(std::string_view t) {
  static const std::set<std::string_view> kElementwise = {"Relu",
                                                          "Sigmoid",
                                                          "Tanh",
                                                          "Clip",
                                                          "HardSigmoid",
                                                          "HardSwish",
                                                          "LeakyRelu",
                                                          "Elu",
                                                          "Selu",
                                                          "PRelu",
                                                          "Gelu",
                                                          "Erf",
                                                          "Exp",
                                                          "Log",
                                                          "Sqrt",
                                                          "Neg",
                                                          "Abs",
                                                          "Reciprocal",
                                                          "Floor",
                                                          "Ceil",
                                                          "Add",
                                                          "Sub",
                                                          "Mul",
                                                          "Div",
                                                          "Pow",
                                                          "Max",
                                                          "Min",
                                                          "Sum",
                                                          "Mean",
                                                          "Equal",
                                                          "Less",
                                                          "Greater",
                                                          "Not",
                                                          "And",
                                                          "Or",
                                                          "Softplus",
                                                          "Mish",
                                                          "Round",
                                                          "Sign",
                                                          "Softmax",
                                                          "LogSoftmax",
                                                          "Resize",
                                                          "Upsample",
                                                          "Mod",
                                                          "Xor",
                                                          "LessOrEqual",
                                                          "GreaterOrEqual",
                                                          "FastGelu",
                                                          "BiasGelu"};
  return kElementwise.count(t) > 0;
}

// The types KindOf groups as "movement": they reshape, copy, select or describe data.
bool IsMovementOp(std::string_view t) {
  static const std::set<std::string_view> kMovement = {
      "Reshape", "Flatten",        "Transpose", "Concat",       "Split",        "Slice",
      "Gather",  "Squeeze",        "Unsqueeze", "Identity",     "Shape",        "Constant",
      "Pad",     "Dropout",        "Cast",      "Expand",       "Tile",         "ConstantOfShape",
      "Size",    "GatherElements", "ScatterND", "DepthToSpace", "SpaceToDepth", "Range",
      "NonZero", "Where"};
  return kMovement.count(t) > 0;
}

// The index of the column `name` in `header`, or header.size() where there is none.
size_t DatasetColumn(const std::vector<std::string>& header, const std::string& name) {
  return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
}

// Stores the number in the dataset column `column` in the field of `r` it names; a column Row
// has no field for is a feature.
void SetDatasetNumber(const std::string& column, double v, Row& r) {
  if (column == "latency_s") {
    r.latency_s = v;
  } else if (column == "peak_memory_bytes") {
    r.peak_memory_bytes = v;
  } else if (column == "latency_cv") {
    r.latency_cv = v;
  } else if (column == "energy_j") {
    r.energy_j = v;
  } else if (column == "threads") {
    r.threads = static_cast<int>(v);
  } else if (column == "cores") {
    r.machine.cores = static_cast<int>(v);
  } else if (column == "blas_threads") {
    r.machine.blas_threads = static_cast<int>(v);
  } else {
    r.features[column] = v;
  }
}

// The Row of one dataset line: its text columns by name, every numeric one through
// SetDatasetNumber; a column the line lacks is empty (or 0).
Row DatasetRow(const std::vector<std::string>& header,
               const std::vector<experiment::CsvField>& fields) {
  auto text_at = [&](const std::string& name) {
    const size_t c = DatasetColumn(header, name);
    return c < fields.size() ? fields[c].value : std::string();
  };
  Row r;
  r.family = text_at("family");
  r.model = text_at("model");
  r.split = text_at("split");
  r.device = text_at("device");
  r.machine.cpu_model = text_at("cpu_model");
  r.machine.isa = text_at("isa");
  r.machine.blas_library = text_at("blas");
  r.machine.blas_kernel = text_at("blas_kernel");
  for (size_t c = 0; c < header.size() && c < fields.size(); ++c) {
    auto v = ParseDouble(fields[c].value);
    if (v) SetDatasetNumber(header[c], *v, r);  // names and paths are not numbers
  }
  return r;
}

}  // namespace

std::string_view KindOf(std::string_view t) {
  if (t == "Conv" || t == "ConvTranspose") return "conv";
  // Einsum contracts as a matrix product does; a recurrent cell's work is its matrix products.
  if (t == "Gemm" || t == "MatMul" || t == "MatMulInteger" || t == "Einsum" || t == "LSTM" ||
      t == "GRU" || t == "RNN") {
    return "gemm";
  }
  if (t.ends_with("Normalization")) return "norm";
  if (t.ends_with("Pool") || t.starts_with("Global") || t.starts_with("Reduce")) return "pool";
  if (IsElementwiseOp(t)) return "elementwise";
  if (IsMovementOp(t)) return "movement";
  return "other";
}

std::map<std::string, double> Features(const ModelGraph& g) {
  std::map<std::string, double> f = {{"macs", g.macs},
                                     {"flops", g.flops},
                                     {"bytes", g.bytes},
                                     {"param_bytes", g.param_bytes},
                                     {"input_bytes", g.input_bytes},
                                     {"activation_bytes", g.activation_bytes},
                                     {"peak_activation_bytes", g.peak_activation_bytes},
                                     {"operators", static_cast<double>(g.ops.size())},
                                     {"recurrent_weight_bytes", 0}};
  for (const char* k : kKinds) {
    f[std::string("flops.") + k] = 0;
    f[std::string("bytes.") + k] = 0;
    f[std::string("count.") + k] = 0;
  }
  for (const OperatorCost& op : g.ops) {
    const std::string kind(op.depthwise ? "dwconv" : KindOf(op.type));
    f["flops." + kind] += op.flops;
    f["bytes." + kind] += op.bytes_read + op.bytes_written;
    f["count." + kind] += 1;
    f["recurrent_weight_bytes"] += op.sequential_steps * op.step_param_bytes;
  }
  return f;
}

Result<std::vector<Row>> ReadDataset(const std::string& path) {
  // A row per model, resolution and batch measured: the shipped ones weigh 40 KB.
  constexpr size_t kMaxDatasetBytes = size_t{256} << 20;
  FP_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path, kMaxDatasetBytes, "the dataset"));
  FP_ASSIGN_OR_RETURN(auto records, experiment::TokenizeCsv(text));
  if (records.empty()) return InvalidArgument(path + ": no header");
  std::vector<std::string> header;
  for (const auto& field : records[0].fields) header.push_back(field.value);
  for (const char* needed :
       {"family", "model", "split", "latency_s", "peak_memory_bytes", "flops"}) {
    if (DatasetColumn(header, needed) == header.size()) {
      return InvalidArgument(path + ": no column '" + needed + "' (scripts/predict-dataset)");
    }
  }
  std::vector<Row> rows;
  for (size_t i = 1; i < records.size(); ++i) {
    Row r = DatasetRow(header, records[i].fields);
    if (!(r.latency_s > 0) || !(r.peak_memory_bytes > 0)) {
      return InvalidArgument(path + ": line " + std::to_string(records[i].line) +
                             ": latency_s and peak_memory_bytes must be positive numbers");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<Row> MeasuredRows(const std::vector<Row>& rows, Target target) {
  std::vector<Row> measured;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(measured),
               [&](const Row& r) { return TargetOf(r, target) > 0; });
  return measured;
}

Result<std::unique_ptr<Predictor>> Fit(std::string_view kind, Target target,
                                       const std::vector<Row>& rows) {
  if (rows.size() < kFewestRows) {
    return InvalidArgument("too few rows to fit a predictor (at least " +
                           std::to_string(kFewestRows) + ")");
  }
  if (target == Target::kPeakMemory || kind == "memory_linear") {
    return Linear::Fit("memory_linear", TermsOf(kind, Target::kPeakMemory, true), target, rows);
  }
  if (kind == "flops_linear" || kind == "roofline") {
    const bool cpu = rows.front().device.empty();
    return Linear::Fit(std::string(kind), TermsOf(kind, target, cpu), target, rows);
  }
  if (kind == "trees") return Trees::Fit(target, rows);
  return InvalidArgument("unknown predictor '" + std::string(kind) +
                         "' (flops_linear, roofline, trees)");
}

Result<std::unique_ptr<Predictor>> FromJson(const json& j) {
  const std::string kind = j.value("kind", std::string());
  if (kind == "trees") return Trees::Load(j);
  if (kind == "flops_linear" || kind == "roofline" || kind == "memory_linear") {
    const json terms = j.value("terms", json::array());
    const json coefficients = j.value("coefficients", json::array());
    auto all = [](const json& a, bool (json::*is)() const noexcept) {
      return a.is_array() &&
             std::all_of(a.begin(), a.end(), [&](const json& v) { return (v.*is)(); });
    };
    if (!all(terms, &json::is_string) || !all(coefficients, &json::is_number) || terms.empty() ||
        terms.size() != coefficients.size()) {
      return InvalidArgument("the " + kind + " predictor's terms and coefficients do not match");
    }
    return std::unique_ptr<Predictor>(new Linear(kind, terms.get<std::vector<std::string>>(),
                                                 coefficients.get<std::vector<double>>()));
  }
  return InvalidArgument("unknown predictor kind '" + kind + "'");
}

Errors Score(const Predictor& p, Target target, const std::vector<Row>& rows) {
  return ErrorsOf(PredictRows(p, target, rows, {}));
}

Result<std::vector<LeftOutPrediction>> PredictLeftOut(std::string_view kind, Target target,
                                                      const std::vector<Row>& rows) {
  std::set<std::string> families;
  for (const Row& r : rows) families.insert(r.family);
  std::vector<LeftOutPrediction> predictions;
  for (const std::string& family : families) {
    std::vector<Row> train, test;
    for (const Row& r : rows) (r.family == family ? test : train).push_back(r);
    FP_ASSIGN_OR_RETURN(auto p, Fit(kind, target, train));
    const std::vector<LeftOutPrediction> predicted = PredictRows(*p, target, test, MixesOf(train));
    predictions.insert(predictions.end(), predicted.begin(), predicted.end());
  }
  return predictions;
}

std::vector<Mix> MixesOf(const std::vector<Row>& rows) {
  std::vector<Mix> mixes;
  for (const Row& r : rows) mixes.push_back(MixOf(r.features));
  return mixes;
}

std::vector<LeftOutPrediction> PredictRows(const Predictor& p, Target target,
                                           const std::vector<Row>& rows,
                                           const std::vector<Mix>& training) {
  std::vector<LeftOutPrediction> predictions;
  for (const Row& r : rows) {
    predictions.push_back({r.family, p.Predict(r.features), TargetOf(r, target),
                           Novelty(MixOf(r.features), training)});
  }
  return predictions;
}

Result<Errors> LeaveOneFamilyOut(std::string_view kind, Target target,
                                 const std::vector<Row>& rows) {
  FP_ASSIGN_OR_RETURN(const std::vector<LeftOutPrediction> predictions,
                      PredictLeftOut(kind, target, rows));
  return ErrorsOf(predictions);
}

Errors ErrorsOf(const std::vector<LeftOutPrediction>& predictions) {
  return Summarize(predictions);
}

Result<Errors> RandomSplit(std::string_view kind, Target target, const std::vector<Row>& rows,
                           double train_share, uint64_t seed) {
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t cut = static_cast<size_t>(train_share * static_cast<double>(rows.size()));
  std::vector<Row> train, test;
  for (size_t i = 0; i < order.size(); ++i) (i < cut ? train : test).push_back(rows[order[i]]);
  FP_ASSIGN_OR_RETURN(auto p, Fit(kind, target, train));
  return Score(*p, target, test);
}

}  // namespace footprint::predict
