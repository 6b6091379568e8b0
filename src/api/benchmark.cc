// Benchmark: scopes and valued metrics from inside a program, on the run's timeline.
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "api/cuda_timer.h"
#include "api/scope_timeline.h"
#include "footprint/api.h"
#include "footprint/monitor.h"
#include "footprint/report.h"
#include "probe/process_tree_probe.h"
#include "run/run_metadata.h"
#include "session/descendants.h"
#include "session/monitor_session.h"
#include "session/probe_set.h"
#include "session/totals.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/rusage.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// Scope names, interned process-wide: the hot path carries a 32-bit id.
class NameRegistry {
 public:
  static NameRegistry& Get() {
    static NameRegistry* registry = new NameRegistry();  // never destroyed: used at exit
    return *registry;
  }
  uint32_t Intern(std::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    names_.emplace_back(name);
    uint32_t id = static_cast<uint32_t>(names_.size() - 1);
    ids_.emplace(names_.back(), id);
    return id;
  }
  std::string Name(uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return id < names_.size() ? names_[id] : std::string();
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::deque<std::string> names_;  // stable addresses
};

std::atomic<Benchmark*> g_current{nullptr};
std::atomic<uint64_t> g_next_serial{1};

// 32 bytes: one scope's entry or exit.
struct ScopeEvent {
  static constexpr uint32_t kExit = UINT32_MAX;  // name_id of an exit event

  uint64_t handle;   // (thread slot << 40) | sequence; 0 is "no scope"
  uint64_t parent;   // entry only
  int64_t t_ns;      // the hot path's reading (ScopeTimeline), monotonic ns once drained
  uint32_t name_id;  // entry: the interned name; exit: kExit
  int32_t tid;       // kernel thread id
  bool enter() const { return name_id != kExit; }
};
static_assert(sizeof(ScopeEvent) == 32);

struct PendingValue {
  uint64_t scope;  // handle of the innermost scope when logged, or 0
  ValueRecord record;
  bool release = false;  // the last value of a held scope (Benchmark::HoldScope)
};

constexpr std::string_view kGpuTimeValue = "gpu_time_s";

// A value named `name` with an optional number and JSON document (`text`, validated and
// stored compact; empty: none).
Result<ValueRecord> JsonValue(std::string_view name, std::optional<double> value,
                              std::string_view text) {
  ValueRecord r;
  r.name = std::string(name);
  r.value = value;
  if (!text.empty()) {
    FP_ASSIGN_OR_RETURN(json doc, ParseBoundedJson(text));
    if (doc.is_discarded()) {
      return InvalidArgument("the value '" + std::string(name) + "' is not valid JSON");
    }
    r.data_json = JsonText(doc);
  }
  return r;
}

}  // namespace

namespace internal {

// One thread's scopes in one benchmark: a single-producer (the thread) single-consumer (the
// writer) queue of events, and the stack of open scopes. Shared by the benchmark and the
// thread's exit hook; once the thread has exited and the writer has drained it, it is freed.
//
// The queue is a chain of blocks that grows while the writer lags, so that a burst of scopes
// is kept whole rather than dropped; the writer recycles a drained block as the thread's spare.
// Only past max_events queued events (BenchmarkOptions::max_queued_scope_events) is a scope
// dropped, whole: its entry and its exit are never recorded and its children hang under its
// parent.
struct ThreadScopes {
  struct Block {
    static constexpr uint64_t kEvents = 1 << 14;  // 512 KiB, touched only as it is used
    std::array<ScopeEvent, kEvents> events;       // not zero-filled
    std::atomic<Block*> next{nullptr};
  };
  static constexpr size_t kMaxDepth = 256;

  ThreadScopes() : write_block(new Block), read_block(write_block) {}
  ~ThreadScopes();
  ThreadScopes(const ThreadScopes&) = delete;
  ThreadScopes& operator=(const ThreadScopes&) = delete;

  std::atomic<uint64_t> head{0};     // events the thread pushed
  std::atomic<uint64_t> tail{0};     // events the writer took
  std::atomic<uint64_t> dropped{0};  // scopes (not events) dropped
  std::atomic<bool> retired{false};  // the thread has exited
  Block* write_block;                // the thread's
  Block* read_block;                 // the writer's
  std::atomic<Block*> spare{nullptr};
  uint64_t max_events = 0;
  std::array<uint64_t, kMaxDepth> stack;  // handles, or for a dropped scope its parent
  size_t depth = 0;
  uint64_t slot = 0;
  uint64_t sequence = 0;
  int32_t tid = 0;
  bool use_counter = false;  // ScopeTimeline::uses_counter() of the owner
  Benchmark::Impl* owner = nullptr;

  // Whether a new scope's entry fits (the exits of open scopes always do).
  bool Full() const {
    return head.load(std::memory_order_relaxed) - tail.load(std::memory_order_acquire) >=
           max_events;
  }
  void Push(const ScopeEvent& e);
  // Writer: appends every event pushed so far to `out`.
  void Drain(std::vector<ScopeEvent>& out);
  uint64_t Innermost() const { return depth == 0 ? 0 : stack[std::min(depth, kMaxDepth) - 1]; }
};

}  // namespace internal

