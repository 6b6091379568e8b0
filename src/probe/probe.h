// Probe: one source of sampled metrics behind one small interface.
//
// A probe discovers what it can measure when it is constructed (capabilities probed once,
// never retried in the sampling loop), declares the series it will emit, and then takes
// samples on the sampler thread. Sample() must not allocate in the steady state nor block
// on anything but reading kernel files.
#ifndef FOOTPRINT_PROBE_PROBE_H_
#define FOOTPRINT_PROBE_PROBE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/metrics.h"

namespace footprint {

// How often the sampler drains a probe's kernel buffers (Probe::Buffered): a few times a
// second, so that a 1 ms series costs 4 wake-ups a second instead of 1,000.
inline constexpr int64_t kBufferDrainIntervalNs = 250'000'000;

struct SeriesSpec {
  MetricId metric;
  std::string entity;  // 'tree', 'system', 'monitor', 'gpu:0', 'gpu:0/mig:1' ...
};

// What a probe reports about the run once sampling has stopped.
struct ProbeFindings {
  std::map<std::string, double>& totals;  // run totals, names as in docs/metrics.md
  nlohmann::json& meta;                   // the run's metadata; a probe writes under its own key
  std::vector<std::string>& warnings;     // shown to the user after the run
};

// The metrics asked for that a probe cannot measure, grouped by reason, so that the user gets
// one warning per reason: "energy.cpu, energy.dram: WHY; footprint doctor explains".
class UnavailableMetrics {
 public:
  void Add(std::string_view metric, const std::string& why) {
    by_reason_[why].emplace_back(metric);
  }
  void Warn(std::vector<std::string>& warnings) const {
    for (const auto& [why, metrics] : by_reason_) {
      std::string names;
      for (const std::string& m : metrics) names += (names.empty() ? "" : ", ") + m;
      warnings.push_back(names + ": " + why + "; footprint doctor explains");
    }
  }

 private:
  std::map<std::string, std::vector<std::string>> by_reason_;
};

// Where a probe writes one sample's values: `series` indexes the vector Series() returned.
class SampleOut {
 public:
  virtual void Add(int series, double value) = 0;
  // A value the kernel sampled at monotonic time at_ns, before this pass (a buffered metric,
  // Probe::Buffered). Outputs that keep no times (tests' recorders) take the value alone.
  virtual void AddAt(int series, int64_t /*at_ns*/, double value) { Add(series, value); }

 protected:
  ~SampleOut() = default;
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view name() const = 0;
  // The series emitted for the `wanted` metrics that this probe supports. Called once.
  virtual std::vector<SeriesSpec> Series(const MetricSet& wanted) = 0;
  // Samples the `due` metrics at monotonic time now_ns.
  virtual void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) = 0;
  // Metrics the kernel samples for this probe into a buffer at their own interval: the
  // sampler makes them due only every kBufferDrainIntervalNs (or their interval, when longer),
  // and the probe emits each of the kernel's samples with its own time (SampleOut::AddAt).
  // Their interval is fixed when the buffer is opened (Sampler::SetInterval leaves them).
  virtual MetricSet Buffered() const { return {}; }
  // Called once on the monitor's thread after Series(), when the command exists but waits at
  // the start gate and sampling has not started: for probes that follow the command's
  // processes themselves (hardware counters inherited by its children).
  virtual void AttachToCommand(pid_t /*command*/) {}
  // Called once on the monitor's thread just before sampling starts at monotonic t0_ns (after
  // AttachToCommand, when that was called). A probe attached to a command measures its rates
  // from (t0, 0): the command's counters start at zero then, while the first pass, which
  // would otherwise be the baseline, can come after the command's first work on a busy
  // machine, and what was counted before it would be missing from the series.
  virtual void Begin(int64_t /*t0_ns*/) {}
  // Called once after the sampler's thread stopped, before its last pass (Sampler::Stop): a
  // probe that spaces out costly reads (CallBudget) makes them in that pass, so that every
  // series reaches the run's end.
  virtual void BeforeLastPass() {}
  // Called once after sampling stopped: totals, metadata (what was measured how, what could
  // not be and why) and warnings.
  virtual void Finish(ProbeFindings& /*findings*/) {}
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_PROBE_H_
