// What RunMonitored shares with the other ways of measuring a run (the Slurm step agent).
#ifndef FOOTPRINT_RUN_MONITOR_INTERNAL_H_
#define FOOTPRINT_RUN_MONITOR_INTERNAL_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "footprint/monitor.h"
#include "probe/cgroup.h"
#include "probe/gpu_backends.h"
#include "probe/perf_probe.h"
#include "probe/process_tree_probe.h"
#include "sampler/sampler.h"
#include "session/monitor_session.h"
#include "session/probe_set.h"
#include "session/totals.h"

namespace footprint {

// The interval of each metric the options select (0 for the others).
MetricIntervals ResolveIntervals(const MonitorOptions& o);

// The metrics given an interval of their own (--interval METRIC=...): the probes read them at
// each of their deadlines instead of spacing costly reads out.
MetricSet ExactIntervals(const MonitorOptions& o);

// meta.intervals_ns: each sampled metric's interval, by name.
nlohmann::json IntervalsMeta(const MetricIntervals& intervals);

// Checks the sampling options alone (intervals, flush interval, metrics): InvalidArgument.
Status ValidateSampling(const MonitorOptions& o);

// The run as recorded before its command exists: its row, meta, and the cgroup it gets.
struct PreparedRun {
  RunRecord run;
  nlohmann::json meta;
  nlohmann::json sources = nlohmann::json::object();
  std::unique_ptr<RunCgroup> cgroup;
};
Result<PreparedRun> PrepareRun(const MonitorOptions& opt, const MetricIntervals& intervals);

// --cpu-sampler auto takes the ring for cpu intervals below this: from 10 ms on, the timer's
// wake-ups cost less than opening and draining a ring per CPU.
inline constexpr int64_t kCpuRingBelowIntervalNs = 10'000'000;
// The kernel's ring buffer for the tree's `cpu` (probe/cpu_ring_probe.h) where
// opt.cpu_sampler and the kernel allow it; null for the timer sampler (cpu.stat at each
// deadline), with meta.cpu_sampler saying why. An error only for --cpu-sampler ring.
Result<std::unique_ptr<Probe>> OpenCpuRing(const MonitorOptions& opt, PreparedRun& p,
                                           const MetricIntervals& intervals);

// What a command's session is to measure (its probes are the session's to pick): the tree of
// footprint's descendants, in the run's cgroup when it has one, with what was `reaped`; the
// machine, energy, hardware counters `perf` and the GPUs the options ask for. `run` adds the
// kernel's ring for cpu (OpenCpuRing) and a container the command starts.
ProbeChoice CommandProbeChoice(const MonitorOptions& opt, const PreparedRun& p,
                               PerfProbe::Options perf, const ReapedTotals& reaped,
                               UnavailableMetrics& unavailable_gpu);

// The run's totals into `out`, with what the session's probes found, and where they came from
// into its meta (sources beside the run's own, p.sources; accounting, memory peaks).
void RecordTotals(const RunTotals& totals, MonitorSession& session, PreparedRun& p,
                  MonitorOutcome& out);

// SIGKILL to the whole tree (every live process below footprint: the command's, and orphans
// it adopted as subreaper), again every kKillTreePassNs while new processes appear (a fork
// between the listing and the kill), until none is left alive (zombies wait for footprint to
// reap them) or kKillTreeGiveUpNs have passed on `env`'s clock: the run ends with the tree
// gone, not dying.
inline constexpr int64_t kKillTreePassNs = 5'000'000;
inline constexpr int64_t kKillTreeGiveUpNs = 2'000'000'000;
void KillTree(Env& env);

// What the driver measured joins the run (before it is stored as ended).
void AddDriverResult(CommandDriver& driver, Store& store, PreparedRun& p, MonitorOutcome& out);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_MONITOR_INTERNAL_H_