using internal::ThreadScopes;

class Benchmark::Impl {
 public:
  Impl(std::unique_ptr<Store> store, std::unique_ptr<Store> sample_store, RunRecord run,
       bool joined, int64_t t0, const BenchmarkOptions& options)
      : location_(store->location()),
        store_(std::move(store)),
        sample_store_(std::move(sample_store)),
        run_(std::move(run)),
        joined_(joined),
        t0_(t0),
        options_(options),
        serial_(g_next_serial.fetch_add(1)),
        gpu_(*options.env),
        timeline_(ScopeTimeline::CounterIsTheClock(options.env->SysRoot())) {}

  Status Start(json meta);
  // Ends the run and lets go of its stores: a server store's local buffer is closed with them
  // (include/footprint/buffer.h), even when the Benchmark object outlives the run.
  Status Close(RunStatus status) {
    std::lock_guard<std::mutex> close_lock(close_mu_);
    if (closed_) return Status::Ok();
    Status st = Finish(status);
    if (session_) session_->Stop();  // its writer uses sample_store_
    store_.reset();
    sample_store_.reset();
    return st;
  }
  Status Finish(RunStatus status);  // Close's work, with close_mu_ held
  Status FlushNow();                // asks the writer for a flush and waits for its result
  ThreadScopes* ForThisThread();
  // Asks the writer for a flush now (a ring is half full, or Flush() was called).
  uint64_t Wake() {
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      ticket = ++flushes_requested_;
    }
    wake_cv_.notify_one();
    return ticket;
  }
  // Queues a value logged within `scope` (a handle, 0 for none), or an artifact.
  void AddValue(ValueRecord r, uint64_t scope, bool release = false);
  void AddArtifact(ArtifactRecord a) {
    std::lock_guard<std::mutex> lock(values_mu_);
    artifacts_.push_back(std::move(a));
  }

  const std::string location_;           // the store's, which outlives it
  std::unique_ptr<Store> store_;         // scopes and values (the API writer's)
  std::unique_ptr<Store> sample_store_;  // samples (the sample writer's), when not joined
  RunRecord run_;
  const bool joined_;
  // The run's t0 (monotonic): a joined run's, or the session's, anchored in Start before any
  // thread but the opening one reads it.
  int64_t t0_;
  const BenchmarkOptions options_;
  const uint64_t serial_;
  std::atomic<bool> closed_{false};
  std::mutex close_mu_;

  uint64_t RequestInterval(MetricId metric, int64_t interval_ns);
  void ReleaseInterval(uint64_t token);

  // GPU time of scopes (CUDA events), resolved by the writer thread.
  CudaTimer gpu_;
  // The time of scopes: how the hot path reads it, turned into ns by the writer (Flush).
  ScopeTimeline timeline_;
  void Hold(uint64_t scope) {
    std::lock_guard<std::mutex> lock(values_mu_);
    held_.insert(scope);
  }
  // Records why `scope` gets no GPU time: as a value the first time for each reason.
  void GpuUnavailable(uint64_t scope, const Status& why);
  // The gpu_time_s value of a scope: its seconds, or why it could not be timed.
  ValueRecord GpuTimeValue(std::optional<double> seconds, std::string_view unavailable) const;
  void GpuTimed() {
    std::lock_guard<std::mutex> lock(values_mu_);
    gpu_status_ = Status::Ok();
    ++gpu_timed_scopes_;
  }
  Status GpuStatus() {
    std::lock_guard<std::mutex> lock(values_mu_);
    return gpu_status_;
  }

  // Accuracy targets already reached (time-to-accuracy is logged once per target).
  std::mutex tta_mu_;
  std::unordered_set<double> reached_;

 private:
  void WriterLoop();
  // Scopes dropped because a thread's queue was full (writer thread, or after it stopped).
  uint64_t ScopesDropped() {
    std::lock_guard<std::mutex> lock(threads_mu_);
    uint64_t n = dropped_by_retired_;
    for (const auto& t : threads_) n += t->dropped.load(std::memory_order_relaxed);
    return n;
  }
  // `final`: the last flush at Close, which also waits for outstanding GPU timings.
  Status Flush(bool final = false);
  // Flush's steps. Scope handles -> database ids, of this batch's scopes or their ends.
  using HandleIds = std::unordered_map<uint64_t, int64_t>;
  void CollectGpuTimes(bool final);  // completed GPU timings become pending values
  void DrainScopes();                // every thread's ring into events_, times in ns
  // Moves queued values and artifacts to the pending ones; returns the held scopes.
  std::unordered_set<uint64_t> TakeQueued();
  // The database id of a scope's handle, if it has one yet (`opened`: this batch's).
  std::optional<int64_t> IdOf(uint64_t handle, const HandleIds& opened) const;
  // Inserts the pending events, values and artifacts in one transaction.
  Status WriteBatch(const HandleIds& ends, HandleIds& opened);
  // After WriteBatch committed: keeps the ids still needed, lets go of the rest.
  void Committed(const HandleIds& ends, const HandleIds& opened,
                 const std::unordered_set<uint64_t>& held);
  // Finish's steps: the run's totals from the process's accounts, and its meta.
  // The run's totals (session/totals) from the process's own accounts since Open().
  RunTotals OwnRunTotals(int64_t duration_ns, const CpuSeconds& descendants);
  void AddOwnRunMeta(uint64_t scopes_dropped);

  std::mutex threads_mu_;
  std::vector<std::shared_ptr<ThreadScopes>> threads_;
  uint64_t next_slot_ = 1;  // 0 would make handle 0 possible

  std::mutex values_mu_;
  std::vector<PendingValue> values_;
  std::vector<ArtifactRecord> artifacts_;
  std::unordered_set<uint64_t> held_;  // scopes addressable after their end (until released)
  std::unordered_set<std::string> gpu_reasons_;  // reasons already stored as values
  Status gpu_status_;
  uint64_t gpu_timed_scopes_ = 0;

  // Writer state (writer thread only, or after it stopped).
  std::unordered_map<uint64_t, int64_t> open_ids_;  // scope handle -> database id
  std::unordered_map<uint64_t, int64_t> held_ids_;  // ended but held scopes -> database id
  std::vector<ScopeEvent> events_;                  // drained, not yet committed
  std::vector<PendingValue> pending_values_;
  std::vector<ArtifactRecord> pending_artifacts_;
  uint64_t failed_flushes_ = 0;
  uint64_t dropped_by_retired_ = 0;  // scopes dropped by threads that have exited
  std::string last_error_;

  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool stop_ = false;
  uint64_t flushes_requested_ = 0;  // with wake_mu_
  uint64_t flushes_done_ = 0;       // with wake_mu_
  Status last_flush_;               // with wake_mu_
  std::condition_variable flushed_cv_;
  std::thread writer_;
  rusage writer_usage_ = {};

  // Interval requests of supervised scopes: token -> (metric, interval).
  std::mutex intervals_mu_;
  std::map<uint64_t, std::pair<MetricId, int64_t>> requests_;
  uint64_t next_token_ = 1;
  void ApplyInterval(MetricId metric);  // with intervals_mu_ held

  rusage self_at_open_ = {}, children_at_open_ = {};
  std::vector<ProcessCpu> descendants_at_open_;  // own runs: to count live workers at Close

  // Own sampling (not joined).
  std::unique_ptr<MonitorSession> session_;
  json meta_;
};

