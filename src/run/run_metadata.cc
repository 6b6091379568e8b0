#include "run/run_metadata.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string_view>
#include <utility>

#include "core/identity.h"
#include "run/git_state.h"
#include "run/slurm.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

using json = nlohmann::json;

std::string FirstLine(std::string_view s) { return std::string(Trim(s.substr(0, s.find('\n')))); }

// python, python3, python3.11, pypy3, node, ruby, perl, bash, sh, Rscript, julia, lua5.4 ...
// Compared by hand: compiling the same std::regex cost 0.12 ms of every run's start-up.
bool IsInterpreter(std::string_view program) {
  auto versioned = [&](std::string_view stem) {  // the stem, then only digits and dots
    return program.starts_with(stem) &&
           program.find_first_not_of("0123456789.", stem.size()) == std::string_view::npos;
  };
  static constexpr std::string_view kNames[] = {"node", "nodejs", "ruby",  "perl",    "sh", "bash",
                                                "dash", "zsh",    "julia", "Rscript", "php"};
  return versioned("python") || versioned("pypy") || versioned("lua") ||
         std::find(std::begin(kNames), std::end(kNames), program) != std::end(kNames);
}

}  // namespace

json HardwareInfo() {
  json hw = json::object();
  if (auto cpuinfo = ReadWholeFile("/proc/cpuinfo"); cpuinfo.ok()) {
    size_t p = cpuinfo->find("model name");
    if (p != std::string::npos) {
      size_t colon = cpuinfo->find(':', p);
      hw["cpu_model"] = FirstLine(std::string_view(*cpuinfo).substr(colon + 1));
    }
  }
  hw["logical_cpus"] = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (auto mem = ReadWholeFile("/proc/meminfo"); mem.ok()) {
    if (auto info = ParseMemInfo(*mem)) hw["memory_bytes"] = info->total_bytes;
  }
  utsname u;
  if (::uname(&u) == 0) {
    hw["kernel"] = std::string(u.sysname) + " " + u.release;
    hw["arch"] = u.machine;
  }
  if (auto os = ReadWholeFile("/etc/os-release"); os.ok()) {
    size_t p = os->find("PRETTY_NAME=");
    if (p != std::string::npos) {
      std::string v = FirstLine(std::string_view(*os).substr(p + 12));
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      hw["os"] = v;
    }
  }
  return hw;
}

namespace {

// `git status --porcelain --untracked-files=no`'s verdict; nullopt when git cannot tell.
std::optional<bool> DirtyFromGitStatus(const std::string& dir) {
  auto status = Capture({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"});
  if (!status) return std::nullopt;
  return !Trim(*status).empty();
}

// Asking git: for what the files alone do not settle (an unborn branch, reftable refs).
json GitInfoFromGit(const std::string& dir) {
  auto commit = Capture({"git", "-C", dir, "rev-parse", "HEAD"});
  if (!commit) return nullptr;
  json g = {{"commit", FirstLine(*commit)}};
  if (auto dirty = DirtyFromGitStatus(dir)) g["dirty"] = *dirty;
  if (auto branch = Capture({"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"})) {
    g["branch"] = FirstLine(*branch);
  }
  return g;
}

}  // namespace

json GitInfo(const std::string& dir, Env& env) {
  // Outside a repository a run never pays for git; inside, git starts only where the
  // repository's files cannot settle the answer (run/git_state.h).
  std::optional<GitLayout> repo = FindGitRepository(dir, env);
  if (!repo) return nullptr;
  std::optional<GitHead> head = ReadGitHead(*repo, env);
  if (!head) return GitInfoFromGit(dir);
  json g = {{"commit", head->commit}, {"branch", head->branch}};
  switch (GitDirtyFromIndex(*repo, head->commit, env)) {
    case GitDirty::kClean:
      g["dirty"] = false;
      break;
    case GitDirty::kDirty:
      g["dirty"] = true;
      break;
    case GitDirty::kUnsure:
      if (auto dirty = DirtyFromGitStatus(dir)) g["dirty"] = *dirty;
      break;
  }
  return g;
}

json MonitorIdentity() {
  json m = {{"pid", ::getpid()}, {"boot_id", BootId()}, {"host", HostName()}};
  if (auto t = StartTicks(::getpid())) m["start_ticks"] = *t;
  return m;
}

std::string DefaultRunName(const std::vector<std::string>& command) {
  if (command.empty()) return "program";
  auto base = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
  const std::string program = base(command[0]);
  if (!IsInterpreter(program)) return program;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg == "-m" && i + 1 < command.size()) return command[i + 1];
    // Inline code (-c; -e but for shells, where it means errexit): no script to name it after.
    if (arg == "-c" || (arg == "-e" && !program.ends_with("sh"))) break;
    if (arg == "-W" || arg == "-X") {
      ++i;  // an option with a value
      continue;
    }
    if (arg.empty() || arg[0] != '-') return base(arg);
  }
  return program;
}

RunRecord NewRunRecord(const std::vector<std::string>& command, std::string name,
                       std::string description, const std::map<std::string, std::string>& tags,
                       const std::map<std::string, std::string>& params, bool record_git,
                       json& meta, Env& env) {
  RunRecord run;
  run.id = NewRunId();
  run.name = name.empty() ? DefaultRunName(command) : std::move(name);
  run.description = std::move(description);
  run.command = command;
  run.cwd = CurrentDir();
  run.host = HostName();
  run.user = UserName(env.Var("USER"));
  run.started_at_ns = RealtimeNs();
  meta = {{"tags", tags},
          {"params", params},
          {"hardware", HardwareInfo()},
          {"monitor", MonitorIdentity()},
          {"footprint_version", FootprintVersion()}};
  if (json slurm = SlurmJob(env); !slurm.is_null()) meta["slurm"] = std::move(slurm);
  if (record_git) {
    json git = GitInfo(run.cwd, env);
    if (!git.is_null()) meta["git"] = git;
  }
  return run;
}

}  // namespace footprint
