// Report: turning stored runs into summaries people and programs read.
//
// ResolveRun maps what a user types (a full id, a unique id prefix, a run name, or `last`)
// to a run. SummarizeRun computes, per series, count/min/mean/p50/p95/max (percentiles with
// linear interpolation between closest ranks, as numpy's default) and gathers the totals.
// SummaryJson is the stable `footprint show --json` object. Percentiles are found by selection
// (linear time), so runs of millions of samples summarize in well under a second.
//
// Thread-safety: free functions; the Store they are given must not be shared concurrently.
#ifndef FOOTPRINT_REPORT_H_
#define FOOTPRINT_REPORT_H_

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/buffer.h"
#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// The run totals every run reports, in display order (DESIGN.md). A total a run lacks is
// unknown (null in JSON), never 0.
std::span<const std::string_view> TotalNames();

struct MetricSummary {
  std::string metric;
  std::string unit;
  std::string entity;
  std::optional<int64_t> scope_id;
  std::string scope;  // when set: only the samples taken while a scope of this name was open
  size_t count = 0;
  double min = 0, mean = 0, p50 = 0, p95 = 0, max = 0;
  // The series in time order, reduced to at most the `trend_points` asked for (each point the
  // mean of consecutive samples): enough for a sparkline without holding every sample.
  std::vector<double> trend;
};

// The scopes of one name: how often, and how long in total (open scopes, whose process died
// inside them, are counted in `unfinished` and not in the times).
struct ScopeSummary {
  std::string name;
  size_t count = 0;
  size_t unfinished = 0;
  double total_s = 0, mean_s = 0, min_s = 0, max_s = 0;
};

// The value the instrumentation API stores when scopes were dropped (their count): a thread
// opened them faster than the database writer took them, past its queue's bound.
inline constexpr std::string_view kScopesDroppedValue = "footprint.scopes_dropped";

// The energy of a load's queries (footprint load): a cumulative energy series between the first
// query's scheduled time and the last answer, interpolated between samples. Only where that
// window is at least as long as the series' resolution (the GPU counter's update period, the
// gap between samples): otherwise `over_window` is false and the run's total stands in.
struct LoadEnergy {
  std::string total;  // the run total it divides: "gpu_energy_j" (whole GPUs), "cpu_energy_j"
  // Over the window (over_window), else the run's total; NaN when the run has no such counter
  // (why_not says why).
  double joules = 0;
  double window_s = 0;
  bool over_window = false;
  std::string why_not;  // !over_window: why the window could not be used, or why no counter
};

// The LoadEnergy of each energy total a load run has (none for other runs).
Result<std::vector<LoadEnergy>> LoadWindowEnergy(Store& store, const RunRecord& run,
                                                 const std::map<std::string, double>& totals);

// One host's part of a run measured on several hosts: each node's `footprint agent` stores the
// node's part of a Slurm step as a run of its own, all with the step's meta.span key.
struct HostPart {
  std::string host;
  RunRecord run;
  std::map<std::string, double> totals;
  // The part ended without its totals (its agent died, or still runs): `totals` are what its
  // `samples` stored samples add up to (TotalsFromSamples), not the kernel's accounts.
  bool partial = false;
  int64_t samples = 0;
};

// What the stored samples of `run`, measured on `host`, add up to, for a part that stored no
// totals: CPU time integrated from its cpu series (all counted as user time: the series does
// not split it), the peak of its memory series, the bytes of its io series, and the time up to
// its last sample. `samples` receives how many samples it has in all.
Result<std::map<std::string, double>> TotalsFromSamples(Store& store, const RunRecord& run,
                                                        const std::string& host, int64_t& samples);

// The parts of the multi-host run `run` is a part of (every run with its meta.span.key), by
// host, `run` among them, with their totals; empty when `run` is not a part of one.
// `hosts_expected` (may be null) receives how many hosts the run spans (meta.span.hosts).
Result<std::vector<HostPart>> HostParts(Store& store, const RunRecord& run,
                                        int* hosts_expected = nullptr);
// The host of a part of a multi-host run (meta.span.host); empty for any other run.
std::string SpanHost(const RunRecord& run);
// The key its parts share (meta.span.key, "CLUSTER:JOB.STEP"); empty for any other run.
std::string SpanKey(const RunRecord& run);

// A multi-host run's totals from its parts: the longest duration and the largest single
// process (max_*), the sum of everything else (CPU, energy, I/O, and each host's peak memory:
// what the run held across its hosts, each at its own peak).
std::map<std::string, double> SumHostTotals(const std::vector<HostPart>& parts);

struct RunSummary {
  RunRecord run;
  // The parts of a multi-host run (meta.span), by host, this run's among them; `totals` and
  // `metrics` then cover them all. Empty for a run measured on one host.
  std::vector<HostPart> hosts;
  int hosts_expected = 0;  // how many hosts the run spans (meta.span.hosts)
  double duration_s = 0;   // also for runs that are still running or were interrupted
  std::map<std::string, double> totals;
  std::vector<MetricSummary> metrics;  // whole-run series first, then per scope name
  std::vector<ScopeSummary> scopes;    // by first appearance
  uint64_t scopes_dropped = 0;         // kScopesDroppedValue values, summed
  // The tree's `cpu` series integrated over time: CPU seconds over the stretch from its first
  // sample to its last, and its highest rate in cores (nullopt with fewer than 3 samples).
  struct SeriesCpu {
    double cpu_s = 0;
    double window_s = 0;
    double peak_cores = 0;
  };
  std::optional<SeriesCpu> series_cpu;
  std::vector<ValueRecord> values;
  std::map<int64_t, std::string> scope_names;  // scope id -> name, for values' scopes
  std::vector<ArtifactRecord> artifacts;
  std::vector<LoadEnergy> load_energy;  // a load run's energy per query (LoadWindowEnergy)
  std::vector<WaitingBuffer> waiting;   // local buffers that may still hold some of the run
};

// When the CPU total and the integrated `cpu` series disagree by more than 5 % (beyond what
// the run's first and last moments, outside the series, can hold), a sentence saying so.
std::optional<std::string> CpuDisagreement(const RunSummary& s);

// Picks one run out of `runs` (oldest first). NotFound lists what was tried; an ambiguous
// prefix is InvalidArgument naming the candidates.
Result<RunRecord> ResolveRun(const std::vector<RunRecord>& runs, std::string_view spec);

// Statistics of `values` (count, min, mean, p50, p95, max); values are reordered.
MetricSummary Summarize(std::vector<double>& values);

// Scope statistics by name, in order of first appearance.
std::vector<ScopeSummary> SummarizeScopes(const std::vector<ScopeRecord>& scopes);

// Seconds from a run's start to its end (`duration_s` when stored; for a run still running or
// interrupted, to its last heartbeat or `now_ns`, UTC wall clock).
double RunDuration(const RunRecord& run, const std::map<std::string, double>& totals,
                   int64_t now_ns);

// What `show` says of `run`: its totals (summed over its hosts), duration (RunDuration, "now"
// on `env`'s wall clock), metrics with `trend_points` points of trend, scopes, values and
// artifacts.
Result<RunSummary> SummarizeRun(Store& store, const RunRecord& run, size_t trend_points = 0,
                                Env& env = Env::Default());

// The `show --json` object of one run: run, totals, metrics, scopes, values, artifacts, meta.
std::string SummaryJson(const RunSummary& summary, int indent = 2);

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_H_
