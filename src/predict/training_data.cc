#include "predict/training_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "footprint/model_graph.h"
#include "footprint/report.h"
#include "footprint/stats.h"
#include "footprint/store.h"
#include "predict/json_members.h"
#include "util/file.h"
#include "util/json_bounded.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint::predict {
namespace {

using json = nlohmann::json;

// Where a run's model was measured: the GPU's name on a GPU, empty on the CPU.
std::string DeviceName(const json& framework) {
  if (!Text(framework, "device", "cpu").starts_with("cuda")) return "";
  return Text(framework, "device_name", "cuda");
}

// The CPU machine the agent recorded in its framework record (footprint.agent's describe).
RowMachine MachineOf(const json& framework) {
  RowMachine m;
  m.cpu_model = Text(framework, "device_name", "");
  for (const json& flag : Member(framework, "isa")) {
    if (flag.is_string()) m.isa += (m.isa.empty() ? "" : " ") + flag.get<std::string>();
  }
  m.cores = static_cast<int>(Number(framework, "cores", 0));
  m.blas_library = Text(framework, "blas_library", "");
  m.blas_kernel = Text(framework, "blas_kernel", "");
  m.blas_threads = static_cast<int>(Number(framework, "blas_threads", 0));
  return m;
}

// The spread of the run's query latencies (standard deviation over mean).
double LatencySpread(const RunSummary& s) {
  std::vector<double> latencies;
  for (const ValueRecord& v : s.values) {
    if (v.name == "load.latency" && v.value) latencies.push_back(*v.value);
  }
  const Description d = Describe(latencies);
  return d.sd && d.mean > 0 ? *d.sd / d.mean : 0;
}

// The peak the row predicts: the tree's GPU memory on a GPU (what a MIG slice must hold), the
// run's peak memory otherwise.
double PeakMemory(const RunSummary& s, bool gpu) {
  if (!gpu) {
    auto it = s.totals.find("peak_memory_bytes");
    return it == s.totals.end() ? 0 : it->second;
  }
  double peak = 0;  // of the GPUs, the one that held the most (a MIG slice is one GPU's)
  for (const MetricSummary& m : s.metrics) {
    if (m.metric == "gpu.memory.tree" && m.scope.empty() && m.count > 0) {
      peak = std::max(peak, m.max);
    }
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
    const json meta = ParseStoredJson(run.meta_json);
    const json evaluation = Member(meta, "evaluation"), load = Member(meta, "load");
    if (!evaluation.is_object() || !load.is_object()) return Reason();
    const std::string scenario = Text(load, "scenario", "");
    if (scenario != "single" && scenario != "multi") return Reason();
    if (run.status != RunStatus::kOk) return Reason("the run did not end ok");
    const json model = Member(evaluation, "model"), graph = Member(model, "graph");
    const std::string file = Text(graph, "file", "");
    if (file.empty()) return Reason("its manifest names no model.graph (the model as ONNX)");
    // A FIFO named there would block the digest's read.
    if (Status st = CheckRegularFile(file, "model.graph"); !st.ok()) return Reason(st.message());
    const auto digest = DigestFile(file);
    if (!digest) return Reason("model.graph " + file + " cannot be read");
    if (Text(graph, "sha256", "") != digest->sha256) {
      return Reason("model.graph " + file + " changed since the run");
    }
    const double queries = Number(load, "queries", 0), samples = Number(load, "samples", 0);
    const double p50 = Number(Member(load, "latency_s"), "p50", 0);
    if (!(queries > 0) || !(samples > 0) || !(p50 > 0)) {
      return Reason("no query was answered");
    }
    const auto batch = static_cast<int64_t>(std::llround(samples / queries));
    auto features = Features(file, batch);
    if (!features.ok()) return Reason(features.status().message());
    FP_ASSIGN_OR_RETURN(RunSummary s, SummarizeRun(store_, run));
    Row r;
    const std::string stem = std::filesystem::path(file).stem().string();
    r.model = Text(model, "torchvision", stem);
    r.family = Text(model, "family", r.model);
    r.split = "train";  // a database has no held-out families: every run is a row to learn from
    r.device = DeviceName(Member(evaluation, "framework"));
    r.threads = static_cast<int>(Number(Member(evaluation, "framework"), "threads", 0));
    if (r.device.empty()) r.machine = MachineOf(Member(evaluation, "framework"));
    r.features = *features;
    r.latency_s = p50;
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
  if (!IsServerLocation(source)) {
    FP_RETURN_IF_ERROR(CheckRegularFile(source, "the dataset (DATA.csv) or footprint database"));
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
