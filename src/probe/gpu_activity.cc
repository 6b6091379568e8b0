#include "probe/gpu_activity.h"

#include "probe/dcgm_source.h"
#include "probe/gpm_source.h"

namespace footprint {

GpuActivitySources OpenActivitySources(Env& env, const std::shared_ptr<nvml::Library>& nvml) {
  GpuActivitySources sources;
  sources.list.push_back(std::make_unique<GpmSource>(nvml));
  std::string why;
  if (auto dcgm = DcgmSource::Open(env, &why)) {
    sources.list.push_back(std::move(dcgm));
  } else {
    sources.absent.push_back(why);
  }
  return sources;
}

void ChooseActivitySources(const GpuActivitySources& sources, const GpuEntity& gpu,
                           const GpuEntity* whole, GpuCapabilities& caps,
                           std::array<int, kGpuActivityCount>& chosen) {
  chosen.fill(-1);
  std::array<std::string, kGpuActivityCount> why;
  for (size_t s = 0; s < sources.list.size(); ++s) {
    const GpuActivitySupport support = sources.list[s]->Probe(gpu, whole);
    for (size_t i = 0; i < kGpuActivityCount; ++i) {
      if (chosen[i] >= 0) continue;
      if (support[i].ok) {
        chosen[i] = static_cast<int>(s);
        caps[kFirstGpuActivitySlot + i] = {true, support[i].how, ""};
      } else {
        why[i].append(why[i].empty() ? "" : "; ").append(support[i].why);
      }
    }
  }
  for (size_t i = 0; i < kGpuActivityCount; ++i) {
    if (chosen[i] >= 0) continue;
    for (const std::string& absent : sources.absent) {
      why[i].append(why[i].empty() ? "" : "; ").append(absent);
    }
    caps[kFirstGpuActivitySlot + i] = {
        false, "", why[i].empty() ? "no source of GPU activity (NVML GPM or DCGM) here" : why[i]};
  }
}

}  // namespace footprint
