// CudaTimer: the GPU time of scopes, from CUDA events recorded around them, through the CUDA
// driver API loaded at run time (no CUDA at build time).
//
// libcuda.so.1 (or $FOOTPRINT_CUDA_LIBRARY, which tests point at a fake) is dlopen'ed at the
// first Start(). Start records an event on the given stream (nullptr: the legacy default stream
// of the calling thread's current context), Stop records a second one. Nothing waits for the
// GPU there: Collect, called from the benchmark's writer thread at each flush, asks the driver
// which end events have completed (cuEventQuery) and turns each completed pair into seconds
// (cuEventElapsedTime); at Close it waits for the rest (cuEventSynchronize). Waiting at the end
// of each scope instead would make every scope a device synchronization — the program would
// no longer overlap CPU and GPU work, and the measurement would change what it measures.
//
// Events are pooled per context and reused. The library is never unloaded: the program's own
// CUDA use shares it.
//
// Thread-safety: Start/Stop from any thread; Collect from one thread at a time.
#ifndef FOOTPRINT_API_CUDA_TIMER_H_
#define FOOTPRINT_API_CUDA_TIMER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint {

struct CudaDriver;  // the table of driver entry points (cuda_timer.cc)

class CudaTimer {
 public:
  // What Collect found for one scope: its GPU time, or why there is none.
  struct Result {
    uint64_t scope;
    std::optional<double> seconds;
    std::string error;
  };

  // The driver (libcuda.so.1) is loaded through `env` at the first Start; `env` must outlive
  // the timer.
  explicit CudaTimer(Env& env);
  ~CudaTimer();
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  // Records the start of `scope` on `stream`. Unsupported, saying why, when there is no CUDA
  // driver, a symbol is missing, or the calling thread has no current CUDA context; then
  // nothing is recorded and Stop(scope) does nothing.
  Status Start(uint64_t scope, void* stream);
  // Records the end of a scope that Start accepted.
  void Stop(uint64_t scope);
  // Appends the scopes whose GPU work has completed (with `wait`, all stopped scopes, waiting
  // for the GPU) to `out`.
  void Collect(bool wait, std::vector<Result>& out);

 private:
  Env& env_;
  struct Pending {
    void* context;
    void* stream;
    void* start;
    void* end = nullptr;  // set by Stop
  };
  Status Load();                     // with mu_ held
  void* TakeEvent(void* context);    // with mu_ held; nullptr on failure
  std::string Describe(int result);  // a CUresult in words

  std::mutex mu_;
  bool loaded_ = false;
  Status load_error_;
  std::unique_ptr<CudaDriver> driver_;
  std::unordered_map<uint64_t, Pending> pending_;    // started scopes
  std::map<void*, std::vector<void*>> free_events_;  // per context
};

}  // namespace footprint

#endif  // FOOTPRINT_API_CUDA_TIMER_H_
