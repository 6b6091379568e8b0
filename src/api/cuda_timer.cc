#include "api/cuda_timer.h"

#include <dlfcn.h>

#include <cstdlib>

namespace footprint {

// The driver API as declared in cuda.h, by hand: handles are opaque pointers, CUresult an int.
using CUresult = int;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNotReady = 600;
constexpr unsigned kEventDefault = 0;  // CU_EVENT_DEFAULT: timing enabled

struct CudaDriver {
  void* library = nullptr;
  CUresult (*cuCtxGetCurrent)(void** context) = nullptr;
  CUresult (*cuCtxPushCurrent)(void* context) = nullptr;
  CUresult (*cuCtxPopCurrent)(void** context) = nullptr;
  CUresult (*cuEventCreate)(void** event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(void* event, void* stream) = nullptr;
  CUresult (*cuEventQuery)(void* event) = nullptr;
  CUresult (*cuEventSynchronize)(void* event) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, void* start, void* end) = nullptr;
  CUresult (*cuEventDestroy)(void* event) = nullptr;
  CUresult (*cuGetErrorString)(CUresult result, const char** text) = nullptr;  // optional
};

namespace {

// The first of `names` the library exports (versioned names first), or nullptr.
template <typename F>
bool Bind(void* library, F& fn, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* sym = ::dlsym(library, name)) {
      fn = reinterpret_cast<F>(sym);
      return true;
    }
  }
  return false;
}

// Makes `context` current on the calling thread for the scope of the object: the writer
// thread queries events of contexts that are current on the program's threads only.
class ContextGuard {
 public:
  ContextGuard(const CudaDriver& d, void* context)
      : d_(d), pushed_(d.cuCtxPushCurrent(context) == kCudaSuccess) {}
  ~ContextGuard() {
    void* popped = nullptr;
    if (pushed_) d_.cuCtxPopCurrent(&popped);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  const CudaDriver& d_;
  bool pushed_;
};

constexpr size_t kMaxFreeEventsPerContext = 64;

}  // namespace

CudaTimer::CudaTimer(Env& env) : env_(env) {}

CudaTimer::~CudaTimer() {
  if (!driver_) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [scope, p] : pending_) {
    free_events_[p.context].push_back(p.start);
    if (p.end) free_events_[p.context].push_back(p.end);
  }
  for (auto& [context, events] : free_events_) {
    ContextGuard current(*driver_, context);
    for (void* e : events) driver_->cuEventDestroy(e);
  }
}

