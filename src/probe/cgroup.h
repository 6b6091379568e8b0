// Cgroups for a run: the kernel's exact accounting of everything a process tree does,
// including processes that exit between samples, are never waited for, or escape by
// double-forking.
//
// Detection (DetectCgroups) runs once: it finds the cgroup v2 and v1 (cpuacct, memory)
// hierarchies this process lives in and whether a child cgroup can be made there. A RunCgroup
// is one such child per usable hierarchy; the command's process joins them before exec.
// A container's cgroups belong to its engine, not to footprint's own subtree: footprint makes a
// parent for them at the hierarchies' roots (AtHierarchyRoots, docs/containers.md) or, for a
// running container, reads the engine's own (RunCgroup::Observe).
//
// Thread-safety: RunCgroup readers may be called from the sampler thread while the main
// thread waits; construction and destruction happen on the main thread.
#ifndef FOOTPRINT_PROBE_CGROUP_H_
#define FOOTPRINT_PROBE_CGROUP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "footprint/status.h"
#include "util/file.h"

namespace footprint {

struct CgroupSupport {
  // Directory of this process's own cgroup in each hierarchy, or empty (with a reason).
  std::string v2_dir;
  std::string v1_cpuacct_dir;
  std::string v1_memory_dir;
  bool v2_memory = false;     // memory.peak/current available to children of v2_dir
  std::string why_no_cpu;     // empty when CPU accounting is available
  std::string why_no_memory;  // empty when memory accounting is available
  // I/O and process counts, wanted for containers only (AtHierarchyRoots sets them): v1 blkio
  // and pids; under v2 they are the v2 directory's io.stat and pids.current.
  std::string v1_blkio_dir;
  std::string v1_pids_dir;
  // Where each hierarchy is mounted (its root directory), "" when it is not.
  std::string v2_root, v1_cpuacct_root, v1_memory_root, v1_blkio_root, v1_pids_root;
  std::vector<std::string> all_roots;  // every mounted cgroup hierarchy, v1 and v2
};

// Inspects /proc/self/mountinfo and /proc/self/cgroup. `proc_root` lets tests use fixtures.
CgroupSupport DetectCgroups(const std::string& proc_root = "/proc");

// The cgroups process `pid` is in (a container's main process), one directory per hierarchy,
// whether writable or not; why_no_* stay empty.
CgroupSupport CgroupsOfProcess(pid_t pid, const std::string& proc_root = "/proc");

// The same hierarchies with their roots as the directories to create in (a cgroup there has
// the same path in every hierarchy, as an engine's --cgroup-parent needs). A root this process
// cannot write is left out, with the reason in why_no_cpu/why_no_memory.
CgroupSupport AtHierarchyRoots(const CgroupSupport& own);

// Removes `dir` and the empty cgroups below it, deepest first (an engine leaves some, e.g.
// podman's conmon/); one that still holds processes stays. True when `dir` is gone.
bool RemoveEmptyCgroupTree(const std::string& dir);

// Creates cgroups for one run and reads them. The destructor moves any process still inside
// back to footprint's own cgroup and removes the directories.
class RunCgroup {
 public:
  // Creates `name` under each usable hierarchy. Unsupported when none can be made.
  static Result<std::unique_ptr<RunCgroup>> Create(const CgroupSupport& support,
                                                   const std::string& name);
  // Reads cgroups that exist already (a running container's, one directory per hierarchy as
  // `dirs` gives them); they are neither joined nor removed.
  static Result<std::unique_ptr<RunCgroup>> Observe(const CgroupSupport& dirs);
  ~RunCgroup();

  // Moves process `pid` (with all its threads) into every cgroup of the run. IoError names
  // the cgroup that refused it.
  Status Join(pid_t pid) const;
  // For a child that joins the run itself before exec (run/gated_child.h): the cgroup v2
  // directory to fork it into (clone3 CLONE_INTO_CGROUP; -1: none), and the calling thread's
  // own move into every other cgroup of the run (the v2 one too unless `in_v2`), which takes
  // no global lock in v1 (its `tasks` file). Async-signal-safe and allocation-free: returns
  // 0, or the errno of the write that failed with the index of its directory in `failed`.
  int v2_dir_fd() const { return v2_dir_fd_; }
  int JoinCallingThread(bool in_v2, size_t& failed) const noexcept;
  const std::string& dir(size_t index) const { return dirs_[index]; }
  size_t dir_count() const { return dirs_.size(); }
  // cgroup.procs listing the tree's live processes (for enumeration without walking /proc),
  // and the file listing all their threads (v2 cgroup.threads, v1 tasks).
  const std::string& procs_path() const { return procs_path_; }
  const std::string& threads_path() const { return threads_path_; }

