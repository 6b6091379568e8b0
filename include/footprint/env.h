// Env: every outside effect of footprint's measuring pipeline behind one interface — the
// clocks (monotonic, wall and CPU-time) and waiting on them, where /proc and /sys are, reading
// files, how vendor libraries are loaded, and the process environment — so that tests can drive
// time and inject faults (LevelDB's idea).
//
// Probes, the sampler, the writer and the store read no environment variable and no clock of
// their own: they ask the Env they were given (MonitorOptions::env, BenchmarkOptions::env,
// StoreOptions::env). Two clocks stay outside on purpose: the times the kernel stamps (the CPU
// ring's records and the count read beside them are CLOCK_MONOTONIC, the kernel's timeline)
// and the API's scope edges (a virtual call would double a scope's cost).
// Env::Default() is the real machine, where the variables that redirect footprint for tests
// (FOOTPRINT_SYSFS_ROOT, FOOTPRINT_NVML_LIBRARY, FOOTPRINT_CUDA_LIBRARY,
// FOOTPRINT_DCGM_LIBRARY) are read, once, here.
//
// Thread-safety: every method may be called from any thread concurrently.
#ifndef FOOTPRINT_ENV_H_
#define FOOTPRINT_ENV_H_

#include <time.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "footprint/status.h"

namespace footprint {

class Env {
 public:
  virtual ~Env() = default;

  // The real machine. Never destroyed.
  static Env& Default();

  // Monotonic nanoseconds (ordering, intervals, deadlines) and wall-clock UTC nanoseconds
  // (only to anchor a run once).
  virtual int64_t MonotonicNs() = 0;
  virtual int64_t RealtimeNs() = 0;
  // Waits on `cv` (with `lock` held, as condition_variable::wait does) until `wake()` is true
  // or the monotonic clock reaches `deadline_ns`, whichever comes first. Returns wake().
  virtual bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         int64_t deadline_ns, const std::function<bool()>& wake) = 0;
  // Sleeps until the monotonic clock reaches `deadline_ns` (WaitUntil with nothing to wake it):
  // back-offs and retries.
  void SleepUntil(int64_t deadline_ns);
  // Nanoseconds of CPU time on a CPU-time clock: CLOCK_THREAD_CPUTIME_ID (the calling
  // thread's) or another thread's (pthread_getcpuclockid); 0 when it cannot be read (the
  // thread ended).
  virtual int64_t CpuNs(clockid_t clock) = 0;

  // Roots of the kernel's file systems ("/proc", "/sys" on the real machine).
  virtual std::string ProcRoot() = 0;
  virtual std::string SysRoot() = 0;

  // Reads a whole file (a ref, a log, a predictor). IoError naming the path and the reason
  // when it cannot be opened or read. No size cap and no check of the file's kind: a file a
  // person names is checked first (util/file.h's CheckRegularFile).
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Whether the file can be opened for reading, without reading it (a model of gigabytes):
  // OK, or IoError naming the path and the reason.
  virtual Status CheckReadable(const std::string& path) = 0;

  // Opens a shared library by its soname (e.g. "libnvidia-ml.so.1") as dlopen would, or
  // returns nullptr with dlerror()'s words in `error`. The Env decides which file serves a
  // soname (tests load fakes). `path_used` (may be null) receives the file it tried. The real
  // Env does not search for NVML or CUDA where no NVIDIA driver's device node exists.
  virtual void* OpenLibrary(const std::string& soname, std::string* error,
                            std::string* path_used) = 0;

  // A variable of the process environment; nullopt when unset (an empty value is a value:
  // CUDA_VISIBLE_DEVICES="" hides every GPU).
  virtual std::optional<std::string> Var(std::string_view name) = 0;
};

}  // namespace footprint

#endif  // FOOTPRINT_ENV_H_
