// The NVML binding: libnvidia-ml loaded at run time with dlopen, its types declared here by
// hand, so footprint builds and runs on machines without the NVIDIA driver or CUDA.
//
// Library::Open(env) loads `libnvidia-ml.so.1` through the Env (which may serve a fake),
// resolves every function it uses through a table of candidate symbols (the newest versioned
// symbol first, e.g. nvmlInit_v2 before nvmlInit), and calls nvmlInit. A function is either
// required (without it NVML is unusable, and Open fails saying which symbol is missing) or
// optional (without it the call returns kFunctionNotFound and the metrics that need it are
// unsupported, with the reason). Nothing is called before the library is found: on a machine
// without the driver Open costs one failed dlopen.
//
// Calls return NVML's own codes (Return); outputs go through pointers, as in NVML.
//
// Thread-safety: thread-compatible. NVML itself is thread-safe, but the scratch buffers of the
// process-list calls are not: use one Library from one thread at a time (the monitor creates
// it on its thread, samples it on the sampler thread, and finishes after the sampler joined).
#ifndef FOOTPRINT_PROBE_NVML_H_
#define FOOTPRINT_PROBE_NVML_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint::nvml {

// nvmlReturn_t values (the ones footprint tells apart; every other code is passed through).
enum Return : int {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotSupported = 3,
  kNoPermission = 4,
  kNotFound = 6,
  kInsufficientSize = 7,
  kDriverNotLoaded = 9,
  kLibraryNotFound = 12,
  kFunctionNotFound = 13,
  kGpuIsLost = 15,
  kResetRequired = 16,
  kLibRmVersionMismatch = 18,
  kNoData = 21,
  kGpuNotFound = 28,
  kUnknown = 999,
};

// "NVML_ERROR_NOT_SUPPORTED"; "NVML_ERROR_<code>" for codes this file does not name.
std::string ReturnName(int code);
// Codes after which a device is gone for good (fell off the bus, needs a reset).
bool IsDeviceLost(int code);

// nvmlDevice_t: an opaque handle, of a whole GPU or of a MIG device.
using Device = struct DeviceOpaque*;

// Device memory (bytes). `used` leaves out the memory the driver reserves for itself where
// NVML can tell (nvmlDeviceGetMemoryInfo_v2, as nvidia-smi shows it); the unversioned call
// counts it as used (~480 MiB on an idle H100).
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlUtilization_t (percent over the driver's last sample period).
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlProcessUtilizationSample_t: one process's utilisation over one driver sample period.
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long time_stamp;  // CPU time stamp, µs
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};

// One entry of a running-process list, whatever nvmlProcessInfo_t version the symbol uses.
struct ProcessMemory {
  unsigned int pid;
  unsigned long long used_bytes;  // kValueNotAvailable when NVML cannot tell
};

// NVML_VALUE_NOT_AVAILABLE for unsigned long long fields.
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;
inline constexpr unsigned int kClockSm = 1;         // NVML_CLOCK_SM
inline constexpr unsigned int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
inline constexpr unsigned int kMigModeEnabled = 1;  // NVML_DEVICE_MIG_ENABLE

// GPM (GPU performance monitoring, Hopper and later, drivers >= 520): counters read into sample
// buffers; a metric is computed from two samples taken > 100 ms apart (nvmlGpmMetricsGet).
using GpmSample = struct GpmSampleOpaque*;
// nvmlGpmMetricId_t values footprint reads.
enum GpmMetric : unsigned int {
  kGpmSmUtil = 2,                // % of SMs busy (DCGM's SM active)
  kGpmSmOccupancy = 3,           // % of the SMs' warp slots resident
  kGpmAnyTensorUtil = 5,         // % of time any tensor pipe was busy
  kGpmDramBwUtil = 10,           // % of peak DRAM bandwidth
  kGpmFp64Util = 11,             // % of time the FP64 pipe was busy (non-tensor)
  kGpmFp32Util = 12,             // % FP32
  kGpmFp16Util = 13,             // % FP16
  kGpmPcieTxPerSec = 20,         // MiB/s
  kGpmPcieRxPerSec = 21,         // MiB/s
  kGpmNvlinkTotalRxPerSec = 60,  // MiB/s
  kGpmNvlinkTotalTxPerSec = 61,  // MiB/s
};
// One metric's result from nvmlGpmMetricsGet.
struct GpmResult {
  int rc = kUnknown;  // NVML's per-metric code
  double value = 0;
};

// Size of one nvmlProcessInfo_t element written by nvmlDevice*RunningProcesses{,_v2,_v3}.
// `symbol_version` is 1 for the unversioned symbol. The _v3 symbols of drivers 535.43 to
// 535.86 wrote a 32-byte struct (with usedGpuCcProtectedMemory) without a version bump; every
// other driver writes 24 bytes for _v2 and _v3 and 16 for the unversioned symbol.
size_t ProcessInfoStride(int symbol_version, std::string_view driver_version);

