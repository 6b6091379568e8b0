#include "run/container.h"

#include <time.h>
#include <unistd.h>

#include <set>
#include <string_view>

#include "footprint/env.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

const std::set<std::string_view> kEngines = {"podman", "docker", "nerdctl", "podman-remote"};

// Global options of the engines that take a value as the next word.
const std::set<std::string_view> kGlobalValueOptions = {"--runtime",
                                                        "--root",
                                                        "--runroot",
                                                        "--cgroup-manager",
                                                        "--log-level",
                                                        "--url",
                                                        "--connection",
                                                        "--identity",
                                                        "--storage-driver",
                                                        "--storage-opt",
                                                        "--tmpdir",
                                                        "--events-backend",
                                                        "--conmon",
                                                        "--hooks-dir",
                                                        "--runtime-flag",
                                                        "--config",
                                                        "-H",
                                                        "--host",
                                                        "--context",
                                                        "-c",
                                                        "-l",
                                                        "--namespace",
                                                        "-n",
                                                        "--address",
                                                        "-a",
                                                        "--snapshotter",
                                                        "--data-root",
                                                        "--cni-path",
                                                        "--tlscacert",
                                                        "--tlscert",
                                                        "--tlskey"};

// Options of `run` that take no value (all others do, unless written --name=value).
const std::set<std::string_view> kRunFlags = {"--detach",
                                              "--rm",
                                              "--interactive",
                                              "--tty",
                                              "--privileged",
                                              "--init",
                                              "--read-only",
                                              "--read-only-tmpfs",
                                              "--publish-all",
                                              "--quiet",
                                              "--replace",
                                              "--no-healthcheck",
                                              "--no-hosts",
                                              "--oom-kill-disable",
                                              "--sig-proxy",
                                              "--rootfs",
                                              "--env-host",
                                              "--http-proxy",
                                              "--disable-content-trust",
                                              "--help"};
constexpr std::string_view kRunShortFlags = "dit";  // -d, -i, -t, combined as -dit

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Reads `run`'s options from word `i` on, up to the image.
void ParseRunOptions(const std::vector<std::string>& w, size_t i, ContainerCommand& c) {
  for (; i < w.size(); ++i) {
    const std::string& word = w[i];
    if (word == "--") {
      if (i + 1 < w.size()) c.image = w[i + 1];
      return;
    }
    if (word.empty() || word[0] != '-') {
      c.image = word;
      return;
    }
    const size_t eq = word.find('=');
    const std::string name = word.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
    const bool short_flags = word.size() > 1 && word[1] != '-' &&
                             word.find_first_not_of(kRunShortFlags, 1) == std::string::npos;
    if (name == "--detach" || (short_flags && word.find('d') != std::string::npos)) {
      c.detached = value.empty() || value == "true";
    }
    if (short_flags || kRunFlags.contains(name) || eq != std::string::npos) continue;
    if (i + 1 < w.size()) value = w[++i];
    if (name == "--cgroup-parent") c.cgroup_parent = value;
  }
}

// The engine's cgroup manager, when footprint must ask it (docker's daemon chooses); an error
// line when the daemon cannot be reached.
Status CheckCgroupDriver(const ContainerCommand& c) {
  if (c.engine != "docker") {
    if (c.cgroup_manager == "systemd") {
      return Unsupported(c.engine +
                         " --cgroup-manager=systemd: footprint measures containers under "
                         "cgroupfs only; leave the option out (footprint adds "
                         "--cgroup-manager=cgroupfs)");
    }
    return Status::Ok();
  }
  const std::string problem = DockerDaemonProblem();
  return problem.empty() ? Status::Ok() : Unsupported(problem);
}

}  // namespace

std::string DockerDaemonProblem() {
  const std::string driver = CaptureFirstLine({"docker", "info", "--format", "{{.CgroupDriver}}"});
  if (driver.empty()) {
    return "docker's daemon cannot be reached (docker info failed): start it (systemctl start "
           "docker), or run the container with podman";
  }
  if (driver == "systemd") {
    return "docker's daemon uses the systemd cgroup driver, under which footprint cannot give "
           "the container a parent cgroup; see docs/containers.md#docker for the cgroupfs driver";
  }
  return "";
}

