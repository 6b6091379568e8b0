// The entry point of libfootprint-predict.so (predict/module.h): the graph's features, a
// prediction with the shipped (or a given) predictor, training and evaluation on a dataset.
#include "predict/module.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "footprint/mig.h"
#include "footprint/model_graph.h"
#include "predict/predictors.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

constexpr int kPredictorVersion = 1;

json GraphJson(const ModelGraph& g) {
  json unknown = json::object();
  for (const auto& [type, n] : g.unknown_ops) unknown[type] = n;
  return {{"name", g.name},
          {"sha256", g.sha256},
          {"batch", g.batch},
          {"operators", g.ops.size()},
          {"macs", g.macs},
          {"flops", g.flops},
          {"param_bytes", g.param_bytes},
          {"peak_activation_bytes", g.peak_activation_bytes},
          {"op_counts", g.op_counts},
          {"unknown_operators", unknown}};
}

// The shipped predictor: $FOOTPRINT_PREDICTOR, else the installed one, else the source tree's.
std::string DefaultPredictor() {
  if (const char* p = std::getenv("FOOTPRINT_PREDICTOR"); p && *p) return p;
  for (const std::string& path :
       {std::string(FOOTPRINT_INSTALLED_PREDICTOR), std::string(FOOTPRINT_SOURCE_PREDICTOR)}) {
    if (std::ifstream(path)) return path;
  }
  return FOOTPRINT_SOURCE_PREDICTOR;
}

Result<json> ReadJson(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return NotFound(what + " " + path + " cannot be read");
  json j = json::parse(in, nullptr, false);
  if (!j.is_object()) return InvalidArgument(what + " " + path + " is not JSON");
  return j;
}

json ErrorsJson(const Errors& e) {
  return {{"mean_family_mape_pct", e.mean_family_mape},
          {"worst_family_mape_pct", e.worst_family_mape},
          {"worst_family", e.worst_family},
          {"within_10pct", e.within_10pct},
          {"spearman", e.spearman},
          {"p80_relative_error", e.p80_relative_error},
          {"family_mape_pct", e.family_mape},
          {"rows", e.rows}};
}

std::vector<Row> Split(const std::vector<Row>& rows, const std::string& split) {
  std::vector<Row> out;
  for (const Row& r : rows) {
    if (r.split == split) out.push_back(r);
  }
  return out;
}

// Fits every latency predictor, keeps the one with the lowest mean held-out-family error, and
// the memory predictor; writes them with their errors to `out`.
Result<int> Train(const PredictOptions& o, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(auto all, ReadDataset(o.train));
  const std::vector<Row> rows = Split(all, "train");
  json baselines = json::object();
  std::string best;
  Errors best_errors;
  for (const char* kind : kLatencyPredictors) {
    FP_ASSIGN_OR_RETURN(Errors e, LeaveOneFamilyOut(kind, Target::kLatency, rows));
    baselines[kind] = ErrorsJson(e);
    if (best.empty() || e.mean_family_mape < best_errors.mean_family_mape) {
      best = kind;
      best_errors = e;
    }
  }
  FP_ASSIGN_OR_RETURN(auto latency, Fit(best, Target::kLatency, rows));
  FP_ASSIGN_OR_RETURN(auto memory, Fit("memory_linear", Target::kPeakMemory, rows));
  FP_ASSIGN_OR_RETURN(Errors memory_errors,
                      LeaveOneFamilyOut("memory_linear", Target::kPeakMemory, rows));
  std::set<std::string> families;
  for (const Row& r : rows) families.insert(r.family);
  const json file = {
      {"version", kPredictorVersion},
      {"device", "cpu"},
      {"training_set",
       {{"source", std::filesystem::path(o.train).filename().string()},
        {"rows", rows.size()},
        {"families", families}}},
      {"latency",
       {{"predictor", latency->ToJson()}, {"held_out_families", ErrorsJson(best_errors)}}},
      {"peak_memory",
       {{"predictor", memory->ToJson()}, {"held_out_families", ErrorsJson(memory_errors)}}},
      {"baselines", baselines}};
  const std::string path = o.out.empty() ? "predictor.json" : o.out;
  std::ofstream written(path);
  written << file.dump(1) << "\n";
  if (!written.flush()) return IoError("cannot write the predictor to " + path);
  out << "footprint predict: " << best << " on " << rows.size() << " rows of " << families.size()
      << " families: held-out-family latency MAPE " << best_errors.mean_family_mape << " % (worst "
      << best_errors.worst_family << " " << best_errors.worst_family_mape << " %), peak memory "
      << memory_errors.mean_family_mape << " %; written to " << path << "\n";
  return 0;
}

