// The real machine's Env (include/footprint/env.h).
#include "footprint/env.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "util/clock.h"
#include "util/file.h"

namespace footprint {
namespace {

class RealEnv final : public Env {
 public:
  RealEnv() {
    if (auto root = Var("FOOTPRINT_SYSFS_ROOT"); root && !root->empty()) sys_root_ = *root;
  }

  int64_t MonotonicNs() override { return footprint::MonotonicNs(); }
  int64_t RealtimeNs() override { return footprint::RealtimeNs(); }
  int64_t CpuNs(clockid_t clock) override {
    timespec ts;
    return clock_gettime(clock, &ts) == 0 ? NsOf(ts) : 0;
  }

  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ns, const std::function<bool()>& wake) override {
    // steady_clock is CLOCK_MONOTONIC on Linux, the clock deadlines are taken from.
    const std::chrono::steady_clock::time_point deadline{std::chrono::nanoseconds(deadline_ns)};
    return cv.wait_until(lock, deadline, wake);
  }

  std::string ProcRoot() override { return "/proc"; }
  std::string SysRoot() override { return sys_root_; }

  Result<std::string> ReadFile(const std::string& path) override { return ReadWholeFile(path); }
  Status CheckReadable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
    CloseFd(fd);
    return Status::Ok();
  }

  void* OpenLibrary(const std::string& soname, std::string* error,
                    std::string* path_used) override {
    std::string path = soname;
    // Tests and unusual installations point footprint at another file for a vendor library.
    bool overridden = false;
    for (const auto& [name, variable] : kOverrides) {
      if (soname != name) continue;
      if (auto file = Var(variable); file && !file->empty()) {
        path = *file;
        overridden = true;
      }
    }
    if (path_used != nullptr) *path_used = path;
    // Without the driver's device nodes the NVIDIA libraries cannot serve, and looking for them
    // in every library folder cost each run about 90 failed opens (0.4 ms of CPU).
    if (!overridden && NeedsNvidiaDriver(soname) && !NvidiaDriverPresent()) {
      if (error != nullptr) *error = soname + ": no NVIDIA driver here (no /dev/nvidiactl)";
      return nullptr;
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr && error != nullptr) {
      const char* why = ::dlerror();
      *error = why != nullptr ? why : "unknown dlopen error";
    }
    return handle;
  }

  std::optional<std::string> Var(std::string_view name) override {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

 private:
  static constexpr std::pair<std::string_view, std::string_view> kOverrides[] = {
      {"libnvidia-ml.so.1", "FOOTPRINT_NVML_LIBRARY"},
      {"libcuda.so.1", "FOOTPRINT_CUDA_LIBRARY"},
      {"libdcgm.so.4", "FOOTPRINT_DCGM_LIBRARY"},
      {"libpq.so.5", "FOOTPRINT_PQ_LIBRARY"},
  };
  static bool NeedsNvidiaDriver(std::string_view soname) {
    return soname == "libnvidia-ml.so.1" || soname == "libcuda.so.1";
  }
  // /dev/dxg: the driver of WSL 2, where the libraries serve without /dev/nvidiactl.
  static bool NvidiaDriverPresent() {
    return ::access("/dev/nvidiactl", F_OK) == 0 || ::access("/dev/dxg", F_OK) == 0;
  }

  std::string sys_root_ = "/sys";
};

}  // namespace

void Env::SleepUntil(int64_t deadline_ns) {
  std::mutex mu;
  std::condition_variable never_notified;
  std::unique_lock<std::mutex> lock(mu);
  WaitUntil(never_notified, lock, deadline_ns, [] { return false; });
}

Env& Env::Default() {
  static Env* env = new RealEnv();  // never destroyed: used by threads still running at exit
  return *env;
}

}  // namespace footprint
