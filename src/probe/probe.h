// Probe: one source of sampled metrics behind one small interface.
//
// A probe discovers what it can measure when it is constructed (capabilities probed once,
// never retried in the sampling loop), declares the series it will emit, and then takes
// samples on the sampler thread. Sample() must not allocate in the steady state nor block
// on anything but reading kernel files.
#ifndef FOOTPRINT_PROBE_PROBE_H_
#define FOOTPRINT_PROBE_PROBE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/metrics.h"

namespace footprint {

struct SeriesSpec {
  MetricId metric;
  std::string entity;  // 'tree', 'system', 'monitor', later 'gpu:0' ...
};

// Where a probe writes one sample's values: `series` indexes the vector Series() returned.
class SampleOut {
 public:
  virtual void Add(int series, double value) = 0;

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
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_PROBE_H_