void ThreadScopes::Push(const ScopeEvent& e) {
  const uint64_t h = head.load(std::memory_order_relaxed);
  const uint64_t at = h % Block::kEvents;
  if (at == 0 && h != 0) {  // the block is full: the spare the writer left, or a new one
    Block* next = spare.exchange(nullptr, std::memory_order_acquire);
    if (next == nullptr) next = new Block;
    next->next.store(nullptr, std::memory_order_relaxed);
    write_block->next.store(next, std::memory_order_release);
    write_block = next;
  }
  write_block->events[at] = e;
  head.store(h + 1, std::memory_order_release);
  // A burst: do not wait for the flush interval.
  if (h - tail.load(std::memory_order_relaxed) == Block::kEvents / 2) owner->Wake();
}

void ThreadScopes::Drain(std::vector<ScopeEvent>& out) {
  uint64_t t = tail.load(std::memory_order_relaxed);
  const uint64_t h = head.load(std::memory_order_acquire);
  for (; t < h; ++t) {
    const uint64_t at = t % Block::kEvents;
    if (at == 0 && t != 0) {  // the next block, linked before its first event was published
      Block* done = read_block;
      read_block = done->next.load(std::memory_order_acquire);
      delete spare.exchange(done, std::memory_order_release);
    }
    out.push_back(read_block->events[at]);
  }
  tail.store(t, std::memory_order_release);
}

ThreadScopes::~ThreadScopes() {
  for (Block* b = read_block; b != nullptr;) delete std::exchange(b, b->next.load());
  delete spare.load();
}

namespace internal {

ThreadScopes* ThisThreadScopes(Benchmark& bm) {
  // One cache entry per thread: the benchmark last used on it, identified by its serial so
  // that a new benchmark at a recycled address is never mistaken for a closed one.
  thread_local uint64_t cached_serial = 0;
  thread_local ThreadScopes* cached = nullptr;
  if (cached_serial == bm.impl_->serial_) return cached;
  cached = bm.impl_->ForThisThread();
  cached_serial = bm.impl_->serial_;
  return cached;
}

uint64_t EnterScope(ThreadScopes* t, uint32_t name_id) {
  const uint64_t parent = t->Innermost();
  uint64_t handle = 0;
  if (t->Full()) {
    t->dropped.fetch_add(1, std::memory_order_relaxed);
  } else {
    handle = (t->slot << 40) | ++t->sequence;
    t->Push({handle, parent, ScopeTimeline::Read(t->use_counter), name_id, t->tid});
  }
  // A dropped scope's children are its parent's.
  if (t->depth < ThreadScopes::kMaxDepth) t->stack[t->depth] = handle != 0 ? handle : parent;
  ++t->depth;
  return handle;
}

void ExitScope(ThreadScopes* t, uint64_t handle) {
  if (handle != 0) {
    t->Push({handle, 0, ScopeTimeline::Read(t->use_counter), ScopeEvent::kExit, t->tid});
  }
  if (t->depth > 0) --t->depth;
}

}  // namespace internal

