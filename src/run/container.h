// Containers a run starts or attaches to (docs/containers.md): `footprint run -- podman run ...`
// (docker, nerdctl, podman-remote alike). The container's processes live in cgroups its engine
// makes, not under the client that footprint started, so the command is rewritten to put the
// container below a parent cgroup footprint made at the hierarchies' roots (--cgroup-parent;
// podman and nerdctl also get --cgroup-manager=cgroupfs) and to write its id (--cidfile). The
// parent outlives the container's own cgroup, which the engine removes when it ends, so its
// counters still hold the container's whole life when the run ends.
#ifndef FOOTPRINT_RUN_CONTAINER_H_
#define FOOTPRINT_RUN_CONTAINER_H_

#include <signal.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/monitor.h"
#include "footprint/status.h"
#include "probe/cgroup.h"

namespace footprint {

// What the words of a command say about the container it starts.
struct ContainerCommand {
  std::string engine;          // podman, docker, nerdctl, podman-remote (argv[0]'s base name)
  size_t run_word = 0;         // index of `run` in the command
  bool detached = false;       // -d / --detach: the client returns once it started
  std::string image;           // the first word after run's options
  std::string cgroup_parent;   // the command's own --cgroup-parent, if it has one
  std::string cgroup_manager;  // the command's own --cgroup-manager (podman, nerdctl)
};

// Why docker's containers cannot be measured here (its daemon is not reached, or uses the
// systemd cgroup driver), or "".
std::string DockerDaemonProblem();

// nullopt when `command` is not `ENGINE [global options] run ...` of a known engine.
std::optional<ContainerCommand> ParseContainerCommand(const std::vector<std::string>& command);

class ContainerWatch {
 public:
  // For a command that starts a container: makes the parent cgroup. nullptr for any other
  // command. One line each, before anything runs: the engine's daemon cannot be reached, a
  // systemd cgroup driver, the command's own --cgroup-parent, no permission to make a cgroup
  // at the root (rootless without delegation).
  static Result<std::unique_ptr<ContainerWatch>> ForCommand(const std::vector<std::string>& command,
                                                            const std::string& run_id);
  // Adds the options that put the container in the parent and write its id to `command`.
  void Rewrite(std::vector<std::string>& command) const;
  // Removes the parent and the empty cgroups the engine left under it, in every hierarchy.
  ~ContainerWatch();

  const RunCgroup& cgroup() const { return *cgroup_; }

  // After the client ended: waits while a process is left in the container's cgroups (a
  // detached container runs on; an attached one's engine cleans up), until a stop signal of
  // `signals` arrives (then returned; 0 otherwise). SIGCHLD is left pending for the caller.
  int WaitWhileRunning(const sigset_t& signals) const;

  // meta.container: engine and its version, id, image and digest, the cgroups read, and
  // whether the container ran. `client_status`: the client's exit status (125-127: the engine
  // or the runtime refused the container).
  nlohmann::json Meta(int client_status) const;
  // One line for the user when the container did not run, or "".
  std::string NotRunLine(int client_status) const;

 private:
  ContainerWatch() = default;

  ContainerCommand parsed_;
  std::string parent_;              // the --cgroup-parent given, "/footprint-RUN"
  std::string cidfile_;             // where the engine writes the container's id
  std::vector<std::string> roots_;  // every hierarchy's root, for the cleanup
  std::unique_ptr<RunCgroup> cgroup_;
  std::string engine_version_, image_digest_;
};

// A running container, as its engine describes it (`footprint run --container`).
struct RunningContainer {
  std::string engine;  // podman, docker, nerdctl
  std::string engine_version;
  std::string id, image, image_id;
  pid_t pid = 0;  // its main process, in the host's PID namespace
};

// Asks each engine on PATH about the container named or numbered `name`. One line each: a word
// that is no container name, no engine, no such container, one that is not running.
Result<RunningContainer> FindRunningContainer(const std::string& name);

// `footprint run --container ID|NAME [--duration D]`: measures a running container from its
// engine's own cgroups (those of its main process), from now until it exits, `duration_ns`
// passes (0: no limit) or a stop signal arrives; the run's totals are the container's.
Result<MonitorOutcome> RunAttachedContainer(Store& store, const MonitorOptions& options,
                                            const std::string& name, int64_t duration_ns);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_CONTAINER_H_
