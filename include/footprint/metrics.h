// The metric catalogue: every sampled metric footprint knows, with its stable name and unit.
//
// Names are stable API (they appear on the command line, in the database and in JSON). A
// MetricId is a dense index usable in bit sets and arrays; its numeric value is not stored.
//
// Thread-safety: immutable tables; safe from any thread.
#ifndef FOOTPRINT_METRICS_H_
#define FOOTPRINT_METRICS_H_

#include <array>
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/status.h"

namespace footprint {

enum class MetricId : uint8_t {
  kCpu,           // % of one core, whole process tree, over the last interval
  kMemory,        // bytes the tree holds, shared pages once (see the catalogue's meaning)
  kMemoryRssSum,  // bytes, sum of the RSS of the tree's processes
  kPageCache,     // bytes of page cache charged to the run's memory cgroup
  kThreads,       // count of live threads in the tree
  kProcesses,     // count of live (non-zombie) processes in the tree
  kIoRead,        // bytes/s read from storage by the tree
  kIoWrite,       // bytes/s written to storage by the tree
  kSysCpu,        // % of one core, whole machine
  kSysMemory,     // bytes in use on the whole machine (MemTotal - MemAvailable)
  // Per GPU ('gpu:N') and MIG instance ('gpu:N/mig:M'), from NVML.
  kGpu,             // % device utilisation
  kGpuTree,         // % SM utilisation of the tree's processes (where NVML reports it)
  kGpuMemory,       // bytes of device memory used
  kGpuMemoryTree,   // bytes of device memory used by the tree's processes
  kGpuPower,        // W board power
  kGpuEnergy,       // J since run start (energy counter, else power integrated)
  kGpuEnergyTree,   // J since run start attributed to the tree by its SM share (estimate)
  kGpuSmClock,      // MHz
  kGpuTemperature,  // °C
  // GPU activity from the profiling counters (NVML GPM, else DCGM), per device and MIG instance.
  kGpuSmActive,      // % of SMs with a warp resident, averaged over the interval
  kGpuSmOccupancy,   // % of the SMs' warp slots in use
  kGpuTensorActive,  // % of cycles a tensor pipe was busy
  kGpuDramActive,    // % of peak device-memory bandwidth used
  kGpuFp64Active,    // % of cycles the FP64 pipe was busy
  kGpuFp32Active,    // % FP32
  kGpuFp16Active,    // % FP16
  kGpuPcieTx,        // bytes/s sent over PCIe
  kGpuPcieRx,        // bytes/s received over PCIe
  kGpuNvlinkTx,      // bytes/s sent over NVLink
  kGpuNvlinkRx,      // bytes/s received over NVLink
  // Opt-in: the machine-wide RAPL counters and the tree's hardware counters.
  kEnergyCpu,         // J since run start, RAPL package domains
  kEnergyDram,        // J since run start, RAPL DRAM domains
  kPerfInstructions,  // 1/s instructions retired by the tree
  kPerfCycles,        // 1/s CPU cycles of the tree
  kPerfCacheMisses,   // 1/s last-level cache misses of the tree
  kSampleCost,        // µs footprint spent taking one sample (all probes)
  kSampleDelay,       // µs between a sample's deadline and when it was taken
  kCount,
};

inline constexpr size_t kMetricCount = static_cast<size_t>(MetricId::kCount);
using MetricSet = std::bitset<kMetricCount>;

struct MetricInfo {
  MetricId id;
  std::string_view name;
  std::string_view unit;
  std::string_view entity;  // 'tree', 'system', 'gpu' (one series per device) or 'monitor'
  std::string_view meaning;
  bool opt_in = false;  // sampled only when asked for with -m (costlier or needs privileges)
  // A rate of a counter the kernel keeps up to date (bytes, unlike CPU time, which lags by up
  // to a scheduler tick): a last sample however soon after the previous is still exact.
  bool exact_rate = false;
};

// The whole catalogue, indexed by MetricId.
const std::array<MetricInfo, kMetricCount>& MetricCatalogue();

inline const MetricInfo& InfoOf(MetricId id) { return MetricCatalogue()[static_cast<size_t>(id)]; }

// Looks a metric up by its stable name. NotFound (listing the known names) if unknown.
Result<MetricId> MetricByName(std::string_view name);

// Parses a comma-separated list such as "cpu,memory"; "default" selects DefaultMetrics(),
// "all" every metric including the opt-in ones, and a prefix ending in '*' ("gpu*",
// "perf.*") every metric whose name starts with it.
Result<MetricSet> ParseMetricList(std::string_view list);

// The metrics `footprint run` samples when -m is not given: all but the opt-in ones.
MetricSet DefaultMetrics();

}  // namespace footprint

#endif  // FOOTPRINT_METRICS_H_