namespace {

// Marks this thread's scope rings as retired when the thread exits, so that the writer frees
// them after draining; holds a reference so that a benchmark closed first is no problem.
struct ThreadExitHook {
  std::vector<std::shared_ptr<ThreadScopes>> rings;
  ~ThreadExitHook() {
    for (auto& t : rings) t->retired.store(true, std::memory_order_release);
  }
};

}  // namespace

ThreadScopes* Benchmark::Impl::ForThisThread() {
  thread_local ThreadExitHook hook;
  auto t = std::make_shared<ThreadScopes>();
  t->max_events = options_.max_queued_scope_events;
  t->tid = static_cast<int32_t>(::syscall(SYS_gettid));
  t->use_counter = timeline_.uses_counter();
  t->owner = this;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    t->slot = next_slot_++;
    threads_.push_back(t);
  }
  std::erase_if(hook.rings, [](const auto& r) { return r.use_count() == 1; });  // closed ones
  hook.rings.push_back(t);
  return t.get();
}

void Benchmark::Impl::AddValue(ValueRecord r, uint64_t scope, bool release) {
  r.run_id = run_.id;
  r.t_ns = options_.env->MonotonicNs() - t0_;
  std::lock_guard<std::mutex> lock(values_mu_);
  values_.push_back({scope, std::move(r), release});
}

ValueRecord Benchmark::Impl::GpuTimeValue(std::optional<double> seconds,
                                          std::string_view unavailable) const {
  ValueRecord r;
  r.name = std::string(kGpuTimeValue);
  r.run_id = run_.id;
  r.t_ns = options_.env->MonotonicNs() - t0_;
  r.value = seconds;
  if (!seconds) r.data_json = JsonText(json{{"unavailable", unavailable}});
  return r;
}

void Benchmark::Impl::GpuUnavailable(uint64_t scope, const Status& why) {
  std::lock_guard<std::mutex> lock(values_mu_);
  gpu_status_ = why;
  // Every GPU scope of a program without CUDA comes here: the value only for a new reason.
  if (gpu_reasons_.insert(why.message()).second) {
    values_.push_back({scope, GpuTimeValue(std::nullopt, why.message())});
  }
}

void Benchmark::Impl::CollectGpuTimes(bool final) {
  // GPU times whose events completed (all of them at the end: Close waits for the GPU).
  std::vector<CudaTimer::Result> gpu_times;
  gpu_.Collect(final, gpu_times);
  for (const CudaTimer::Result& g : gpu_times) {
    pending_values_.push_back({g.scope, GpuTimeValue(g.seconds, g.error), /*release=*/true});
  }
}

void Benchmark::Impl::DrainScopes() {
  std::vector<std::shared_ptr<ThreadScopes>> threads;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    threads = threads_;
  }
  bool any_retired = false;
  const size_t drained_from = events_.size();  // the rest waits from a failed flush, in ns
  for (const auto& t : threads) {
    // Read `retired` first: once set, the thread pushes nothing more, so draining after it
    // empties the ring for good.
    bool retired = t->retired.load(std::memory_order_acquire);
    t->Drain(events_);
    any_retired |= retired;
  }
  const ScopeTimeline::Mapping to_ns = timeline_.Advance();
  for (size_t i = drained_from; i < events_.size(); ++i) events_[i].t_ns = to_ns(events_[i].t_ns);
  if (!any_retired) return;
  std::lock_guard<std::mutex> lock(threads_mu_);
  for (auto& t : threads_) {
    if (t->retired.load(std::memory_order_acquire) &&
        t->tail.load(std::memory_order_relaxed) == t->head.load(std::memory_order_acquire)) {
      dropped_by_retired_ += t->dropped.load(std::memory_order_relaxed);
      t.reset();
    }
  }
  std::erase(threads_, nullptr);
}

std::unordered_set<uint64_t> Benchmark::Impl::TakeQueued() {
  std::lock_guard<std::mutex> lock(values_mu_);
  pending_values_.insert(pending_values_.end(), std::make_move_iterator(values_.begin()),
                         std::make_move_iterator(values_.end()));
  values_.clear();
  pending_artifacts_.insert(pending_artifacts_.end(), artifacts_.begin(), artifacts_.end());
  artifacts_.clear();
  return held_;
}

std::optional<int64_t> Benchmark::Impl::IdOf(uint64_t handle, const HandleIds& opened) const {
  if (handle == 0) return std::nullopt;
  if (auto it = opened.find(handle); it != opened.end()) return it->second;
  if (auto it = open_ids_.find(handle); it != open_ids_.end()) return it->second;
  if (auto it = held_ids_.find(handle); it != held_ids_.end()) return it->second;
  return std::nullopt;
}

