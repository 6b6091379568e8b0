// GatedChild: the measured command, started and held at a gate until the run's clock starts.
//
// The child is made inside the run's cgroups before anything else happens in it, without
// waiting for the kernel: where the run has a cgroup v2 directory it is forked straight into it
// (clone3 with CLONE_INTO_CGROUP), and it moves itself into the v1 hierarchies by writing 0 to
// their `tasks` files (a thread moving itself takes no global lock). Moving another process
// (writing its pid to cgroup.procs) write-locks every fork on the machine, and on an idle
// machine the first such move waits 5-25 ms for an RCU grace period (docs/performance.md).
//
// Between clone3 and exec the child may not allocate: a raw clone3 takes none of glibc's fork
// locks, so another thread's malloc may have been cut in half. Everything it needs (argv, the
// environment with a slot for t0) is built before the fork.
#ifndef FOOTPRINT_RUN_GATED_CHILD_H_
#define FOOTPRINT_RUN_GATED_CHILD_H_

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "footprint/status.h"

namespace footprint {

class RunCgroup;

// What the child sets up before exec: what a program using the API needs to join the run
// (include/footprint/api.h), and the command's own variables, folder and output.
struct JoinEnvironment {
  const char* run_id;
  const char* db;
  const std::map<std::string, std::string>* extra;  // MonitorOptions::environment
  const char* working_dir;                          // nullptr: footprint's own
  int output_fd;                                    // for stdout and stderr; -1: footprint's
  int stdin_fd = -1;   // the command's stdin (a driver's pipe); -1: footprint's
  int stdout_fd = -1;  // the command's stdout (a driver's pipe); -1: as output_fd
  // footprint's pid, when the command is to die with it (no cgroup whose guard would stop its
  // tree: run/orphan_guard.h); 0: it lives on.
  pid_t die_with = 0;
};

class GatedChild {
 public:
  // Starts the child, in `cgroup` when one is given (nullptr: footprint's own), with the signal
  // mask `child_mask`; it waits at the gate, then execs `command` with `env`. IoError when the
  // child cannot be started or cannot enter the cgroup (the child is then gone).
  static Result<std::unique_ptr<GatedChild>> Start(const std::vector<std::string>& command,
                                                   const sigset_t& child_mask,
                                                   const JoinEnvironment& env,
                                                   const RunCgroup* cgroup);
  ~GatedChild() { Abandon(); }
  GatedChild(const GatedChild&) = delete;
  GatedChild& operator=(const GatedChild&) = delete;

  pid_t pid() const { return pid_; }
  // Whether the child was forked straight into the cgroup v2 directory.
  bool cloned_into_cgroup() const { return cloned_into_cgroup_; }
  // Closes the gate unopened and reaps the child, which exits without running the command.
  void Abandon();
  // Opens the gate, sending the run's t0, and calls `meanwhile` while the child execs; returns
  // why exec failed ("" when it did not).
  std::string Open(int64_t t0, const std::string& program, const std::function<void()>& meanwhile);

 private:
  GatedChild() = default;
  pid_t pid_ = -1;
  int gate_fd_ = -1, report_fd_ = -1;
  bool cloned_into_cgroup_ = false;
};

}  // namespace footprint

#endif  // FOOTPRINT_RUN_GATED_CHILD_H_
