// `footprint evaluate MANIFEST.yaml`: MLModelScope's manifests in footprint's terms. A manifest
// pins a model (a torchvision builder with its arguments, or a TorchScript file with its
// sha256), the framework and its version constraint, the inputs (synthetic shapes or a folder
// of images) with their pre- and post-processing, the batch sizes, the load scenarios and the
// trace levels. Each (scenario, batch size, rate) becomes one `footprint load` run of the
// PyTorch agent (python3 -m footprint.agent), stored with everything needed to reproduce it.
// The format: docs/evaluation.md.
//
// Thread-safety: pure functions, except LoadManifest and CheckModelFile, which read files.
#ifndef FOOTPRINT_EVALUATE_H_
#define FOOTPRINT_EVALUATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/load.h"
#include "footprint/status.h"

namespace footprint {

// One scenario of a manifest, with its rates (server: one run per rate).
struct ManifestScenario {
  LoadOptions load;
  std::vector<std::string> qps;        // as written, e.g. {"10", "20"}; empty unless server
  bool samples_per_query_set = false;  // multi: else each batch size is the samples per query
  std::vector<int> batch_sizes;        // this scenario's own; empty: the manifest's
};

struct EvaluationManifest {
  std::string path;           // as given
  std::string sha256;         // of the file's bytes
  std::string manifest_json;  // the manifest as JSON, stored with every run
  std::string name;           // runs are NAME-SCENARIO-bBATCH[-qRATE]
  // The model: a torchvision builder with its keyword arguments (JSON object), or a file.
  std::string torchvision, model_args_json = "{}";
  std::string model_file;    // absolute
  std::string model_sha256;  // the file's pinned checksum (required with a file)
  // The same model as ONNX (absolute; optional), and its family: footprint predict --train DB
  // fits its predictors on the runs whose manifest names them.
  std::string graph_file, family;
  // The framework: its agent runs under `python` (empty: the caller's default).
  std::string framework = "pytorch", version_constraint, device = "cpu", python;
  int threads = 0;  // 0: the framework's choice
  // Inputs: synthetic tensors of `shape` (a pool of `pool`, seeded), or a folder of images.
  std::vector<int64_t> shape = {3, 224, 224};
  int pool = 64, seed = 0;
  std::string inputs_folder;    // absolute; empty: synthetic
  std::string preprocess_json;  // a JSON list of steps; empty: the agent's default
  std::string postprocess = "argmax";
  std::vector<int> batch_sizes = {1};
  std::vector<ManifestScenario> scenarios;
  std::set<std::string> trace = {"model", "system"};  // of model, framework, system
  int trace_batches = 50;                             // batches the framework's profiler covers
  // The image the agent runs in (MLModelScope's `container`; docs/containers.md#evaluate):
  // empty, on the host. `engine` (podman, docker, nerdctl) with `engine_options` before its
  // `run` and `run_options` after it (e.g. a runtime, a mount of the host's /usr).
  struct Container {
    std::string image, engine = "podman";
    std::vector<std::string> engine_options, run_options;
  } container;
};

// Limits on a manifest: its file's size, its YAML nodes (each key, value, list and mapping; an
// alias counts as what it repeats; counted before the tree is built) and the runs it makes.
inline constexpr size_t kMaxManifestBytes = size_t{1} << 20;
inline constexpr int64_t kMaxManifestYamlNodes = 100'000;
inline constexpr int64_t kMaxEvaluationRuns = 10'000;

// Reads and checks a manifest. InvalidArgument, one line ("PATH: line N: what is wrong"), for
// anything that cannot make an evaluation, a manifest over the limits above, and a FIFO,
// device or folder (refused without being opened); NotFound when the file cannot be read.
Result<EvaluationManifest> LoadManifest(const std::string& path);
// LoadManifest's checks on a manifest's text; `path` is where it was read (files it names are
// relative to its folder). Pure.
Result<EvaluationManifest> ParseManifest(const std::string& text, const std::string& path);

// The model file's checksum against the pinned one: InvalidArgument (one line, both digests)
// when they differ or when the file (or the ONNX graph named) is not a regular file, NotFound
// when it cannot be read (the graph's openness asked of `env`); OK for a builder.
Status CheckModelFile(const EvaluationManifest& manifest, Env& env);

// Whether `version` (e.g. "1.13.0+cpu"; a local suffix after '+' is ignored) satisfies
// `constraint`: clauses "OP VERSION" joined by commas, OP one of >= <= > < == !=, versions
// compared part by part as numbers ("1.13" == "1.13.0"). An empty constraint is satisfied.
// InvalidArgument for a clause that is not one.
Result<bool> VersionSatisfies(std::string_view version, std::string_view constraint);

// One run of an evaluation.
struct EvaluationRun {
  std::string name;
  std::map<std::string, std::string> params;  // model, scenario, batch, qps (server)
  LoadOptions load;
  int batch = 1;
  std::vector<std::string> command;  // the agent under `python`
};

// The runs, scenario by scenario in the manifest's order, then batch size, then rate. A single
// stream runs at batch 1 only (its queries are one sample each).
std::vector<EvaluationRun> PlanEvaluation(const EvaluationManifest& manifest,
                                          const std::string& python);

// The agent's command line that describes the framework (`--describe`), under `python` run as
// `env PYTHONSAFEPATH=1 PYTHON -m footprint.agent`: a folder named footprint in the current
// folder is not imported in place of the installed package.
std::vector<std::string> DescribeCommand(const EvaluationManifest& manifest,
                                         const std::string& python);

// Checks the agent's --describe output against the manifest: the framework's name and its
// version constraint. InvalidArgument, one line, when they do not match.
Status CheckFramework(const EvaluationManifest& manifest, std::string_view describe_json);

}  // namespace footprint

#endif  // FOOTPRINT_EVALUATE_H_
