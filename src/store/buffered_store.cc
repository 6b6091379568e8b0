// BufferedStore: a server store written through a local buffer (include/footprint/buffer.h):
// every write goes into the journal first, then the shipper sends it. Reads go to the server.
#include <string>
#include <unordered_map>
#include <utility>

#include "footprint/buffer.h"
#include "run/run_metadata.h"
#include "store/journal.h"
#include "store/journal_records.h"
#include "store/shipment.h"
#include "store/shipper.h"
#include "store/stores.h"
#include "util/host.h"

namespace footprint {
namespace {

class BufferedStore final : public Store {
 public:
  // After a failed shipment the next waits 1 s, doubling up to 8 s: a server that is away is
  // not asked at every flush.
  static constexpr int64_t kFirstBackoffNs = 1'000'000'000, kMaxBackoffNs = 8'000'000'000;

  BufferedStore(std::unique_ptr<Store> remote, ShipmentLog& log, std::string dir, Env& env,
                BufferNotice notice)
      : remote_(std::move(remote)),
        log_(log),
        dir_(std::move(dir)),
        env_(env),
        notice_(std::move(notice)) {}
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
    Status st = journal_->InTransaction(body);
    in_transaction_ = false;
    if (st.ok()) Ship(/*at_close=*/false);
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
    return remote_->MarkInterrupted(run_id, ended_at_ns);
  }
  Result<std::vector<RunRecord>> ListRuns() override { return remote_->ListRuns(); }
  Result<RunRecord> GetRun(const std::string& id) override { return remote_->GetRun(id); }
  Result<std::vector<SeriesRecord>> ListSeries(const std::string& run_id) override {
    return remote_->ListSeries(run_id);
  }
  Result<std::vector<double>> LoadValues(int64_t series_id, std::vector<int64_t>* times) override {
    return remote_->LoadValues(Known(series_id), times);
  }
  Status ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                          const std::function<void(int64_t, double)>& visit) override {
    return remote_->ScanSamplesAfter(Known(series_id), after_ns, limit, visit);
  }
  Result<std::optional<int64_t>> SeriesEnd(int64_t series_id) override {
    return remote_->SeriesEnd(Known(series_id));
  }
  Result<std::optional<int64_t>> LastSampleTime(const std::string& run_id) override {
    return remote_->LastSampleTime(run_id);
  }
  Result<std::map<std::string, double>> LoadTotals(const std::string& run_id) override {
    return remote_->LoadTotals(run_id);
  }
  Result<std::vector<ScopeRecord>> ListScopes(const std::string& run_id) override {
    return remote_->ListScopes(run_id);
  }
  Result<std::vector<ValueRecord>> ListValues(const std::string& run_id) override {
    return remote_->ListValues(run_id);
  }
  Result<std::vector<ArtifactRecord>> ListArtifacts(const std::string& run_id) override {
    return remote_->ListArtifacts(run_id);
  }
  Result<std::vector<PendingBuffer>> PendingBuffers(const std::string& run_id) override {
    return remote_->PendingBuffers(run_id);
  }
  const std::string& location() const override { return remote_->location(); }
  const std::string& open_location() const override { return remote_->open_location(); }
  bool read_only() const override { return false; }
  Status CheckLocation() override { return remote_->CheckLocation(); }
  Status SaveCopyTo(const std::string& path) override { return remote_->SaveCopyTo(path); }

 private:
  // The journal is made with the first write: readers that open a store for writing (to repair
  // runs) leave no file behind.
  Status OpenJournal() {
    if (journal_) return Status::Ok();
    const JournalInfo info{NewRunId(), location(), HostName(), env_.RealtimeNs()};
    FP_ASSIGN_OR_RETURN(journal_, Journal::Create(dir_ + "/" + info.writer + ".db", info));
    shipper_ = std::make_unique<Shipper>(*journal_, *remote_, log_, env_);
    return Status::Ok();
  }
  // A series id of this writer's as the server knows it (one not sent yet is none there).
  int64_t Known(int64_t id) const { return shipper_ ? shipper_->KnownId(id).value_or(id) : id; }
  Result<int64_t> Write(JournalOp op, const std::string& run_id, const std::string& record,
                        std::span<const SamplePoint> samples = {}) {
    FP_RETURN_IF_ERROR(OpenJournal());
    FP_ASSIGN_OR_RETURN(int64_t seq, journal_->Add(op, run_id, record, samples));
    if (!in_transaction_) Ship(/*at_close=*/false);
    return seq;
  }
  // Sends what waits, unless the server failed a moment ago; says when the server goes away and
  // when it is back.
  void Ship(bool at_close) {
    const int64_t now = env_.MonotonicNs();
    if (!at_close && failing_ && now < next_try_ns_) return;
    Status st = shipper_->ShipAll();
    if (st.ok()) {
      if (failing_)
        say("the server answers again; the data that waited in " + journal_->path() + " is sent");
      failing_ = false;
      backoff_ns_ = kFirstBackoffNs;
      return;
    }
    if (!failing_ && !at_close) {
      say(st.message() + "; the run goes on, its data kept in " + journal_->path() +
          " until the server answers");
    }
    failing_ = true;
    next_try_ns_ = now + backoff_ns_;
    backoff_ns_ = std::min(backoff_ns_ * 2, kMaxBackoffNs);
  }
  void Close() {
    if (!journal_) return;
    if (journal_->Add(JournalOp::kClose, "", CloseEntry(/*died=*/false)).ok()) Ship(true);
    Result<JournalBacklog> left = journal_->Backlog();
    if (left.ok() && left->entries == 0) {
      (void)journal_->Remove();
      return;
    }
    std::string what = left.ok() ? std::to_string(left->samples) + " samples (" +
                                       std::to_string(left->entries) + " changes)"
                                 : "changes";
    say(what + " wait in " + journal_->path() + " for " + location() +
        ", which cannot be reached; `footprint push` sends them once it answers");
  }
  void say(const std::string& line) {
    if (notice_) notice_(line);
  }

  std::unique_ptr<Store> remote_;
  ShipmentLog& log_;
  std::string dir_;
  Env& env_;
  BufferNotice notice_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Shipper> shipper_;
  std::unordered_map<std::string, int64_t> series_;  // EnsureSeries' answers
  bool in_transaction_ = false;
  bool failing_ = false;
  int64_t next_try_ns_ = 0;
  int64_t backoff_ns_ = kFirstBackoffNs;
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
