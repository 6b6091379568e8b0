// radT's workload listeners as command lines (radT 0.2.x, radt/constants.py).
#include "footprint/profiler.h"

#include <unistd.h>

#include <algorithm>

#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

struct ListenerCommand {
  const char* name;
  const char* tool;
  std::vector<std::string> flags;  // the tool's words between its name and the command
  bool writes_trace;
};

// "{out}" stands for the trace prefix, which radT names {tool}_{Experiment}_{Workload}_{Letter}
// in the script's folder and footprint places in the run's artifact folder.
const std::vector<ListenerCommand>& Listeners() {
  static const std::vector<ListenerCommand> kListeners = {
      {"nsys",
       "nsys",
       {"profile", "--capture-range", "nvtx", "--nvtx-capture", "profile",
        "--cuda-memory-usage=true", "--capture-range-end", "repeat", "-o", "{out}", "-f", "true",
        "-w", "true", "-x", "true", "-t", "cuda,nvtx"},
       true},
      {"nsysraw",
       "nsys",
       {"profile", "--cuda-memory-usage", "true", "-o", "{out}", "-f", "true", "-w", "true", "-x",
        "true", "-t", "cuda,nvtx"},
       true},
      {"ncu", "ncu", {"-o", "{out}", "-f", "--nvtx", "--nvtx-include", "profile"}, true},
      {"ncuraw", "ncu", {"-o", "{out}", "-f", "-c", "100"}, true},
      {"ncuattach", "ncu", {"--mode=launch"}, false},
  };
  return kListeners;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

const ListenerCommand* FindListener(std::string_view name) {
  const std::string lower = Lower(Trim(name));
  for (const ListenerCommand& l : Listeners()) {
    if (lower == l.name) return &l;
  }
  return nullptr;
}

}  // namespace

bool IsProfilerListener(std::string_view name) { return FindListener(name) != nullptr; }

const std::vector<std::string>& ProfilerListeners() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const ListenerCommand& l : Listeners()) names.push_back(l.name);
    return names;
  }();
  return kNames;
}

Result<ProfiledCommand> WrapInProfiler(std::string_view listener,
                                       const std::vector<std::string>& command,
                                       const std::string& trace_prefix) {
  const ListenerCommand* l = FindListener(listener);
  if (l == nullptr) {
    return InvalidArgument("'" + std::string(listener) + "' is not a profiler listener (radT's: " +
                           Joined(ProfilerListeners()) + ")");
  }
  ProfiledCommand out{.tool = l->tool, .command = {l->tool}, .writes_trace = l->writes_trace};
  for (const std::string& flag : l->flags) {
    out.command.push_back(flag == "{out}" ? trace_prefix : flag);
  }
  out.command.insert(out.command.end(), command.begin(), command.end());
  // Nsight Systems matches only registered NVTX strings unless told otherwise, and the
  // `profile` range of torch.cuda.nvtx, footprint.profile and radT's scripts is not one.
  if (out.tool == "nsys") out.environment["NSYS_NVTX_PROFILER_REGISTER_ONLY"] = "0";
  return out;
}

namespace {

// Runs at the interpreter's start (site), before the script: the hook, then whatever
// sitecustomize this one shadows.
constexpr char kSiteCustomize[] = R"(# Written by footprint run --profile (docs/profiling.md).
import sys
try:
    from footprint.profiling import install_step_hook
    install_step_hook()
except ImportError as error:
    print(f"footprint: --profile: this Python cannot import footprint ({error}); "
          "the run goes on unprofiled", file=sys.stderr)
_here = __file__.rsplit("/", 1)[0]
sys.path[:] = [p for p in sys.path if p != _here]
del sys.modules["sitecustomize"]
try:
    import sitecustomize  # the one this file shadowed, if any
except ImportError:
    pass
)";

}  // namespace

Status AddTorchWindow(const std::string& spec, const std::string& hook_dir, Env& env,
                      std::map<std::string, std::string>& environment) {
  const std::vector<std::string_view> words = Split(spec, ':');
  bool valid = (words.size() == 2 || words.size() == 3) && words[0] == "torch";
  for (size_t i = 1; valid && i < words.size(); ++i) {
    auto n = ParseInt(words[i]);
    valid = n && *n >= (i == 1 ? 1 : 0);
  }
  if (!valid) {
    return InvalidArgument("--profile " + spec +
                           ": expected torch:STEPS or torch:STEPS:WAIT (STEPS from 1, WAIT "
                           "steps before them, default 5), e.g. --profile torch:2");
  }
  FP_RETURN_IF_ERROR(WriteFile(hook_dir + "/sitecustomize.py", kSiteCustomize, true));
  const std::string python_path = env.Var("PYTHONPATH").value_or("");
  environment["PYTHONPATH"] = python_path.empty() ? hook_dir : hook_dir + ":" + python_path;
  environment["FOOTPRINT_PROFILE"] = spec;
  return Status::Ok();
}

std::optional<std::string> FindOnPath(Env& env, const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? std::optional(name) : std::nullopt;
  }
  const std::string path_var = env.Var("PATH").value_or("");
  for (std::string_view dir : Split(path_var, ':')) {
    if (dir.empty()) continue;
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

std::optional<std::string> ProfilerVersion(const std::string& path) {
  auto out = Capture({path, "--version"});
  if (!out) return std::nullopt;
  std::vector<std::string_view> lines;
  for (std::string_view line : Split(*out, '\n')) {
    if (!Trim(line).empty()) lines.push_back(Trim(line));
  }
  if (lines.empty()) return std::nullopt;
  return std::string(lines.back());
}

}  // namespace footprint
