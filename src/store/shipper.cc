#include "store/shipper.h"

#include <algorithm>
#include <string>

#include "store/journal_records.h"

namespace footprint {

Status Shipper::ShipAll() {
  std::vector<JournalEntry> batch;
  while (true) {
    FP_RETURN_IF_ERROR(journal_.Read(0, kBatch, kBatchSamples * sizeof(SamplePoint), batch));
    if (batch.empty()) return Status::Ok();
    FP_RETURN_IF_ERROR(ShipBatch(batch));
  }
}

Status Shipper::ShipBatch(const std::vector<JournalEntry>& batch) {
  int64_t sent = 0, skipped = 0;
  Status st = remote_.InTransaction([&]() -> Status {
    FP_ASSIGN_OR_RETURN(int64_t held, log_.LockWriter(journal_.info(), journal_.path()));
    if (!ids_loaded_) {
      ids_.clear();
      FP_RETURN_IF_ERROR(log_.LoadIds(journal_.info().writer, ids_));
      ids_loaded_ = true;
    }
    Shipment shipment;
    for (const JournalEntry& e : batch) {
      if (e.seq <= held) {
        ++skipped;
        continue;
      }
      FP_RETURN_IF_ERROR(Apply(e, shipment));
      ++sent;
    }
    FP_RETURN_IF_ERROR(FlushSamples());
    shipment.seq = std::max(held, batch.back().seq);
    shipment.at_ns = env_.RealtimeNs();
    return log_.Record(journal_.info().writer, shipment);
  });
  samples_.clear();
  if (!st.ok()) {
    ids_loaded_ = false;  // ids taken in the transaction rolled back are not the server's
    return st;
  }
  sent_ += sent;
  already_there_ += skipped;
  return journal_.Forget(batch.back().seq);
}

std::optional<int64_t> Shipper::KnownId(int64_t id) const {
  if (id >= 0) return id;
  auto it = ids_.find(-id);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

Result<int64_t> Shipper::ServerId(int64_t writer_id) const {
  std::optional<int64_t> id = KnownId(writer_id);
  if (!id) {
    return DatabaseError("the local buffer " + journal_.path() + " refers to series or scope " +
                         std::to_string(writer_id) + ", which it never created");
  }
  return *id;
}

Result<std::optional<int64_t>> Shipper::ServerId(const std::optional<int64_t>& writer_id) const {
  if (!writer_id) return std::optional<int64_t>();
  FP_ASSIGN_OR_RETURN(int64_t id, ServerId(*writer_id));
  return std::optional<int64_t>(id);
}

void Shipper::Learn(int64_t seq, int64_t id, Shipment& shipment) {
  ids_[seq] = id;
  shipment.new_ids.emplace_back(seq, id);
}

Status Shipper::FlushSamples() {
  if (samples_run_.empty()) return Status::Ok();
  Status st = remote_.Append(samples_run_, samples_, heartbeat_ns_);
  samples_run_.clear();
  samples_.clear();
  return st;
}

Status Shipper::GatherSamples(const JournalEntry& e) {
  FP_ASSIGN_OR_RETURN(heartbeat_ns_, ReadSamplesEntry(e.record));
  samples_run_ = e.run_id;
  for (SamplePoint p : UnpackSamples(e.samples)) {
    FP_ASSIGN_OR_RETURN(p.series_id, ServerId(p.series_id));
    samples_.push_back(p);
  }
  return Status::Ok();
}

Status Shipper::Apply(const JournalEntry& e, Shipment& shipment) {
  if (e.op != JournalOp::kSamples || e.run_id != samples_run_) FP_RETURN_IF_ERROR(FlushSamples());
  if (!e.run_id.empty()) shipment.runs.insert(e.run_id);
  switch (e.op) {
    case JournalOp::kCreateRun: {
      FP_ASSIGN_OR_RETURN(RunRecord run, ReadRunEntry(e.record));
      shipment.created.insert(run.id);
      return remote_.CreateRun(run);
    }
    case JournalOp::kSeries: {
      FP_ASSIGN_OR_RETURN(SeriesRecord series, ReadSeriesEntry(e.record, e.run_id));
      FP_ASSIGN_OR_RETURN(series.scope_id, ServerId(series.scope_id));
      FP_ASSIGN_OR_RETURN(int64_t id, remote_.EnsureSeries(series));
      Learn(e.seq, id, shipment);
      return Status::Ok();
    }
    case JournalOp::kSamples:
      return GatherSamples(e);
    case JournalOp::kFinishRun: {
      RunRecord run;
      std::map<std::string, double> totals;
      FP_RETURN_IF_ERROR(ReadFinishEntry(e.record, run, totals));
      shipment.finished.insert(run.id);
      return remote_.FinishRun(run, totals);
    }
    case JournalOp::kScope: {
      FP_ASSIGN_OR_RETURN(ScopeRecord scope, ReadScopeEntry(e.record, e.run_id));
      FP_ASSIGN_OR_RETURN(scope.parent_id, ServerId(scope.parent_id));
      FP_ASSIGN_OR_RETURN(int64_t id, remote_.InsertScope(scope));
      Learn(e.seq, id, shipment);
      return Status::Ok();
    }
    case JournalOp::kEndScope: {
      int64_t scope = 0, end_ns = 0;
      FP_RETURN_IF_ERROR(ReadEndScopeEntry(e.record, scope, end_ns));
      FP_ASSIGN_OR_RETURN(scope, ServerId(scope));
      return remote_.EndScope(scope, end_ns);
    }
    case JournalOp::kValue: {
      FP_ASSIGN_OR_RETURN(ValueRecord value, ReadValueEntry(e.record, e.run_id));
      FP_ASSIGN_OR_RETURN(value.scope_id, ServerId(value.scope_id));
      return remote_.InsertValue(value);
    }
    case JournalOp::kArtifact: {
      FP_ASSIGN_OR_RETURN(ArtifactRecord artifact, ReadArtifactEntry(e.record, e.run_id));
      return remote_.PutArtifact(artifact);
    }
    case JournalOp::kClose:
      shipment.closed = true;
      shipment.died = ReadCloseEntry(e.record);
      return Status::Ok();
  }
  return DatabaseError("an entry of an unknown kind in the local buffer " + journal_.path() +
                       " (written by a newer footprint?)");
}

}  // namespace footprint
