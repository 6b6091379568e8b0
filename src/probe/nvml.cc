#include "probe/nvml.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <iterator>

#include "util/strings.h"

namespace footprint::nvml {
namespace {

// NVML's signatures, with the hand-declared types.
using InitFn = int (*)();
using ErrorStringFn = const char* (*)(int);
using CountFn = int (*)(unsigned int*);
using HandleByIndexFn = int (*)(unsigned int, Device*);
using StringFn = int (*)(char*, unsigned int);
using DeviceStringFn = int (*)(Device, char*, unsigned int);
using MemoryFn = int (*)(Device, Memory*);
using UtilizationFn = int (*)(Device, Utilization*);
using UintFn = int (*)(Device, unsigned int*);
using UllFn = int (*)(Device, unsigned long long*);
using ClockFn = int (*)(Device, unsigned int, unsigned int*);
using ProcessesFn = int (*)(Device, unsigned int*, void*);
using ProcessUtilizationFn = int (*)(Device, ProcessUtilizationSample*, unsigned int*,
                                     unsigned long long);
using MigModeFn = int (*)(Device, unsigned int*, unsigned int*);
using MigHandleFn = int (*)(Device, unsigned int, Device*);

// GPM's structs, as nvml.h declares them (NVML_GPM_SUPPORT_VERSION and
// NVML_GPM_METRICS_GET_VERSION are 1).
struct GpmSupport {
  unsigned int version;
  unsigned int is_supported_device;
};
struct GpmMetric {
  unsigned int metric_id;
  int nvml_return;
  double value;
  const char* short_name;
  const char* long_name;
  const char* unit;
};
// NVML_GPM_METRIC_MAX in the driver 580 header: the library may touch the whole array.
constexpr size_t kGpmMetricMax = 333;
struct GpmMetricsGet {
  unsigned int version;
  unsigned int num_metrics;
  GpmSample sample1;
  GpmSample sample2;
  GpmMetric metrics[kGpmMetricMax];
};
static_assert(sizeof(GpmMetric) == 40, "nvmlGpmMetric_t ABI");
static_assert(offsetof(GpmMetricsGet, metrics) == 24, "nvmlGpmMetricsGet_t ABI");
using GpmSupportFn = int (*)(Device, GpmSupport*);
using GpmAllocFn = int (*)(GpmSample*);
using GpmFreeFn = int (*)(GpmSample);
using GpmSampleFn = int (*)(Device, GpmSample);
using GpmMigSampleFn = int (*)(Device, unsigned int, GpmSample);
using GpmMetricsFn = int (*)(GpmMetricsGet*);

static_assert(sizeof(Memory) == 24, "nvmlMemory_t is three unsigned long long");
// nvmlMemory_v2_t; its version is NVML_STRUCT_VERSION(Memory, 2).
struct MemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(MemoryV2) == 40, "nvmlMemory_v2_t ABI");
constexpr unsigned int kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);
using MemoryV2Fn = int (*)(Device, MemoryV2*);
static_assert(sizeof(Utilization) == 8, "nvmlUtilization_t is two unsigned int");
static_assert(sizeof(ProcessUtilizationSample) == 32, "nvmlProcessUtilizationSample_t ABI");
static_assert(offsetof(ProcessUtilizationSample, sm_util) == 16, "nvmlProcessUtilizationSample_t");

// Candidate symbols per function, newest first, and the struct version each one uses.
struct FnSpec {
  Library::Fn fn;
  bool required;
  std::array<const char*, 3> symbols;
  std::array<int, 3> versions;
};

