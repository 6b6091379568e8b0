#include "probe/gpu_devices.h"

#include <algorithm>
#include <cctype>

#include "util/strings.h"

namespace footprint {
namespace {

using nvml::Library;

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Positions of the entities an entry of CUDA_VISIBLE_DEVICES names (empty: none).
std::vector<size_t> Match(const std::vector<GpuEntity>& inv, std::string_view entry) {
  std::vector<size_t> out;
  auto add_gpu = [&](size_t gpu) {
    out.push_back(gpu);
    for (size_t i = gpu + 1; i < inv.size() && inv[i].parent == static_cast<int>(gpu); ++i) {
      out.push_back(i);
    }
  };
  if (auto index = ParseInt(entry)) {
    for (size_t i = 0; i < inv.size(); ++i) {
      if (!inv[i].is_mig() && static_cast<int64_t>(inv[i].index) == *index) add_gpu(i);
    }
    return out;
  }
  // Legacy MIG form: MIG-GPU-<uuid>/<gpu instance>/<compute instance>.
  if (StartsWithNoCase(entry, "MIG-GPU-")) {
    std::vector<std::string_view> parts = Split(entry.substr(4), '/');
    if (parts.size() != 3) return out;
    auto gi = ParseInt(parts[1]);
    auto ci = ParseInt(parts[2]);
    for (size_t i = 0; i < inv.size(); ++i) {
      const GpuEntity& e = inv[i];
      if (!e.is_mig() || !gi || !ci || !e.gpu_instance_id || !e.compute_instance_id) continue;
      if (StartsWithNoCase(inv[static_cast<size_t>(e.parent)].uuid, parts[0]) &&
          *e.gpu_instance_id == *gi && *e.compute_instance_id == *ci) {
        out = {static_cast<size_t>(e.parent), i};
      }
    }
    return out;
  }
  // A UUID or a unique prefix of one; "GPU-"/"MIG-" may be left out.
  std::vector<size_t> hits;
  for (size_t i = 0; i < inv.size(); ++i) {
    std::string_view uuid = inv[i].uuid;
    std::string_view bare = uuid.size() > 4 ? uuid.substr(4) : uuid;
    if (!entry.empty() && (StartsWithNoCase(uuid, entry) || StartsWithNoCase(bare, entry))) {
      hits.push_back(i);
    }
  }
  if (hits.size() != 1) return out;  // unknown or ambiguous
  const GpuEntity& e = inv[hits[0]];
  if (e.is_mig()) return {static_cast<size_t>(e.parent), hits[0]};
  add_gpu(hits[0]);
  return out;
}

}  // namespace

int GpuMetricSlot(MetricId metric) {
  for (size_t i = 0; i < kGpuMetrics.size(); ++i) {
    if (kGpuMetrics[i] == metric) return static_cast<int>(i);
  }
  return -1;
}

Result<std::vector<GpuEntity>> ListGpus(const Library& nvml) {
  unsigned int count = 0;
  if (int rc = nvml.DeviceCount(&count); rc != nvml::kSuccess) {
    return Unsupported("NVML cannot count the GPUs: " +
                       nvml.Describe(rc, Library::kDeviceGetCount));
  }
  std::vector<GpuEntity> out;
  for (unsigned int i = 0; i < count; ++i) {
    GpuEntity gpu;
    gpu.index = i;
    gpu.entity = "gpu:" + std::to_string(i);
    if (int rc = nvml.DeviceByIndex(i, &gpu.handle); rc != nvml::kSuccess) {
      // One broken GPU (no permission, lost) must not hide the others.
      gpu.handle = nullptr;
      gpu.name = "(unavailable: " + nvml.Describe(rc, Library::kDeviceGetHandleByIndex) + ")";
      out.push_back(std::move(gpu));
      continue;
    }
    (void)nvml.Name(gpu.handle, &gpu.name);
    (void)nvml.Uuid(gpu.handle, &gpu.uuid);
    nvml::Memory mem;
    if (nvml.MemoryInfo(gpu.handle, &mem) == nvml::kSuccess) gpu.memory_total_bytes = mem.total;
    unsigned int current = 0, pending = 0;
    int rc = nvml.MigMode(gpu.handle, &current, &pending);
    gpu.mig_mode = rc == nvml::kSuccess
                       ? (current == nvml::kMigModeEnabled ? "enabled" : "disabled")
                   : rc == nvml::kNotSupported ? "not supported"
                                               : nvml.Describe(rc, Library::kDeviceGetMigMode);
    const int parent = static_cast<int>(out.size());
    out.push_back(std::move(gpu));
    if (rc != nvml::kSuccess || current != nvml::kMigModeEnabled) continue;
    unsigned int max_migs = 0;
    if (nvml.MaxMigDeviceCount(out[static_cast<size_t>(parent)].handle, &max_migs) !=
        nvml::kSuccess) {
      continue;
    }
    for (unsigned int m = 0; m < max_migs; ++m) {
      GpuEntity mig;
      // Indices without a MIG device answer NOT_FOUND: the numbering may have gaps.
      if (nvml.MigDeviceByIndex(out[static_cast<size_t>(parent)].handle, m, &mig.handle) !=
          nvml::kSuccess) {
        continue;
      }
      mig.index = i;
      mig.mig_index = static_cast<int>(m);
      mig.parent = parent;
      mig.entity = "gpu:" + std::to_string(i) + "/mig:" + std::to_string(m);
      (void)nvml.Name(mig.handle, &mig.name);
      (void)nvml.Uuid(mig.handle, &mig.uuid);
      if (nvml.MemoryInfo(mig.handle, &mem) == nvml::kSuccess) mig.memory_total_bytes = mem.total;
      unsigned int id = 0;
      if (nvml.GpuInstanceId(mig.handle, &id) == nvml::kSuccess) mig.gpu_instance_id = id;
      if (nvml.ComputeInstanceId(mig.handle, &id) == nvml::kSuccess) mig.compute_instance_id = id;
      out.push_back(std::move(mig));
    }
  }
  return out;
}

GpuSelection SelectGpus(const std::vector<GpuEntity>& inventory,
                        const std::optional<std::string>& list) {
  GpuSelection sel;
  std::vector<bool> chosen(inventory.size(), false);
  if (!list || Trim(*list) == "all") {
    chosen.assign(inventory.size(), true);
  } else if (!Trim(*list).empty()) {  // an empty list hides every GPU
    for (std::string_view entry : Split(*list, ',')) {
      entry = Trim(entry);
      std::vector<size_t> hits = Match(inventory, entry);
      if (hits.empty()) {
        // append(), not operator+: GCC 12 at -O3 warns falsely (-Wrestrict) on "'" + string.
        sel.ignored.append("'").append(entry).append(
            "' names no GPU here; it and the entries after it are ignored, as CUDA does");
        break;
      }
      for (size_t h : hits) chosen[h] = true;
    }
  }
  for (size_t i = 0; i < inventory.size(); ++i) {
    if (chosen[i] && inventory[i].handle != nullptr) sel.entities.push_back(i);
  }
  return sel;
}

namespace {

// The tree metrics' support, once the device-wide ones are known: tree energy splits the
// device's energy by what the process lists or per-process utilisation say.
void DecideTreeCapabilities(GpuCapabilities& caps, const GpuEntity& gpu, bool have_tree) {
  const GpuSupport& energy = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuEnergy))];
  GpuSupport& tree_sm = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuTree))];
  GpuSupport& tree_mem = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuMemoryTree))];
  GpuSupport& tree_energy = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuEnergyTree))];
  if (gpu.is_mig()) {
    tree_energy.why = "NVML reports energy per GPU, not per MIG device";
  } else if (!energy.ok) {
    tree_energy.why = "no device energy: " + energy.why;
  } else if (!tree_sm.ok && !tree_mem.ok) {
    tree_energy.why =
        "neither the running-process lists nor per-process utilisation: " + tree_mem.why + "; " +
        tree_sm.why;
  } else {
    tree_energy = {true, "device energy x the tree's share of SM utilisation", ""};
  }
  if (!have_tree) {
    for (GpuSupport* s : {&tree_sm, &tree_mem, &tree_energy}) {
      *s = {false, "", "the process tree's PIDs are not known"};
    }
  }
}

}  // namespace

