#include "probe/gpm_source.h"

#include <cmath>
#include <limits>

namespace footprint {
namespace {

using nvml::Library;

// The GPM metric behind each activity metric (kGpuMetrics order), and the factor to the
// catalogue's unit (GPM gives percentages and MiB/s).
struct GpmMapping {
  unsigned int id;
  const char* name;
  double scale;
};
constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::array<GpmMapping, kGpuActivityCount> kGpm = {{
    {nvml::kGpmSmUtil, "SM_UTIL", 1},
    {nvml::kGpmSmOccupancy, "SM_OCCUPANCY", 1},
    {nvml::kGpmAnyTensorUtil, "ANY_TENSOR_UTIL", 1},
    {nvml::kGpmDramBwUtil, "DRAM_BW_UTIL", 1},
    {nvml::kGpmFp64Util, "FP64_UTIL", 1},
    {nvml::kGpmFp32Util, "FP32_UTIL", 1},
    {nvml::kGpmFp16Util, "FP16_UTIL", 1},
    {nvml::kGpmPcieTxPerSec, "PCIE_TX_PER_SEC", kMiB},
    {nvml::kGpmPcieRxPerSec, "PCIE_RX_PER_SEC", kMiB},
    {nvml::kGpmNvlinkTotalTxPerSec, "NVLINK_TOTAL_TX_PER_SEC", kMiB},
    {nvml::kGpmNvlinkTotalRxPerSec, "NVLINK_TOTAL_RX_PER_SEC", kMiB},
}};

constexpr Library::Fn kGpmFns[] = {Library::kGpmQueryDeviceSupport, Library::kGpmSampleAlloc,
                                   Library::kGpmSampleFree, Library::kGpmSampleGet,
                                   Library::kGpmMetricsGet};

Library::Fn SampleFn(int gpu_instance) {
  return gpu_instance >= 0 ? Library::kGpmMigSampleGet : Library::kGpmSampleGet;
}

}  // namespace

GpmSource::~GpmSource() {
  for (Watched& w : watched_) {
    for (nvml::GpmSample s : w.samples) {
      if (s != nullptr) nvml_->GpmSampleFree(s);
    }
  }
}

std::string GpmSource::Why(int rc, Library::Fn fn) const {
  return "NVML GPM: " + nvml_->Describe(rc, fn) + " from " + std::string(Library::NameOf(fn));
}

int GpmSource::Sample(const Watched& w, nvml::GpmSample sample) const {
  return w.gpu_instance >= 0
             ? nvml_->GpmMigSampleGet(w.gpu, static_cast<unsigned int>(w.gpu_instance), sample)
             : nvml_->GpmSampleGet(w.gpu, sample);
}

int GpmSource::Watch(const GpuEntity& gpu, const GpuEntity* whole, GpuActivitySet metrics,
                     std::string* why) {
  Watched w;
  w.gpu = whole != nullptr ? whole->handle : gpu.handle;
  if (gpu.is_mig()) {
    if (!gpu.gpu_instance_id) {
      *why = "NVML GPM: the GPU instance of " + gpu.entity + " is unknown";
      return -1;
    }
    w.gpu_instance = static_cast<int>(*gpu.gpu_instance_id);
  }
  for (size_t i = 0; i < kGpuActivityCount; ++i) {
    if (!metrics.test(i)) continue;
    w.ids[w.count] = kGpm[i].id;
    w.index[w.count++] = i;
  }
  for (nvml::GpmSample& s : w.samples) {
    if (int rc = nvml_->GpmSampleAlloc(&s); rc != nvml::kSuccess) {
      *why = Why(rc, Library::kGpmSampleAlloc);
      for (nvml::GpmSample t : w.samples) {
        if (t != nullptr) nvml_->GpmSampleFree(t);
      }
      return -1;
    }
  }
  watched_.push_back(w);
  return static_cast<int>(watched_.size() - 1);
}

GpuActivitySupport GpmSource::Probe(const GpuEntity& gpu, const GpuEntity* whole) {
  GpuActivitySupport out;
  auto refuse = [&out](const std::string& why) {
    for (GpuSupport& s : out) s = {false, "", why};
    return out;
  };
  for (Library::Fn fn : kGpmFns) {
    if (nvml_->SymbolOf(fn).empty()) {
      return refuse("NVML GPM: " + std::string(Library::NameOf(fn)) + " is not exported by " +
                    nvml_->path() + " (GPM needs driver 520 or later)");
    }
  }
  if (gpu.is_mig() && nvml_->SymbolOf(Library::kGpmMigSampleGet).empty()) {
    return refuse("NVML GPM: nvmlGpmMigSampleGet is not exported by " + nvml_->path());
  }
  const GpuEntity& device = whole != nullptr ? *whole : gpu;
  bool supported = false;
  if (int rc = nvml_->GpmSupported(device.handle, &supported); rc != nvml::kSuccess) {
    return refuse(Why(rc, Library::kGpmQueryDeviceSupport));
  }
  if (!supported) {
    return refuse("NVML GPM: " + device.entity + " (" + device.name +
                  ") does not support GPM (Hopper or later GPUs)");
  }
  // Which metrics the device computes: two samples, and each metric's own code.
  std::string why;
  const int slot = Watch(gpu, whole, GpuActivitySet().set(), &why);
  if (slot < 0) return refuse(why);
  const Watched w = watched_.back();
  watched_.pop_back();
  std::array<nvml::GpmResult, kGpuActivityCount> results;
  Library::Fn failed = SampleFn(w.gpu_instance);
  int rc = Sample(w, w.samples[0]);
  if (rc == nvml::kSuccess) rc = Sample(w, w.samples[1]);
  if (rc == nvml::kSuccess) {
    failed = Library::kGpmMetricsGet;
    rc = nvml_->GpmMetrics(w.samples[0], w.samples[1], w.ids.data(), w.count, results.data());
  }
  for (nvml::GpmSample s : w.samples) nvml_->GpmSampleFree(s);
  if (rc != nvml::kSuccess) return refuse(Why(rc, failed));
  const std::string of =
      w.gpu_instance >= 0 ? " of GPU instance " + std::to_string(w.gpu_instance) : "";
  for (size_t i = 0; i < kGpuActivityCount; ++i) {
    if (results[i].rc == nvml::kSuccess) {
      out[i] = {true, "NVML GPM, metric " + std::string(kGpm[i].name) + of, ""};
    } else {
      out[i] = {false, "",
                "NVML GPM: metric " + std::string(kGpm[i].name) + ": " +
                    nvml_->Describe(results[i].rc, Library::kGpmMetricsGet)};
    }
  }
  return out;
}

GpuActivitySource::ReadStatus GpmSource::Read(int slot, int64_t now_ns, GpuActivity& out,
                                              std::string* why) {
  Watched& w = watched_[static_cast<size_t>(slot)];
  if (w.previous >= 0 && now_ns - w.previous_ns < kMinIntervalNs) return ReadStatus::kTooSoon;
  const int next = w.previous == 0 ? 1 : 0;
  const size_t n = static_cast<size_t>(next);
  int rc = Sample(w, w.samples[n]);
  if (rc != nvml::kSuccess) {
    *why = Why(rc, SampleFn(w.gpu_instance));
    return nvml::IsDeviceLost(rc) ? ReadStatus::kLost : ReadStatus::kFailed;
  }
  const int previous = w.previous;
  w.previous = next;
  w.previous_ns = now_ns;
  if (previous < 0) return ReadStatus::kTooSoon;
  std::array<nvml::GpmResult, kGpuActivityCount> results;
  rc = nvml_->GpmMetrics(w.samples[static_cast<size_t>(previous)], w.samples[n], w.ids.data(),
                         w.count, results.data());
  if (rc != nvml::kSuccess) {
    *why = Why(rc, Library::kGpmMetricsGet);
    return nvml::IsDeviceLost(rc) ? ReadStatus::kLost : ReadStatus::kFailed;
  }
  out.fill(std::numeric_limits<double>::quiet_NaN());
  for (size_t k = 0; k < w.count; ++k) {
    const size_t i = w.index[k];
    if (results[k].rc == nvml::kSuccess && std::isfinite(results[k].value)) {
      out[i] = results[k].value * kGpm[i].scale;
    }
  }
  return ReadStatus::kValues;
}

}  // namespace footprint
