// BufferedStore: a server store written through a local buffer (include/footprint/buffer.h):
// every write goes into the journal first, then a thread of its own sends it, so that a server
// that does not answer (stopped, a network cut) never holds up the writer, nor the run's end
// for more than kCloseWaitNs. Reads go to the server.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "core/identity.h"
#include "footprint/buffer.h"
#include "store/journal.h"
#include "store/journal_records.h"
#include "store/shipment.h"
#include "store/shipper.h"
#include "store/stores.h"
#include "util/host.h"

namespace footprint {
namespace {

// After a failed shipment the next waits about 1 s, doubling up to 8 s: a server that is away
// is not asked at every flush. Each wait is drawn between half and one and a half times that,
// so that the writers a busy server refused do not all come back at the same moment.
constexpr int64_t kFirstBackoffNs = 1'000'000'000, kMaxBackoffNs = 8'000'000'000;
// A shipment opens a connection and closes it when done, so that a server's connection slots
// are shared by many more writers: at most one a second (the writer flushes every 0.5 s), or
// at once when a reader waits for it.
constexpr int64_t kShipEveryNs = 1'000'000'000;
// At the end, a server that refused a connection for lack of free slots is asked again after
// about this long, for at most kBusyCloseNs: it answers, it is only full (each refusal counts
// as progress for the end's wait).
constexpr int64_t kBusyRetryNs = 200'000'000, kBusyCloseNs = 30'000'000'000;
// How long the end waits for the server to take more of what is left, and a reader for a
// shipment: a server that takes nothing for this long does not answer.
constexpr int64_t kCloseWaitNs = 10'000'000'000;

// What the shipping thread shares with the store. Both hold it, so that a thread left in a call
// to a server that does not answer keeps what it uses after the store is gone; whoever lets go
// last deletes the buffer if everything in it was sent.
struct Shipping {
  Shipping(std::unique_ptr<Store> remote_store, ShipmentLog& shipment_log, Env& e, BufferNotice n)
      : remote(std::move(remote_store)), log(shipment_log), env(e), notice(std::move(n)) {}
  ~Shipping() { (void)RemoveIfSent(); }