  bool has_cpu() const { return cpu_kind_ != CpuKind::kNone; }
  bool has_memory() const { return memory_peak_.is_open(); }

  // Cumulative CPU of every process that was ever in the cgroup, in ns (allocation-free).
  std::optional<int64_t> CpuUsageNs() const;
  // User and system split of the same, in ns.
  std::optional<std::pair<int64_t, int64_t>> CpuUserSystemNs() const;
  // High-water mark of the cgroup's charged memory (RSS and page cache), bytes.
  std::optional<int64_t> MemoryPeakBytes() const;
  // What the cgroup's memory.stat says now (allocation-free), bytes. Each page is counted once,
  // in the cgroup it was first charged to: file pages another cgroup read first are not here.
  struct MemoryStat {
    int64_t anon = 0;         // v2 anon, v1 rss (anonymous and swap cache, with huge pages)
    int64_t file_mapped = 0;  // v2 file_mapped, v1 mapped_file (mapped shmem included)
    int64_t page_cache = 0;   // v2 file, v1 cache (shmem included)
    int64_t shmem = 0;        // tmpfs and shared memory (/dev/shm), mapped or not
    int64_t inactive_file = 0;
  };
  // Hierarchical: the cgroup and every cgroup below it (v1: the total_ keys).
  std::optional<MemoryStat> ReadMemoryStat() const;
  // Charged memory now (v2 memory.current, v1 memory.usage_in_bytes), page cache included.
  std::optional<int64_t> MemoryCurrentBytes() const;
  // Bytes read and written on block devices (v2 io.stat, v1 blkio recursive), when known.
  std::optional<std::pair<int64_t, int64_t>> IoBytes() const;
  // Processes (tasks) in the cgroup and below it now (pids.current), when known.
  std::optional<int64_t> PidsCurrent() const;
  // Whether any process is in the cgroups or below them (v2 cgroup.events, v1 lists).
  bool Populated() const;
  // The processes in the cgroup and below it now (cgroup.procs of the first hierarchy).
  void ListPids(std::vector<pid_t>& out) const;

  // Which kernel interface supplied each figure, e.g. "cgroup v2 cpu.stat".
  std::string cpu_source() const;
  std::string io_source() const;
  std::string memory_source() const;

 private:
  enum class CpuKind { kNone, kV2, kV1 };
  RunCgroup() = default;
  static Result<std::unique_ptr<RunCgroup>> Open(const CgroupSupport& support,
                                                 const std::string& name, bool create);
  // Open's step for one hierarchy: `parent` itself (observed) or its new child `name`
  // (`create`), recorded with its join files. The directory, or "" when `parent` is "" or
  // the cgroup cannot be made (then `error` says why).
  std::string AddHierarchy(const std::string& parent, const std::string& name, bool create,
                           const char* threads_file, std::string& error);
  void OpenCounters(const CgroupSupport& support, const std::string& v2_dir,
                    const std::string& blkio_dir, const std::string& pids_dir);

  bool owned_ = true;                 // created here: removed by the destructor
  std::vector<std::string> dirs_;     // the directories, one per hierarchy
  std::vector<std::string> parents_;  // footprint's own cgroup dir in the same hierarchy
  std::vector<int> join_fds_;         // cgroup.procs of each directory, opened once
  std::vector<int> self_join_fds_;    // v1 tasks (v2 cgroup.procs) of each, for "0"
  int v2_dir_fd_ = -1;                // the v2 directory; -1: none
  std::string procs_path_;
  std::string threads_path_;
  CpuKind cpu_kind_ = CpuKind::kNone;
  std::string cpu_dir_;
  KernelFile cpu_usage_;  // v2 cpu.stat or v1 cpuacct.usage
  KernelFile memory_peak_;
  KernelFile memory_stat_;
  KernelFile memory_current_;
  KernelFile io_stat_;  // v2 io.stat or v1 blkio.throttle.io_service_bytes_recursive
  KernelFile pids_current_;
  KernelFile events_;  // v2 cgroup.events
  bool memory_v2_ = false;
  bool io_v2_ = false;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_CGROUP_H_
