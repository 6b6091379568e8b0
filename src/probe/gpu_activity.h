// GPU activity: the profiling counters that say how much of a GPU its work occupies (SM active,
// SM occupancy, tensor, DRAM and FP pipes, PCIe and NVLink bytes), where NVML's utilisation
// only says whether some kernel was running. Served per device and MIG instance by a
// GpuActivitySource: NVML's GPM (Hopper and later, gpm_source.h) or DCGM's profiling module
// (dcgm_source.h). The GPU probe and `footprint doctor` ask the sources in order and take each
// metric from the first that has it, saying which.
//
// Thread-safety: a source is probed and watched on the monitor's thread and read on the
// sampler thread, never concurrently (the Probe contract).
#ifndef FOOTPRINT_PROBE_GPU_ACTIVITY_H_
#define FOOTPRINT_PROBE_GPU_ACTIVITY_H_

#include <array>
#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "probe/gpu_devices.h"
#include "probe/nvml.h"

namespace footprint {

// One value per activity metric (kGpuMetrics from kFirstGpuActivitySlot on), in the catalogue's
// units (% and bytes/s); NaN where the source gave none for the interval.
using GpuActivity = std::array<double, kGpuActivityCount>;
using GpuActivitySet = std::bitset<kGpuActivityCount>;
using GpuActivitySupport = std::array<GpuSupport, kGpuActivityCount>;

class GpuActivitySource {
 public:
  enum class ReadStatus {
    kValues,   // `out` holds the interval's values
    kTooSoon,  // no value yet: the source needs a longer interval (GPM: > 100 ms)
    kFailed,   // the read failed this time; `why` says how
    kLost,     // the device is gone for good; `why` says how
  };

  virtual ~GpuActivitySource() = default;
  // "NVML GPM", "DCGM": named in `how` and in messages.
  virtual std::string_view name() const = 0;
  // Which activity metrics `gpu` has from this source, how, or why not (one call per entity;
  // `whole` is the GPU a MIG device belongs to, else null).
  virtual GpuActivitySupport Probe(const GpuEntity& gpu, const GpuEntity* whole) = 0;
  // Starts reading `metrics` of `gpu`: the slot to Read, or -1 (with `why`) when it cannot.
  virtual int Watch(const GpuEntity& gpu, const GpuEntity* whole, GpuActivitySet metrics,
                    std::string* why) = 0;
  // The watched metrics of `slot` over the interval since its previous read.
  virtual ReadStatus Read(int slot, int64_t now_ns, GpuActivity& out, std::string* why) = 0;
};

// The sources of a machine, in order of preference: those opened, those still to be opened (only
// when the opened ones leave a metric unserved: no DCGM connection on a Hopper machine), and
// why the ones that could not be opened are absent.
struct GpuActivitySources {
  using Opener = std::function<std::unique_ptr<GpuActivitySource>(std::string* why)>;
  std::vector<std::unique_ptr<GpuActivitySource>> list;
  std::vector<Opener> pending;
  std::vector<std::string> absent;  // one line per source that could not be opened
};

// NVML GPM (no daemon; Hopper and later), then DCGM, opened when needed (dcgm_source.h: when
// libdcgm loads through `env` and a host engine answers; FOOTPRINT_DCGM=off leaves it out).
GpuActivitySources OpenActivitySources(Env& env, const std::shared_ptr<nvml::Library>& nvml);

// For each activity metric of `gpu`, the first source that has it: writes caps[slot] (its `how`
// starts with the source's name) and chosen[i] (the source's index in `sources.list`, -1 when
// none has it; the why then gives every source's reason, and why the absent ones are absent).
// A pending source is opened (and moved to `list` or `absent`) when a metric is left unserved.
void ChooseActivitySources(GpuActivitySources& sources, const GpuEntity& gpu,
                           const GpuEntity* whole, GpuCapabilities& caps,
                           std::array<int, kGpuActivityCount>& chosen);

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPU_ACTIVITY_H_