  // Makes the buffer at `dir` and the connection the thread uses.
  Status OpenJournal(const std::string& dir) {
    const JournalInfo info{NewRunId(), remote->location(), HostName(), env.RealtimeNs()};
    FP_ASSIGN_OR_RETURN(journal, Journal::Create(dir + "/" + info.writer + ".db", info, env));
    FP_ASSIGN_OR_RETURN(ship_journal, journal->SecondConnection());
    shipper = std::make_unique<Shipper>(*ship_journal, *remote, log, env);
    return Status::Ok();
  }
  // After a write of entry `seq`: the thread sends it.
  void Wake(int64_t seq) {
    {
      std::lock_guard<std::mutex> lock(wake_mu);
      wake = true;
      written = std::max(written, seq);
    }
    wake_cv.notify_all();
  }
  // Before a read: waits (at most kCloseWaitNs) until what was written has reached the server,
  // so that a reader sees its own writes, unless the server is away (then the reader sees what
  // the server holds).
  // False when the server stopped answering meanwhile (the thread is held in a call to it).
  bool Sync() {
    std::unique_lock<std::mutex> lock(wake_mu);
    hurry = true;
    wake_cv.notify_all();
    return WaitWhileProgressing(lock, [&] { return away || shipped >= written; });
  }
  // Waits until `ready` (with wake_mu held), as long as the server takes entries: false once
  // kCloseWaitNs passed without one (a server that does not answer; a slow one is waited for),
  // or at once when an earlier wait gave up and nothing was taken since (the run's last line,
  // then its end: a hung server costs them 10 s together, not each).
  bool WaitWhileProgressing(std::unique_lock<std::mutex>& lock,
                            const std::function<bool()>& ready) {
    int64_t seen = Progress();
    if (seen == stalled_at) return ready();
    while (!env.WaitUntil(wake_cv, lock, env.MonotonicNs() + kCloseWaitNs, ready)) {
      const int64_t now = Progress();
      if (now == seen) {
        stalled_at = now;
        return false;
      }
      seen = now;
    }
    return true;
  }
  int64_t Progress() const {
    return busy_refusals.load(std::memory_order_relaxed) +
           (shipper ? shipper->sent() + shipper->already_there() : 0);
  }
  // The thread: sends what waits after a write (at most every kShipEveryNs, unless a reader
  // waits), less often while the server fails, and once more, whatever the back-off, when
  // asked to stop; then again while a full server refuses the connection.
  void Loop() {
    pthread_setname_np(pthread_self(), "fp-shipper");
    int64_t next_ns = 0;
    bool stop = false;
    while (!stop) {
      {
        std::unique_lock<std::mutex> lock(wake_mu);
        env.WaitUntil(wake_cv, lock, std::max(next_ns, env.MonotonicNs() + kShipEveryNs), [&] {
          return stopping || (wake && (env.MonotonicNs() >= next_ns || (hurry && !failing)));
        });
        wake = hurry = false;
        stop = stopping;
      }
      next_ns = env.MonotonicNs() + Ship(/*at_close=*/stop);
    }
    for (const int64_t give_up = env.MonotonicNs() + kBusyCloseNs;
         busy && env.MonotonicNs() < give_up;) {
      std::unique_lock<std::mutex> lock(wake_mu);
      env.WaitUntil(wake_cv, lock, env.MonotonicNs() + Jittered(kBusyRetryNs),
                    [] { return false; });
      lock.unlock();
      Ship(/*at_close=*/true);
    }
    std::lock_guard<std::mutex> lock(wake_mu);
    done = true;
    wake_cv.notify_all();
  }
  // `ns` times a random factor in [0.5, 1.5).
  int64_t Jittered(int64_t ns) {
    return static_cast<int64_t>(static_cast<double>(ns) *
                                std::uniform_real_distribution<double>(0.5, 1.5)(random));
  }
  // Sends what waits; says when the server goes away and when it is back. Returns how long to
  // wait before the next try: 0 after a success, a growing back-off after a failure.
  int64_t Ship(bool at_close) {
    int64_t target;
    {
      std::lock_guard<std::mutex> lock(wake_mu);
      target = written;
    }
    Status st;
    {
      std::lock_guard<std::timed_mutex> lock(remote_mu);
      st = shipper->ShipAll();
      busy = !st.ok() && log.refused_for_lack_of_slots();
      busy_refusals += busy;
      log.Disconnect();
    }
    {
      std::lock_guard<std::mutex> lock(wake_mu);
      if (st.ok()) shipped = std::max(shipped, target);
      away = !st.ok();
    }
    wake_cv.notify_all();
    if (st.ok()) {
      if (said_failing) {
        Say("the server answers again; what waited in " + journal->path() + " is sent");
      }
      failing = said_failing = false;
      backoff_ns = kFirstBackoffNs;
      return kShipEveryNs;
    }
    // A full server is not news: it takes the data a moment later (the end says what waits).
    if (!said_failing && !at_close && !busy) {
      Say(st.message() + "; the run goes on, its data kept in " + journal->path() +
          " until the server answers");
      said_failing = true;
    }
    failing = true;
    const int64_t wait = Jittered(backoff_ns);
    backoff_ns = std::min(backoff_ns * 2, kMaxBackoffNs);
    return wait;
  }
  // Deletes the buffer when nothing waits in it; else what waits (nullopt: nothing was kept).
  std::optional<std::string> RemoveIfSent() {
    if (!journal) return std::nullopt;
    shipper.reset();
    ship_journal.reset();  // before journal's, whose lock goes with it
    Result<JournalBacklog> left = journal->Backlog();
    if (left.ok() && left->entries == 0) {
      (void)journal->Remove();
      journal.reset();
      return std::nullopt;
    }
    return left.ok() ? std::to_string(left->samples) + " samples (" +
                           std::to_string(left->entries) + " changes)"
                     : "changes";
  }
  void Say(const std::string& line) {
    if (notice) notice(line);
  }

  std::unique_ptr<Store> remote;
  ShipmentLog& log;
  Env& env;
  BufferNotice notice;
  std::unique_ptr<Journal> journal;       // the writer's connection
  std::unique_ptr<Journal> ship_journal;  // the thread's
  std::unique_ptr<Shipper> shipper;
  // remote and shipper are used by one thread at a time: the shipping thread, or a reader.
  std::timed_mutex remote_mu;
  std::mutex wake_mu;  // wake, stopping, done, written, shipped, away, hurry and stalled_at
  std::condition_variable wake_cv;
  bool wake = false, stopping = false, done = false;
  int64_t written = 0, shipped = 0;  // the last entry written, and the last known sent
  bool away = false;                 // the last shipment failed
  bool hurry = false;                // a reader waits for the next shipment
  int64_t stalled_at = -1;           // Progress() when a wait last gave up (-1: none did)
  // The thread's own: whether the last shipment failed, whether that was said, whether the
  // server refused it for lack of free connection slots.
  bool failing = false, said_failing = false, busy = false;
  int64_t backoff_ns = kFirstBackoffNs;
  std::minstd_rand random{std::random_device{}()};
  std::atomic<int64_t> busy_refusals{0};  // a server that answers "full" is not a hung one
};

class BufferedStore final : public Store {
 public:
  BufferedStore(std::unique_ptr<Store> remote, ShipmentLog& log, std::string dir, Env& env,
                BufferNotice notice)
      : shipping_(std::make_shared<Shipping>(std::move(remote), log, env, std::move(notice))),
        dir_(std::move(dir)) {}
  ~BufferedStore() override { Close(); }

