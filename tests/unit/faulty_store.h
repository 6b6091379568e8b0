// FaultyStore: a real store with faults injected into its sample appends — writes that fail,
// a disk that fills, a commit that is slow — to test what the writer promises.
#ifndef FOOTPRINT_TESTS_UNIT_FAULTY_STORE_H_
#define FOOTPRINT_TESTS_UNIT_FAULTY_STORE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "footprint/store.h"

namespace footprint {

class FaultyStore final : public Store {
 public:
  explicit FaultyStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}

  // Appends number 0, 1, ... fail when first_failing <= n < first_failing + failing
  // (failing < 0: every append from first_failing on fails, a disk that filled up).
  std::atomic<int> first_failing{0};
  std::atomic<int> failing{0};
  std::atomic<int> delay_ms{0};          // every append takes this long first (a slow disk)
  std::atomic<bool> fail_finish{false};  // the end of the run cannot be stored (full at the end)
  std::atomic<int> appends{0};           // calls so far

  Status Append(const std::string& run_id, std::span<const SamplePoint> samples,
                int64_t heartbeat_ns) override {
    const int n = appends.fetch_add(1);
    if (int ms = delay_ms.load(); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const int first = first_failing.load(), count = failing.load();
    if (n >= first && (count < 0 || n < first + count)) {
      return DatabaseError("database or disk is full (injected, append " + std::to_string(n) + ")");
    }
    return inner_->Append(run_id, samples, heartbeat_ns);
  }

  Status CreateRun(const RunRecord& run) override { return inner_->CreateRun(run); }
  Result<int64_t> EnsureSeries(const SeriesRecord& s) override { return inner_->EnsureSeries(s); }
  Status FinishRun(const RunRecord& run, const std::map<std::string, double>& t) override {
    if (fail_finish) return DatabaseError("database or disk is full (injected, finish)");
    return inner_->FinishRun(run, t);
  }
  Status InTransaction(const std::function<Status()>& body) override {
    return inner_->InTransaction(body);
  }
  Result<int64_t> InsertScope(const ScopeRecord& s) override { return inner_->InsertScope(s); }
  Status EndScope(int64_t id, int64_t end_ns) override { return inner_->EndScope(id, end_ns); }
  Status InsertValue(const ValueRecord& v) override { return inner_->InsertValue(v); }
  Status PutArtifact(const ArtifactRecord& a) override { return inner_->PutArtifact(a); }
  Status MarkInterrupted(const std::string& id, int64_t end) override {
    return inner_->MarkInterrupted(id, end);
  }
  Result<std::vector<RunRecord>> ListRuns() override { return inner_->ListRuns(); }
  Result<std::vector<RunRecord>> ListRunsWithStatus(RunStatus status) override {
    return inner_->ListRunsWithStatus(status);
  }
  Result<RunPage> ListRunsPage(const RunQuery& query) override {
    return inner_->ListRunsPage(query);
  }
  Result<RunRecord> GetRun(const std::string& id) override { return inner_->GetRun(id); }
  Result<std::vector<SeriesRecord>> ListSeries(const std::string& id) override {
    return inner_->ListSeries(id);
  }
  Result<std::vector<double>> LoadValues(int64_t series, std::vector<int64_t>* times) override {
    return inner_->LoadValues(series, times);
  }
  Status ScanSamplesAfter(int64_t series, int64_t after, size_t limit,
                          const std::function<void(int64_t, double)>& visit) override {
    return inner_->ScanSamplesAfter(series, after, limit, visit);
  }
  Result<std::optional<int64_t>> SeriesEnd(int64_t series) override {
    return inner_->SeriesEnd(series);
  }
  Result<std::optional<int64_t>> LastSampleTime(const std::string& id) override {
    return inner_->LastSampleTime(id);
  }
  Result<std::map<std::string, double>> LoadTotals(const std::string& id) override {
    return inner_->LoadTotals(id);
  }
  Result<std::vector<ScopeRecord>> ListScopes(const std::string& id) override {
    return inner_->ListScopes(id);
  }
  Result<std::vector<ValueRecord>> ListValues(const std::string& id) override {
    return inner_->ListValues(id);
  }
  Result<std::vector<ArtifactRecord>> ListArtifacts(const std::string& id) override {
    return inner_->ListArtifacts(id);
  }
  const std::string& location() const override { return inner_->location(); }
  const std::string& open_location() const override { return inner_->open_location(); }
  bool read_only() const override { return inner_->read_only(); }
  Status CheckLocation() override { return inner_->CheckLocation(); }
  Status SaveCopyTo(const std::string& path) override { return inner_->SaveCopyTo(path); }

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace footprint

#endif  // FOOTPRINT_TESTS_UNIT_FAULTY_STORE_H_
