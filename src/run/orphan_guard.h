// OrphanGuard: when footprint dies (SIGKILL, a node's OOM killer) while its command runs, the
// command's process tree is stopped with it rather than left running unmeasured, reparented to
// PID 1 (docs/cli.md, run --keep-running).
//
// A run in a cgroup of its own is stopped by a guard: a small child of footprint, in a process
// group of its own (a terminal's Ctrl-C does not reach it), that waits on a pipe footprint
// holds. When footprint ends the watch (the command ended), the guard exits; when the pipe
// closes without that (footprint died), the guard kills the whole cgroup (cgroup.kill, or each
// process of cgroup.procs where the kernel lacks it), removes it, and exits. A run without a
// cgroup gets PR_SET_PDEATHSIG on its command instead (monitor.cc): only the command's own
// process, not what it started, can be stopped that way.
#ifndef FOOTPRINT_RUN_ORPHAN_GUARD_H_
#define FOOTPRINT_RUN_ORPHAN_GUARD_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "footprint/status.h"

namespace footprint {

class OrphanGuard {
 public:
  // Starts the guard of the cgroup whose process list is `procs_path` (its cgroup.procs).
  static Result<std::unique_ptr<OrphanGuard>> Start(const std::string& procs_path);
  // Starts a guard that SIGKILLs process group `group` while it has members instead
  // (`footprint serve`'s jobs: each a footprint command whose own guards stop its runs).
  static Result<std::unique_ptr<OrphanGuard>> StartForGroup(pid_t group);
  // Ends the watch: the guard exits without touching the cgroup, and is reaped.
  ~OrphanGuard();

  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

 private:
  OrphanGuard(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_;
  int fd_;  // the pipe's write end: a byte on it ends the watch
};

}  // namespace footprint

#endif  // FOOTPRINT_RUN_ORPHAN_GUARD_H_