// Every predictor on the dataset: leave-one-family-out and a random split (apart), the
// held-out families against a fit on the training ones, and the noise floor.
Result<int> Evaluate(const PredictOptions& o, std::ostream& out) {
  FP_ASSIGN_OR_RETURN(auto all, ReadDataset(o.evaluate));
  const std::vector<Row> train = Split(all, "train"), outside = Split(all, "held-out");
  json report = json::object();
  std::vector<double> cvs;
  for (const Row& r : train) cvs.push_back(r.latency_cv);
  std::sort(cvs.begin(), cvs.end());
  report["noise_floor_latency_cv"] = cvs.empty() ? 0 : cvs[cvs.size() / 2];
  report["rows"] = {{"train", train.size()}, {"held_out", outside.size()}};
  auto evaluate = [&](const char* kind, Target target) -> Result<json> {
    FP_ASSIGN_OR_RETURN(Errors lofo, LeaveOneFamilyOut(kind, target, train));
    FP_ASSIGN_OR_RETURN(Errors random, RandomSplit(kind, target, train, 0.8, 1));
    json j = {{"leave_one_family_out", ErrorsJson(lofo)}, {"random_split", ErrorsJson(random)}};
    if (!outside.empty()) {
      FP_ASSIGN_OR_RETURN(auto fitted, Fit(kind, target, train));
      j["held_out_families"] = ErrorsJson(Score(*fitted, target, outside));
    }
    return j;
  };
  for (const char* kind : kLatencyPredictors) {
    FP_ASSIGN_OR_RETURN(report["latency"][kind], evaluate(kind, Target::kLatency));
  }
  FP_ASSIGN_OR_RETURN(report["peak_memory"]["memory_linear"],
                      evaluate("memory_linear", Target::kPeakMemory));
  out << report.dump(o.json ? -1 : 1) << "\n";
  return 0;
}

// The interval of a prediction: within the predictor's 80th-percentile relative error on
// held-out families.
json Interval(double value, double p80) {
  return {{"value", value},
          {"low", value / (1 + p80)},
          {"high", value * (1 + p80)},
          {"uncertainty", "80 % of held-out-family predictions were within " +
                              std::to_string(static_cast<int>(std::lround(p80 * 100))) + " %"}};
}

// The answer for people: the graph, then each prediction with its interval or why there is
// none.
void PrintAnswer(const ModelGraph& g, const json& a, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%zu operators, %.2f GMACs (%.2f GFLOPs), ", g.ops.size(),
                g.macs / 1e9, g.flops / 1e9);
  out << "footprint predict: " << Inert(g.name) << " (sha256 " << g.sha256.substr(0, 12)
      << "…) at batch " << g.batch << ": " << line << FormatBytes(g.param_bytes)
      << " of parameters, " << FormatBytes(g.peak_activation_bytes) << " of live activations at "
      << "most\n";
  for (const auto& [type, n] : g.unknown_ops) {
    out << "footprint predict: " << n << " operator(s) " << Inert(type)
        << " have no cost formula: counted as one operation per output element\n";
  }
  for (const json& assumption : a["assumptions"]) {
    out << "footprint predict: assumed: " << Inert(assumption.get<std::string>()) << "\n";
  }
  auto interval = [&](const char* what, const json& v, auto format) {
    out << "footprint predict: " << what << " ";
    if (!v.is_object()) {
      out << "not predicted\n";
      return;
    }
    out << format(v["value"].get<double>());
    if (v.contains("low")) {
      out << " (" << format(v["low"].get<double>()) << " to " << format(v["high"].get<double>())
          << ": " << v.value("uncertainty", std::string()) << ")";
    }
    out << "\n";
  };
  interval("latency", a["latency_s"], [](double s) { return FormatDuration(s); });
  if (a.contains("latency_reason"))
    out << "footprint predict:   " << a["latency_reason"].get<std::string>() << "\n";
  interval("peak memory", a["peak_memory_bytes"], [](double b) { return FormatBytes(b); });
  out << "footprint predict: energy not predicted: " << a.value("energy_reason", std::string())
      << "\n";
  if (a["mig_profile"].is_object()) {
    out << "footprint predict: MIG profile " << a["mig_profile"]["name"].get<std::string>()
        << " on " << a["device"].get<std::string>() << " ("
        << a["mig_profile"]["compute_slices"].get<int>() << " of 7 compute slices, with a "
        << a["mig_profile"]["margin"].get<double>() * 100 << " % margin)\n";
  }
  out << "footprint predict: predictor " << a["predictor"]["latency"].get<std::string>()
      << " (version " << a["predictor"]["version"].get<int>() << ", "
      << a["predictor"]["file"].get<std::string>() << ")\n";
}

