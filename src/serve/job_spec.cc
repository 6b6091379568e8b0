#include "serve/job_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "experiment/plan.h"
#include "footprint/evaluate.h"
#include "footprint/experiment.h"
#include "util/file.h"

namespace footprint::serve {
namespace {

namespace fs = std::filesystem;
using experiment::CanonicalPath;
using experiment::LoadYaml;

constexpr char kEvaluate[] = "evaluate";
constexpr char kPlan[] = "plan";
constexpr char kLoad[] = "load";
const std::set<std::string> kOverrides = {"model", "device", "batch_sizes", "scenario", "qps"};
// A load's settings: footprint load's options of the same names.
const std::set<std::string> kLoadSettings = {"scenario", "qps", "duration", "min_queries",
                                             "latency_bound"};

bool AllOf(std::string_view text, std::string_view allowed_punctuation) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           allowed_punctuation.find(c) != std::string_view::npos;
  });
}

std::optional<int> SmallNumber(std::string_view text, int max) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

// `file` inside `folder`, as the file system names it, a regular file. Only a relative name
// without ".." is taken, and the result must still be inside the folder once links are
// resolved: a job names a file of the folder, nothing else.
Result<std::string> FileInFolder(const std::string& folder, const std::string& file,
                                 std::string_view what) {
  if (folder.empty()) {
    return InvalidArgument("this serve offers no " + std::string(what) + "s: start it with --" +
                           std::string(what) + "s DIR");
  }
  const fs::path name(file);
  const bool dotted = std::any_of(name.begin(), name.end(),
                                  [](const fs::path& part) { return part == ".." || part == "."; });
  if (file.empty() || name.is_absolute() || dotted || file.find('\0') != std::string::npos) {
    return InvalidArgument("a job names a " + std::string(what) +
                           " by its name inside the folder (no '/' at the start, no '..'), "
                           "not '" +
                           file + "'");
  }
  const std::string root = CanonicalPath(folder);
  const std::string path = CanonicalPath(root + "/" + file);
  if (!path.starts_with(root + "/")) {
    return InvalidArgument("'" + file + "' leads outside the " + std::string(what) + " folder");
  }
  if (!fs::exists(path)) {
    return NotFound("no " + std::string(what) + " '" + file + "' in " + root);
  }
  FP_RETURN_IF_ERROR(CheckRegularFile(path, what));
  return path;
}

std::vector<std::string> CommaList(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

Status CheckOverride(const std::string& key, const std::string& value) {
  if (!kOverrides.contains(key)) {
    return InvalidArgument("'" + key +
                           "' cannot be overridden; a manifest's overrides are model, device, "
                           "batch_sizes, scenario and qps");
  }
  bool ok = true;
  if (key == "model") ok = AllOf(value, "_");
  if (key == "device") {
    ok = value == "cpu" || value == "cuda" ||
         (value.starts_with("cuda:") && SmallNumber(value.substr(5), 63));
  }
  if (key == "scenario")
    ok = value == "single" || value == "multi" || value == "server" || value == "offline";
  for (const std::string& item : CommaList(value)) {
    if (key == "batch_sizes") ok = ok && SmallNumber(item, 1 << 16).value_or(0) > 0;
    if (key == "qps") ok = ok && AllOf(item, ".");
  }
  if (!ok) {
    return InvalidArgument("override " + key + "=" + value +
                           " is malformed (model: a torchvision name; device: cpu, cuda or "
                           "cuda:N; batch_sizes: 1,4,8; scenario: single, multi, server or "
                           "offline; qps: 10,20)");
  }
  return Status::Ok();
}

YAML::Node NumberList(const std::string& text) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const std::string& item : CommaList(text)) list.push_back(item);
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

// The manifest with the overrides applied and the files it names made absolute (the copy is
// read from another folder).
Result<std::string> OverriddenManifest(const std::string& path,
                                       const std::map<std::string, std::string>& overrides) {
  FP_ASSIGN_OR_RETURN(EvaluationManifest original, LoadManifest(path));
  FP_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kMaxManifestBytes, "manifest"));
  FP_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(text, kMaxManifestYamlNodes));
  if (root["model"]["file"]) root["model"]["file"] = original.model_file;
  if (root["model"]["graph"]) root["model"]["graph"] = original.graph_file;
  if (root["inputs"]["folder"]) root["inputs"]["folder"] = original.inputs_folder;
  for (const auto& [key, value] : overrides) {
    if (key == "model") {
      YAML::Node model;
      model["torchvision"] = value;
      if (root["model"]["args"]) model["args"] = root["model"]["args"];
      root["model"] = model;
    } else if (key == "device") {
      root["framework"]["device"] = value;
    } else if (key == "batch_sizes") {
      root["batch_sizes"] = NumberList(value);
    } else if (key == "qps") {
      if (!root["scenarios"]["server"]) {
        return InvalidArgument("qps overrides the server scenario, which " + path +
                               " does not have");
      }
      root["scenarios"]["server"]["qps"] = NumberList(value);
    }
  }
  if (overrides.contains("scenario")) {
    const std::string& kept = overrides.at("scenario");
    if (!root["scenarios"][kept]) {
      return InvalidArgument(path + " has no scenario '" + kept + "' to run");
    }
    YAML::Node only;
    only[kept] = root["scenarios"][kept];
    root["scenarios"] = only;
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str());
}

