// The system probe: sys.cpu (all cores busy, 100 = one core) and sys.memory (bytes in use,
// MemTotal - MemAvailable) of the whole machine, from /proc/stat and /proc/meminfo, each read
// as often as kKernelReadShare of a core allows, and at least every 100 ms (unless given an
// interval of their own).
//
// Thread-safety: Sample() runs on the sampler thread only.
#ifndef FOOTPRINT_PROBE_SYSTEM_PROBE_H_
#define FOOTPRINT_PROBE_SYSTEM_PROBE_H_

#include <string>

#include "footprint/env.h"
#include "probe/probe.h"
#include "util/call_budget.h"
#include "util/file.h"
#include "util/proc_parse.h"

namespace footprint {

class SystemProbe final : public Probe {
 public:
  // Reads the files under `env`'s /proc and times them on its clock. `exact_intervals`: metrics
  // given an interval of their own, read at each of their deadlines.
  explicit SystemProbe(Env& env, MetricSet exact_intervals = {});

  std::string_view name() const override { return "system"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void BeforeLastPass() override {
    stat_budget_.Lift();
    meminfo_budget_.Lift();
  }
  void Finish(ProbeFindings& findings) override;

 private:
  Env& env_;
  KernelFile stat_;
  KernelFile meminfo_;
  int cpu_series_ = -1;
  int memory_series_ = -1;
  int online_cpus_;
  std::optional<SysCpuTimes> last_cpu_;
  // Both files cost microseconds to generate (/proc/stat sums every CPU and interrupt): spaced
  // out at high rates, as the tree's costly reads are.
  CallBudget stat_budget_{kKernelReadShare, kKernelReadLongestGapNs};
  CallBudget meminfo_budget_{kKernelReadShare, kKernelReadLongestGapNs};
  MetricSet exact_intervals_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_SYSTEM_PROBE_H_
