#include "run/profiler_session.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "session/descendants.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr int64_t kMeasureEveryNs = 20'000'000;

// A process of the profiler's: one its tool runs (nsys, ncu, nsys-launcher, ...), not the
// program it profiles.
bool ProfilerProcess(const std::string& proc_root, pid_t pid, const std::string& tool) {
  auto comm = ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/comm");
  return comm.ok() && Trim(*comm).starts_with(tool);
}

// VmHWM of /proc/PID/status in bytes; 0 when unknown (a zombie has none).
int64_t HighWaterMark(const std::string& proc_root, pid_t pid) {
  auto status = ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/status");
  if (!status.ok()) return 0;
  for (std::string_view line : Split(*status, '\n')) {
    if (!line.starts_with("VmHWM:")) continue;
    auto kib = ParseInt(Trim(line.substr(6, line.find(" kB") - 6)));
    return kib ? *kib * 1024 : 0;
  }
  return 0;
}

// The trace files `tool` wrote: those in `folder` whose name starts with `trace_name` (nsys
// with --capture-range-end repeat writes one per window).
std::vector<std::string> TraceFiles(const std::string& folder, const std::string& trace_name) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(trace_name + ".") && entry.is_regular_file(ec)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "nsys_train.py" from "train.py": a name that is one path component.
std::string DefaultTraceName(const std::string& tool, const std::string& run_name) {
  std::string name = tool + "_" + run_name;
  for (char& c : name) {
    if (c == '/' || c == ' ') c = '_';
  }
  return name;
}

}  // namespace

std::string RunArtifactFolder(Env& env, const std::string& store_location,
                              const std::string& run_id) {
  if (store_location.find("://") == std::string::npos) {
    return store_location + ".artifacts/" + run_id;
  }
  std::string data = env.Var("XDG_DATA_HOME").value_or("");
  if (data.empty()) data = env.Var("HOME").value_or("/tmp") + "/.local/share";
  return data + "/footprint/artifacts/" + run_id;
}

Status CheckProfilerPresent(const MonitorOptions& options) {
  if (!options.profiler || !options.profiler->required || options.command.empty()) {
    return Status::Ok();
  }
  FP_ASSIGN_OR_RETURN(ProfiledCommand p, WrapInProfiler(options.profiler->listener, {}, ""));
  if (FindOnPath(*options.env, p.tool)) return Status::Ok();
  return InvalidArgument("the profiler listener " + options.profiler->listener + " needs '" +
                         p.tool + "', which is not on PATH; install it (docs/profiling.md) " +
                         "or drop --require-profiler to run unprofiled");
}

ProfilerSession::ProfilerSession(Env& env, ProfiledCommand profiled, std::string folder,
                                 std::string trace_name)
    : env_(env),
      profiled_(std::move(profiled)),
      folder_(std::move(folder)),
      trace_name_(std::move(trace_name)) {}

ProfilerSession::~ProfilerSession() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<ProfilerSession>> ProfilerSession::Prepare(
    const MonitorOptions& options, const std::string& run_id, const std::string& run_name,
    const std::string& store_location, std::vector<std::string>& command,
    std::map<std::string, std::string>& environment, json& meta) {
  const ProfilerRequest& req = *options.profiler;
  FP_RETURN_IF_ERROR(CheckProfilerPresent(options));
  const std::string folder = RunArtifactFolder(*options.env, store_location, run_id);
  FP_ASSIGN_OR_RETURN(ProfiledCommand probe, WrapInProfiler(req.listener, {}, ""));
  const std::string trace_name =
      req.trace_name.empty() ? DefaultTraceName(probe.tool, run_name) : req.trace_name;
  json& m = meta["profiler"] = {{"listener", Lower(req.listener)}, {"tool", probe.tool}};
  auto path = FindOnPath(*options.env, probe.tool);
  if (!path) {
    m["absent"] = probe.tool + " is not on PATH";
    std::cerr << "footprint: warning: the profiler listener " << req.listener << " needs '"
              << probe.tool << "', which is not on PATH: the run goes on unprofiled\n";
    return std::unique_ptr<ProfilerSession>();
  }
  FP_ASSIGN_OR_RETURN(ProfiledCommand p,
                      WrapInProfiler(req.listener, command, folder + "/" + trace_name));
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return IoError("cannot create the run's artifact folder " + folder + ": " + ec.message());
  m["path"] = *path;
  m["command"] = std::vector<std::string>(p.command.begin(), p.command.end() - command.size());
  m["environment"] = p.environment;
  if (p.writes_trace) m["trace_prefix"] = folder + "/" + trace_name;
  command = p.command;
  environment.insert(p.environment.begin(), p.environment.end());
  return std::unique_ptr<ProfilerSession>(
      new ProfilerSession(*options.env, std::move(p), folder, trace_name));
}