Status Benchmark::Impl::WriteBatch(const HandleIds& ends, HandleIds& opened) {
  auto& names = NameRegistry::Get();
  return store_->InTransaction([&]() -> Status {
    for (const ScopeEvent& e : events_) {
      if (e.enter()) {
        ScopeRecord r;
        r.run_id = run_.id;
        r.parent_id = IdOf(e.parent, opened);
        r.name = names.Name(e.name_id);
        r.thread = e.tid;
        r.start_ns = e.t_ns - t0_;
        if (auto end = ends.find(e.handle); end != ends.end()) r.end_ns = end->second - t0_;
        Result<int64_t> id = store_->InsertScope(r);
        if (!id.ok()) return id.status();
        opened[e.handle] = *id;
      } else if (!opened.count(e.handle)) {  // started in an earlier batch
        if (auto it = open_ids_.find(e.handle); it != open_ids_.end()) {
          FP_RETURN_IF_ERROR(store_->EndScope(it->second, e.t_ns - t0_));
        }
      }
    }
    for (PendingValue& v : pending_values_) {
      v.record.scope_id = IdOf(v.scope, opened);
      FP_RETURN_IF_ERROR(store_->InsertValue(v.record));
    }
    for (const ArtifactRecord& a : pending_artifacts_) FP_RETURN_IF_ERROR(store_->PutArtifact(a));
    return Status::Ok();
  });
}

void Benchmark::Impl::Committed(const HandleIds& ends, const HandleIds& opened,
                                const std::unordered_set<uint64_t>& held) {
  // Keep the ids of scopes still open, for their end and for values logged inside them.
  for (const auto& [handle, id] : opened) {
    if (!ends.count(handle)) open_ids_[handle] = id;
  }
  for (const auto& [handle, t] : ends) {
    if (held.count(handle)) {
      if (std::optional<int64_t> id = IdOf(handle, opened)) held_ids_[handle] = *id;
    }
    open_ids_.erase(handle);
  }
  std::vector<uint64_t> released;
  for (const PendingValue& v : pending_values_) {
    if (!v.release) continue;
    held_ids_.erase(v.scope);
    released.push_back(v.scope);
  }
  if (!released.empty()) {
    std::lock_guard<std::mutex> lock(values_mu_);
    for (uint64_t scope : released) held_.erase(scope);
  }
  events_.clear();
  pending_values_.clear();
  pending_artifacts_.clear();
}

Status Benchmark::Impl::Flush(bool final) {
  CollectGpuTimes(final);
  DrainScopes();
  // Read after the rings were drained: a scope is held before its end is pushed, so every
  // held scope whose end was drained above is in this copy.
  const std::unordered_set<uint64_t> held = TakeQueued();
  if (events_.empty() && pending_values_.empty() && pending_artifacts_.empty()) {
    return Status::Ok();
  }
  // A scope that starts and ends within this batch is inserted once, complete.
  HandleIds ends;
  for (const ScopeEvent& e : events_) {
    if (!e.enter()) ends[e.handle] = e.t_ns;
  }
  // Ids assigned in this transaction become visible only if it commits.
  HandleIds opened;  // scopes started in this batch
  if (Status st = WriteBatch(ends, opened); !st.ok()) {
    ++failed_flushes_;
    last_error_ = st.message();
    return st;  // everything stays pending for the next flush
  }
  Committed(ends, opened, held);
  return Status::Ok();
}

void Benchmark::Impl::WriterLoop() {
  pthread_setname_np(pthread_self(), "fp-api-writer");
  std::unique_lock<std::mutex> lock(wake_mu_);
  while (!stop_) {
    wake_cv_.wait_for(lock, std::chrono::nanoseconds(options_.flush_interval_ns),
                      [&] { return stop_ || flushes_requested_ > flushes_done_; });
    const uint64_t requested = flushes_requested_;
    lock.unlock();
    Status st = Flush();
    lock.lock();
    last_flush_ = st;
    flushes_done_ = requested;
    flushed_cv_.notify_all();
  }
  lock.unlock();
  if (const uint64_t dropped = ScopesDropped()) {
    // A value, so that it reaches the run also when this benchmark joined it.
    ValueRecord r;
    r.name = std::string(kScopesDroppedValue);
    r.value = static_cast<double>(dropped);
    AddValue(std::move(r), 0);
  }
  (void)Flush(/*final=*/true);
  getrusage(RUSAGE_THREAD, &writer_usage_);
}

Status Benchmark::Impl::Start(json meta) {
  meta_ = std::move(meta);
  getrusage(RUSAGE_SELF, &self_at_open_);
  getrusage(RUSAGE_CHILDREN, &children_at_open_);
  if (!joined_) {
    descendants_at_open_ = DescendantCpu(*options_.env);
    MetricIntervals intervals{};
    for (size_t m = 0; m < kMetricCount; ++m) {
      if (options_.metrics.test(m)) intervals[m] = options_.interval_ns;
    }
    Env& env = *options_.env;
    // This process and its children, with machine-wide energy when asked for. (Hardware
    // counters are not: perf events follow a process from its exec, and this one runs.)
    ProbeChoice choice;  // member by member: see CommandProbeChoice (monitor.cc)
    choice.tree.monitor_pid = ::getpid();
    choice.tree.proc_root = env.ProcRoot();
    choice.tree.include_monitor = true;
    choice.energy = true;
    session_ = std::make_unique<MonitorSession>(
        *sample_store_, run_.id, std::move(choice), meta_,
        MonitorSession::Options{.env = &env,
                                .intervals = intervals,
                                .flush_interval_ns = options_.flush_interval_ns,
                                .queue_capacity = 1 << 14,
                                .owns_process = false});
    FP_RETURN_IF_ERROR(session_->CreateRun(run_, meta_));
    FP_ASSIGN_OR_RETURN(t0_, session_->Start());
    writer_ = std::thread([this] { WriterLoop(); });
    // The tree probe subtracts the sampler's own CPU and that of both writers.
    std::vector<clockid_t> clocks = session_->ThreadCpuClocks();
    clocks.emplace_back();
    pthread_getcpuclockid(writer_.native_handle(), &clocks.back());
    session_->tree()->ExcludeThreadCpu(clocks);
  } else {
    writer_ = std::thread([this] { WriterLoop(); });
  }
  return Status::Ok();
}

