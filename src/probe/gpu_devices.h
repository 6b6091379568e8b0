// GPU devices as footprint sees them: the inventory NVML reports (whole GPUs and their MIG
// devices), which of them a run may use (CUDA_VISIBLE_DEVICES), and which GPU metrics each
// one supports. Shared by the GPU probe and `footprint doctor`.
//
// Entities are named 'gpu:N' (N = NVML index, the PCI bus order nvidia-smi shows) and
// 'gpu:N/mig:M' (M = the MIG device index NVML enumerates on GPU N).
//
// Thread-safety: free functions; the Library they are given is used from the calling thread.
#ifndef FOOTPRINT_PROBE_GPU_DEVICES_H_
#define FOOTPRINT_PROBE_GPU_DEVICES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/metrics.h"
#include "footprint/status.h"
#include "probe/nvml.h"

namespace footprint {

// The per-device metrics, in catalogue order: NVML's device queries, then the activity
// metrics a GpuActivitySource serves (probe/gpu_activity.h), from kFirstGpuActivitySlot on.
inline constexpr std::array<MetricId, 20> kGpuMetrics = {
    MetricId::kGpu,           MetricId::kGpuTree,        MetricId::kGpuMemory,
    MetricId::kGpuMemoryTree, MetricId::kGpuPower,       MetricId::kGpuEnergy,
    MetricId::kGpuEnergyTree, MetricId::kGpuSmClock,     MetricId::kGpuTemperature,
    MetricId::kGpuSmActive,   MetricId::kGpuSmOccupancy, MetricId::kGpuTensorActive,
    MetricId::kGpuDramActive, MetricId::kGpuFp64Active,  MetricId::kGpuFp32Active,
    MetricId::kGpuFp16Active, MetricId::kGpuPcieTx,      MetricId::kGpuPcieRx,
    MetricId::kGpuNvlinkTx,   MetricId::kGpuNvlinkRx};
inline constexpr size_t kFirstGpuActivitySlot = 9;
inline constexpr size_t kGpuActivityCount = kGpuMetrics.size() - kFirstGpuActivitySlot;

// A whole GPU or one MIG device.
struct GpuEntity {
  nvml::Device handle = nullptr;
  std::string entity;  // 'gpu:0', 'gpu:0/mig:1'
  unsigned int index = 0;
  int mig_index = -1;  // -1: the whole GPU
  int parent = -1;     // position of the whole GPU in the inventory, for a MIG device
  std::string name;
  std::string uuid;  // 'GPU-…' or 'MIG-…'
  std::optional<unsigned long long> memory_total_bytes;
  std::string mig_mode;  // whole GPUs: "enabled", "disabled" or why it is unknown
  std::optional<unsigned int> gpu_instance_id, compute_instance_id;  // MIG devices
  bool is_mig() const { return mig_index >= 0; }
};

// Every GPU NVML reports, each followed by its MIG devices. Fails only when NVML cannot count
// or open the GPUs; a property it cannot read is left empty.
Result<std::vector<GpuEntity>> ListGpus(const nvml::Library& nvml);

struct GpuSelection {
  std::vector<size_t> entities;  // positions in the inventory, inventory order
  std::string ignored;           // why part of the list was ignored, if it was
};

// Which entities a run may use, from a CUDA_VISIBLE_DEVICES-style list (nullopt: all of
// them). Entries are NVML indices, GPU UUIDs ('GPU-…'), MIG UUIDs ('MIG-…'), the legacy
// 'MIG-GPU-<uuid>/<gi>/<ci>', or unique UUID prefixes; "all" selects everything. As CUDA
// does, the list ends at the first entry that names no device (the rest is ignored and
// `ignored` says so). A GPU brings its MIG devices; a MIG device brings its GPU, whose
// board-level figures (power, energy) are the only ones NVML has.
GpuSelection SelectGpus(const std::vector<GpuEntity>& inventory,
                        const std::optional<std::string>& list);

// Whether each GPU metric can be measured on an entity, how, or why not.
struct GpuSupport {
  bool ok = false;
  std::string how;  // ok: the source ("counter", "power integration", an NVML function)
  std::string why;  // not ok: the NVML code and the call, or what is missing
};
using GpuCapabilities = std::array<GpuSupport, kGpuMetrics.size()>;

// Index of a GPU metric in kGpuMetrics / GpuCapabilities; -1 for other metrics.
int GpuMetricSlot(MetricId metric);

// Calls each NVML function once on `gpu` (capabilities are probed once, never retried while
// sampling). `have_tree`: whether the tree's PIDs are known (gpu.tree and the .tree metrics).
// The activity metrics are left unsupported: ChooseActivitySources (gpu_activity.h) fills them.
GpuCapabilities ProbeGpuCapabilities(nvml::Library& nvml, const GpuEntity& gpu, bool have_tree);

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPU_DEVICES_H_
