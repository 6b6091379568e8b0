// The system probe: sys.cpu (all cores busy, 100 = one core) and sys.memory (bytes in use,
// MemTotal - MemAvailable) of the whole machine, from /proc/stat and /proc/meminfo.
//
// Thread-safety: Sample() runs on the sampler thread only.
#ifndef FOOTPRINT_PROBE_SYSTEM_PROBE_H_
#define FOOTPRINT_PROBE_SYSTEM_PROBE_H_

#include <string>

#include "probe/probe.h"
#include "util/file.h"
#include "util/proc_parse.h"

namespace footprint {

class SystemProbe final : public Probe {
 public:
  explicit SystemProbe(const std::string& proc_root = "/proc");

  std::string_view name() const override { return "system"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;

 private:
  KernelFile stat_;
  KernelFile meminfo_;
  int cpu_series_ = -1;
  int memory_series_ = -1;
  int online_cpus_;
  std::optional<SysCpuTimes> last_cpu_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_SYSTEM_PROBE_H_