// A load's settings, each one of footprint load's (scenario required), its value a plain word.
Status CheckLoadSettings(const std::map<std::string, std::string>& settings) {
  for (const auto& [key, value] : settings) {
    if (!kLoadSettings.contains(key) || !AllOf(value, "._,")) {
      return InvalidArgument(
          "a load takes scenario (single, multi, server, offline), qps, "
          "duration, min_queries and latency_bound, each a plain value; not " +
          key + "=" + value);
    }
  }
  if (!settings.contains("scenario")) {
    return InvalidArgument("a load needs scenario=single, multi, server or offline");
  }
  return Status::Ok();
}

// cpu, gpu:N or slurm:PARTITION.
Status CheckTarget(const std::string& target) {
  const bool ok = target == "cpu" ||
                  (target.starts_with("gpu:") && SmallNumber(target.substr(4), 63)) ||
                  (target.starts_with("slurm:") && AllOf(target.substr(6), "_.-"));
  if (ok) return Status::Ok();
  return InvalidArgument("target '" + target +
                         "' is none of cpu, gpu:N (a GPU's index) or slurm:PARTITION");
}

// A job holds its target's GPU only: on gpu:N, a plan whose runs name another GPU (an index
// or a UUID) would share it with the jobs of that GPU's own queue.
Status CheckPlanDevices(const ExperimentPlan& plan, const std::string& target) {
  if (!target.starts_with("gpu:")) return Status::Ok();
  const std::string index = target.substr(4);
  for (const PlannedWorkload& w : plan.workloads) {
    for (const PlannedRun& run : w.runs) {
      for (const std::string& device : run.devices) {
        if (device != index) {
          return InvalidArgument("run " + run.key + " of the plan uses GPU " + device +
                                 ", not the target's (" + target +
                                 "): a job holds one GPU; give its runs Devices " + index +
                                 " or queue it on cpu");
        }
      }
    }
  }
  return Status::Ok();
}

std::string TargetOfDevice(const std::string& device) {
  if (device == "cpu") return "cpu";
  return device == "cuda" ? "gpu:0" : "gpu:" + device.substr(5);
}

}  // namespace

JobCatalog::JobCatalog(JobFolders folders, std::string footprint, std::string db,
                       std::string python)
    : folders_(std::move(folders)),
      footprint_(std::move(footprint)),
      db_(std::move(db)),
      python_(std::move(python)) {}

Result<JobRequest> JobCatalog::Check(JobRequest request) const {
  if (request.priority < -1000 || request.priority > 1000) {
    return InvalidArgument("a job's priority is from -1000 to 1000, not " +
                           std::to_string(request.priority));
  }
  if (request.kind == kPlan) {
    FP_ASSIGN_OR_RETURN(std::string path, FileInFolder(folders_.plans, request.file, "plan"));
    if (!request.overrides.empty()) {
      return InvalidArgument("a plan takes no overrides: its rows say what runs");
    }
    FP_ASSIGN_OR_RETURN(ExperimentPlan plan, LoadPlan(path));
    if (request.target.empty()) request.target = "cpu";
    FP_RETURN_IF_ERROR(CheckTarget(request.target));
    FP_RETURN_IF_ERROR(CheckPlanDevices(plan, request.target));
    return request;
  }
  if (request.kind == kLoad) {
    FP_RETURN_IF_ERROR(FileInFolder(folders_.plans, request.file, "plan").status());
    FP_RETURN_IF_ERROR(CheckLoadSettings(request.overrides));
    if (request.target.empty()) request.target = "cpu";
    if (request.target.starts_with("slurm:")) {
      return InvalidArgument("a load runs on this machine: its target is cpu or gpu:N");
    }
    FP_RETURN_IF_ERROR(CheckTarget(request.target));
    return request;
  }
  if (request.kind != kEvaluate) {
    return InvalidArgument(
        "a job is 'evaluate' (a manifest), 'plan' or 'load' (a system under "
        "test of the plans folder), not '" +
        request.kind + "'");
  }
  FP_ASSIGN_OR_RETURN(std::string path, FileInFolder(folders_.manifests, request.file, "manifest"));
  for (const auto& [key, value] : request.overrides) FP_RETURN_IF_ERROR(CheckOverride(key, value));
  FP_ASSIGN_OR_RETURN(std::string text, OverriddenManifest(path, request.overrides));
  FP_ASSIGN_OR_RETURN(EvaluationManifest manifest, ParseManifest(text, path));
  const std::string target = TargetOfDevice(manifest.device);
  if (!request.target.empty() && request.target != target) {
    return InvalidArgument("the manifest runs on " + manifest.device + ", so its target is " +
                           target + ", not " + request.target + "; override its device instead");
  }
  request.target = target;
  return request;
}