constexpr FnSpec kSpecs[] = {
    {Library::kInit, true, {"nvmlInit_v2", "nvmlInit", nullptr}, {2, 1, 0}},
    {Library::kShutdown, true, {"nvmlShutdown", nullptr, nullptr}, {1, 0, 0}},
    {Library::kErrorString, false, {"nvmlErrorString", nullptr, nullptr}, {1, 0, 0}},
    {Library::kDeviceGetCount,
     true,
     {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", nullptr},
     {2, 1, 0}},
    {Library::kDeviceGetHandleByIndex,
     true,
     {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", nullptr},
     {2, 1, 0}},
    {Library::kSystemGetDriverVersion,
     false,
     {"nvmlSystemGetDriverVersion", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kSystemGetNvmlVersion,
     false,
     {"nvmlSystemGetNVMLVersion", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetName, true, {"nvmlDeviceGetName", nullptr, nullptr}, {1, 0, 0}},
    {Library::kDeviceGetUuid, true, {"nvmlDeviceGetUUID", nullptr, nullptr}, {1, 0, 0}},
    {Library::kDeviceGetMemoryInfo,
     false,
     {"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo", nullptr},
     {2, 1, 0}},
    {Library::kDeviceGetUtilizationRates,
     false,
     {"nvmlDeviceGetUtilizationRates", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetPowerUsage,
     false,
     {"nvmlDeviceGetPowerUsage", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetTotalEnergyConsumption,
     false,
     {"nvmlDeviceGetTotalEnergyConsumption", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetClockInfo, false, {"nvmlDeviceGetClockInfo", nullptr, nullptr}, {1, 0, 0}},
    {Library::kDeviceGetTemperature,
     false,
     {"nvmlDeviceGetTemperature", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetComputeRunningProcesses,
     false,
     {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
      "nvmlDeviceGetComputeRunningProcesses"},
     {3, 2, 1}},
    {Library::kDeviceGetGraphicsRunningProcesses,
     false,
     {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
      "nvmlDeviceGetGraphicsRunningProcesses"},
     {3, 2, 1}},
    {Library::kDeviceGetProcessUtilization,
     false,
     {"nvmlDeviceGetProcessUtilization", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetMigMode, false, {"nvmlDeviceGetMigMode", nullptr, nullptr}, {1, 0, 0}},
    {Library::kDeviceGetMaxMigDeviceCount,
     false,
     {"nvmlDeviceGetMaxMigDeviceCount", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetMigDeviceHandleByIndex,
     false,
     {"nvmlDeviceGetMigDeviceHandleByIndex", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetGpuInstanceId,
     false,
     {"nvmlDeviceGetGpuInstanceId", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kDeviceGetComputeInstanceId,
     false,
     {"nvmlDeviceGetComputeInstanceId", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kGpmQueryDeviceSupport,
     false,
     {"nvmlGpmQueryDeviceSupport", nullptr, nullptr},
     {1, 0, 0}},
    {Library::kGpmSampleAlloc, false, {"nvmlGpmSampleAlloc", nullptr, nullptr}, {1, 0, 0}},
    {Library::kGpmSampleFree, false, {"nvmlGpmSampleFree", nullptr, nullptr}, {1, 0, 0}},
    {Library::kGpmSampleGet, false, {"nvmlGpmSampleGet", nullptr, nullptr}, {1, 0, 0}},
    {Library::kGpmMigSampleGet, false, {"nvmlGpmMigSampleGet", nullptr, nullptr}, {1, 0, 0}},
    {Library::kGpmMetricsGet, false, {"nvmlGpmMetricsGet", nullptr, nullptr}, {1, 0, 0}},
};
constexpr bool SpecsFollowTheEnum() {
  for (size_t i = 0; i < std::size(kSpecs); ++i) {
    if (kSpecs[i].fn != static_cast<Library::Fn>(i)) return false;
  }
  return std::size(kSpecs) == Library::kFnCount;
}
static_assert(SpecsFollowTheEnum(), "kSpecs lists every Library::Fn, in order");

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

// What to do about an nvmlInit failure, where there is something to say.
std::string_view InitHint(int code) {
  switch (code) {
    case kDriverNotLoaded:
      return "; the NVIDIA kernel driver is not loaded (is there a GPU? try nvidia-smi)";
    case kNoPermission:
      return "; this user may not open /dev/nvidia*";
    case kLibRmVersionMismatch:
      return "; the NVIDIA library and kernel driver versions differ: reboot or reload the driver";
    default:
      return "";
  }
}

}  // namespace

std::string ReturnName(int code) {
  switch (code) {
    case kSuccess:
      return "NVML_SUCCESS";
    case kUninitialized:
      return "NVML_ERROR_UNINITIALIZED";
    case kInvalidArgument:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case kNotSupported:
      return "NVML_ERROR_NOT_SUPPORTED";
    case kNoPermission:
      return "NVML_ERROR_NO_PERMISSION";
    case kNotFound:
      return "NVML_ERROR_NOT_FOUND";
    case kInsufficientSize:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case kDriverNotLoaded:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case kLibraryNotFound:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case kFunctionNotFound:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case kGpuIsLost:
      return "NVML_ERROR_GPU_IS_LOST";
    case kResetRequired:
      return "NVML_ERROR_RESET_REQUIRED";
    case kLibRmVersionMismatch:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case kNoData:
      return "NVML_ERROR_NO_DATA";
    case kGpuNotFound:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case kUnknown:
      return "NVML_ERROR_UNKNOWN";
    default:
      return "NVML_ERROR_" + std::to_string(code);
  }
}

bool IsDeviceLost(int code) {
  return code == kGpuIsLost || code == kResetRequired || code == kGpuNotFound;
}

size_t ProcessInfoStride(int symbol_version, std::string_view driver_version) {
  if (symbol_version <= 1) return 16;  // pid, usedGpuMemory
  if (symbol_version == 3) {
    // "535.54.03": the 535 branch from 535.43 up to (not including) 535.98.
    std::vector<std::string_view> parts = Split(driver_version, '.');
    if (parts.size() >= 2) {
      auto major = ParseInt(parts[0]);
      auto minor = ParseInt(parts[1]);
      if (major && minor && *major == 535 && *minor >= 43 && *minor < 98) return 32;
    }
  }
  return 24;  // pid, usedGpuMemory, gpuInstanceId, computeInstanceId
}

Result<std::shared_ptr<Library>> Library::Open(Env& env) {
  std::string error, path;
  void* handle = env.OpenLibrary(kDefaultLibrary, &error, &path);
  return Load(handle, path, error);
}

Result<std::shared_ptr<Library>> Library::Open(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* err = handle == nullptr ? ::dlerror() : nullptr;
  return Load(handle, path, err != nullptr ? err : "unknown dlopen error");
}

Result<std::shared_ptr<Library>> Library::Load(void* handle, const std::string& path,
                                               const std::string& why) {
  if (handle == nullptr) {
    if (path == kDefaultLibrary && why.find("No such file") != std::string::npos) {
      return Unsupported(path + " not found: install the NVIDIA driver to measure GPUs (" + why +
                         ")");
    }
    return Unsupported("cannot load " + path + ": " + why);
  }
  std::shared_ptr<Library> lib(new Library());
  lib->handle_ = handle;
  lib->path_ = path;
  for (const FnSpec& spec : kSpecs) {
    lib->chosen_[spec.fn] = -1;
    for (int i = 0; i < 3 && spec.symbols[i] != nullptr; ++i) {
      if (void* sym = ::dlsym(handle, spec.symbols[i])) {
        lib->fns_[spec.fn] = sym;
        lib->chosen_[spec.fn] = i;
        break;
      }
    }
    if (spec.required && lib->fns_[spec.fn] == nullptr) {
      std::string tried;
      for (const char* s : spec.symbols) {
        if (s != nullptr) tried += (tried.empty() ? "" : " or ") + std::string(s);
      }
      lib->fns_ = {};  // nothing to shut down: nvmlInit was not called
      return Unsupported(path + " lacks " + tried +
                         ", which footprint needs: it is not NVML, or an NVIDIA driver too old "
                         "to measure (update the driver)");
    }
  }
  int rc = lib->Get<InitFn>(kInit)();
  if (rc != kSuccess) {
    std::string init_error = lib->Describe(rc, kInit);
    lib->fns_[kShutdown] = nullptr;  // not initialised: nothing to shut down
    return Unsupported(std::string(lib->SymbolOf(kInit)) + " failed: " + init_error +
                       std::string(InitHint(rc)));
  }
  char buf[96];
  if (auto f = lib->Get<StringFn>(kSystemGetDriverVersion);
      f != nullptr && f(buf, sizeof buf) == kSuccess) {
    lib->driver_version_ = buf;
  }
  lib->scratch_.resize(64 * 32);
  return lib;
}

Library::~Library() {
  if (auto shutdown = Get<InitFn>(kShutdown)) shutdown();
  if (handle_ != nullptr) ::dlclose(handle_);
}

std::string_view Library::SymbolOf(Fn fn) const {
  if (fns_[fn] == nullptr || chosen_[fn] < 0) return "";
  return kSpecs[fn].symbols[static_cast<size_t>(chosen_[fn])];
}

std::string_view Library::NameOf(Fn fn) {
  std::string_view newest = kSpecs[fn].symbols[0];
  size_t v = newest.rfind("_v");
  return v == std::string_view::npos ? newest : newest.substr(0, v);
}

std::vector<std::string> Library::MissingOptional() const {
  std::vector<std::string> out;
  for (const FnSpec& spec : kSpecs) {
    if (!spec.required && fns_[spec.fn] == nullptr) out.emplace_back(NameOf(spec.fn));
  }
  return out;
}

std::string Library::Describe(int code, Fn fn) const {
  if (code == kFunctionNotFound && fns_[fn] == nullptr) {
    return std::string(NameOf(fn)) + " is not exported by " + path_ +
           " (an older driver; update it for this metric)";
  }
  std::string out = ReturnName(code);
  if (auto f = Get<ErrorStringFn>(kErrorString)) {
    if (const char* text = f(code); text != nullptr && *text != '\0') {
      out += " (" + std::string(text) + ")";
    }
  }
  return out;
}

std::string Library::DriverVersion() const { return driver_version_; }

std::string Library::NvmlVersion() const {
  char buf[96];
  auto f = Get<StringFn>(kSystemGetNvmlVersion);
  return f != nullptr && f(buf, sizeof buf) == kSuccess ? std::string(buf) : std::string();
}

int Library::DeviceCount(unsigned int* count) const { return Get<CountFn>(kDeviceGetCount)(count); }

int Library::DeviceByIndex(unsigned int index, Device* device) const {
  return Get<HandleByIndexFn>(kDeviceGetHandleByIndex)(index, device);
}

int Library::Name(Device device, std::string* name) const {
  char buf[96];  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
  int rc = Get<DeviceStringFn>(kDeviceGetName)(device, buf, sizeof buf);
  if (rc == kSuccess) *name = buf;
  return rc;
}

int Library::Uuid(Device device, std::string* uuid) const {
  char buf[96];  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
  int rc = Get<DeviceStringFn>(kDeviceGetUuid)(device, buf, sizeof buf);
  if (rc == kSuccess) *uuid = buf;
  return rc;
}

int Library::MemoryInfo(Device device, Memory* memory) const {
  if (fns_[kDeviceGetMemoryInfo] != nullptr &&
      kSpecs[kDeviceGetMemoryInfo].versions[static_cast<size_t>(chosen_[kDeviceGetMemoryInfo])] ==
          2) {
    MemoryV2 v2{};
    v2.version = kMemoryV2Version;
    int rc = Get<MemoryV2Fn>(kDeviceGetMemoryInfo)(device, &v2);
    if (rc == kSuccess) *memory = {v2.total, v2.free, v2.used};
    return rc;
  }
  return Call<MemoryFn>(kDeviceGetMemoryInfo, device, memory);
}

int Library::UtilizationRates(Device device, Utilization* utilization) const {
  return Call<UtilizationFn>(kDeviceGetUtilizationRates, device, utilization);
}

int Library::PowerUsage(Device device, unsigned int* milliwatts) const {
  return Call<UintFn>(kDeviceGetPowerUsage, device, milliwatts);
}

int Library::TotalEnergy(Device device, unsigned long long* millijoules) const {
  return Call<UllFn>(kDeviceGetTotalEnergyConsumption, device, millijoules);
}

int Library::SmClock(Device device, unsigned int* mhz) const {
  return Call<ClockFn>(kDeviceGetClockInfo, device, kClockSm, mhz);
}

int Library::Temperature(Device device, unsigned int* celsius) const {
  return Call<ClockFn>(kDeviceGetTemperature, device, kTemperatureGpu, celsius);
}

int Library::MigMode(Device device, unsigned int* current, unsigned int* pending) const {
  return Call<MigModeFn>(kDeviceGetMigMode, device, current, pending);
}

int Library::MaxMigDeviceCount(Device device, unsigned int* count) const {
  return Call<UintFn>(kDeviceGetMaxMigDeviceCount, device, count);
}

int Library::MigDeviceByIndex(Device device, unsigned int index, Device* mig) const {
  return Call<MigHandleFn>(kDeviceGetMigDeviceHandleByIndex, device, index, mig);
}

int Library::GpuInstanceId(Device device, unsigned int* id) const {
  return Call<UintFn>(kDeviceGetGpuInstanceId, device, id);
}

int Library::ComputeInstanceId(Device device, unsigned int* id) const {
  return Call<UintFn>(kDeviceGetComputeInstanceId, device, id);
}

int Library::GpmSupported(Device device, bool* supported) const {
  GpmSupport support{1, 0};
  int rc = Call<GpmSupportFn>(kGpmQueryDeviceSupport, device, &support);
  *supported = rc == kSuccess && support.is_supported_device != 0;
  return rc;
}

int Library::GpmSampleAlloc(GpmSample* sample) const {
  return Call<GpmAllocFn>(kGpmSampleAlloc, sample);
}

int Library::GpmSampleFree(GpmSample sample) const {
  return Call<GpmFreeFn>(kGpmSampleFree, sample);
}

int Library::GpmSampleGet(Device gpu, GpmSample sample) const {
  return Call<GpmSampleFn>(kGpmSampleGet, gpu, sample);
}

int Library::GpmMigSampleGet(Device gpu, unsigned int gpu_instance_id, GpmSample sample) const {
  return Call<GpmMigSampleFn>(kGpmMigSampleGet, gpu, gpu_instance_id, sample);
}

int Library::GpmMetrics(GpmSample first, GpmSample second, const unsigned int* ids, size_t count,
                        GpmResult* out) const {
  if (count > kGpmMaxMetrics) return kInvalidArgument;
  GpmMetricsGet get{};  // 13 kB on the sampler thread's stack: no allocation while sampling
  get.version = 1;
  get.num_metrics = static_cast<unsigned int>(count);
  get.sample1 = first;
  get.sample2 = second;
  for (size_t i = 0; i < count; ++i) get.metrics[i].metric_id = ids[i];
  int rc = Call<GpmMetricsFn>(kGpmMetricsGet, &get);
  for (size_t i = 0; i < count; ++i) {
    out[i] = {rc == kSuccess ? get.metrics[i].nvml_return : rc, get.metrics[i].value};
  }
  return rc;
}

int Library::ComputeProcesses(Device device, std::vector<ProcessMemory>& out) {
  return ProcessList(kDeviceGetComputeRunningProcesses, device, out);
}

int Library::GraphicsProcesses(Device device, std::vector<ProcessMemory>& out) {
  return ProcessList(kDeviceGetGraphicsRunningProcesses, device, out);
}

int Library::ProcessList(Fn fn, Device device, std::vector<ProcessMemory>& out) {
  out.clear();
  auto f = Get<ProcessesFn>(fn);
  if (f == nullptr) return kFunctionNotFound;
  const size_t stride =
      ProcessInfoStride(kSpecs[fn].versions[static_cast<size_t>(chosen_[fn])], driver_version_);
  // The list can grow between the call that says how long it is and the next one.
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(scratch_.size() / stride);
    int rc = f(device, &count, scratch_.data());
    if (rc == kInsufficientSize) {
      scratch_.resize((static_cast<size_t>(count) + 16) * stride);
      continue;
    }
    if (rc != kSuccess) return rc;
    for (unsigned int i = 0; i < count; ++i) {
      // Every version starts with unsigned int pid and, 8-aligned, unsigned long long memory.
      const unsigned char* e = scratch_.data() + i * stride;
      ProcessMemory p;
      std::memcpy(&p.pid, e, sizeof p.pid);
      std::memcpy(&p.used_bytes, e + 8, sizeof p.used_bytes);
      out.push_back(p);
    }
    return kSuccess;
  }
  return kInsufficientSize;
}

int Library::ProcessUtilization(Device device, unsigned long long last_seen_us,
                                std::vector<ProcessUtilizationSample>& out) const {
  auto f = Get<ProcessUtilizationFn>(kDeviceGetProcessUtilization);
  if (f == nullptr) return kFunctionNotFound;
  if (out.capacity() < 64) out.reserve(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    out.resize(out.capacity());
    unsigned int count = static_cast<unsigned int>(out.size());
    int rc = f(device, out.data(), &count, last_seen_us);
    if (rc == kInsufficientSize) {
      out.reserve(static_cast<size_t>(count) + 16);
      continue;
    }
    out.resize(rc == kSuccess ? count : 0);
    return rc;
  }
  out.clear();
  return kInsufficientSize;
}

}  // namespace footprint::nvml
