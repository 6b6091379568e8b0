// The records of journal entries (store/journal.h) as JSON text, written by the buffered store
// and read back by the shipper: one pair of functions per kind of entry.
#ifndef FOOTPRINT_STORE_JOURNAL_RECORDS_H_
#define FOOTPRINT_STORE_JOURNAL_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>

#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

std::string RunEntry(const RunRecord& run);
Result<RunRecord> ReadRunEntry(const std::string& record);

std::string FinishEntry(const RunRecord& run, const std::map<std::string, double>& totals);
Status ReadFinishEntry(const std::string& record, RunRecord& run,
                       std::map<std::string, double>& totals);

// Ids in these records are the writer's own (the seq of the entry that created them).
std::string SeriesEntry(const SeriesRecord& series);
Result<SeriesRecord> ReadSeriesEntry(const std::string& record, const std::string& run_id);

std::string SamplesEntry(int64_t heartbeat_ns);
Result<int64_t> ReadSamplesEntry(const std::string& record);

std::string ScopeEntry(const ScopeRecord& scope);
Result<ScopeRecord> ReadScopeEntry(const std::string& record, const std::string& run_id);

std::string EndScopeEntry(int64_t scope_id, int64_t end_ns);
Status ReadEndScopeEntry(const std::string& record, int64_t& scope_id, int64_t& end_ns);

std::string ValueEntry(const ValueRecord& value);
Result<ValueRecord> ReadValueEntry(const std::string& record, const std::string& run_id);

std::string ArtifactEntry(const ArtifactRecord& artifact);
Result<ArtifactRecord> ReadArtifactEntry(const std::string& record, const std::string& run_id);

// kClose: `died` when `footprint push` closes the buffer of a writer that died.
std::string CloseEntry(bool died);
bool ReadCloseEntry(const std::string& record);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_JOURNAL_RECORDS_H_
