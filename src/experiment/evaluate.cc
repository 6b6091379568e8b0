#include "footprint/evaluate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <compare>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "experiment/plan.h"
#include "footprint/env.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint {
namespace {

using experiment::CheckKnownKeys;
using experiment::Scalar;
using experiment::ScalarList;
using experiment::YamlError;
using json = nlohmann::json;

// A YAML node as JSON: scalars become numbers, booleans or null where they read as one
// (YAML's plain scalars), strings otherwise.
json JsonOf(const YAML::Node& node) {
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(JsonOf(item));
    return out;
  }
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& kv : node) out[kv.first.as<std::string>()] = JsonOf(kv.second);
    return out;
  }
  if (!node.IsScalar() || node.Tag() == "!")
    return node.IsNull() ? json(nullptr) : json(node.Scalar());
  const std::string& text = node.Scalar();
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  if (text == "true" || text == "false") return text == "true";
  if (auto i = ParseInt(text)) return *i;
  if (auto d = ParseDouble(text)) return *d;
  return text;
}

// `value` (from `node`) as JSON text, which must be UTF-8: nlohmann's dump throws otherwise.
Result<std::string> ManifestJsonText(const json& value, const YAML::Node& node) {
  try {
    return value.dump();
  } catch (const json::type_error&) {
    return YamlError(node, "holds text that is not UTF-8; save the manifest as UTF-8");
  }
}

Result<int64_t> WholeNumber(const YAML::Node& node, const std::string& key, int64_t min) {
  FP_ASSIGN_OR_RETURN(std::string text, Scalar(node, key));
  auto n = ParseInt(text);
  if (!n || *n < min) {
    return YamlError(node, "'" + key + "' must be a whole number of at least " +
                               std::to_string(min) + " (got '" + text + "')");
  }
  return *n;
}

Result<int64_t> Duration(const YAML::Node& node, const std::string& key) {
  FP_ASSIGN_OR_RETURN(std::string text, Scalar(node, key));
  auto ns = ParseDurationNs(text);
  if (!ns.ok()) return YamlError(node, "'" + key + "': " + ns.status().message());
  return *ns;
}

// A path of the manifest, relative to the manifest's folder, made absolute.
std::string NextToManifest(const std::string& manifest, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::absolute(manifest).parent_path() / p;
  return p.lexically_normal().string();
}

