// The CPU ring probe: the tree's `cpu` (percent of a core) sampled by the kernel, without a
// wake-up of footprint's per sample.
//
// One software cpu-clock perf event per online CPU, scoped to the run's cgroup v2 directory
// (PERF_FLAG_PID_CGROUP): the kernel counts the nanoseconds the cgroup's tasks run on that CPU
// and, each time the count crosses a multiple of the interval, writes a sample (its
// CLOCK_MONOTONIC time and the exact count) into a ring buffer mapped into footprint. Its
// timer runs only while the cgroup's tasks run there, so an idle tree costs nothing. The
// sampler drains the rings every kBufferDrainIntervalNs (Probe::Buffered); each drain also
// reads every counter, so each CPU's count is known exactly at its samples and at the drain.
// The tree's cumulative CPU at each tick t0 + k * interval is the sum over CPUs of each one's
// count between its two known points around the tick (CpuCountTimeline), and the series is
// the rate between consecutive ticks, emitted with the ticks' own times.
//
// Opening needs perf events on cgroups: root or CAP_PERFMON (or kernel.perf_event_paranoid
// <= 0), and a cgroup v2 directory the kernel's perf_event controller covers (no v1
// perf_event hierarchy mounted). Where it is refused, the process-tree probe samples `cpu`
// from cpu.stat on the sampler's deadlines (the timer sampler); meta.cpu_sampler says which.
//
// Thread-safety: Series/Begin on the monitor's thread before sampling, Sample on the sampler
// thread, Finish after sampling stopped; no concurrent calls.
#ifndef FOOTPRINT_PROBE_CPU_RING_PROBE_H_
#define FOOTPRINT_PROBE_CPU_RING_PROBE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "footprint/status.h"
#include "probe/cgroup.h"
#include "probe/probe.h"

namespace footprint {

// Each CPU's cumulative count at known times, and in between. A point is `sampled` when the
// ring wrote it, which it does while the cgroup's task runs, else read (at a drain, or at t0).
// Between two points the count grows by less than the time (one CPU) and its course is
// unknown: next to a sampled point the task ran, so from a sampled point to a read one the
// count grows as early as it can (the run went on after the sample, and stopped before the
// next), from a read point to a sampled one as late as it can (the run that reached the
// sample); between two alike, linearly (a steady run between two samples is then exact).
class CpuCountTimeline {
 public:
  explicit CpuCountTimeline(size_t cpus) : points_(cpus) {}
  // The count of `cpu` at monotonic t_ns; ignored unless later than that CPU's last point.
  void Add(size_t cpu, int64_t t_ns, uint64_t count, bool sampled);
  // The sum of each CPU's latest count.
  double Latest() const;
  // The latest time every CPU's count is known at (INT64_MIN before each has a point).
  int64_t KnownUntil() const;
  // The sum over CPUs of their counts at t_ns (<= KnownUntil(), and not before the previous
  // call's), each interpolated between its points around t_ns; drops the points no later
  // call needs.
  double SumAt(int64_t t_ns);

 private:
  struct Point {
    int64_t t_ns;
    uint64_t count;
    bool sampled;
  };
  // The count at t_ns in [a.t_ns, b.t_ns] (see the class comment).
  static double Between(const Point& a, const Point& b, int64_t t_ns);
  struct Points {
    std::vector<Point> list;  // in time order
    size_t first = 0;         // the last point at or before SumAt's time
  };
  std::vector<Points> points_;  // per CPU
};

class CpuRingProbe final : public Probe {
 public:
  // Opens the events on the run's cgroup v2 directory (`cgroup` must outlive the probe), one
  // sample per `interval_ns` of the cgroup's CPU time on each CPU. The error says why the
  // kernel refused, in words (DescribePerfError).
  static Result<std::unique_ptr<CpuRingProbe>> Open(const RunCgroup& cgroup, int64_t interval_ns);
  ~CpuRingProbe() override;
  CpuRingProbe(const CpuRingProbe&) = delete;
  CpuRingProbe& operator=(const CpuRingProbe&) = delete;

  std::string_view name() const override { return "cpu ring"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  MetricSet Buffered() const override;
  void Begin(int64_t t0_ns) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void Finish(ProbeFindings& findings) override;

 private:
  struct Ring {
    int fd = -1;
    void* map = nullptr;
  };
  // The ring's cpu-clock runs while a task of the cgroup is current, interrupts and switches
  // included, and reads up to ~1 % above the scheduler's account (cpu.stat, getrusage) on a
  // busy machine: each drain scales its `ring_ns` so that the series has reached cpu.stat's
  // usage once they are emitted. The shape within a drain is the ring's, the level the
  // scheduler's, as for every other CPU figure of footprint; a short window (cpu.stat lags
  // by up to a scheduler tick) keeps the ring's level and leaves the rest to the next.
  static constexpr double kLevelWindowNs = 20e6;
  double LevelToCpuStat(double ring_ns) const;
  CpuRingProbe(const RunCgroup& cgroup, int64_t interval_ns);
  // Adds cpu's new ring samples and its count now to timeline_.
  void Drain(size_t cpu);

  const RunCgroup& cgroup_;
  int64_t interval_ns_;
  std::vector<Ring> rings_;
  CpuCountTimeline timeline_{0};
  bool wanted_ = false;
  int64_t next_tick_ns_ = 0;
  double last_sum_ = 0;         // the ring's count at the last tick emitted, ns
  double emitted_ns_ = 0;       // what the series has added up to
  int64_t usage_at_t0_ns_ = 0;  // cpu.stat
  uint64_t kernel_samples_ = 0, lost_ = 0;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_CPU_RING_PROBE_H_
