// The instrumentation API: measure a program from inside at the granularity of a statement,
// a function, a pipeline stage — scopes on the run's timeline — and record valued metrics
// (loss, accuracy and time-to-accuracy, confusion matrices, hyperparameter sets, artifacts).
//
//   auto bm = footprint::Benchmark::Open({.db = "KAI.db", .description = "training"});
//   {
//     FOOTPRINT_SCOPE("load data");           // a scope of the current benchmark
//     ...
//   }
//   (*bm)->Log("loss", 0.25, /*step=*/3);
//   (*bm)->Close();
//
// One timeline for both views: started under `footprint run`, a Benchmark joins that run
// (FOOTPRINT_RUN_ID, FOOTPRINT_DB and FOOTPRINT_T0_NS in the environment), so its scopes and
// values land beside the process-tree series sampled from outside. Started alone, it creates
// a run of its own and samples its own process on a background thread; the CPU time of
// footprint's threads is subtracted from the process's `cpu` series and stored beside it as
// `monitor_cpu_s`, never silently mixed in.
//
// Cost: entering and leaving a scope is a clock read and a store into a per-thread queue —
// inline, never blocking on I/O, allocating only a new 512 KiB block of the queue when a burst
// outruns the writer. A writer thread moves scopes and values into
// the database at least every flush interval, so a crash loses at most that much; a scope
// still open when the process dies is stored with no end.
//
// Thread-safety: every method of Benchmark and Scope may be called from any thread. Scopes
// nest per thread.
#ifndef FOOTPRINT_API_H_
#define FOOTPRINT_API_H_

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/metrics.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

struct BenchmarkOptions {
  std::string db;    // database path; empty: $FOOTPRINT_DB, else ./footprint.db
  std::string name;  // run name; empty: the program's name
  std::string description;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> params;
  // Join the enclosing `footprint run` when there is one (its database then wins over `db`).
  bool join = true;
  // Own sampling of this process, when not joined.
  MetricSet metrics = DefaultMetrics();
  int64_t interval_ns = 100'000'000;
  int64_t flush_interval_ns = 250'000'000;
  // Scope events (32 bytes each) a thread may have queued for the writer: a burst beyond what
  // the database takes grows the queue up to this (128 MiB by default), then new scopes are
  // dropped whole and counted (show: "scope(s) dropped").
  uint64_t max_queued_scope_events = uint64_t{1} << 22;
  // Every outside effect of the own sampling (clocks, /proc, /sys); must outlive the benchmark.
  Env* env = &Env::Default();
};

class Benchmark;

// An interned scope name. Construct once (FOOTPRINT_SCOPE keeps it in a function-local
// static); cheap to copy. Thread-safe.
class ScopeName {
 public:
  explicit ScopeName(std::string_view name);
  uint32_t id() const { return id_; }

 private:
  uint32_t id_;
};

namespace internal {
struct ThreadScopes;
ThreadScopes* ThisThreadScopes(Benchmark& bm);
uint64_t EnterScope(ThreadScopes* t, uint32_t name_id);
void ExitScope(ThreadScopes* t, uint64_t scope);
}  // namespace internal

class Benchmark {
 public:
  // Opens (or joins) a run. The first Benchmark opened becomes Current() until it closes.
  static Result<std::unique_ptr<Benchmark>> Open(const BenchmarkOptions& options);
  // The benchmark FOOTPRINT_SCOPE(name) uses; nullptr when none is open.
  static Benchmark* Current();

  ~Benchmark();  // Close()s if still open
  Benchmark(const Benchmark&) = delete;
  Benchmark& operator=(const Benchmark&) = delete;

  // Ends open scopes' recording, flushes, and (unless joined) ends the run with `status`.
  // Idempotent. Errors say what could not be stored.
  Status Close(RunStatus status = RunStatus::kOk);

  // Writes everything recorded so far (scopes, values) and waits until it is committed.
  // DatabaseError if the write failed (what was not written stays queued for the next flush).
  Status Flush();