Status ParseModel(const YAML::Node& node, EvaluationManifest& m) {
  FP_RETURN_IF_ERROR(
      CheckKnownKeys(node, "model", {"torchvision", "args", "file", "sha256", "graph", "family"}));
  if (node["torchvision"].IsDefined() == node["file"].IsDefined()) {
    return YamlError(node, "'model' names either 'torchvision: BUILDER' or 'file: PATH', one");
  }
  if (node["graph"]) {  // the same model as ONNX: what footprint predict --train DB reads
    FP_ASSIGN_OR_RETURN(std::string graph, Scalar(node["graph"], "model.graph"));
    m.graph_file = NextToManifest(m.path, graph);
  }
  if (node["family"]) {
    FP_ASSIGN_OR_RETURN(m.family, Scalar(node["family"], "model.family"));
  }
  if (node["torchvision"]) {
    FP_ASSIGN_OR_RETURN(m.torchvision, Scalar(node["torchvision"], "model.torchvision"));
    if (node["args"]) {
      const json args = JsonOf(node["args"]);
      if (!args.is_object()) return YamlError(node["args"], "'model.args' must be a mapping");
      if (args.contains("weights") && !args["weights"].is_null()) {
        return YamlError(node["args"],
                         "'model.args.weights' must be null: footprint downloads "
                         "nothing (pin a file with its sha256 instead)");
      }
      FP_ASSIGN_OR_RETURN(m.model_args_json, ManifestJsonText(args, node["args"]));
    }
    if (node["sha256"]) return YamlError(node["sha256"], "'model.sha256' pins a 'file'");
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(std::string file, Scalar(node["file"], "model.file"));
  m.model_file = NextToManifest(m.path, file);
  if (!node["sha256"]) {
    return YamlError(
        node, "'model.file' needs 'sha256: HEX', its pinned checksum (sha256sum " + file + ")");
  }
  FP_ASSIGN_OR_RETURN(m.model_sha256, Scalar(node["sha256"], "model.sha256"));
  m.model_sha256 = Lower(m.model_sha256);
  if (m.model_sha256.size() != 64 ||
      m.model_sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return YamlError(node["sha256"], "'model.sha256' must be 64 hexadecimal digits");
  }
  if (node["args"]) return YamlError(node["args"], "'model.args' is for a torchvision builder");
  return Status::Ok();
}

Status ParseFramework(const YAML::Node& node, EvaluationManifest& m) {
  FP_RETURN_IF_ERROR(
      CheckKnownKeys(node, "framework", {"name", "version", "threads", "device", "python"}));
  if (node["name"]) {
    FP_ASSIGN_OR_RETURN(m.framework, Scalar(node["name"], "framework.name"));
    m.framework = Lower(m.framework);
    if (m.framework == "torch") m.framework = "pytorch";
    if (m.framework != "pytorch") {
      return YamlError(node["name"], "framework '" + m.framework +
                                         "' has no agent; footprint ships one for pytorch");
    }
  }
  if (node["version"]) {
    FP_ASSIGN_OR_RETURN(m.version_constraint, Scalar(node["version"], "framework.version"));
    if (auto ok = VersionSatisfies("0", m.version_constraint); !ok.ok()) {
      return YamlError(node["version"], "'framework.version': " + ok.status().message());
    }
  }
  if (node["threads"]) {
    FP_ASSIGN_OR_RETURN(int64_t t, WholeNumber(node["threads"], "framework.threads", 0));
    m.threads = static_cast<int>(t);
  }
  if (node["device"]) {
    FP_ASSIGN_OR_RETURN(m.device, Scalar(node["device"], "framework.device"));
  }
  if (node["python"]) {
    FP_ASSIGN_OR_RETURN(m.python, Scalar(node["python"], "framework.python"));
  }
  return Status::Ok();
}

Status ParseInputs(const YAML::Node& node, EvaluationManifest& m) {
  FP_RETURN_IF_ERROR(CheckKnownKeys(node, "inputs", {"synthetic", "folder"}));
  if (node["synthetic"].IsDefined() == node["folder"].IsDefined()) {
    return YamlError(node, "'inputs' is either 'synthetic: {shape: [...]}' or 'folder: PATH'");
  }
  if (node["folder"]) {
    FP_ASSIGN_OR_RETURN(std::string folder, Scalar(node["folder"], "inputs.folder"));
    m.inputs_folder = NextToManifest(m.path, folder);
    return Status::Ok();
  }
  const YAML::Node s = node["synthetic"];
  FP_RETURN_IF_ERROR(CheckKnownKeys(s, "inputs.synthetic", {"shape", "pool", "seed"}));
  if (s["shape"]) {
    FP_ASSIGN_OR_RETURN(auto dims, ScalarList(s["shape"], "inputs.synthetic.shape"));
    m.shape.clear();
    for (const std::string& d : dims) {
      auto n = ParseInt(d);
      if (!n || *n < 1) return YamlError(s["shape"], "'inputs.synthetic.shape' holds '" + d + "'");
      m.shape.push_back(*n);
    }
  }
  if (s["pool"]) {
    FP_ASSIGN_OR_RETURN(int64_t pool, WholeNumber(s["pool"], "inputs.synthetic.pool", 1));
    m.pool = static_cast<int>(pool);
  }
  if (s["seed"]) {
    FP_ASSIGN_OR_RETURN(int64_t seed, WholeNumber(s["seed"], "inputs.synthetic.seed", 0));
    m.seed = static_cast<int>(seed);
  }
  return Status::Ok();
}

Result<std::vector<int>> BatchSizes(const YAML::Node& node, const std::string& key) {
  FP_ASSIGN_OR_RETURN(auto sizes, ScalarList(node, key));
  std::vector<int> out;
  for (const std::string& b : sizes) {
    auto n = ParseInt(b);
    if (!n || *n < 1 || *n > 65536) {
      return YamlError(node, "'" + key + "' holds '" + b + "' (batch sizes are 1 to 65536)");
    }
    out.push_back(static_cast<int>(*n));
  }
  if (out.empty()) return YamlError(node, "'" + key + "' is empty");
  return out;
}

// A scenario's load settings but its rates: duration, limits, samples per query, seed.
Status ParseScenarioLoad(const YAML::Node& node, const std::string& where, ManifestScenario& s) {
  LoadOptions& o = s.load;
  if (node["duration"]) {
    FP_ASSIGN_OR_RETURN(o.min_duration_ns, Duration(node["duration"], where + ".duration"));
  }
  if (node["query_timeout"]) {
    FP_ASSIGN_OR_RETURN(o.query_timeout_ns,
                        Duration(node["query_timeout"], where + ".query_timeout"));
  }
  if (node["min_queries"]) {
    FP_ASSIGN_OR_RETURN(o.min_queries, WholeNumber(node["min_queries"], where + ".min_queries", 1));
  }
  if (node["latency_bound"]) {
    FP_ASSIGN_OR_RETURN(int64_t bound, Duration(node["latency_bound"], where + ".latency_bound"));
    o.latency_bound_s = static_cast<double>(bound) / 1e9;
  }
  if (node["samples_per_query"]) {
    FP_ASSIGN_OR_RETURN(int64_t n,
                        WholeNumber(node["samples_per_query"], where + ".samples_per_query", 1));
    o.samples_per_query = static_cast<int>(n);
    s.samples_per_query_set = true;
  }
  if (node["seed"]) {
    FP_ASSIGN_OR_RETURN(int64_t seed, WholeNumber(node["seed"], where + ".seed", 0));
    o.seed = static_cast<uint64_t>(seed);
  }
  return Status::Ok();
}

// A scenario's rates ('qps'), each a positive number.
Status ParseScenarioRates(const YAML::Node& node, const std::string& where, ManifestScenario& s) {
  if (node["qps"]) {
    FP_ASSIGN_OR_RETURN(s.qps, ScalarList(node["qps"], where + ".qps"));
    for (const std::string& q : s.qps) {
      auto rate = ParseDouble(q);
      if (!rate || !(*rate > 0))
        return YamlError(node["qps"], "'" + where + ".qps' holds '" + q + "'");
    }
  }
  return Status::Ok();
}

Result<ManifestScenario> ParseScenarioNode(const YAML::Node& key, const YAML::Node& node) {
  ManifestScenario s;
  const std::string name = key.as<std::string>();
  auto scenario = ParseScenario(name);
  if (!scenario.ok()) return YamlError(key, scenario.status().message());
  s.load.scenario = *scenario;
  const std::string where = "scenarios." + name;
  if (node.IsNull()) {
    if (s.load.scenario == Scenario::kServer) {
      return YamlError(key, "'" + where + "' needs 'qps: R' or 'qps: [R, ...]'");
    }
    return s;
  }
  FP_RETURN_IF_ERROR(CheckKnownKeys(node, where,
                                    {"duration", "min_queries", "latency_bound", "qps",
                                     "samples_per_query", "seed", "query_timeout", "batch_sizes"}));
  if (node["batch_sizes"]) {
    FP_ASSIGN_OR_RETURN(s.batch_sizes, BatchSizes(node["batch_sizes"], where + ".batch_sizes"));
  }
  FP_RETURN_IF_ERROR(ParseScenarioLoad(node, where, s));
  FP_RETURN_IF_ERROR(ParseScenarioRates(node, where, s));
  const LoadOptions& o = s.load;
  if (o.scenario == Scenario::kServer && s.qps.empty()) {
    return YamlError(node, "'" + where + "' needs 'qps: R' or 'qps: [R, ...]'");
  }
  if (o.scenario != Scenario::kServer && !s.qps.empty()) {
    return YamlError(node["qps"], "'qps' is for the server scenario");
  }
  LoadOptions check = o;
  if (!s.qps.empty()) check.qps = *ParseDouble(s.qps.front());
  if (Status st = ValidateLoadOptions(check); !st.ok()) return YamlError(node, st.message());
  return s;
}

// The runs PlanEvaluation makes of a scenario: one per batch size (a single stream: one) and
// rate.
int64_t RunsOf(const ManifestScenario& s, const EvaluationManifest& m) {
  const size_t batches = s.batch_sizes.empty() ? m.batch_sizes.size() : s.batch_sizes.size();
  const size_t rates = std::max<size_t>(s.qps.size(), 1);
  return static_cast<int64_t>((s.load.scenario == Scenario::kSingleStream ? 1 : batches) * rates);
}

// container: IMAGE, or {image, engine, engine_options, run_options}.
Status ParseContainer(const YAML::Node& node, EvaluationManifest& m) {
  EvaluationManifest::Container& c = m.container;
  if (node.IsScalar()) {
    FP_ASSIGN_OR_RETURN(c.image, Scalar(node, "container"));
    return Status::Ok();
  }
  FP_RETURN_IF_ERROR(
      CheckKnownKeys(node, "container", {"image", "engine", "engine_options", "run_options"}));
  if (!node["image"]) return YamlError(node, "'container' names no 'image'");
  FP_ASSIGN_OR_RETURN(c.image, Scalar(node["image"], "container.image"));
  if (node["engine"]) {
    FP_ASSIGN_OR_RETURN(c.engine, Scalar(node["engine"], "container.engine"));
    if (c.engine != "podman" && c.engine != "docker" && c.engine != "nerdctl") {
      return YamlError(node["engine"], "container.engine is podman, docker or nerdctl");
    }
  }
  if (node["engine_options"]) {
    FP_ASSIGN_OR_RETURN(c.engine_options,
                        ScalarList(node["engine_options"], "container.engine_options"));
  }
  if (node["run_options"]) {
    FP_ASSIGN_OR_RETURN(c.run_options, ScalarList(node["run_options"], "container.run_options"));
  }
  return Status::Ok();
}

// The agent's command inside the manifest's image: no network, the model's and the inputs'
// folders and the folders of $PYTHONPATH (where footprint's module may be) mounted read-only at
// their own paths. Unchanged without an image.
std::vector<std::string> InContainer(const EvaluationManifest& m, std::vector<std::string> agent) {
  const EvaluationManifest::Container& c = m.container;
  if (c.image.empty()) return agent;
  std::vector<std::string> argv = {c.engine};
  argv.insert(argv.end(), c.engine_options.begin(), c.engine_options.end());
  argv.insert(argv.end(), {"run", "--rm", "-i", "--network", "none"});
  std::vector<std::string> folders;
  for (const std::string& file : {m.model_file, m.graph_file}) {
    if (!file.empty()) folders.push_back(std::filesystem::path(file).parent_path().string());
  }
  if (!m.inputs_folder.empty()) folders.push_back(m.inputs_folder);
  if (auto path = Env::Default().Var("PYTHONPATH"); path && !path->empty()) {
    for (std::string_view dir : Split(*path, ':')) {
      if (!dir.empty()) folders.emplace_back(dir);
    }
    argv.insert(argv.end(), {"-e", "PYTHONPATH=" + *path});
  }
  for (const std::string& folder : folders)
    argv.insert(argv.end(), {"-v", folder + ":" + folder + ":ro"});
  argv.insert(argv.end(), c.run_options.begin(), c.run_options.end());
  argv.push_back(c.image);
  argv.insert(argv.end(), agent.begin(), agent.end());
  return argv;
}

Status ParseRest(const YAML::Node& root, EvaluationManifest& m) {
  if (root["container"]) FP_RETURN_IF_ERROR(ParseContainer(root["container"], m));
  if (root["batch_sizes"]) {
    FP_ASSIGN_OR_RETURN(m.batch_sizes, BatchSizes(root["batch_sizes"], "batch_sizes"));
  }
  if (root["preprocess"]) {
    if (m.inputs_folder.empty()) {
      return YamlError(root["preprocess"], "'preprocess' is for 'inputs: {folder: PATH}'");
    }
    FP_ASSIGN_OR_RETURN(m.preprocess_json,
                        ManifestJsonText(JsonOf(root["preprocess"]), root["preprocess"]));
  }
  if (root["postprocess"]) {
    FP_ASSIGN_OR_RETURN(m.postprocess, Scalar(root["postprocess"], "postprocess"));
  }
  if (root["trace"]) {
    FP_ASSIGN_OR_RETURN(auto levels, ScalarList(root["trace"], "trace"));
    m.trace = {"model"};  // the per-query records are the load itself
    for (const std::string& level : levels) {
      if (level != "model" && level != "framework" && level != "system") {
        return YamlError(root["trace"],
                         "unknown trace level '" + level + "' (model, framework or system)");
      }
      m.trace.insert(level);
    }
  }
  if (root["trace_batches"]) {
    FP_ASSIGN_OR_RETURN(int64_t n, WholeNumber(root["trace_batches"], "trace_batches", 1));
    m.trace_batches = static_cast<int>(n);
  }
  const YAML::Node scenarios = root["scenarios"];
  if (!scenarios || !scenarios.IsMap() || scenarios.size() == 0) {
    return YamlError(scenarios ? scenarios : root,
                     "'scenarios' must map one or more of single, multi, server, offline to "
                     "their settings");
  }
  int64_t runs = 0;
  for (const auto& kv : scenarios) {
    FP_ASSIGN_OR_RETURN(ManifestScenario s, ParseScenarioNode(kv.first, kv.second));
    runs += RunsOf(s, m);
    if (runs > kMaxEvaluationRuns) {
      return YamlError(kv.first, "the manifest makes more than " +
                                     std::to_string(kMaxEvaluationRuns) +
                                     " runs (batch sizes x rates): split it into several");
    }
    m.scenarios.push_back(std::move(s));
  }
  return Status::Ok();
}

Result<EvaluationManifest> ParseManifestTree(const std::string& path, const std::string& text) {
  FP_ASSIGN_OR_RETURN(const YAML::Node root, experiment::LoadYaml(text, kMaxManifestYamlNodes));
  EvaluationManifest m;
  m.path = path;
  FP_RETURN_IF_ERROR(
      CheckKnownKeys(root, "manifest",
                     {"name", "model", "framework", "inputs", "preprocess", "postprocess",
                      "batch_sizes", "scenarios", "trace", "trace_batches", "container"}));
  m.name = std::filesystem::path(path).stem().string();
  if (root["name"]) {
    FP_ASSIGN_OR_RETURN(m.name, Scalar(root["name"], "name"));
  }
  if (!root["model"]) return YamlError(root, "the manifest names no 'model'");
  FP_RETURN_IF_ERROR(ParseModel(root["model"], m));
  if (root["framework"]) FP_RETURN_IF_ERROR(ParseFramework(root["framework"], m));
  if (root["inputs"]) FP_RETURN_IF_ERROR(ParseInputs(root["inputs"], m));
  FP_RETURN_IF_ERROR(ParseRest(root, m));
  FP_ASSIGN_OR_RETURN(m.manifest_json, ManifestJsonText(JsonOf(root), root));
  return m;
}

// "1.13.0+cpu" -> {1, 13, 0}; parts that are not numbers end the version ("2.1.0a0" -> {2, 1}).
std::vector<int64_t> VersionParts(std::string_view version) {
  version = version.substr(0, version.find('+'));
  std::vector<int64_t> parts;
  for (std::string_view part : Split(version, '.')) {
    size_t digits = 0;
    while (digits < part.size() && part[digits] >= '0' && part[digits] <= '9') ++digits;
    auto number = digits == 0 ? std::nullopt : ParseInt(part.substr(0, digits));
    if (!number) break;  // no digits, or more than a 64-bit number holds
    parts.push_back(*number);
    if (digits < part.size()) break;
  }
  while (!parts.empty() && parts.back() == 0) parts.pop_back();  // 1.13 == 1.13.0
  return parts;
}

}  // namespace

