#include "probe/gpu_activity.h"

#include <algorithm>

#include "probe/dcgm_source.h"
#include "probe/gpm_source.h"

namespace footprint {

GpuActivitySources OpenActivitySources(Env& env, const std::shared_ptr<nvml::Library>& nvml) {
  GpuActivitySources sources;
  sources.list.push_back(std::make_unique<GpmSource>(nvml));
  sources.pending.push_back([&env](std::string* why) -> std::unique_ptr<GpuActivitySource> {
    return DcgmSource::Open(env, why);
  });
  return sources;
}

void ChooseActivitySources(GpuActivitySources& sources, const GpuEntity& gpu,
                           const GpuEntity* whole, GpuCapabilities& caps,
                           std::array<int, kGpuActivityCount>& chosen) {
  chosen.fill(-1);
  std::array<std::string, kGpuActivityCount> why;
  auto unserved = [&] { return std::count(chosen.begin(), chosen.end(), -1) > 0; };
  for (size_t s = 0; unserved(); ++s) {
    while (s == sources.list.size() && !sources.pending.empty()) {
      std::string absent;
      auto opened = sources.pending.front()(&absent);
      sources.pending.erase(sources.pending.begin());
      if (opened) {
        sources.list.push_back(std::move(opened));
      } else {
        sources.absent.push_back(absent);
      }
    }
    if (s == sources.list.size()) break;
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
