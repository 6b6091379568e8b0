// The GPU backends: each vendor's GPU probe behind the Probe interface, found through one
// table. A backend is one probe file (NVIDIA: gpu_probe.cc over NVML) that lists its devices
// as `gpu:N` and `gpu:N/mig:M`, emits the catalogue's `gpu.*` metrics for them, accumulates
// and attributes energy with DeviceEnergy / TreeEnergy (gpu_energy.h) and writes `meta.gpu`;
// an AMD (ROCm SMI) or Jetson backend is one more file and one more row in the table.
#ifndef FOOTPRINT_PROBE_GPU_BACKENDS_H_
#define FOOTPRINT_PROBE_GPU_BACKENDS_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "footprint/env.h"
#include "footprint/metrics.h"
#include "probe/probe.h"
#include "probe/process_members.h"

namespace footprint {

// The probe of the first backend that serves the `wanted` GPU metrics here, or nullptr (no GPU
// metric wanted — no vendor library is even loaded —, or none of them found a GPU: meta.gpu
// and, when given, `unavailable` say why). `gpus` overrides CUDA_VISIBLE_DEVICES-style
// selection; `tree` gives the tree's PIDs for the `.tree` metrics.
std::unique_ptr<Probe> OpenGpuProbe(Env& env, const MetricSet& wanted, ProcessMembers* tree,
                                    const std::optional<std::string>& gpus, nlohmann::json& meta,
                                    UnavailableMetrics* unavailable);

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPU_BACKENDS_H_