Result<JobLaunch> JobCatalog::Prepare(const JobRequest& request, int64_t job_id,
                                      const std::string& workdir) const {
  FP_ASSIGN_OR_RETURN(JobRequest checked, Check(request));
  JobLaunch launch{.command = {footprint_}};
  if (checked.kind == kEvaluate) {
    FP_ASSIGN_OR_RETURN(std::string path,
                        FileInFolder(folders_.manifests, checked.file, "manifest"));
    FP_ASSIGN_OR_RETURN(launch.manifest_text, OverriddenManifest(path, checked.overrides));
    launch.manifest_path = workdir + "/job-" + std::to_string(job_id) + ".yaml";
    launch.cwd = fs::path(path).parent_path().string();
    launch.command.insert(launch.command.end(), {"evaluate", "-o", db_});
    if (!python_.empty()) launch.command.insert(launch.command.end(), {"--python", python_});
    launch.command.push_back(launch.manifest_path);
    return launch;
  }
  FP_ASSIGN_OR_RETURN(std::string path, FileInFolder(folders_.plans, checked.file, "plan"));
  launch.cwd = fs::path(path).parent_path().string();
  if (checked.kind == kLoad) return PrepareLoad(checked, path, std::move(launch));
  launch.command.insert(launch.command.end(), {"experiment", "-o", db_, path});
  if (!python_.empty()) launch.command.insert(launch.command.end(), {"--python", python_});
  if (checked.target == "cpu") launch.command.insert(launch.command.end(), {"--devices", "cpu"});
  if (checked.target.starts_with("slurm:")) {
    launch.command.insert(launch.command.end(),
                          {"--executor", "slurm", "--slurm-dir", workdir + "/slurm",
                           "--sbatch=-p " + checked.target.substr(6)});
  }
  return launch;
}

// footprint load with the job's settings, driving the file (a script runs under the
// interpreter its extension names, as in a plan).
JobLaunch JobCatalog::PrepareLoad(const JobRequest& request, const std::string& path,
                                  JobLaunch launch) const {
  launch.command.insert(launch.command.end(), {"load", "-o", db_, "-n", request.file});
  for (const auto& [key, value] : request.overrides) {
    std::string option = "--" + key;
    std::replace(option.begin(), option.end(), '_', '-');
    launch.command.insert(launch.command.end(), {option, value});
  }
  PlannedRun run;
  experiment::ResolveCommand(path, {}, launch.cwd, python_.empty() ? "python3" : python_, run);
  launch.command.push_back("--");
  launch.command.insert(launch.command.end(), run.command.begin(), run.command.end());
  return launch;
}

nlohmann::json JobCatalog::Offered() const {
  nlohmann::json offered = {{"manifests", nlohmann::json::array()},
                            {"plans", nlohmann::json::array()},
                            {"overrides", kOverrides}};
  auto files = [](const std::string& folder, std::initializer_list<std::string_view> endings) {
    std::vector<std::string> names;
    std::error_code ec;
    if (folder.empty()) return names;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      const bool listed = std::any_of(endings.begin(), endings.end(),
                                      [&](std::string_view e) { return name.ends_with(e); });
      if (listed && entry.is_regular_file(ec)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  for (const std::string& name : files(folders_.manifests, {".yaml", ".yml"})) {
    nlohmann::json item = {{"file", name}};
    auto manifest = LoadManifest(folders_.manifests + "/" + name);
    if (manifest.ok()) {
      item["name"] = manifest->name;
      item["model"] = manifest->torchvision.empty() ? manifest->model_file : manifest->torchvision;
      item["device"] = manifest->device;
      item["batch_sizes"] = manifest->batch_sizes;
      item["scenarios"] = nlohmann::json::array();
      for (const ManifestScenario& s : manifest->scenarios) {
        item["scenarios"].push_back(ScenarioName(s.load.scenario));
      }
    } else {
      item["error"] = manifest.status().message();
    }
    offered["manifests"].push_back(std::move(item));
  }
  for (const std::string& name : files(folders_.plans, {".csv", ".yaml", ".yml"})) {
    offered["plans"].push_back({{"file", name}});
  }
  offered["loads"] = nlohmann::json::array();
  for (const std::string& name : files(folders_.plans, {".py", ".sh"})) {
    offered["loads"].push_back({{"file", name}});
  }
  offered["load_settings"] = kLoadSettings;
  return offered;
}

}  // namespace footprint::serve
