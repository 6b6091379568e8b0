// The processes below this one, and the CPU time they used over a stretch of time that the
// kernel's rusage of waited-for children does not show: what live descendants used (a
// DataLoader's persistent workers, a multiprocessing.Pool), and nothing from before it.
//
// Thread-safety: free functions; the snapshots are plain values.
#ifndef FOOTPRINT_SESSION_DESCENDANTS_H_
#define FOOTPRINT_SESSION_DESCENDANTS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "footprint/env.h"

namespace footprint {

// The children of `pid` under `proc_root`, from the kernel's children list of each of its
// threads (a child is listed under the thread that forked it).
std::vector<pid_t> ChildrenOf(const std::string& proc_root, pid_t pid);

// Every process below this one, from the kernel's children lists of each thread.
std::vector<pid_t> Descendants(Env& env);

// One descendant's cumulative CPU: its own and that of the children it waited for
// (/proc/PID/stat utime + cutime, stime + cstime), in seconds. PID and start time name the
// process, so that a recycled PID is another process.
struct ProcessCpu {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  double user_s = 0;
  double system_s = 0;
};
std::vector<ProcessCpu> DescendantCpu(Env& env);

// The CPU time descendants used between two snapshots that is not in this process's
// RUSAGE_CHILDREN, as {user, system} seconds: what the processes alive at `after` used since
// `before` (all of it for new ones), less what processes that were alive at `before` and gone
// at `after` had used by `before` (waiting for them folded their whole lives into their
// parent's account, RUSAGE_CHILDREN included).
struct CpuSeconds {
  double user_s = 0;
  double system_s = 0;
};
CpuSeconds CpuBetween(const std::vector<ProcessCpu>& before, const std::vector<ProcessCpu>& after);

}  // namespace footprint

#endif  // FOOTPRINT_SESSION_DESCENDANTS_H_
