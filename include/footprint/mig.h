// NVIDIA's MIG profiles (the MIG user guide's tables) for the GPUs footprint recommends them on,
// and the smallest profile that holds a given peak of GPU memory: for a run measured on a
// whole GPU ("this run peaked at 7.1 GiB: 2g.10gb fits") and for a predicted peak.
//
// Thread-safety: pure functions over constant tables.
#ifndef FOOTPRINT_MIG_H_
#define FOOTPRINT_MIG_H_

#include <optional>
#include <string_view>
#include <vector>

namespace footprint {

struct MigProfile {
  std::string_view name;   // e.g. "2g.10gb"
  int compute_slices = 0;  // of 7
  int memory_eighths = 0;  // of the GPU's memory, in eighths
  int instances = 0;       // how many fit on one GPU
};

struct MigGpu {
  std::string_view name;             // "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"
  double memory_gib = 0;             // the GPU's memory, as the profile names count it
  std::vector<MigProfile> profiles;  // from the smallest
  double profile_gib(const MigProfile& p) const { return memory_gib * p.memory_eighths / 8; }
};

// Every GPU with a table.
const std::vector<MigGpu>& MigGpus();

// The table for a GPU named as footprint does ("H100-80GB") or as NVML does ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-40GB"); nullptr for a GPU without MIG or without a table.
const MigGpu* FindMigGpu(std::string_view name);

// The smallest profile (fewest compute slices, then least memory) whose memory holds
// `peak_bytes` plus `margin` (a share: 0.1 is 10 %); none when even the whole GPU does not.
std::optional<MigProfile> SmallestFittingProfile(const MigGpu& gpu, double peak_bytes,
                                                 double margin = 0.1);

}  // namespace footprint

#endif  // FOOTPRINT_MIG_H_
