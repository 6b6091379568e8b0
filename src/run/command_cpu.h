// The CPU time a load's command has used so far (footprint load, LoadSummary::cpu_s): read at
// the load's first query and after its last answer, so that the start-up before `ready` (model
// load, imports) and the exit after the end are not charged to the queries.
//
// Source: the command's cgroup (cgroup v2 cpu.stat usage_usec, the whole process tree) when it
// has one of its own, the run's; else its process's utime + stime from /proc/PID/stat (all its
// threads, not the processes it starts; 10 ms ticks).
//
// Thread-safety: one thread at a time.
#ifndef FOOTPRINT_RUN_COMMAND_CPU_H_
#define FOOTPRINT_RUN_COMMAND_CPU_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "util/file.h"

namespace footprint {

class CommandCpu {
 public:
  CommandCpu() = default;
  // Opens the source for `pid`, which must not have been reaped yet.
  explicit CommandCpu(pid_t pid);
  // The CPU seconds so far; nullopt when the source cannot be read (the command is gone).
  std::optional<double> Read() const;
  // "cgroup" or "process" (docs/evaluation.md).
  const std::string& source() const { return source_; }

 private:
  KernelFile file_;
  bool from_cgroup_ = false;
  std::string source_;
};

}  // namespace footprint

#endif  // FOOTPRINT_RUN_COMMAND_CPU_H_