  Status CreateRun(const RunRecord& run) override {
    return Write(JournalOp::kCreateRun, run.id, RunEntry(run)).status();
  }
  Result<int64_t> EnsureSeries(const SeriesRecord& s) override {
    const std::string key = s.run_id + '\n' + s.metric + '\n' + s.entity + '\n' +
                            (s.scope_id ? std::to_string(*s.scope_id) : "");
    if (auto it = series_.find(key); it != series_.end()) return it->second;
    FP_ASSIGN_OR_RETURN(int64_t seq, Write(JournalOp::kSeries, s.run_id, SeriesEntry(s)));
    series_[key] = WriterId(seq);
    return WriterId(seq);
  }
  Status Append(const std::string& run_id, std::span<const SamplePoint> samples,
                int64_t heartbeat_ns) override {
    return Write(JournalOp::kSamples, run_id, SamplesEntry(heartbeat_ns), samples).status();
  }
  Status FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) override {
    return Write(JournalOp::kFinishRun, run.id, FinishEntry(run, totals)).status();
  }
  Status InTransaction(const std::function<Status()>& body) override {
    FP_RETURN_IF_ERROR(OpenJournal());
    in_transaction_ = true;
    Status st = shipping_->journal->InTransaction(body);
    in_transaction_ = false;
    if (st.ok()) shipping_->Wake(last_seq_);
    return st;
  }
  Result<int64_t> InsertScope(const ScopeRecord& scope) override {
    FP_ASSIGN_OR_RETURN(int64_t seq, Write(JournalOp::kScope, scope.run_id, ScopeEntry(scope)));
    return WriterId(seq);
  }
  Status EndScope(int64_t scope_id, int64_t end_ns) override {
    return Write(JournalOp::kEndScope, "", EndScopeEntry(scope_id, end_ns)).status();
  }
  Status InsertValue(const ValueRecord& value) override {
    return Write(JournalOp::kValue, value.run_id, ValueEntry(value)).status();
  }
  Status PutArtifact(const ArtifactRecord& artifact) override {
    return Write(JournalOp::kArtifact, artifact.run_id, ArtifactEntry(artifact)).status();
  }