class Library {
 public:
  // The functions footprint uses, each resolved from a list of candidate symbols.
  enum Fn : int {
    kInit,
    kShutdown,
    kErrorString,
    kDeviceGetCount,
    kDeviceGetHandleByIndex,
    kSystemGetDriverVersion,
    kSystemGetNvmlVersion,
    kDeviceGetName,
    kDeviceGetUuid,
    kDeviceGetMemoryInfo,
    kDeviceGetUtilizationRates,
    kDeviceGetPowerUsage,
    kDeviceGetTotalEnergyConsumption,
    kDeviceGetClockInfo,
    kDeviceGetTemperature,
    kDeviceGetComputeRunningProcesses,
    kDeviceGetGraphicsRunningProcesses,
    kDeviceGetProcessUtilization,
    kDeviceGetMigMode,
    kDeviceGetMaxMigDeviceCount,
    kDeviceGetMigDeviceHandleByIndex,
    kDeviceGetGpuInstanceId,
    kDeviceGetComputeInstanceId,
    kGpmQueryDeviceSupport,
    kGpmSampleAlloc,
    kGpmSampleFree,
    kGpmSampleGet,
    kGpmMigSampleGet,
    kGpmMetricsGet,
    kFnCount,
  };

  // Loads libnvidia-ml.so.1 through `env` (Env::OpenLibrary decides which file serves it)
  // and initialises NVML. Unsupported with one line saying why (not found: install the NVIDIA
  // driver; a required symbol missing; nvmlInit failed with its code).
  static Result<std::shared_ptr<Library>> Open(Env& env);
  // The same with the library file named (tests).
  static Result<std::shared_ptr<Library>> Open(const std::string& path);

  ~Library();  // nvmlShutdown, dlclose
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const std::string& path() const { return path_; }
  // The symbol serving `fn` ("nvmlDeviceGetComputeRunningProcesses_v3"), or "" when missing.
  std::string_view SymbolOf(Fn fn) const;
  // The NVML name of `fn`'s newest symbol, for messages ("nvmlDeviceGetTotalEnergyConsumption").
  static std::string_view NameOf(Fn fn);
  // Optional functions this library lacks, by name.
  std::vector<std::string> MissingOptional() const;
  // "NVML_ERROR_NOT_SUPPORTED (Not Supported)": the code and NVML's own words for it. For
  // kFunctionNotFound from a missing symbol: "<name> is not exported by <path>".
  std::string Describe(int code, Fn fn) const;

  std::string DriverVersion() const;  // "" when unknown
  std::string NvmlVersion() const;

  int DeviceCount(unsigned int* count) const;
  int DeviceByIndex(unsigned int index, Device* device) const;
  int Name(Device device, std::string* name) const;
  int Uuid(Device device, std::string* uuid) const;
  int MemoryInfo(Device device, Memory* memory) const;
  int UtilizationRates(Device device, Utilization* utilization) const;
  int PowerUsage(Device device, unsigned int* milliwatts) const;
  int TotalEnergy(Device device, unsigned long long* millijoules) const;
  int SmClock(Device device, unsigned int* mhz) const;
  int Temperature(Device device, unsigned int* celsius) const;
  // The running compute / graphics processes; `out` is replaced, its capacity reused.
  int ComputeProcesses(Device device, std::vector<ProcessMemory>& out);
  int GraphicsProcesses(Device device, std::vector<ProcessMemory>& out);
  // Samples newer than `last_seen_us` (0: all the driver keeps); kNotFound when there are
  // none. `out` is replaced, its capacity reused.
  int ProcessUtilization(Device device, unsigned long long last_seen_us,
                         std::vector<ProcessUtilizationSample>& out) const;
  int MigMode(Device device, unsigned int* current, unsigned int* pending) const;
  int MaxMigDeviceCount(Device device, unsigned int* count) const;
  int MigDeviceByIndex(Device device, unsigned int index, Device* mig) const;
  int GpuInstanceId(Device device, unsigned int* id) const;
  int ComputeInstanceId(Device device, unsigned int* id) const;
  // GPM. `supported` is nvmlGpmSupport_t.isSupportedDevice.
  int GpmSupported(Device device, bool* supported) const;
  int GpmSampleAlloc(GpmSample* sample) const;
  int GpmSampleFree(GpmSample sample) const;
  // Reads the counters of a whole GPU, or of one GPU instance of a MIG-enabled GPU (`gpu` is
  // the whole GPU's handle).
  int GpmSampleGet(Device gpu, GpmSample sample) const;
  int GpmMigSampleGet(Device gpu, unsigned int gpu_instance_id, GpmSample sample) const;
  // The metrics `ids` between two samples, into `out` (as many as `ids`, at most
  // kGpmMaxMetrics). The call's code; each metric has its own in `out`.
  static constexpr size_t kGpmMaxMetrics = 16;
  int GpmMetrics(GpmSample first, GpmSample second, const unsigned int* ids, size_t count,
                 GpmResult* out) const;

 private:
  // Resolves the symbols of an opened library (`handle`, null when dlopen failed with `why`)
  // and initialises NVML.
  static Result<std::shared_ptr<Library>> Load(void* handle, const std::string& path,
                                               const std::string& why);
  Library() = default;
  template <typename F>
  F Get(Fn fn) const {
    return reinterpret_cast<F>(fns_[fn]);
  }
  // Calls an optional function; kFunctionNotFound when the library lacks it.
  template <typename F, typename... Args>
  int Call(Fn fn, Args... args) const {
    F f = Get<F>(fn);
    return f == nullptr ? kFunctionNotFound : f(args...);
  }
  int ProcessList(Fn fn, Device device, std::vector<ProcessMemory>& out);

  void* handle_ = nullptr;
  std::string path_;
  std::array<void*, kFnCount> fns_{};
  std::array<int, kFnCount> chosen_{};  // index of the candidate symbol that resolved
  std::vector<unsigned char> scratch_;  // raw nvmlProcessInfo_t elements
  std::string driver_version_;
};

}  // namespace footprint::nvml

#endif  // FOOTPRINT_PROBE_NVML_H_