std::optional<ContainerCommand> ParseContainerCommand(const std::vector<std::string>& w) {
  if (w.empty() || !kEngines.contains(BaseName(w[0]))) return std::nullopt;
  ContainerCommand c;
  c.engine = BaseName(w[0]);
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& word = w[i];
    if (word.rfind("--cgroup-manager", 0) == 0) {
      c.cgroup_manager = word.find('=') != std::string::npos ? word.substr(word.find('=') + 1)
                         : i + 1 < w.size()                  ? w[i + 1]
                                                             : "";
    }
    if (!word.empty() && word[0] == '-') {
      if (word.find('=') == std::string::npos && kGlobalValueOptions.contains(word)) ++i;
      continue;
    }
    if (word == "container") continue;  // podman container run ...
    if (word != "run") return std::nullopt;
    c.run_word = i;
    ParseRunOptions(w, i + 1, c);
    return c;
  }
  return std::nullopt;
}

Result<std::unique_ptr<ContainerWatch>> ContainerWatch::ForCommand(
    const std::vector<std::string>& command, const std::string& run_id) {
  std::optional<ContainerCommand> parsed = ParseContainerCommand(command);
  if (!parsed) return std::unique_ptr<ContainerWatch>();
  if (!parsed->cgroup_parent.empty()) {
    return InvalidArgument("the command sets --cgroup-parent " + parsed->cgroup_parent +
                           ": footprint puts the container in a parent cgroup of its own to "
                           "measure it; leave the option out");
  }
  FP_RETURN_IF_ERROR(CheckCgroupDriver(*parsed));
  static const CgroupSupport own = DetectCgroups();
  const CgroupSupport roots = AtHierarchyRoots(own);
  if (!roots.why_no_cpu.empty()) {
    return Unsupported("footprint cannot measure the container: " + roots.why_no_cpu);
  }
  std::unique_ptr<ContainerWatch> w(new ContainerWatch());
  const std::string name = "footprint-container-" + run_id;
  FP_ASSIGN_OR_RETURN(w->cgroup_, RunCgroup::Create(roots, name));
  w->parsed_ = *parsed;
  w->parent_ = "/" + name;
  w->roots_ = own.all_roots;
  const std::string tmp = Env::Default().Var("TMPDIR").value_or("");
  w->cidfile_ = (tmp.empty() ? "/tmp" : tmp) + "/" + name + ".cid";
  ::unlink(w->cidfile_.c_str());  // the engines refuse to overwrite one
  w->engine_version_ = CaptureFirstLine({command[0], "--version"});
  if (!parsed->image.empty()) {
    w->image_digest_ =
        CaptureFirstLine({command[0], "image", "inspect", "--format", "{{.Id}}", parsed->image});
  }
  return w;
}

void ContainerWatch::Rewrite(std::vector<std::string>& command) const {
  std::vector<std::string> added = {"--cidfile", cidfile_, "--cgroup-parent", parent_};
  command.insert(command.begin() + static_cast<std::ptrdiff_t>(parsed_.run_word) + 1, added.begin(),
                 added.end());
  if (parsed_.engine != "docker" && parsed_.engine != "podman-remote" &&
      parsed_.cgroup_manager.empty()) {
    command.insert(command.begin() + 1, "--cgroup-manager=cgroupfs");
  }
}

ContainerWatch::~ContainerWatch() {
  cgroup_.reset();
  for (const std::string& root : roots_) RemoveEmptyCgroupTree(root + parent_);
  ::unlink(cidfile_.c_str());
}

int ContainerWatch::WaitWhileRunning(const sigset_t& signals) const {
  const timespec poll = {0, 20'000'000};
  while (cgroup_->Populated()) {
    siginfo_t info;
    const int sig = sigtimedwait(&signals, &info, &poll);
    // SIGCHLD is taken here; the caller reaps what ended with wait4(WNOHANG) all the same.
    if (sig > 0 && sig != SIGCHLD) return sig;
  }
  return 0;
}

nlohmann::json ContainerWatch::Meta(int client_status) const {
  auto id = ReadWholeFile(cidfile_);
  nlohmann::json m = {{"engine", parsed_.engine},
                      {"engine_version", engine_version_},
                      {"id", id.ok() ? std::string(Trim(*id)) : ""},
                      {"image", parsed_.image},
                      {"image_id", image_digest_},
                      {"detached", parsed_.detached},
                      {"cgroup_parent", parent_},
                      {"ran", NotRunLine(client_status).empty()}};
  return m;
}

std::string ContainerWatch::NotRunLine(int client_status) const {
  auto id = ReadWholeFile(cidfile_);
  const bool created = id.ok() && !Trim(*id).empty();
  if (created && (client_status < 125 || client_status > 127)) return "";
  return "the container did not run (" + parsed_.engine + " exited with " +
         std::to_string(client_status) +
         ", its error above): none of its figures are in this run; where the runtime refuses "
         "hybrid cgroups or resource limits, see docs/containers.md#runtime";
}

}  // namespace footprint
