// FakeEnv: an Env for tests, with a clock the test drives.
//
// The driven clock stands still until a thread waits for a deadline: a deadline within the horizon
// jumps the clock there at once (so a sampler runs its schedule as fast as the CPU allows, and
// exactly), and a deadline beyond it blocks until the waiter is woken (Stop) or the horizon
// moves. CPU-time clocks stand at what the test advanced them to (CLOCK_THREAD_CPUTIME_ID is
// one clock, whichever thread reads it). Variables come from a map; libraries from a soname ->
// file map (unmapped sonames fail as a machine without them would); /proc and /sys are the
// real ones unless set. Files are the real ones but where the test put a content (`files`: a
// fake one, or a truncated copy: Truncate) or a fault (`file_errors`: ENOENT, EACCES, ...).
#ifndef FOOTPRINT_TESTS_UNIT_FAKE_ENV_H_
#define FOOTPRINT_TESTS_UNIT_FAKE_ENV_H_

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "footprint/env.h"

namespace footprint {

class FakeEnv final : public Env {
 public:
  int64_t MonotonicNs() override {
    if (real_clock) return Env::Default().MonotonicNs();
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  int64_t RealtimeNs() override { return MonotonicNs() + kEpochOffset; }
  int64_t CpuNs(clockid_t clock) override {
    if (real_clock) return Env::Default().CpuNs(clock);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cpu_ns_.find(clock);
    return it != cpu_ns_.end() ? it->second : 0;
  }

  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 int64_t deadline_ns, const std::function<bool()>& wake) override {
    if (real_clock) return Env::Default().WaitUntil(cv, lock, deadline_ns, wake);
    while (!wake()) {
      {
        std::lock_guard<std::mutex> guard(mu_);
        if (deadline_ns <= horizon_) {
          now_ = std::max(now_, deadline_ns);
          return wake();
        }
        ++parked_;
      }
      parked_cv_.notify_all();
      // Woken by the owner of `cv` (Stop) or, every millisecond, to see a moved horizon.
      cv.wait_for(lock, std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> guard(mu_);
      --parked_;
    }
    return true;
  }

  std::string ProcRoot() override { return proc_root; }
  std::string SysRoot() override { return sys_root; }

  Result<std::string> ReadFile(const std::string& path) override {
    FP_RETURN_IF_ERROR(CheckReadable(path));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files.find(path);
    if (it != files.end()) return it->second;
    return Env::Default().ReadFile(path);
  }
  Status CheckReadable(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    files_asked_.insert(path);
    if (auto it = file_errors.find(path); it != file_errors.end()) {
      return IoError("cannot open " + path + ": " + std::strerror(it->second));
    }
    if (files.contains(path)) return Status::Ok();
    return Env::Default().CheckReadable(path);
  }

  void* OpenLibrary(const std::string& soname, std::string* error,
                    std::string* path_used) override {
    auto it = libraries.find(soname);
    std::string path = it != libraries.end() ? it->second : "/nonexistent/" + soname;
    if (path_used) *path_used = path;
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle && error) *error = ::dlerror();
    return handle;
  }

  std::optional<std::string> Var(std::string_view name) override {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }

  // Serves the first `bytes` of the real file at `path` from now on, as a file cut short would.
  void Truncate(const std::string& path, size_t bytes) {
    Result<std::string> text = Env::Default().ReadFile(path);
    std::lock_guard<std::mutex> lock(mu_);
    files[path] = text.ok() ? text->substr(0, bytes) : "";
  }
  // Whether the code under test asked for the file at `path` (read or checked it).
  bool Asked(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return files_asked_.contains(path);
  }

  // Lets the clock run by itself up to `ns`.
  void SetHorizon(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    horizon_ = ns;
  }
  // Moves the clock forward, as work that takes `ns` would (e.g. a slow probe).
  void Advance(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += ns;
  }
  // Moves a CPU-time clock forward, as work on its thread would.
  void AdvanceCpu(clockid_t clock, int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    cpu_ns_[clock] += ns;
  }
  // Blocks until `threads` threads wait for deadlines beyond the horizon: time stands still
  // there. A thread parked before the horizon last moved still counts until it wakes (within
  // a millisecond): move the horizon before starting the threads that are awaited.
  void AwaitParked(int threads = 1) {
    std::unique_lock<std::mutex> lock(mu_);
    parked_cv_.wait(lock, [&] { return parked_ >= threads; });
  }

  bool real_clock = false;  // the machine's clock instead of the driven one
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  std::map<std::string, std::string> vars;
  std::map<std::string, std::string> libraries;  // soname -> file
  std::map<std::string, std::string> files;      // path -> content served instead of the disk's
  std::map<std::string, int> file_errors;        // path -> errno its open fails with

 private:
  static constexpr int64_t kEpochOffset = 1'700'000'000'000'000'000;
  std::mutex mu_;
  std::condition_variable parked_cv_;
  int64_t now_ = 0;
  int64_t horizon_ = 0;
  int parked_ = 0;
  std::map<clockid_t, int64_t> cpu_ns_;
  std::set<std::string> files_asked_;
};

}  // namespace footprint

#endif  // FOOTPRINT_TESTS_UNIT_FAKE_ENV_H_