void Benchmark::Impl::ApplyInterval(MetricId metric) {
  int64_t want = options_.interval_ns;
  for (const auto& [token, req] : requests_) {
    if (req.first == metric) want = std::min(want, req.second);
  }
  session_->SetInterval(metric, want);
}

uint64_t Benchmark::Impl::RequestInterval(MetricId metric, int64_t interval_ns) {
  if (joined_ || interval_ns < 1'000'000) return 0;
  std::lock_guard<std::mutex> lock(intervals_mu_);
  if (closed_) return 0;
  uint64_t token = next_token_++;
  requests_[token] = {metric, interval_ns};
  ApplyInterval(metric);
  return token;
}

void Benchmark::Impl::ReleaseInterval(uint64_t token) {
  std::lock_guard<std::mutex> lock(intervals_mu_);
  auto it = requests_.find(token);
  if (it == requests_.end()) return;
  MetricId metric = it->second.first;
  requests_.erase(it);
  if (!closed_) ApplyInterval(metric);
}

Status Benchmark::Impl::FlushNow() {
  const uint64_t ticket = Wake();
  std::unique_lock<std::mutex> lock(wake_mu_);
  flushed_cv_.wait(lock, [&] { return flushes_done_ >= ticket || stop_; });
  return last_flush_;
}

RunTotals Benchmark::Impl::OwnRunTotals(int64_t duration_ns, const CpuSeconds& descendants) {
  // The process's own figures, less footprint's threads (stored beside them instead), as the
  // kernel accounted them since Open(): the process's time before it (imports, start-up) is
  // not the run's. Its waited-for children and live descendants are what a run reaps.
  rusage self, children;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  auto since = [](const timeval& now, const timeval& then) { return Seconds(now) - Seconds(then); };
  // footprint's threads: the session's (sampler, sample writer) and the scope writer. The
  // sampler reads kernel files, the writers mostly wait: counted as system time.
  const double monitor_user = Seconds(writer_usage_.ru_utime);
  const double monitor_sys = Seconds(writer_usage_.ru_stime) + session_->threads_cpu_s();
  TotalsInputs in;
  in.duration_ns = duration_ns;
  in.reaped.user_s = std::max(0.0, since(self.ru_utime, self_at_open_.ru_utime) +
                                       since(children.ru_utime, children_at_open_.ru_utime) +
                                       descendants.user_s - monitor_user);
  in.reaped.system_s = std::max(0.0, since(self.ru_stime, self_at_open_.ru_stime) +
                                         since(children.ru_stime, children_at_open_.ru_stime) +
                                         descendants.system_s - monitor_sys);
  in.reaped.max_rss_bytes = std::max<int64_t>(self.ru_maxrss, children.ru_maxrss) * 1024;
  in.reaped.read_bytes = (self.ru_inblock + children.ru_inblock - self_at_open_.ru_inblock -
                          children_at_open_.ru_inblock) *
                         512;
  in.reaped.write_bytes = (self.ru_oublock + children.ru_oublock - self_at_open_.ru_oublock -
                           children_at_open_.ru_oublock) *
                          512;
  const ProcessTreeProbe& tree = *session_->tree();
  in.sampled_memory_peak_bytes = tree.peak_memory_bytes();
  in.sampled_rss_sum_peak_bytes = tree.peak_rss_sum_bytes();
  RunTotals out = ComputeRunTotals(in);
  // Where the figures came from, in the API's words: the process itself, not reaped commands.
  out.sources["cpu"] =
      "getrusage of the process and its waited-for children since Open(), and what live "
      "descendants used meanwhile (/proc), less footprint's threads";
  out.sources["peak_memory"] =
      "approximate: process high-water mark (ru_maxrss), raised to the sampled sum of RSS (no "
      "memory cgroup, so pages shared between processes count once per process)";
  out.sources["io"] = "getrusage block I/O of the process and its waited-for children since Open()";
  out.sources["monitor_memory"] =
      "footprint runs inside the process: its memory is part of the RSS";
  return out;
}

void Benchmark::Impl::AddOwnRunMeta(uint64_t scopes_dropped) {
  meta_["monitor"]["scopes_dropped"] = scopes_dropped;
  meta_["monitor"]["in_process"] = true;
  std::lock_guard<std::mutex> lock(values_mu_);
  if (gpu_timed_scopes_ > 0 || !gpu_reasons_.empty()) {
    json reasons(std::vector<std::string>(gpu_reasons_.begin(), gpu_reasons_.end()));
    meta_["gpu_time"] = {{"timed_scopes", gpu_timed_scopes_},
                         {"source", "CUDA events (driver API), resolved by the writer thread"},
                         {"unavailable", reasons}};
  }
}