Result<int> Predict(const PredictOptions& o, std::ostream& out) {
  const MigGpu* gpu = o.device == "cpu" ? nullptr : FindMigGpu(o.device);
  if (o.device != "cpu" && gpu == nullptr) {
    return InvalidArgument("--device " + o.device +
                           ": use cpu or a GPU with a MIG table (A100-40GB, A100-80GB, "
                           "H100-80GB, H200-141GB)");
  }
  FP_ASSIGN_OR_RETURN(ModelGraph g, AnalyzeOnnx(o.model, o.batch));
  const auto features = Features(g);
  if (o.features) {
    json j = GraphJson(g);
    j["features"] = features;
    j["assumptions"] = g.assumptions;
    out << j.dump(o.json ? -1 : 1) << "\n";
    return 0;
  }
  const std::string path = o.predictor.empty() ? DefaultPredictor() : o.predictor;
  FP_ASSIGN_OR_RETURN(json file, ReadJson(path, "the predictor"));
  // Each member read with a default: a file of another version or edited by hand is refused
  // by FromJson with one line, never by an exception.
  auto member = [](const json& j, const char* key) {
    const json m = j.is_object() ? j.value(key, json::object()) : json::object();
    return m.is_object() ? m : json::object();
  };
  const json latency_file = member(file, "latency"), memory_file = member(file, "peak_memory");
  FP_ASSIGN_OR_RETURN(auto latency, FromJson(member(latency_file, "predictor")));
  FP_ASSIGN_OR_RETURN(auto memory, FromJson(member(memory_file, "predictor")));
  const double latency_p80 =
      member(latency_file, "held_out_families").value("p80_relative_error", 0.0);
  const double memory_p80 =
      member(memory_file, "held_out_families").value("p80_relative_error", 0.0);
  json answer = {{"model", GraphJson(g)}, {"device", o.device}, {"assumptions", g.assumptions}};
  answer["predictor"] = {{"version", file.value("version", 0)},
                         {"file", path},
                         {"latency", latency->kind()},
                         {"training_set", member(file, "training_set")},
                         {"error_on_held_out_families", member(latency_file, "held_out_families")}};
  if (gpu == nullptr) {
    answer["latency_s"] = Interval(latency->Predict(features), latency_p80);
    answer["peak_memory_bytes"] = Interval(memory->Predict(features), memory_p80);
    answer["energy_j"] = nullptr;
    answer["energy_reason"] =
        "the predictor was trained where no CPU energy counter (RAPL) was "
        "readable";
    answer["mig_profile"] = nullptr;
  } else {
    // No GPU measurements yet: the GPU's memory is the weights and the peak of live
    // activations, said as an assumption; latency and energy are not predicted.
    const double gpu_bytes = g.param_bytes + g.peak_activation_bytes;
    answer["latency_s"] = nullptr;
    answer["latency_reason"] = "the predictor has no measurements on " + std::string(gpu->name);
    answer["peak_memory_bytes"] = {{"value", gpu_bytes}};
    answer["energy_j"] = nullptr;
    answer["energy_reason"] = "no energy measurements on " + std::string(gpu->name);
    answer["assumptions"].push_back(
        "GPU memory = weights + peak live activations; the "
        "framework's context and workspace are not included");
    const auto profile = SmallestFittingProfile(*gpu, gpu_bytes, o.margin);
    answer["mig_profile"] = profile ? json{{"name", profile->name},
                                           {"compute_slices", profile->compute_slices},
                                           {"memory_gib", gpu->profile_gib(*profile)},
                                           {"margin", o.margin}}
                                    : json(nullptr);
  }
  if (o.json) {
    out << answer.dump() << "\n";
    return 0;
  }
  PrintAnswer(g, answer, out);
  return 0;
}

}  // namespace
}  // namespace footprint::predict

extern "C" __attribute__((visibility("default"))) footprint::Result<int> footprint_predict_entry(
    const footprint::predict::PredictOptions& options, std::ostream& out) {
  using namespace footprint::predict;
  if (!options.train.empty()) return Train(options, out);
  if (!options.evaluate.empty()) return Evaluate(options, out);
  return Predict(options, out);
}