Status CudaTimer::Load() {
  if (loaded_) return load_error_;
  loaded_ = true;
  std::string path, why;
  auto d = std::make_unique<CudaDriver>();
  d->library = env_.OpenLibrary("libcuda.so.1", &why, &path);
  if (d->library == nullptr) {
    load_error_ = Unsupported("GPU time: cannot load the CUDA driver " + path + " (" + why +
                              "); this program does not use CUDA here, or the NVIDIA driver is "
                              "not installed");
    return load_error_;
  }
  std::string missing;
  auto need = [&](auto& fn, std::initializer_list<const char*> names) {
    if (!Bind(d->library, fn, names))
      missing += (missing.empty() ? "" : ", ") + std::string(*names.begin());
  };
  need(d->cuCtxGetCurrent, {"cuCtxGetCurrent"});
  need(d->cuCtxPushCurrent, {"cuCtxPushCurrent_v2", "cuCtxPushCurrent"});
  need(d->cuCtxPopCurrent, {"cuCtxPopCurrent_v2", "cuCtxPopCurrent"});
  need(d->cuEventCreate, {"cuEventCreate"});
  need(d->cuEventRecord, {"cuEventRecord"});
  need(d->cuEventQuery, {"cuEventQuery"});
  need(d->cuEventSynchronize, {"cuEventSynchronize"});
  need(d->cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  need(d->cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  Bind(d->library, d->cuGetErrorString, {"cuGetErrorString"});
  if (!missing.empty()) {
    // Kept loaded: whatever else uses it in this process shares the handle.
    load_error_ = Unsupported("GPU time: " + path + " lacks " + missing +
                              " (a CUDA driver older than 4.0, or not the CUDA driver)");
    return load_error_;
  }
  driver_ = std::move(d);
  return Status::Ok();
}

std::string CudaTimer::Describe(CUresult result) {
  const char* text = nullptr;
  if (driver_->cuGetErrorString && driver_->cuGetErrorString(result, &text) == kCudaSuccess &&
      text != nullptr) {
    return std::string(text) + " (CUresult " + std::to_string(result) + ")";
  }
  return "CUresult " + std::to_string(result);
}

void* CudaTimer::TakeEvent(void* context) {
  std::vector<void*>& pool = free_events_[context];
  if (!pool.empty()) {
    void* e = pool.back();
    pool.pop_back();
    return e;
  }
  void* e = nullptr;
  return driver_->cuEventCreate(&e, kEventDefault) == kCudaSuccess ? e : nullptr;
}

Status CudaTimer::Start(uint64_t scope, void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  FP_RETURN_IF_ERROR(Load());
  void* context = nullptr;
  CUresult r = driver_->cuCtxGetCurrent(&context);
  if (r != kCudaSuccess || context == nullptr) {
    return Unsupported(
        "GPU time: no current CUDA context on this thread (" +
        (r != kCudaSuccess ? Describe(r) : std::string("none is current")) +
        "); the program has not used CUDA on this thread yet, so only wall time is recorded");
  }
  void* start = TakeEvent(context);
  if (start == nullptr) return Unsupported("GPU time: cuEventCreate failed");
  if (CUresult rec = driver_->cuEventRecord(start, stream); rec != kCudaSuccess) {
    free_events_[context].push_back(start);
    return Unsupported("GPU time: cuEventRecord failed: " + Describe(rec));
  }
  pending_[scope] = {context, stream, start};
  return Status::Ok();
}

void CudaTimer::Stop(uint64_t scope) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(scope);
  if (it == pending_.end() || it->second.end != nullptr) return;
  void* end = TakeEvent(it->second.context);
  if (end != nullptr && driver_->cuEventRecord(end, it->second.stream) != kCudaSuccess) {
    free_events_[it->second.context].push_back(end);
    end = nullptr;
  }
  if (end == nullptr) {  // resolved by Collect as an error
    it->second.end = it->second.start;
    it->second.start = nullptr;
    return;
  }
  it->second.end = end;
}

void CudaTimer::Collect(bool wait, std::vector<Result>& out) {
  std::vector<std::pair<uint64_t, Pending>> stopped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!driver_) return;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.end == nullptr) {
        ++it;
        continue;
      }
      stopped.emplace_back(it->first, it->second);
      it = pending_.erase(it);
    }
  }
  if (stopped.empty()) return;
  std::vector<std::pair<uint64_t, Pending>> unfinished;
  std::vector<std::pair<void*, void*>> done;  // (context, event) back to the pool
  for (auto& [scope, p] : stopped) {
    ContextGuard current(*driver_, p.context);
    if (p.start == nullptr) {
      out.push_back({scope, std::nullopt, "GPU time: the end event could not be recorded"});
      done.emplace_back(p.context, p.end);
      continue;
    }
    CUresult r = wait ? driver_->cuEventSynchronize(p.end) : driver_->cuEventQuery(p.end);
    if (r == kCudaErrorNotReady) {
      unfinished.emplace_back(scope, p);
      continue;
    }
    float ms = 0;
    if (r == kCudaSuccess) r = driver_->cuEventElapsedTime(&ms, p.start, p.end);
    if (r == kCudaSuccess) {
      out.push_back({scope, static_cast<double>(ms) / 1e3, ""});
    } else {
      out.push_back(
          {scope, std::nullopt, "GPU time: the scope's CUDA events failed: " + Describe(r)});
    }
    done.emplace_back(p.context, p.start);
    done.emplace_back(p.context, p.end);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [scope, p] : unfinished) pending_.emplace(scope, p);
  for (auto [context, event] : done) {
    std::vector<void*>& pool = free_events_[context];
    if (pool.size() < kMaxFreeEventsPerContext) {
      pool.push_back(event);
    } else {
      ContextGuard current(*driver_, context);
      driver_->cuEventDestroy(event);
    }
  }
}

}  // namespace footprint
