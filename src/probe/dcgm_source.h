// GPU activity from DCGM's profiling fields (DCGM_FI_PROF_*): what radT scrapes from `dcgmi dmon`,
// and the only source of SM activity on GPUs before Hopper (A100, V100), where NVML has no GPM.
// libdcgm is loaded at run time (libdcgm.so.4, .so.3 or libdcgm.so; FOOTPRINT_DCGM_LIBRARY
// names another file), with its types declared here by hand: footprint builds without DCGM.
//
// Open connects to the host engine (nv-hostengine) at FOOTPRINT_DCGM_HOST, 127.0.0.1 by default
// (DCGM's port 5555); with FOOTPRINT_DCGM=embedded, where none answers, it starts DCGM inside
// footprint instead (which loads DCGM's modules at every run: opt-in). footprint watches the
// fields it reads in groups of its own, every kWatchIntervalUs (DCGM keeps one watch per field
// at the shortest interval any of its watchers asked for, so another user's slower watch is
// sped up while footprint runs and never cut short), and reads the values DCGM computed over
// its own watch interval; at the end it unwatches and destroys only its own groups, so the
// watches of other users (dcgm-exporter, radT's dcgmi) go on. A read that finds no newer value
// than the previous one answers kTooSoon.
//
// Entities: a whole GPU is DCGM GPU id = NVML index (DCGM enumerates GPUs through NVML, in its
// order); a MIG device is the GPU instance (DCGM_FE_GPU_I) whose NVML GPU index and instance id
// match, from DCGM's MIG hierarchy (DCGM reads MIG devices only as root).
//
// Thread-safety: as GpuActivitySource.
#ifndef FOOTPRINT_PROBE_DCGM_SOURCE_H_
#define FOOTPRINT_PROBE_DCGM_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "probe/gpu_activity.h"

namespace footprint {

class DcgmSource final : public GpuActivitySource {
 public:
  static constexpr long long kWatchIntervalUs = 100'000;

  // The source, or nullptr with `why` (no libdcgm here; no host engine, and embedded DCGM not
  // asked for or would not start).
  static std::unique_ptr<DcgmSource> Open(Env& env, std::string* why);
  ~DcgmSource() override;

  std::string_view name() const override { return "DCGM"; }
  // "host engine at 127.0.0.1" or "embedded"
  const std::string& mode() const { return mode_; }
  GpuActivitySupport Probe(const GpuEntity& gpu, const GpuEntity* whole) override;
  int Watch(const GpuEntity& gpu, const GpuEntity* whole, GpuActivitySet metrics,
            std::string* why) override;
  ReadStatus Read(int slot, int64_t now_ns, GpuActivity& out, std::string* why) override;

  struct Api;  // libdcgm's functions

 private:
  struct Watched;
  DcgmSource() = default;
  // DCGM's entity for `gpu`: {group, id}, or false with `why`.
  bool EntityOf(const GpuEntity& gpu, unsigned int* group, unsigned int* id, std::string* why);
  // "DCGM_ST_NOT_SUPPORTED (This request is not supported)"
  std::string Describe(int rc) const;
  void Release(Watched& w);

  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  uintptr_t handle_ = 0;
  bool embedded_ = false;
  std::string mode_;
  std::vector<std::unique_ptr<Watched>> watched_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_DCGM_SOURCE_H_