GpuCapabilities ProbeGpuCapabilities(Library& nvml, const GpuEntity& gpu, bool have_tree) {
  GpuCapabilities caps;
  auto set = [&](MetricId m, int rc, Library::Fn fn) {
    GpuSupport& s = caps[static_cast<size_t>(GpuMetricSlot(m))];
    s.ok = rc == nvml::kSuccess;
    if (s.ok) {
      s.how = std::string(nvml.SymbolOf(fn));
    } else {
      s.why = nvml.Describe(rc, fn) + " from " + std::string(Library::NameOf(fn));
    }
  };
  nvml::Utilization util;
  set(MetricId::kGpu, nvml.UtilizationRates(gpu.handle, &util),
      Library::kDeviceGetUtilizationRates);
  nvml::Memory mem;
  set(MetricId::kGpuMemory, nvml.MemoryInfo(gpu.handle, &mem), Library::kDeviceGetMemoryInfo);
  unsigned int value = 0;
  set(MetricId::kGpuPower, nvml.PowerUsage(gpu.handle, &value), Library::kDeviceGetPowerUsage);
  set(MetricId::kGpuSmClock, nvml.SmClock(gpu.handle, &value), Library::kDeviceGetClockInfo);
  set(MetricId::kGpuTemperature, nvml.Temperature(gpu.handle, &value),
      Library::kDeviceGetTemperature);

  std::vector<nvml::ProcessUtilizationSample> samples;
  int rc = nvml.ProcessUtilization(gpu.handle, 0, samples);
  // No samples yet (NOT_FOUND) still means the call works.
  set(MetricId::kGpuTree, rc == nvml::kNotFound ? nvml::kSuccess : rc,
      Library::kDeviceGetProcessUtilization);
  std::vector<nvml::ProcessMemory> procs;
  set(MetricId::kGpuMemoryTree, nvml.ComputeProcesses(gpu.handle, procs),
      Library::kDeviceGetComputeRunningProcesses);

  unsigned long long mj = 0;
  GpuSupport& energy = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuEnergy))];
  const GpuSupport& power = caps[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuPower))];
  set(MetricId::kGpuEnergy, nvml.TotalEnergy(gpu.handle, &mj),
      Library::kDeviceGetTotalEnergyConsumption);
  if (energy.ok) {
    energy.how = "counter";
  } else if (power.ok) {
    energy = {true, "power integration", ""};
  } else {
    energy.why += "; and no power reading to integrate: " + power.why;
  }

  DecideTreeCapabilities(caps, gpu, have_tree);
  return caps;
}

}  // namespace footprint
