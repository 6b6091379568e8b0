// The container probe: what a container's processes do, read from the cgroups its engine put
// them in (docs/containers.md). The engine's processes live outside the command's tree (podman's
// conmon, docker's containerd-shim are not its children), so the process-tree probe never sees
// them; this probe reads their cgroup, as entity "container":
//
//   cpu          cpu.stat (v2) or cpuacct (v1), as a rate
//   memory       anon + mapped files + shmem (memory.stat, hierarchical), page cache apart
//   page_cache   memory.stat's file (v2) / total_cache (v1)
//   processes    pids.current
//   io.read/io.write  io.stat (v2) or blkio's recursive service bytes (v1), as rates
//
// Its totals (Finish) are the container's own (container_*) and are added to the run's cpu,
// peak memory and io totals, which then hold the client and its container together. The engine's
// own memory figure (current - inactive_file, as `docker stats` shows it) and the shm peak are
// kept beside them. Counters start at zero at Begin. The cgroup is a parent footprint made, which
// keeps the counters of the container's own cgroup when the engine removes that.
//
// Thread-safety: Sample() runs on the sampler thread, Finish() after it stopped.
#ifndef FOOTPRINT_PROBE_CONTAINER_PROBE_H_
#define FOOTPRINT_PROBE_CONTAINER_PROBE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "probe/cgroup.h"
#include "probe/counter_rate.h"
#include "probe/probe.h"
#include "probe/process_members.h"

namespace footprint {

class ContainerProbe final : public Probe {
 public:
  // `cgroup` outlives the probe.
  explicit ContainerProbe(const RunCgroup* cgroup) : cgroup_(cgroup) {}

  std::string_view name() const override { return "container"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void Begin(int64_t t0_ns) override;
  void Finish(ProbeFindings& findings) override;
  // The engine or its runtime refused the container: Finish claims none of its figures (the
  // engine's own helpers may have left some CPU time in the cgroup).
  void ContainerDidNotRun() { did_not_run_ = true; }

 private:
  // One reading of every counter; fields the cgroup lacks stay nullopt.
  struct Reading {
    std::optional<std::pair<int64_t, int64_t>> cpu_ns;  // user, system
    std::optional<RunCgroup::MemoryStat> memory;
    std::optional<int64_t> current_bytes;
    std::optional<std::pair<int64_t, int64_t>> io_bytes;  // read, written
    std::optional<int64_t> pids;
  };
  Reading Read() const;
  void Keep(const Reading& r);  // raises the peaks and keeps the cumulative counters

  const RunCgroup* cgroup_;
  std::vector<int> slot_ = std::vector<int>(kMetricCount, -1);
  Reading baseline_;                                           // at Begin
  std::pair<int64_t, int64_t> cpu_ns_{0, 0}, io_bytes_{0, 0};  // since Begin, last read
  CounterRate cpu_rate_, read_rate_, write_rate_;
  int64_t peak_memory_ = 0, peak_engine_memory_ = 0, peak_shm_ = 0, peak_pids_ = 0;
  int64_t peak_page_cache_ = 0;
  bool read_once_ = false;
  bool did_not_run_ = false;
};

// The processes a run claims GPU use for when it measures a container: those of the
// container's cgroup (NVML reports host PIDs, which cgroup.procs lists), and those of the
// command's tree when there is one (the engine's client). The GPU probe's .tree metrics then
// hold the container's share (docs/containers.md#gpu).
class ContainerMembers final : public ProcessMembers {
 public:
  // `cgroup` outlives this; `tree` may be null (an attached container) and is set later.
  explicit ContainerMembers(const RunCgroup* cgroup) : cgroup_(cgroup) {}
  void set_tree(ProcessMembers* tree) { tree_ = tree; }
  const std::vector<pid_t>& MembersAt(int64_t now_ns) override;

 private:
  const RunCgroup* cgroup_;
  ProcessMembers* tree_ = nullptr;
  std::vector<pid_t> members_, container_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_CONTAINER_PROBE_H_
