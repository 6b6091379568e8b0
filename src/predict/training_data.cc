#include "predict/training_data.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "footprint/model_graph.h"
#include "footprint/report.h"
#include "footprint/store.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// Where a run's model was measured: the GPU's name on a GPU, empty on the CPU.
std::string DeviceName(const json& framework) {
  const json device = framework.value("device", json("cpu"));
  if (!device.is_string() || !device.get<std::string>().starts_with("cuda")) return "";
  const json name = framework.value("device_name", json("cuda"));
  return name.is_string() ? name.get<std::string>() : "cuda";
}

// The spread of the run's query latencies (standard deviation over mean).
double LatencySpread(const RunSummary& s) {
  double n = 0, sum = 0, squares = 0;
  for (const ValueRecord& v : s.values) {
    if (v.name != "load.latency" || !v.value) continue;
    n += 1;
    sum += *v.value;
    squares += *v.value * *v.value;
  }
  if (n < 2 || sum <= 0) return 0;
  const double mean = sum / n;
  return std::sqrt(std::max(0.0, squares / n - mean * mean)) / mean;
}

// The peak the row predicts: the tree's GPU memory on a GPU (what a MIG slice must hold), the
// run's peak memory otherwise.
double PeakMemory(const RunSummary& s, bool gpu) {
  if (!gpu) {
    auto it = s.totals.find("peak_memory_bytes");
    return it == s.totals.end() ? 0 : it->second;
  }
  double peak = 0;
  for (const MetricSummary& m : s.metrics) {
    if (m.metric == "gpu.memory.tree" && m.scope.empty() && m.count > 0) peak += m.max;
  }
  return peak;
}

// Why a run of an evaluation is left out; none when it became a row, or is no candidate.
using Reason = std::optional<std::string>;

class FromDatabase {
 public:
  explicit FromDatabase(Store& store) : store_(store) {}

  // Adds the row of one run to `out`, or says why the run is left out. Runs that are no
  // candidates (not an evaluation, or a server or offline scenario, whose latency is not one
  // forward pass's) are passed over without a reason.
  Result<Reason> Add(const RunRecord& run, TrainingData& out) {
    const json meta = json::parse(run.meta_json, nullptr, false);
    if (!meta.is_object() || !meta.contains("evaluation") || !meta.contains("load")) {
      return Reason();
    }
    const json &evaluation = meta["evaluation"], &load = meta["load"];
    const std::string scenario = load.value("scenario", "");
    if (scenario != "single" && scenario != "multi") return Reason();
    if (run.status != RunStatus::kOk) return Reason("the run did not end ok");
    const json model = evaluation.value("model", json::object());
    const json graph = model.value("graph", json());
    if (!graph.is_object() || !graph.value("file", json()).is_string()) {
      return Reason("its manifest names no model.graph (the model as ONNX)");
    }
    const std::string file = graph["file"].get<std::string>();
    const auto digest = DigestFile(file);
    if (!digest) return Reason("model.graph " + file + " cannot be read");
    if (graph.value("sha256", json()) != json(digest->sha256)) {
      return Reason("model.graph " + file + " changed since the run");
    }
    const double queries = load.value("queries", 0.0), samples = load.value("samples", 0.0);
    const json latency = load.value("latency_s", json::object());
    if (queries <= 0 || !latency.value("p50", json()).is_number()) {
      return Reason("no query was answered");
    }
    const auto batch = static_cast<int64_t>(std::llround(samples / queries));
    auto features = Features(file, batch);
    if (!features.ok()) return Reason(features.status().message());
    FP_ASSIGN_OR_RETURN(RunSummary s, SummarizeRun(store_, run));
    Row r;
    const std::string stem = std::filesystem::path(file).stem().string();
    r.model = model.value("torchvision", stem);
    r.family = model.value("family", r.model);
    r.split = "train";
    r.device = DeviceName(evaluation.value("framework", json::object()));
    r.features = *features;
    r.latency_s = latency["p50"].get<double>();
    r.latency_cv = LatencySpread(s);
    r.peak_memory_bytes = PeakMemory(s, !r.device.empty());
    for (const LoadEnergy& e : s.load_energy) {
      if (e.over_window && e.total == (r.device.empty() ? "cpu_energy_j" : "gpu_energy_j")) {
        r.energy_j = e.joules / queries;
      }
    }
    if (!(r.peak_memory_bytes > 0)) return Reason("no peak memory recorded");
    out.rows.push_back(std::move(r));
    return Reason();
  }

 private:
  // The graph's features at `batch`, each (file, batch) analyzed once.
  Result<std::map<std::string, double>> Features(const std::string& file, int64_t batch) {
    const auto key = std::make_pair(file, batch);
    if (auto it = features_.find(key); it != features_.end()) return it->second;
    FP_ASSIGN_OR_RETURN(ModelGraph g, AnalyzeOnnx(file, batch));
    return features_[key] = predict::Features(g);
  }

  Store& store_;
  std::map<std::pair<std::string, int64_t>, std::map<std::string, double>> features_;
};

}  // namespace

Result<TrainingData> ReadTrainingData(const std::string& source) {
  TrainingData out;
  if (Lower(source).ends_with(".csv")) {
    FP_ASSIGN_OR_RETURN(out.rows, ReadDataset(source));
    return out;
  }
  if (!IsServerLocation(source) && !std::filesystem::exists(source)) {
    return NotFound(source + ": no such dataset (DATA.csv) or footprint database");
  }
  StoreOptions options;
  options.read_only = true;
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(source, options));
  FP_ASSIGN_OR_RETURN(auto runs, store->ListRuns());
  FromDatabase reader(*store);
  for (const RunRecord& run : runs) {
    FP_ASSIGN_OR_RETURN(auto left_out, reader.Add(run, out));
    if (left_out) out.left_out.push_back(run.name + ": " + *left_out);
  }
  if (out.rows.empty()) {
    return InvalidArgument(
        RedactedLocation(source) + ": no run to learn from: footprint predict --train reads " +
        "`footprint evaluate` runs (single or multi scenario) whose manifest names the model " +
        "as ONNX (model.graph)" + (out.left_out.empty() ? "" : "; " + out.left_out.front()));
  }
  return out;
}

}  // namespace footprint::predict