void ProfilerSession::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ProfilerSession::Loop() {
  while (!stop_.load()) {
    Measure();
    env_.SleepUntil(env_.MonotonicNs() + kMeasureEveryNs);
  }
}

void ProfilerSession::Measure() {
  const std::string root = env_.ProcRoot();
  for (pid_t pid : Descendants(env_)) {
    if (!ProfilerProcess(root, pid, profiled_.tool)) continue;
    auto text = ReadWholeFile(root + "/" + std::to_string(pid) + "/stat");
    std::optional<ProcStat> st = text.ok() ? ParseProcStat(*text) : std::nullopt;
    if (!st) continue;
    const int64_t hwm = HighWaterMark(root, pid);
    std::lock_guard<std::mutex> lock(mu_);
    cpu_ticks_[{pid, st->starttime}] = st->utime + st->stime;
    peak_rss_bytes_ = std::max(peak_rss_bytes_, hwm);
  }
}

void ProfilerSession::BeforeReap(pid_t child) {
  siginfo_t info = {};
  if (::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid != child) {
    return;
  }
  const std::string root = env_.ProcRoot();
  if (!ProfilerProcess(root, child, profiled_.tool)) return;
  auto text = ReadWholeFile(root + "/" + std::to_string(child) + "/stat");
  std::optional<ProcStat> st = text.ok() ? ParseProcStat(*text) : std::nullopt;
  if (!st) return;
  std::lock_guard<std::mutex> lock(mu_);
  cpu_ticks_[{child, st->starttime}] = st->utime + st->stime;
}

void ProfilerSession::Finish(Store& store, const std::string& run_id,
                             std::map<std::string, double>& totals, json& meta,
                             std::vector<std::string>& warnings) {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  uint64_t ticks = 0;
  for (const auto& [process, t] : cpu_ticks_) ticks += t;
  const double cpu_s = static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  totals["profiler_cpu_s"] = cpu_s;
  totals["profiler_peak_rss_bytes"] = static_cast<double>(peak_rss_bytes_);
  if (totals.contains("cpu_user_s") && totals.contains("cpu_system_s")) {
    totals["program_cpu_s"] = std::max(0.0, totals["cpu_user_s"] + totals["cpu_system_s"] - cpu_s);
  }
  meta["profiler"]["processes"] = cpu_ticks_.size();
  if (!profiled_.writes_trace) return;
  int64_t bytes = 0;
  json& traces = meta["profiler"]["traces"] = json::array();
  for (const std::string& name : TraceFiles(folder_, trace_name_)) {
    const std::string path = folder_ + "/" + name;
    std::optional<FileDigest> digest = DigestFile(path);
    if (!digest) continue;
    ArtifactRecord a{run_id, name, path, digest->sha256, digest->size};
    if (Status st = store.PutArtifact(a); !st.ok()) {
      warnings.push_back("the trace " + path + " could not be stored: " + st.message());
      continue;
    }
    bytes += digest->size;
    traces.push_back(name);
  }
  totals["profiler_trace_bytes"] = static_cast<double>(bytes);
  if (traces.empty()) {
    warnings.push_back(profiled_.tool + " wrote no trace to " + folder_ + "/" + trace_name_ +
                       ".*; its capture needs an NVTX range named 'profile' (footprint.profile, "
                       "docs/profiling.md)");
  }
}

}  // namespace footprint