Status Benchmark::Impl::Finish(RunStatus status) {
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_cv_.notify_one();
  flushed_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  const uint64_t dropped = ScopesDropped();
  const bool lost = failed_flushes_ > 0 &&
                    (!events_.empty() || !pending_values_.empty() || !pending_artifacts_.empty());
  if (joined_) {
    if (lost) return DatabaseError("scopes and values could not be stored: " + last_error_);
    return Status::Ok();
  }
  // Workers still alive (a pool, persistent DataLoader workers) are in no rusage: their
  // counters, read before the session stops, less what every process alive at Open had used.
  const CpuSeconds descendants = CpuBetween(descendants_at_open_, DescendantCpu(*options_.env));
  session_->Stop();  // the run's end
  std::map<std::string, double> totals;
  std::vector<std::string> warnings;
  ProbeFindings findings{totals, meta_, warnings};
  session_->Finish(OwnRunTotals(session_->duration_ns(), descendants), findings);
  // footprint's own CPU: the session's figure, and its scope writer's.
  totals["monitor_cpu_s"] += Seconds(writer_usage_.ru_utime) + Seconds(writer_usage_.ru_stime);
  if (!warnings.empty()) meta_["warnings"] = warnings;
  AddOwnRunMeta(dropped);
  run_.status = status;
  FP_RETURN_IF_ERROR(session_->StoreEnd(totals, warnings));
  if (lost) return DatabaseError("some scopes and values could not be stored: " + last_error_);
  return Status::Ok();
}

ScopeName::ScopeName(std::string_view name) : id_(NameRegistry::Get().Intern(name)) {}

Benchmark::Benchmark(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Benchmark::~Benchmark() { (void)Close(); }

Benchmark* Benchmark::Current() { return g_current.load(std::memory_order_acquire); }

Result<std::unique_ptr<Benchmark>> Benchmark::Open(const BenchmarkOptions& options) {
  FP_RETURN_IF_ERROR(CheckInterval(options.interval_ns, "the sampling interval"));
  Env& env = *options.env;
  const std::optional<std::string> env_run = env.Var("FOOTPRINT_RUN_ID");
  const bool join = options.join && env_run && !env_run->empty();
  if (join) {
    const std::optional<std::string> env_db = env.Var("FOOTPRINT_DB");
    const std::optional<std::string> env_t0 = env.Var("FOOTPRINT_T0_NS");
    std::optional<int64_t> t0 = env_t0 ? ParseInt(*env_t0) : std::nullopt;
    if (!env_db || !t0) {
      return InvalidArgument(
          "FOOTPRINT_RUN_ID is set but FOOTPRINT_DB or FOOTPRINT_T0_NS is not; start the "
          "program with footprint run, or unset FOOTPRINT_RUN_ID");
    }
    FP_ASSIGN_OR_RETURN(auto store, OpenStore(*env_db));
    FP_ASSIGN_OR_RETURN(auto run, (store)->GetRun(*env_run));
    auto impl =
        std::make_unique<Impl>(std::move(store), nullptr, std::move(run), true, *t0, options);
    FP_RETURN_IF_ERROR(impl->Start(json::object()));
    std::unique_ptr<Benchmark> bm(new Benchmark(std::move(impl)));
    Benchmark* none = nullptr;
    g_current.compare_exchange_strong(none, bm.get());
    return bm;
  }
  const std::string db = options.db.empty() ? DefaultStoreLocation() : options.db;
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(db));
  auto sample_store = OpenStore(db);  // the sample writer's own connection
  if (!sample_store.ok()) return sample_store.status();
  json meta;
  RunRecord run = NewRunRecord(ReadNulSeparatedWords(env.ProcRoot() + "/self/cmdline"),
                               options.name, options.description, options.tags, options.params,
                               /*record_git=*/true, meta, env);
  // The session creates the run and anchors its t0 (Impl::Start).
  auto impl = std::make_unique<Impl>(std::move(store), std::move(sample_store).value(),
                                     std::move(run), false, 0, options);
  FP_RETURN_IF_ERROR(impl->Start(std::move(meta)));
  std::unique_ptr<Benchmark> bm(new Benchmark(std::move(impl)));
  Benchmark* none = nullptr;
  g_current.compare_exchange_strong(none, bm.get());
  return bm;
}

Status Benchmark::Close(RunStatus status) {
  Benchmark* self = this;
  g_current.compare_exchange_strong(self, nullptr);
  return impl_->Close(status);
}

Status Benchmark::Flush() { return impl_->FlushNow(); }

const std::string& Benchmark::run_id() const { return impl_->run_.id; }
const std::string& Benchmark::location() const { return impl_->location_; }
bool Benchmark::joined() const { return impl_->joined_; }
int64_t Benchmark::NowNs() const { return impl_->options_.env->MonotonicNs() - impl_->t0_; }

