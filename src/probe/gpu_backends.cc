#include "probe/gpu_backends.h"

#include "probe/gpu_probe.h"

namespace footprint {
namespace {

using OpenBackend = std::unique_ptr<Probe> (*)(Env&, const MetricSet&, ProcessMembers*,
                                               const std::optional<std::string>&, nlohmann::json&,
                                               UnavailableMetrics*);

std::unique_ptr<Probe> OpenNvml(Env& env, const MetricSet& wanted, ProcessMembers* tree,
                                const std::optional<std::string>& gpus, nlohmann::json& meta,
                                UnavailableMetrics* unavailable) {
  return GpuProbe::Open(env, wanted, tree, gpus, meta, unavailable);
}

// In the order they are tried; the first that finds a GPU serves the run.
constexpr OpenBackend kGpuBackends[] = {&OpenNvml};

}  // namespace

std::unique_ptr<Probe> OpenGpuProbe(Env& env, const MetricSet& wanted, ProcessMembers* tree,
                                    const std::optional<std::string>& gpus, nlohmann::json& meta,
                                    UnavailableMetrics* unavailable) {
  for (OpenBackend open : kGpuBackends) {
    if (auto probe = open(env, wanted, tree, gpus, meta, unavailable)) return probe;
  }
  return nullptr;
}

}  // namespace footprint
