// GPU activity from NVML's GPM (GPU performance monitoring): Hopper and later GPUs, drivers from
// 520 on, for whole GPUs (nvmlGpmSampleGet) and MIG GPU instances (nvmlGpmMigSampleGet). Each
// read takes one sample and computes the metrics between it and the previous read's
// (nvmlGpmMetricsGet): two samples per interval, alternating between two buffers, and never a
// wait. NVIDIA asks for more than 100 ms between the two samples, so a read sooner than that
// after the previous one answers kTooSoon and keeps the older sample.
//
// Thread-safety: as GpuActivitySource; uses the nvml::Library from the same threads.
#ifndef FOOTPRINT_PROBE_GPM_SOURCE_H_
#define FOOTPRINT_PROBE_GPM_SOURCE_H_

#include <memory>
#include <vector>

#include "probe/gpu_activity.h"
#include "probe/nvml.h"

namespace footprint {

class GpmSource final : public GpuActivitySource {
 public:
  // The shortest interval between two samples NVIDIA allows.
  static constexpr int64_t kMinIntervalNs = 100'000'000;

  explicit GpmSource(std::shared_ptr<nvml::Library> nvml) : nvml_(std::move(nvml)) {}
  ~GpmSource() override;  // frees the sample buffers

  std::string_view name() const override { return "NVML GPM"; }
  GpuActivitySupport Probe(const GpuEntity& gpu, const GpuEntity* whole) override;
  int Watch(const GpuEntity& gpu, const GpuEntity* whole, GpuActivitySet metrics,
            std::string* why) override;
  ReadStatus Read(int slot, int64_t now_ns, GpuActivity& out, std::string* why) override;

 private:
  struct Watched {
    nvml::Device gpu = nullptr;  // the whole GPU
    int gpu_instance = -1;       // MIG: the GPU instance id
    std::array<nvml::GpmSample, 2> samples{};
    int previous = -1;  // index in samples of the last read's sample; -1 before the first
    int64_t previous_ns = 0;
    std::array<unsigned int, kGpuActivityCount> ids{};
    std::array<size_t, kGpuActivityCount> index{};  // position in GpuActivity of ids[i]
    size_t count = 0;
  };
  // Takes a sample of `w` into `sample`: NVML's code.
  int Sample(const Watched& w, nvml::GpmSample sample) const;
  // "NVML_ERROR_… from nvmlGpmSampleGet"
  std::string Why(int rc, nvml::Library::Fn fn) const;

  std::shared_ptr<nvml::Library> nvml_;
  std::vector<Watched> watched_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPM_SOURCE_H_