  const std::string& run_id() const;
  const std::string& location() const;  // the database
  bool joined() const;                  // part of an enclosing `footprint run`
  int64_t NowNs() const;                // ns since the run started (the run's timeline)

  // A scalar with an optional step (loss per epoch, throughput, anything user-named).
  // Within the innermost open scope of the calling thread, if any.
  void Log(std::string_view name, double value, std::optional<int64_t> step = std::nullopt);
  // Accuracy against a target: logs `accuracy`, and the first time it reaches `target` also
  // logs `time_to_accuracy` (seconds since the run started) with the step and target.
  void LogAccuracy(double accuracy, double target, std::optional<int64_t> step = std::nullopt);
  // A confusion matrix with its labels (row = true class, column = predicted).
  Status LogConfusionMatrix(std::string_view name, const std::vector<std::string>& labels,
                            const std::vector<std::vector<double>>& matrix);
  // One hyperparameter set and the target metric it gave.
  void LogHyperparameters(std::string_view name, const std::map<std::string, double>& params,
                          std::string_view target_name, double target_value,
                          bool low_means_good = true);
  // Any JSON document (already serialized; validated), optionally with a scalar beside it.
  Status LogJson(std::string_view name, std::string_view json,
                 std::optional<int64_t> step = std::nullopt,
                 std::optional<double> value = std::nullopt);
  // A file produced by the run: path, sha256 and size (hashed now; stored at the next flush).
  // NotFound if it cannot be read.
  Status Artifact(std::string_view name, const std::string& path);

  // Supervision: while the returned token is held, `metric` is sampled at least every
  // `interval_ns`. Applies to a benchmark's own sampling; a joined run keeps the intervals
  // `footprint run` was given (the token is then 0). Release with ReleaseInterval.
  uint64_t RequestInterval(MetricId metric, int64_t interval_ns);
  void ReleaseInterval(uint64_t token);

  // Scopes without RAII (for the C ABI and Python): Begin returns a handle for End.
  uint64_t BeginScope(const ScopeName& name);
  void EndScope(uint64_t handle);

  // GPU time of a scope (see GpuScope): begins a scope as BeginScope does and records a CUDA
  // event on `cuda_stream` (a CUstream / cudaStream_t; nullptr: the legacy default stream of
  // the calling thread's current CUDA context); EndGpuScope records a second one and ends the
  // scope. The elapsed GPU time is resolved later, off the calling thread, and stored as the
  // value `gpu_time_s` of the scope. When it cannot be measured (no CUDA driver, no current
  // context on this thread) the scope still records its wall time, and the reason is stored
  // once as a `gpu_time_s` value with no number and data {"unavailable": reason}.
  uint64_t BeginGpuScope(const ScopeName& name, void* cuda_stream = nullptr);
  void EndGpuScope(uint64_t handle);
  // Ok when the calling program's last GPU scope is being timed (or none was begun);
  // otherwise Unsupported with the reason.
  Status GpuTiming() const;

  // Values known only after their scope ended (a GPU time that resolves later): HoldScope,
  // called before EndScope, keeps the scope addressable; LogToScope then attaches a value to
  // it (`json_data` optional, validated) — `release` lets it go. Held scopes are let go at
  // Close. InvalidArgument for malformed JSON.
  void HoldScope(uint64_t scope);
  Status LogToScope(uint64_t scope, std::string_view name, std::optional<double> value,
                    std::string_view json_data = {}, bool release = true);

  class Impl;

