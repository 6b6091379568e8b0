// The process-tree probe: cpu, memory, threads, processes, io.read and io.write of a command
// and every process it starts.
//
// Membership comes from the run's cgroup when there is one (exact, includes escapees), else
// from walking /proc/PID/task/TID/children down from footprint itself, which is a child
// subreaper, so double-forked processes re-parent to it and stay in the walk.
//
// CPU and I/O are cumulative counters turned into rates. Without a cgroup the cumulative
// value is the sum over live processes of their own and their waited-for children's counters
// (the kernel folds a child's totals into its parent when the parent waits), plus the final
// counters of processes footprint reaped itself; so a child that lives 5 ms between two
// samples still counts. With a cgroup, CPU and the thread count come from the cgroup itself
// and each process costs one read of the small /proc/PID/statm for its RSS.
//
// At high rates the costly reads are spaced out (CallBudget, kKernelReadShare of a core each):
// with a cgroup, the tree's CPU comes from cpu.stat and its `memory` from the memory cgroup's
// one-number charge at every pass, O(1) whatever its size, while memory.stat and the
// per-process files (with the cgroup's lists: memory.rss_sum, threads, processes, io.*) are
// read as often as their cost allows, and at least every 100 ms; the last pass reads
// everything, and so does a pass where a metric given an interval of its own is due
// (Options::exact_intervals). Without a cgroup every pass walks the tree.
//
// `memory` is what the tree holds, each page once: with a memory cgroup, its anonymous pages
// plus its mapped files (memory.stat; see HeldPerStat), never below the largest process's RSS,
// followed between two memory.stat reads by the change of the cgroup's charge (memory.current,
// v1 usage_in_bytes); its peak between two memory.stat reads is the charge's high-water mark
// (memory.peak, v1 max_usage_in_bytes) less the charge they showed was not held. Without a memory
// cgroup, the sum of RSS (a page shared by N processes counts N times). `memory.rss_sum` is always
// the sum, `memory.page_cache` the cgroup's page cache.
//
// Thread-safety: Sample() and MembersAt() run on the sampler thread only; the peak accessors
// are atomic.
#ifndef FOOTPRINT_PROBE_PROCESS_TREE_PROBE_H_
#define FOOTPRINT_PROBE_PROCESS_TREE_PROBE_H_

#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "footprint/env.h"
#include "probe/cgroup.h"
#include "probe/counter_rate.h"
#include "probe/probe.h"
#include "probe/process_members.h"
#include "util/call_budget.h"
#include "util/file.h"

namespace footprint {

// Final counters of tree processes that footprint reaped itself (written by the reaper).
struct ReapedTotals {
  std::atomic<int64_t> cpu_ns{0};
  std::atomic<int64_t> read_bytes{0};
  std::atomic<int64_t> write_bytes{0};
};

class ProcessTreeProbe final : public Probe, public ProcessMembers {
 public:
  struct Options {
    pid_t monitor_pid = 0;              // the tree is this process's descendants ...
    const RunCgroup* cgroup = nullptr;  // ... or the members of this cgroup, when given
    const ReapedTotals* reaped = nullptr;
    std::string proc_root = "/proc";
    // Find the tree by scanning every process's parent, as on kernels without children files.
    bool force_proc_scan = false;
    // The monitor is itself the measured program (the in-process API): it belongs to the
    // tree, and the CPU time of footprint's own threads is subtracted from `cpu` (the calling
    // thread's, and those given to ExcludeThreadCpu).
    bool include_monitor = false;
    // The tree is the descendants of a process footprint did not start (a Slurm step's
    // slurmstepd, which may fork tasks from any of its threads): its threads are listed anew
    // on every pass, and the CPU time of the children it waited for counts (tasks that ended
    // between two passes).
    bool foreign_root = false;
    std::string entity = "tree";  // the series' entity (a host's name for a step's node)
    // Metrics given an interval of their own (--interval METRIC=...): read at each of their
    // deadlines, never spaced out.
    MetricSet exact_intervals;
    // Metrics another probe emits for the tree (`cpu` from the kernel's ring buffer).
    MetricSet served_elsewhere;
    // The clocks: costly reads are timed on it, and footprint's own threads' CPU read from it.
    Env* env = &Env::Default();
  };

  explicit ProcessTreeProbe(Options options);

