#include "footprint/metrics.h"

#include <string>

#include "util/strings.h"

namespace footprint {

const std::array<MetricInfo, kMetricCount>& MetricCatalogue() {
  static const std::array<MetricInfo, kMetricCount> kCatalogue = {{
      {MetricId::kCpu, "cpu", "%", "tree",
       "CPU use of the whole process tree over the last interval; 100 = one core"},
      {MetricId::kMemory, "memory", "bytes", "tree",
       "memory the tree holds: anonymous and mapped file pages, each page once (the run's "
       "memory cgroup); the sum of RSS where there is no memory cgroup"},
      {MetricId::kMemoryRssSum, "memory.rss_sum", "bytes", "tree",
       "sum of the processes' RSS: a page shared by N processes counts N times"},
      {MetricId::kPageCache, "memory.page_cache", "bytes", "tree",
       "page cache charged to the run's memory cgroup: files the tree read or wrote"},
      {MetricId::kThreads, "threads", "count", "tree", "live threads in the tree"},
      {MetricId::kProcesses, "processes", "count", "tree", "live processes in the tree"},
      {MetricId::kIoRead, "io.read", "bytes/s", "tree", "storage reads of the tree", false, true},
      {MetricId::kIoWrite, "io.write", "bytes/s", "tree", "storage writes of the tree", false,
       true},
      {MetricId::kSysCpu, "sys.cpu", "%", "system", "CPU use of the machine; 100 = one core"},
      {MetricId::kSysMemory, "sys.memory", "bytes", "system",
       "memory in use on the machine (MemTotal - MemAvailable)"},
      {MetricId::kGpu, "gpu", "%", "gpu", "device utilisation (time a kernel was running)"},
      {MetricId::kGpuTree, "gpu.tree", "%", "gpu",
       "SM utilisation of the tree's processes, from NVML's per-process samples"},
      {MetricId::kGpuMemory, "gpu.memory", "bytes", "gpu", "device memory in use"},
      {MetricId::kGpuMemoryTree, "gpu.memory.tree", "bytes", "gpu",
       "device memory used by the tree's processes"},
      {MetricId::kGpuPower, "gpu.power", "W", "gpu", "board power draw"},
      {MetricId::kGpuEnergy, "gpu.energy", "J", "gpu",
       "device energy since run start (energy counter, else integrated power)"},
      {MetricId::kGpuEnergyTree, "gpu.energy.tree", "J", "gpu",
       "device energy attributed to the tree by its share of SM utilisation (an estimate)"},
      {MetricId::kGpuSmClock, "gpu.sm_clock", "MHz", "gpu", "SM clock"},
      {MetricId::kGpuTemperature, "gpu.temperature", "C", "gpu", "GPU temperature"},
      {MetricId::kGpuSmActive, "gpu.sm_active", "%", "gpu",
       "share of the SMs busy with at least one warp, averaged over the interval (SMACT)"},
      {MetricId::kGpuSmOccupancy, "gpu.sm_occupancy", "%", "gpu",
       "warps resident on the SMs as a share of the most they can hold (SMOCC)"},
      {MetricId::kGpuTensorActive, "gpu.tensor_active", "%", "gpu",
       "share of cycles a tensor-core pipe was busy"},
      {MetricId::kGpuDramActive, "gpu.dram_active", "%", "gpu",
       "device-memory bandwidth used, as a share of the peak"},
      {MetricId::kGpuFp64Active, "gpu.fp64_active", "%", "gpu",
       "share of cycles the FP64 pipe was busy (not tensor cores)"},
      {MetricId::kGpuFp32Active, "gpu.fp32_active", "%", "gpu",
       "share of cycles the FP32 pipe was busy (not tensor cores)"},
      {MetricId::kGpuFp16Active, "gpu.fp16_active", "%", "gpu",
       "share of cycles the FP16 pipe was busy (not tensor cores)"},
      {MetricId::kGpuPcieTx, "gpu.pcie.tx", "bytes/s", "gpu", "PCIe bytes sent by the device"},
      {MetricId::kGpuPcieRx, "gpu.pcie.rx", "bytes/s", "gpu", "PCIe bytes received by the device"},
      {MetricId::kGpuNvlinkTx, "gpu.nvlink.tx", "bytes/s", "gpu", "NVLink bytes sent, all links"},
      {MetricId::kGpuNvlinkRx, "gpu.nvlink.rx", "bytes/s", "gpu",
       "NVLink bytes received, all links"},
      {MetricId::kEnergyCpu, "energy.cpu", "J", "system",
       "CPU package energy since run start (RAPL, whole machine)", true},
      {MetricId::kEnergyDram, "energy.dram", "J", "system",
       "DRAM energy since run start (RAPL, whole machine)", true},
      {MetricId::kPerfInstructions, "perf.instructions", "1/s", "tree",
       "instructions retired by the tree (hardware counter)", true},
      {MetricId::kPerfCycles, "perf.cycles", "1/s", "tree", "CPU cycles of the tree", true},
      {MetricId::kPerfCacheMisses, "perf.cache_misses", "1/s", "tree",
       "last-level cache misses of the tree", true},
      {MetricId::kSampleCost, "monitor.sample_cost", "us", "monitor",
       "CPU time footprint spent taking one sample"},
      {MetricId::kSampleDelay, "monitor.sample_delay", "us", "monitor",
       "how late a sample was taken after its deadline"},
  }};
  return kCatalogue;
}

Result<MetricId> MetricByName(std::string_view name) {
  std::string known;
  for (const MetricInfo& m : MetricCatalogue()) {
    if (m.name == name) return m.id;
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  }
  return NotFound("unknown metric '" + std::string(name) + "'; known metrics: " + known);
}

Result<MetricSet> ParseMetricList(std::string_view list) {
  MetricSet set;
  for (std::string_view item : Split(list, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    if (item == "all") {
      set.set();
      continue;
    }
    if (item == "default") {
      set |= DefaultMetrics();
      continue;
    }
    if (item.ends_with('*')) {
      std::string_view prefix = item.substr(0, item.size() - 1);
      bool any = false;
      for (const MetricInfo& m : MetricCatalogue()) {
        if (m.name.starts_with(prefix)) set.set(static_cast<size_t>(m.id)), any = true;
      }
      if (!any) return InvalidArgument("no metric starts with '" + std::string(prefix) + "'");
      continue;
    }
    Result<MetricId> id = MetricByName(item);
    if (!id.ok()) return InvalidArgument(id.status().message());
    set.set(static_cast<size_t>(*id));
  }
  if (set.none()) return InvalidArgument("no metric named in '" + std::string(list) + "'");
  return set;
}

MetricSet DefaultMetrics() {
  MetricSet set;
  for (const MetricInfo& m : MetricCatalogue()) set.set(static_cast<size_t>(m.id), !m.opt_in);
  return set;
}

}  // namespace footprint