  // A reader's repair of the server's records, not a write of a run: sent directly.
  Status MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().MarkInterrupted(run_id, ended_at_ns);
  }
  Result<std::vector<RunRecord>> ListRuns() override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListRuns();
  }
  Result<std::vector<RunRecord>> ListRunsWithStatus(RunStatus status) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListRunsWithStatus(status);
  }
  Result<RunPage> ListRunsPage(const RunQuery& query) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListRunsPage(query);
  }
  Result<RunRecord> GetRun(const std::string& id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().GetRun(id);
  }
  Result<std::vector<SeriesRecord>> ListSeries(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListSeries(run_id);
  }
  Result<std::vector<double>> LoadValues(int64_t series_id, std::vector<int64_t>* times) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().LoadValues(Known(series_id), times);
  }
  Status ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                          const std::function<void(int64_t, double)>& visit) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ScanSamplesAfter(Known(series_id), after_ns, limit, visit);
  }
  Result<std::optional<int64_t>> SeriesEnd(int64_t series_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().SeriesEnd(Known(series_id));
  }
  Result<std::optional<int64_t>> LastSampleTime(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().LastSampleTime(run_id);
  }
  Result<std::map<std::string, double>> LoadTotals(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().LoadTotals(run_id);
  }
  Result<std::vector<ScopeRecord>> ListScopes(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListScopes(run_id);
  }
  Result<std::vector<ValueRecord>> ListValues(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListValues(run_id);
  }
  Result<std::vector<ArtifactRecord>> ListArtifacts(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().ListArtifacts(run_id);
  }
  Result<std::vector<PendingBuffer>> PendingBuffers(const std::string& run_id) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().PendingBuffers(run_id);
  }
  std::string WaitingIn() override {
    if (!shipping_->journal) return "";
    shipping_->Sync();
    std::lock_guard<std::mutex> lock(shipping_->wake_mu);
    return shipping_->shipped >= shipping_->written ? "" : shipping_->journal->path();
  }
  // The location is fixed when the store opens: no lock needed.
  const std::string& location() const override { return remote().location(); }
  const std::string& open_location() const override { return remote().open_location(); }
  bool read_only() const override { return false; }
  Status CheckLocation() override { return Status::Ok(); }  // a server's data is where it is
  Status SaveCopyTo(const std::string& path) override {
    FP_ASSIGN_OR_RETURN(auto lock, LockRemote());
    return remote().SaveCopyTo(path);
  }

 private:
  Store& remote() const { return *shipping_->remote; }
  // The server for a reader, once it has this writer's writes (Sync), or kDatabase when a
  // shipment holds it past kCloseWaitNs (a server that does not answer).
  Result<std::unique_lock<std::timed_mutex>> LockRemote() const {
    // A server that stopped answering during Sync holds the thread, and the lock, in its call:
    // not waited for twice.
    const bool answers = shipping_->Sync();
    std::unique_lock<std::timed_mutex> lock(shipping_->remote_mu, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::nanoseconds(answers ? kCloseWaitNs : 0))) {
      return DatabaseError(location() + " does not answer");
    }
    return lock;
  }
  // A series id of this writer's as the server knows it (one not sent yet is none there); with
  // the server locked.
  int64_t Known(int64_t id) const {
    return shipping_->shipper ? shipping_->shipper->KnownId(id).value_or(id) : id;
  }
  // The buffer and its thread are made with the first write: readers that open a store for
  // writing (to repair runs) leave no file behind.
  Status OpenJournal() {
    if (shipping_->journal) return Status::Ok();
    FP_RETURN_IF_ERROR(shipping_->OpenJournal(dir_));
    // The thread takes no signal: one sent to the process (SIGCHLD, which `run` waits for with
    // sigtimedwait) must reach the thread that waits for it, not be discarded here.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([shipping = shipping_] { shipping->Loop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return Status::Ok();
  }
  Result<int64_t> Write(JournalOp op, const std::string& run_id, const std::string& record,
                        std::span<const SamplePoint> samples = {}) {
    FP_RETURN_IF_ERROR(OpenJournal());
    FP_ASSIGN_OR_RETURN(int64_t seq, shipping_->journal->Add(op, run_id, record, samples));
    last_seq_ = seq;
    if (!in_transaction_) shipping_->Wake(seq);
    return seq;
  }
  // Writes the journal's end and lets the thread send it with everything before; the buffer
  // is deleted when nothing is left, and then buffers that earlier footprints left for the
  // same server are sent too. A server that takes nothing for kCloseWaitNs keeps the thread
  // in its call: it goes on alone, and the buffer stays for `footprint push`.
  void Close() {
    if (!thread_.joinable()) return;
    Shipping& s = *shipping_;
    (void)s.journal->Add(JournalOp::kClose, "", CloseEntry(/*died=*/false));
    bool done;
    {
      std::unique_lock<std::mutex> lock(s.wake_mu);
      s.stopping = true;
      s.wake_cv.notify_all();
      done = s.WaitWhileProgressing(lock, [&] { return s.done; });
    }
    if (!done) {
      s.Say(location() + " does not answer; what is left of this writer's data stays in " +
            s.journal->path() + ": `footprint push` sends it once the server answers");
      thread_.detach();
      return;
    }
    thread_.join();
    if (std::optional<std::string> left = s.RemoveIfSent()) {
      s.Say(*left + " wait in " + s.journal->path() + " for " + location() +
            ", which cannot be reached; `footprint push` sends them once it answers");
      return;
    }
    PushLeftBehind(dir_, open_location(), s.notice, s.env);  // the server answers: what others left
  }

  std::shared_ptr<Shipping> shipping_;
  std::string dir_;
  std::thread thread_;
  std::unordered_map<std::string, int64_t> series_;  // EnsureSeries' answers
  bool in_transaction_ = false;
  int64_t last_seq_ = 0;  // of the last entry written
};

}  // namespace

Result<std::unique_ptr<Store>> OpenBufferedStore(std::unique_ptr<Store> remote, Env& env,
                                                 BufferNotice notice) {
  auto* log = dynamic_cast<ShipmentLog*>(remote.get());
  if (log == nullptr) return remote;  // a store that is not a server is not buffered
  return std::unique_ptr<Store>(
      new BufferedStore(std::move(remote), *log, BufferDirectory(env), env, std::move(notice)));
}

}  // namespace footprint