Result<EvaluationManifest> ParseManifest(const std::string& text, const std::string& path) {
  Result<EvaluationManifest> m = InvalidArgument("");
  try {
    m = ParseManifestTree(path, text);
  } catch (const YAML::Exception& e) {  // e.g. a key that is a list, read as a string
    m = InvalidArgument("line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!m.ok()) return InvalidArgument(path + ": " + m.status().message());
  Sha256 digest;
  digest.Update(text.data(), text.size());
  m->sha256 = digest.Hex();
  return m;
}

Result<EvaluationManifest> LoadManifest(const std::string& path) {
  FP_ASSIGN_OR_RETURN(const std::string text,
                      ReadInputFile(path, kMaxManifestBytes, "the manifest"));
  return ParseManifest(text, path);
}

Status CheckModelFile(const EvaluationManifest& m, Env& env) {
  // Checked to be regular files before they are opened: a FIFO would block, a device may never
  // end.
  if (!m.graph_file.empty()) {
    FP_RETURN_IF_ERROR(CheckRegularFile(m.graph_file, "model.graph"));
    if (Status readable = env.CheckReadable(m.graph_file); !readable.ok()) {
      return NotFound("model.graph: " + readable.message());
    }
  }
  if (m.model_file.empty()) return Status::Ok();
  FP_RETURN_IF_ERROR(CheckRegularFile(m.model_file, "the model file"));
  auto digest = DigestFile(m.model_file);
  if (!digest) return NotFound("model file " + m.model_file + " cannot be read");
  if (digest->sha256 != m.model_sha256) {
    return InvalidArgument("model file " + m.model_file + " has sha256 " + digest->sha256 +
                           ", the manifest pins " + m.model_sha256 + ": refusing to evaluate it");
  }
  return Status::Ok();
}

Result<bool> VersionSatisfies(std::string_view version, std::string_view constraint) {
  using Order = std::strong_ordering;
  static const std::pair<std::string_view, bool (*)(Order)> kOperators[] = {
      {">=", [](Order o) { return o >= 0; }}, {"<=", [](Order o) { return o <= 0; }},
      {">", [](Order o) { return o > 0; }},   {"<", [](Order o) { return o < 0; }},
      {"==", [](Order o) { return o == 0; }}, {"!=", [](Order o) { return o != 0; }}};
  const std::vector<int64_t> have = VersionParts(version);
  for (std::string_view clause : Split(constraint, ',')) {
    clause = Trim(clause);
    if (clause.empty()) continue;
    const size_t op_size = std::min(clause.find_first_not_of("<>=!~^"), clause.size());
    const auto* op = std::find_if(std::begin(kOperators), std::end(kOperators), [&](const auto& o) {
      return o.first == clause.substr(0, op_size);
    });
    const std::string_view wanted = Trim(clause.substr(op_size));
    if (op == std::end(kOperators) || wanted.empty() || wanted[0] < '0' || wanted[0] > '9') {
      return InvalidArgument("'" + std::string(clause) +
                             "' is no clause: use >=, <=, >, <, == or != and a version, e.g. "
                             "'>=1.13,<3'");
    }
    if (!op->second(have <=> VersionParts(wanted))) return false;
  }
  return true;
}

std::vector<std::string> DescribeCommand(const EvaluationManifest& m, const std::string& python) {
  // `python -m` puts the current folder first on sys.path: a folder named footprint where
  // evaluate runs (a checkout, a build's python/) would be imported instead of the installed
  // package. PYTHONSAFEPATH, not Python 3.11's -P, which older interpreters refuse (they ignore
  // the variable); set by env in the argv, so that it reaches the agent wherever the argv runs:
  // the describe step, each run and the resident agent on the host, and inside the image.
  std::vector<std::string> argv = {"env",    "PYTHONSAFEPATH=1", python,
                                   "-m",     "footprint.agent",  "--device",
                                   m.device, "--threads",        std::to_string(m.threads)};
  argv.push_back("--describe");
  return InContainer(m, std::move(argv));
}

std::vector<EvaluationRun> PlanEvaluation(const EvaluationManifest& m, const std::string& python) {
  std::vector<std::string> agent = DescribeCommand(m, python);
  agent.pop_back();  // --describe
  if (m.model_file.empty()) {
    agent.insert(agent.end(), {"--model", m.torchvision, "--model-args", m.model_args_json});
  } else {
    agent.insert(agent.end(), {"--model-file", m.model_file});
  }
  if (m.inputs_folder.empty()) {
    std::string shape;
    for (int64_t d : m.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    agent.insert(agent.end(), {"--shape", shape, "--pool", std::to_string(m.pool), "--seed",
                               std::to_string(m.seed)});
  } else {
    agent.insert(agent.end(), {"--inputs", m.inputs_folder});
    if (!m.preprocess_json.empty()) agent.insert(agent.end(), {"--preprocess", m.preprocess_json});
  }
  agent.insert(agent.end(), {"--postprocess", m.postprocess});
  if (m.trace.count("framework")) {
    agent.insert(agent.end(),
                 {"--trace-framework", "--trace-batches", std::to_string(m.trace_batches)});
  }
  std::vector<EvaluationRun> runs;
  for (const ManifestScenario& s : m.scenarios) {
    const std::string scenario(ScenarioName(s.load.scenario));
    const std::vector<int>& batches = s.batch_sizes.empty() ? m.batch_sizes : s.batch_sizes;
    for (int batch : batches) {
      if (s.load.scenario == Scenario::kSingleStream && batch != batches.front()) break;
      const int max_batch = s.load.scenario == Scenario::kSingleStream ? 1 : batch;
      const std::vector<std::string> rates = s.qps.empty() ? std::vector<std::string>{""} : s.qps;
      for (const std::string& rate : rates) {
        EvaluationRun r;
        r.batch = max_batch;
        r.load = s.load;
        if (s.load.scenario == Scenario::kMultiStream && !s.samples_per_query_set) {
          r.load.samples_per_query = batch;
        }
        r.name = m.name + "-" + scenario + "-b" + std::to_string(max_batch);
        r.params = {{"model", m.model_file.empty() ? m.torchvision : m.model_file},
                    {"scenario", scenario},
                    {"batch", std::to_string(max_batch)}};
        if (!rate.empty()) {
          r.load.qps = *ParseDouble(rate);
          r.name += "-q" + rate;
          r.params["qps"] = rate;
        }
        r.command = agent;
        r.command.insert(r.command.end(), {"--max-batch", std::to_string(max_batch)});
        runs.push_back(std::move(r));
      }
    }
  }
  return runs;
}

Status CheckFramework(const EvaluationManifest& m, std::string_view describe_json) {
  const json d = json::parse(describe_json, nullptr, false);
  if (!d.is_object() || !d.contains("version")) {
    return InvalidArgument("the agent's --describe printed no framework version: '" +
                           Inert(describe_json.substr(0, 80)) + "'");
  }
  const std::string name = d.value("framework", std::string("?"));
  const std::string version = d["version"].is_string() ? d["version"].get<std::string>() : "?";
  if (name != m.framework) {
    return InvalidArgument("the agent runs " + name + ", the manifest wants " + m.framework);
  }
  auto ok = VersionSatisfies(version, m.version_constraint);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    return InvalidArgument(m.framework + " " + version + " does not satisfy the manifest's '" +
                           m.version_constraint + "': refusing to evaluate");
  }
  return Status::Ok();
}

}  // namespace footprint