  // CPU clocks (pthread_getcpuclockid) of footprint's other threads in this process, for
  // include_monitor; at most kMaxExcludedClocks. Once, possibly while the sampler runs (its own
  // clock exists only then): the count is published after the clocks.
  static constexpr size_t kMaxExcludedClocks = 8;
  void ExcludeThreadCpu(const std::vector<clockid_t>& clocks) {
    const size_t n = std::min(clocks.size(), kMaxExcludedClocks);
    std::copy_n(clocks.begin(), n, excluded_clocks_.begin());
    excluded_count_.store(n, std::memory_order_release);
  }

  std::string_view name() const override { return "process tree"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void AttachToCommand(pid_t /*command*/) override { attached_ = true; }
  void Begin(int64_t t0_ns) override;
  void BeforeLastPass() override {
    members_budget_.Lift();
    memory_budget_.Lift();
  }
  void Finish(ProbeFindings& findings) override;

  // Largest `memory`, bytes: what the tree holds, each page once, when the run has a memory
  // cgroup (memory_from_cgroup()), between passes too; else the sum of RSS seen in a pass.
  int64_t peak_memory_bytes() const { return peak_memory_.load(std::memory_order_relaxed); }
  bool memory_from_cgroup() const {
    return options_.cgroup != nullptr && options_.cgroup->has_memory();
  }
  // Largest sum of the processes' RSS seen in any pass, bytes.
  int64_t peak_rss_sum_bytes() const { return peak_rss_sum_.load(std::memory_order_relaxed); }
  // Largest RSS of a single process seen in any pass, bytes.
  int64_t peak_process_rss_bytes() const {
    return peak_process_rss_.load(std::memory_order_relaxed);
  }
  // Largest page cache charged to the run's memory cgroup seen in any pass, bytes; 0 without.
  int64_t peak_page_cache_bytes() const { return peak_page_cache_.load(std::memory_order_relaxed); }
  // The tree's CPU time (user, system ns) at the last pass that sampled `cpu`, each part never
  // decreasing; walk mode only (with a cgroup, the cgroup's own counters are exact).
  std::pair<int64_t, int64_t> cpu_user_system_ns() const {
    return {static_cast<int64_t>(static_cast<double>(user_ticks_) * ns_per_tick_),
            static_cast<int64_t>(static_cast<double>(system_ticks_) * ns_per_tick_)};
  }
  // Live processes in the tree at the last sample.
  int64_t last_process_count() const { return last_processes_.load(std::memory_order_relaxed); }
  // Live processes in the tree now (lists the members; emits nothing). Not concurrently with
  // Sample(): call it once the sampler has stopped.
  int64_t CountLiveProcesses();
  // The PIDs of the tree as listed by the pass at monotonic time now_ns, for probes that
  // attribute per-process figures to the tree (GPU memory and utilisation). When no tree
  // metric was due in that pass, the members are listed now (one membership-only pass), so
  // the list is current even when only GPU metrics are sampled. Sampler thread only; the
  // reference is valid until the next Sample() or MembersAt().
  const std::vector<pid_t>& MembersAt(int64_t now_ns) override;
  // Whether the tree is enumerated through the cgroup (else the /proc walk).
  bool uses_cgroup() const { return options_.cgroup != nullptr; }

 private:
  struct Entry {
    KernelFile stat;      // /proc/PID/statm with a cgroup, /proc/PID/stat without
    KernelFile io;        // opened on first use
    KernelFile children;  // of the main thread; opened on first use in walk mode
    uint32_t generation = 0;
  };
  // The tree's figures summed over its processes in the last pass that read them.
  struct TreeSums {
    int64_t cpu_ticks = 0, user_ticks = 0;  // without a cgroup only
    int64_t rss_pages = 0, largest_rss_pages = 0, largest_shared_pages = 0;
    int64_t threads = 0, processes = 0;
    int64_t read_bytes = 0, write_bytes = 0;
  };
  // What one process contributes to a sample.
  struct ProcessFigures {
    int64_t rss_pages = 0;
    int64_t shared_pages = 0;  // file-backed and shmem part of rss_pages; with a cgroup only
    int64_t threads = 0;
    int64_t cpu_ticks = 0;   // own + waited-for children; without a cgroup only
    int64_t user_ticks = 0;  // the user part of cpu_ticks
    bool live = false;       // not a zombie
  };
  struct Rate {
    CounterRate rate;
    // The counter, monotone: a process that exits leaves the sum of live processes before
    // the reaper adds its figures, and must not count twice when it does.
    int64_t current = 0;
  };

  // Lists the members and sums their figures into tree_ (io and, with a cgroup, its thread
  // count only when wanted).
  void ReadMembers(bool want_io, bool want_threads);
  // Sample's steps: a new pass over the members (within the budget, with a cgroup), the
  // tree's CPU, and the figures the members' pass summed.
  void RefreshMembers(int64_t now_ns, const MetricSet& due, bool want_io);
  void SampleCpu(int64_t now_ns, SampleOut& out);
  void EmitMemberSums(int64_t now_ns, const MetricSet& due, bool want_io, SampleOut& out);
  void ListMembers();
  void AddChildren(const KernelFile& children);
  void AddChildrenOfAllThreads(pid_t pid);
  void ScanAllProcesses();  // for kernels without /proc/PID/task/TID/children
  int64_t FootprintThreadsCpuNs() const;
  // foreign_root: adds the CPU time of the children the root waited for.
  void AddRootWaitedFor(int64_t& cpu_ticks, int64_t& user_ticks);
  // Reads pid's figures, reopening its files if the PID now names another process. nullptr
  // when it is gone or unreadable.
  Entry* Read(pid_t pid, ProcessFigures& figures);
  // Adds `value` to m's series when m is due and has one.
  void Emit(const MetricSet& due, MetricId m, double value, SampleOut& out) const;
  // `memory` from the memory cgroup at every pass: the charge (memory.current, v1
  // usage_in_bytes) less its unheld part as of the last memory.stat, read when its budget
  // allows, when the charge moved (MemoryStatDue) or, `exact`, whenever due; `memory.page_cache`
  // at each memory.stat. The peak between passes comes from the charge's high-water mark.
  void SampleCgroupMemory(int64_t now_ns, const MetricSet& due, bool exact, SampleOut& out);
  bool MemoryStatDue(int64_t now_ns, int64_t charge, bool exact) const;
  // What the tree holds per one memory.stat (see the file comment).
  int64_t HeldPerStat(const RunCgroup::MemoryStat& stat) const;
  static void EmitRate(Rate& r, int64_t value, int64_t now_ns, double scale, int series,
                       SampleOut& out);

  Options options_;
  double ns_per_tick_;
  std::vector<int> slot_;  // MetricId -> series index, -1 when not emitted
  std::unordered_map<pid_t, Entry> entries_;
  std::vector<pid_t> members_;
  int64_t members_listed_ns_ = -1;  // now_ns of the pass that listed members_
  KernelFile cgroup_procs_;         // kept open: re-reading from offset 0 restarts the listing
  KernelFile cgroup_threads_;
  std::vector<KernelFile> monitor_children_;  // children files of footprint's threads
  bool scan_ = false;                         // no children files: scan all of /proc
  std::array<clockid_t, kMaxExcludedClocks> excluded_clocks_{};
  std::atomic<size_t> excluded_count_{0};
  std::vector<std::pair<pid_t, pid_t>> parents_;  // (pid, ppid) of the last scan
  std::string list_buf_;  // reused buffer for cgroup.procs and children files
  uint32_t generation_ = 0;
  TreeSums tree_;
  CallBudget members_budget_{kKernelReadShare, kKernelReadLongestGapNs};  // with a cgroup
  CallBudget memory_budget_{kKernelReadShare, kKernelReadLongestGapNs};   // memory.stat
  // The memory cgroup's charge that `memory` leaves out (unmapped page cache, kernel memory;
  // negative where `memory` counts pages charged elsewhere), the charge and `memory` at the
  // last memory.stat; none before the first.
  std::optional<int64_t> unheld_;
  int64_t charge_at_stat_ = 0, held_at_stat_ = 0;
  int64_t last_charge_peak_ = -1;  // the charge's high-water mark at the last memory.stat
  Rate cpu_, read_, write_;
  bool attached_ = false;  // the tree is a command started by footprint: counters from 0
  KernelFile root_stat_;   // foreign_root: the root's /proc/PID/stat
  int64_t user_ticks_ = 0, system_ticks_ = 0;
  std::atomic<int64_t> peak_memory_{0};
  std::atomic<int64_t> peak_rss_sum_{0};
  std::atomic<int64_t> peak_process_rss_{0};
  std::atomic<int64_t> peak_page_cache_{0};
  std::atomic<int64_t> last_processes_{0};
  long page_size_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_PROCESS_TREE_PROBE_H_
