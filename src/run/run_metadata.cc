#include "run/run_metadata.h"

#include <pwd.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/strings.h"

extern char** environ;

namespace footprint {
namespace {

using json = nlohmann::json;

std::string FirstLine(std::string_view s) { return std::string(Trim(s.substr(0, s.find('\n')))); }

std::string BootId() {
  auto id = ReadWholeFile("/proc/sys/kernel/random/boot_id");
  return id.ok() ? FirstLine(*id) : "";
}

std::optional<uint64_t> StartTicks(pid_t pid) {
  auto text = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  auto st = ParseProcStat(*text);
  if (!st) return std::nullopt;
  return st->starttime;
}

}  // namespace

std::string_view FootprintVersion() { return FOOTPRINT_VERSION; }

std::optional<std::string> Capture(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env,
                                   std::string_view input) {
  int out[2], in[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  if (!input.empty() && ::pipe2(in, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return std::nullopt;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (in[0] >= 0) {
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // footprint's environment with `env` on top.
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!env.contains(std::string(entry.substr(0, entry.find('='))))) entries.emplace_back(entry);
  }
  for (const auto& [k, v] : env) entries.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (in[0] >= 0) {
    ::close(in[0]);
    if (rc == 0) (void)!::write(in[1], input.data(), input.size());  // small: fits the pipe
    ::close(in[1]);
  }
  if (rc != 0) {
    ::close(out[0]);
    return std::nullopt;
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

std::string NewRunId() {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::string UserName() {
  if (passwd* pw = ::getpwuid(::geteuid())) return pw->pw_name;
  const char* u = std::getenv("USER");
  return u ? u : std::to_string(::geteuid());
}

std::string CurrentDir() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? buf : "";
}

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

json GitInfo(const std::string& dir) {
  // Look for a repository first so that runs outside one never pay for starting git.
  bool in_repo = false;
  for (std::string d = dir; !d.empty();) {
    struct stat st;
    if (::stat((d + "/.git").c_str(), &st) == 0) {
      in_repo = true;
      break;
    }
    size_t slash = d.rfind('/');
    if (slash == std::string::npos || d == "/") break;
    d = slash == 0 ? "/" : d.substr(0, slash);
  }
  if (!in_repo) return nullptr;
  auto commit = Capture({"git", "-C", dir, "rev-parse", "HEAD"});
  if (!commit) return nullptr;
  json g = {{"commit", FirstLine(*commit)}};
  if (auto status = Capture({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"})) {
    g["dirty"] = !Trim(*status).empty();
  }
  if (auto branch = Capture({"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"})) {
    g["branch"] = FirstLine(*branch);
  }
  return g;
}

json MonitorIdentity() {
  json m = {{"pid", ::getpid()}, {"boot_id", BootId()}, {"host", HostName()}};
  if (auto t = StartTicks(::getpid())) m["start_ticks"] = *t;
  return m;
}

RunRecord NewRunRecord(const std::vector<std::string>& command, std::string name,
                       std::string description, const std::map<std::string, std::string>& tags,
                       const std::map<std::string, std::string>& params, bool record_git,
                       json& meta) {
  RunRecord run;
  run.id = NewRunId();
  if (name.empty() && !command.empty()) {
    size_t slash = command[0].rfind('/');
    name = slash == std::string::npos ? command[0] : command[0].substr(slash + 1);
  }
  run.name = std::move(name);
  run.description = std::move(description);
  run.command = command;
  run.cwd = CurrentDir();
  run.host = HostName();
  run.user = UserName();
  run.started_at_ns = RealtimeNs();
  meta = {{"tags", tags},
          {"params", params},
          {"hardware", HardwareInfo()},
          {"monitor", MonitorIdentity()},
          {"footprint_version", FootprintVersion()}};
  if (record_git) {
    json git = GitInfo(run.cwd);
    if (!git.is_null()) meta["git"] = git;
  }
  return run;
}

Status ReconcileInterrupted(Store& store, std::vector<RunRecord>& runs) {
  // Without a heartbeat for this long, a run monitored on another machine counts as lost.
  constexpr int64_t kStaleNs = 120 * kNsPerSec;
  const std::string host = HostName();
  const std::string boot = BootId();
  const int64_t now = RealtimeNs();
  for (RunRecord& r : runs) {
    if (r.status != RunStatus::kRunning) continue;
    json meta = json::parse(r.meta_json, nullptr, false);
    json mon = meta.is_object() ? meta.value("monitor", json::object()) : json::object();
    bool dead;
    if (mon.value("host", "") == host && mon.value("boot_id", "") == boot) {
      auto pid = mon.value("pid", 0);
      auto ticks = StartTicks(static_cast<pid_t>(pid));
      dead = pid <= 0 || !ticks || *ticks != mon.value("start_ticks", uint64_t{0});
    } else if (mon.value("host", "") == host) {
      dead = true;  // the machine rebooted since
    } else {
      dead = now - r.heartbeat_ns.value_or(r.started_at_ns) > kStaleNs;
    }
    if (!dead) continue;
    r.status = RunStatus::kInterrupted;
    r.ended_at_ns = r.heartbeat_ns.value_or(r.started_at_ns);
    FP_RETURN_IF_ERROR(store.MarkInterrupted(r.id, *r.ended_at_ns));
  }
  return Status::Ok();
}

Result<std::vector<RunRecord>> ListReconciledRuns(Store& store) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return runs;
  FP_RETURN_IF_ERROR(ReconcileInterrupted(store, *runs));
  return runs;
}

}  // namespace footprint
