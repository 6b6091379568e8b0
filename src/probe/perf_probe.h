// The perf probe: hardware counters of the whole process tree — perf.instructions,
// perf.cycles, perf.cache_misses (rates, 1/s) and their run totals perf_instructions,
// perf_cycles, perf_cache_misses (counts) — with perf_event_open(2).
//
// Each event is opened once on the command (AttachToCommand, while it waits at the start
// gate) with inherit=1, disabled and enable_on_exec: counting starts when the command execs,
// and every process it forks (at any depth, also after re-parenting) is counted into the same
// event. Reading the event gives the sum over the command, its live descendants and the
// descendants that already exited. When the PMU has fewer counters than events the kernel
// multiplexes them; counts are then scaled by time_enabled / time_running, and the run's
// metadata says so.
//
// Capabilities are probed once in Series() by opening each event on footprint itself: the
// error (no counters in this CPU or hypervisor, or kernel.perf_event_paranoid) is kept and
// reported after the run as a warning and in meta["perf"]. When only kernel-side counting is
// refused, the events count user space only (as `perf stat` does for unprivileged users).
//
// Thread-safety: Series/AttachToCommand on the monitor's thread before sampling, Sample on
// the sampler thread, Finish after sampling stopped; no concurrent calls.
#ifndef FOOTPRINT_PROBE_PERF_PROBE_H_
#define FOOTPRINT_PROBE_PERF_PROBE_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "footprint/env.h"
#include "footprint/status.h"
#include "probe/counter_rate.h"
#include "probe/probe.h"

struct perf_event_attr;  // <linux/perf_event.h>

namespace footprint {

// A perf event: PERF_TYPE_* and its config, with the name `perf stat` uses.
struct PerfEvent {
  uint32_t type = 0;
  uint64_t config = 0;
  std::string name;  // "instructions", "task-clock", ...
};

// The run total of a perf metric: "perf_instructions", "perf_cycles", "perf_cache_misses".
std::string PerfTotalName(MetricId metric);
// The event a perf metric counts by default.
PerfEvent DefaultPerfEvent(MetricId metric);
// An event by its `perf stat` name (hardware and software events); NotFound lists them.
Result<PerfEvent> PerfEventByName(std::string_view name);

// One counter reading: the count and how long the event was enabled / on the PMU.
struct PerfReading {
  uint64_t count = 0;
  uint64_t time_enabled_ns = 0;
  uint64_t time_running_ns = 0;
};
// The count estimated for the whole enabled time (the reading itself when not multiplexed);
// nullopt when the event never ran on the PMU (nothing is known).
std::optional<double> ScaledCount(const PerfReading& r);

// perf_event_open(2) with no group, close-on-exec added to `flags`: the fd, or -1 with errno.
int PerfEventOpen(perf_event_attr& attr, pid_t pid, int cpu, unsigned long flags);

// The result of trying to open an event.
struct PerfOpen {
  int fd = -1;             // owned by the caller; -1 on failure
  bool user_only = false;  // kernel-side counting was refused, so user space only
  std::string error;       // why it could not be opened, and how to enable it
};
// Opens `event` on process `pid` (0: the caller) for counting: inherit=1, read format with
// both times, disabled until `pid` next execs (enable_on_exec). When the kernel refuses to
// count its own side, retries for user space only.
PerfOpen OpenPerfEvent(const PerfEvent& event, pid_t pid);
// Why perf_event_open failed with `error`, in words, and what would enable it. A refusal
// (EACCES) on a machine whose kernel lists no hardware PMU under `sys_root`
// (/sys/bus/event_source/devices: cpu, cpu_core, armv8_...) says that no setting would help,
// instead of advising kernel.perf_event_paranoid (read under `proc_root`).
std::string DescribePerfError(int error, const std::string& proc_root = "/proc",
                              const std::string& sys_root = "/sys");

class PerfProbe final : public Probe {
 public:
  struct Options {
    // The event each metric counts (perf.instructions, perf.cycles, perf.cache_misses).
    // Tests on machines without hardware counters substitute software events here.
    std::array<PerfEvent, 3> events = {DefaultPerfEvent(MetricId::kPerfInstructions),
                                       DefaultPerfEvent(MetricId::kPerfCycles),
                                       DefaultPerfEvent(MetricId::kPerfCacheMisses)};
    // Why the events differ from the defaults (recorded in meta and warned about).
    std::string substituted_by;

    // The defaults, with substitutions from the Env's FOOTPRINT_PERF_EVENTS (a test hook for
    // machines without hardware counters: "perf.cycles=task-clock,perf.instructions=
    // context-switches"). InvalidArgument when it names an unknown metric or event.
    static Result<Options> FromEnv(Env& env);
  };

  PerfProbe();  // the default events
  explicit PerfProbe(Options options);
  ~PerfProbe() override;
  PerfProbe(const PerfProbe&) = delete;
  PerfProbe& operator=(const PerfProbe&) = delete;

  std::string_view name() const override { return "perf"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void AttachToCommand(pid_t command) override;
  void Begin(int64_t t0_ns) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void Finish(ProbeFindings& findings) override;

  // The scaled count of a metric so far (nullopt: not counted). For tests.
  std::optional<double> CountOf(MetricId metric) const;

 private:
  struct Counter {
    MetricId metric;
    bool wanted = false;
    int series = -1;
    int fd = -1;
    bool user_only = false;
    std::string error;  // why it is not counted
    CounterRate rate;
    PerfReading last_reading;
    bool multiplexed = false;
    bool read_failed = false;
  };
  static std::optional<PerfReading> Read(int fd);

  Options options_;
  std::array<Counter, 3> counters_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_PERF_PROBE_H_