uint64_t Benchmark::RequestInterval(MetricId metric, int64_t interval_ns) {
  return impl_->RequestInterval(metric, interval_ns);
}

void Benchmark::ReleaseInterval(uint64_t token) { impl_->ReleaseInterval(token); }

uint64_t Benchmark::BeginScope(const ScopeName& name) {
  return internal::EnterScope(internal::ThisThreadScopes(*this), name.id());
}

void Benchmark::EndScope(uint64_t handle) {
  internal::ExitScope(internal::ThisThreadScopes(*this), handle);
}

uint64_t Benchmark::BeginGpuScope(const ScopeName& name, void* cuda_stream) {
  const uint64_t handle = BeginScope(name);
  Status st = impl_->gpu_.Start(handle, cuda_stream);
  if (st.ok()) {
    impl_->Hold(handle);  // before its end: the GPU time arrives after it
    impl_->GpuTimed();
  } else {
    impl_->GpuUnavailable(handle, st);
  }
  return handle;
}

void Benchmark::EndGpuScope(uint64_t handle) {
  impl_->gpu_.Stop(handle);
  EndScope(handle);
}

Status Benchmark::GpuTiming() const { return impl_->GpuStatus(); }

void Benchmark::HoldScope(uint64_t scope) {
  if (scope != 0) impl_->Hold(scope);
}

Status Benchmark::LogToScope(uint64_t scope, std::string_view name, std::optional<double> value,
                             std::string_view json_data, bool release) {
  Result<ValueRecord> r = JsonValue(name, value, json_data);
  if (!r.ok()) return r.status();
  impl_->AddValue(std::move(r).value(), scope, release);
  return Status::Ok();
}

void Benchmark::Log(std::string_view name, double value, std::optional<int64_t> step) {
  ValueRecord r;
  r.name = std::string(name);
  r.step = step;
  r.value = value;
  impl_->AddValue(std::move(r), internal::ThisThreadScopes(*this)->Innermost());
}

Status Benchmark::LogJson(std::string_view name, std::string_view text, std::optional<int64_t> step,
                          std::optional<double> value) {
  if (text.empty()) {
    return InvalidArgument("the value '" + std::string(name) + "' is not valid JSON");
  }
  Result<ValueRecord> r = JsonValue(name, value, text);
  if (!r.ok()) return r.status();
  r->step = step;
  impl_->AddValue(std::move(r).value(), internal::ThisThreadScopes(*this)->Innermost());
  return Status::Ok();
}

void Benchmark::LogAccuracy(double accuracy, double target, std::optional<int64_t> step) {
  Log("accuracy", accuracy, step);
  if (accuracy < target) return;
  {
    std::lock_guard<std::mutex> lock(impl_->tta_mu_);
    if (!impl_->reached_.insert(target).second) return;  // reached before
  }
  ValueRecord r;
  r.name = "time_to_accuracy";
  r.step = step;
  r.value = static_cast<double>(NowNs()) / 1e9;
  r.data_json = JsonText(json{{"target", target}, {"accuracy", accuracy}});
  impl_->AddValue(std::move(r), internal::ThisThreadScopes(*this)->Innermost());
}

Status Benchmark::LogConfusionMatrix(std::string_view name, const std::vector<std::string>& labels,
                                     const std::vector<std::vector<double>>& matrix) {
  if (matrix.size() != labels.size()) {
    return InvalidArgument("confusion matrix '" + std::string(name) + "' has " +
                           std::to_string(matrix.size()) + " rows for " +
                           std::to_string(labels.size()) + " labels");
  }
  for (const auto& row : matrix) {
    if (row.size() != labels.size()) {
      return InvalidArgument("confusion matrix '" + std::string(name) + "' is not " +
                             std::to_string(labels.size()) + " x " + std::to_string(labels.size()));
    }
  }
  ValueRecord r;
  r.name = std::string(name);
  r.data_json =
      JsonText(json{{"kind", "confusion_matrix"}, {"labels", labels}, {"matrix", matrix}});
  impl_->AddValue(std::move(r), internal::ThisThreadScopes(*this)->Innermost());
  return Status::Ok();
}

void Benchmark::LogHyperparameters(std::string_view name,
                                   const std::map<std::string, double>& params,
                                   std::string_view target_name, double target_value,
                                   bool low_means_good) {
  ValueRecord r;
  r.name = std::string(name);
  r.value = target_value;
  r.data_json = JsonText(json{{"kind", "hyperparameters"},
                              {"params", params},
                              {"target", target_name},
                              {"low_means_good", low_means_good}});
  impl_->AddValue(std::move(r), internal::ThisThreadScopes(*this)->Innermost());
}

Status Benchmark::Artifact(std::string_view name, const std::string& path) {
  std::optional<FileDigest> digest = DigestFile(path);
  if (!digest) return NotFound("artifact '" + std::string(name) + "': cannot read " + path);
  std::string absolute = path;
  if (!path.empty() && path[0] != '/') absolute = CurrentDir() + "/" + path;
  // Written by the writer thread, which owns the connection, in its next flush.
  impl_->AddArtifact({run_id(), std::string(name), absolute, digest->sha256, digest->size});
  return Status::Ok();
}

}  // namespace footprint