 private:
  explicit Benchmark(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend internal::ThreadScopes* internal::ThisThreadScopes(Benchmark& bm);
};

// RAII scope: from construction to destruction, on the calling thread.
class Scope {
 public:
  Scope(Benchmark& bm, const ScopeName& name)
      : scopes_(internal::ThisThreadScopes(bm)),
        handle_(internal::EnterScope(scopes_, name.id())) {}
  // A scope of Benchmark::Current(); does nothing when no benchmark is open.
  explicit Scope(const ScopeName& name)
      : scopes_(Benchmark::Current() ? internal::ThisThreadScopes(*Benchmark::Current()) : nullptr),
        handle_(scopes_ ? internal::EnterScope(scopes_, name.id()) : 0) {}
  ~Scope() {
    if (scopes_) internal::ExitScope(scopes_, handle_);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  internal::ThreadScopes* scopes_;
  uint64_t handle_;
};

// A supervised block: a scope that also has the benchmark sample the given metrics at least
// at the given intervals while it is open (UMLAUT's decorator with metric objects):
//
//   static const footprint::ScopeName kStep("training step");
//   footprint::Supervised step(bm, kStep, {{footprint::MetricId::kMemory, 10'000'000},
//                                         {footprint::MetricId::kCpu, 10'000'000}});
//
// Asking the sampler costs a few microseconds: use it for stages, not for tight loops.
class Supervised {
 public:
  Supervised(Benchmark& bm, const ScopeName& name,
             std::initializer_list<std::pair<MetricId, int64_t>> intervals)
      : bm_(bm) {
    for (const auto& [metric, ns] : intervals) tokens_.push_back(bm.RequestInterval(metric, ns));
    handle_ = bm.BeginScope(name);
  }
  ~Supervised() {
    bm_.EndScope(handle_);
    for (uint64_t t : tokens_) bm_.ReleaseInterval(t);
  }
  Supervised(const Supervised&) = delete;
  Supervised& operator=(const Supervised&) = delete;

 private:
  Benchmark& bm_;
  std::vector<uint64_t> tokens_;
  uint64_t handle_ = 0;
};

// RAII GPU-timed scope: the scope's wall time as Scope records it, plus the GPU time of the
// work queued on `cuda_stream` between construction and destruction, from two CUDA events:
//
//   static const footprint::ScopeName kForward("forward");
//   { footprint::GpuScope s(*bm, kForward, stream); launch_kernels(stream); }
//
// Costs two cuEventRecord calls (microseconds): use it for stages and kernels, not for tight
// CPU loops.
class GpuScope {
 public:
  GpuScope(Benchmark& bm, const ScopeName& name, void* cuda_stream = nullptr)
      : bm_(&bm), handle_(bm.BeginGpuScope(name, cuda_stream)) {}
  // A GPU scope of Benchmark::Current(); does nothing when no benchmark is open.
  explicit GpuScope(const ScopeName& name, void* cuda_stream = nullptr)
      : bm_(Benchmark::Current()), handle_(bm_ ? bm_->BeginGpuScope(name, cuda_stream) : 0) {}
  ~GpuScope() {
    if (bm_) bm_->EndGpuScope(handle_);
  }
  GpuScope(const GpuScope&) = delete;
  GpuScope& operator=(const GpuScope&) = delete;

 private:
  Benchmark* bm_;
  uint64_t handle_;
};

}  // namespace footprint

#define FOOTPRINT_CONCAT_INNER(a, b) a##b
#define FOOTPRINT_CONCAT(a, b) FOOTPRINT_CONCAT_INNER(a, b)
// A scope of the current benchmark until the end of the enclosing block.
#define FOOTPRINT_SCOPE(name)                                                           \
  static const ::footprint::ScopeName FOOTPRINT_CONCAT(fp_scope_name_, __LINE__)(name); \
  ::footprint::Scope FOOTPRINT_CONCAT(fp_scope_,                                        \
                                      __LINE__)(FOOTPRINT_CONCAT(fp_scope_name_, __LINE__))

// A GPU-timed scope of the current benchmark on the default stream, until the end of the block.
#define FOOTPRINT_GPU_SCOPE(name)                                                           \
  static const ::footprint::ScopeName FOOTPRINT_CONCAT(fp_gpu_scope_name_, __LINE__)(name); \
  ::footprint::GpuScope FOOTPRINT_CONCAT(fp_gpu_scope_,                                     \
                                         __LINE__)(FOOTPRINT_CONCAT(fp_gpu_scope_name_, __LINE__))

#endif  // FOOTPRINT_API_H_
