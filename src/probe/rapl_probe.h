// The RAPL probe: energy.cpu and energy.dram (J since run start, whole machine) from the
// kernel's powercap interface (/sys/class/powercap/intel-rapl:N[:M]/energy_uj).
//
// Domains are found once, by their `name` file: `package-N` zones count towards energy.cpu,
// `dram` zones (top level or below a package) towards energy.dram; `core`, `uncore` and `psys`
// are listed in the run's metadata but not added (core and uncore are parts of a package, psys
// contains the packages), and the `intel-rapl-mmio` zones that repeat an MSR zone of the same
// name are skipped, so nothing is counted twice. Each counter wraps at `max_energy_range_uj`;
// the probe adds the wrapped difference, which is exact as long as one sample is taken per
// wrap period (tens of minutes at full power).
//
// energy_uj is readable by root only since Linux 5.10 (CVE-2020-8694): when it cannot be read,
// the probe emits nothing and says why in the run's warnings and metadata.
//
// Thread-safety: Series/Sample on the sampler thread, Finish after sampling stopped; no
// concurrent calls.
#ifndef FOOTPRINT_PROBE_RAPL_PROBE_H_
#define FOOTPRINT_PROBE_RAPL_PROBE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/probe.h"
#include "util/file.h"

namespace footprint {

// One powercap zone, as discovered.
struct RaplDomain {
  enum class Kind { kPackage, kDram, kOther };
  std::string zone;  // directory name, e.g. "intel-rapl:0:2"
  std::string name;  // contents of its `name` file, e.g. "dram"
  Kind kind = Kind::kOther;
  bool counted = false;  // added to energy.cpu or energy.dram (not a duplicate or a part)
  std::optional<uint64_t> max_range_uj;
  std::string unreadable;  // why energy_uj cannot be read; empty when it can
};

struct RaplDiscovery {
  std::string powercap_dir;  // e.g. "/sys/class/powercap"
  std::vector<RaplDomain> domains;
  // Why no counted domain can be read (empty when at least one can): no powercap folder, no
  // RAPL zones, or permissions; names the fix.
  std::string why_unavailable;
};

// Finds the RAPL zones under `sysfs_root`/class/powercap. Reads only small files.
RaplDiscovery DiscoverRapl(const std::string& sysfs_root);

// Energy difference of a counter that wraps at max_range (inclusive): cur < last means it
// wrapped once.
uint64_t WrappedDelta(uint64_t last, uint64_t cur, uint64_t max_range);

class RaplProbe final : public Probe {
 public:
  explicit RaplProbe(std::string sysfs_root);  // "/sys", or a fake tree (Env::SysRoot)

  std::string_view name() const override { return "rapl"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  // Totals cpu_energy_j / dram_energy_j, meta["rapl"], and a warning when energy was asked
  // for and cannot be measured.
  void Finish(ProbeFindings& findings) override;

 private:
  struct Counter {
    size_t domain;  // index into discovery_.domains
    KernelFile file;
    uint64_t last_uj = 0;
    bool started = false;
    uint64_t total_uj = 0;  // since the first read
    uint64_t wraps = 0;
    uint64_t failed_reads = 0;
  };
  void ReadAll();  // updates every counter

  std::string sysfs_root_;
  RaplDiscovery discovery_;
  std::vector<Counter> cpu_, dram_;
  MetricSet wanted_;  // the opt-in energy metrics asked for
  int cpu_series_ = -1, dram_series_ = -1;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_RAPL_PROBE_H_
