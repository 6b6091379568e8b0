// Shipper: sends the entries of a local buffer (store/journal.h) to the server store, in order,
// each exactly once: the buffered store after each write, `footprint push` for a buffer left
// behind.
//
// Entries go in transactions of at most kBatch (and kBatchSamples); each transaction also records,
// through the server's ShipmentLog, the last entry it holds, so an entry already there (a commit
// whose answer was lost) is skipped. The writer's ids of series and scopes are translated to the
// server's. An entry leaves the buffer once its transaction committed.
#ifndef FOOTPRINT_STORE_SHIPPER_H_
#define FOOTPRINT_STORE_SHIPPER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"
#include "store/journal.h"
#include "store/shipment.h"

namespace footprint {

class Shipper {
 public:
  // One transaction sends at most kBatch entries, and no more once they hold kBatchSamples
  // samples: a long backlog goes in steps the server commits one by one (progress a waiting
  // thread can see), each about a second's work.
  static constexpr int kBatch = 4096;
  static constexpr size_t kBatchSamples = size_t{1} << 18;

  // `remote` is also its ShipmentLog (the PostgreSQL store).
  Shipper(Journal& journal, Store& remote, ShipmentLog& log, Env& env)
      : journal_(journal), remote_(remote), log_(log), env_(env) {}

  // Sends everything waiting. On a failure, what was sent stays sent and the rest waits.
  Status ShipAll();
  // The server's id of a series or scope: itself when it is one already, nullopt when the
  // writer's id (WriterId) has not reached the server yet.
  std::optional<int64_t> KnownId(int64_t id) const;
  // Entries the server took, and those it held already; after each transaction, readable from
  // any thread (how another thread tells a slow shipment from a server that does not answer).
  int64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  int64_t already_there() const { return already_there_.load(std::memory_order_relaxed); }

 private:
  Status ShipBatch(const std::vector<JournalEntry>& batch);
  // Applies one entry to the server, noting what it did in `shipment`.
  Status Apply(const JournalEntry& e, Shipment& shipment);
  // The server gave `id` to what the entry `seq` created (a series, a scope).
  void Learn(int64_t seq, int64_t id, Shipment& shipment);
  // Sends the samples gathered from consecutive entries of one run.
  Status FlushSamples();
  // Gathers a samples entry's points, their series named by the server's ids.
  Status GatherSamples(const JournalEntry& e);
  Result<int64_t> ServerId(int64_t writer_id) const;
  Result<std::optional<int64_t>> ServerId(const std::optional<int64_t>& writer_id) const;

  Journal& journal_;
  Store& remote_;
  ShipmentLog& log_;
  Env& env_;
  std::unordered_map<int64_t, int64_t> ids_;  // seqs of the entries that made ids -> the server's
  bool ids_loaded_ = false;
  std::string samples_run_;
  std::vector<SamplePoint> samples_;
  int64_t heartbeat_ns_ = 0;
  std::atomic<int64_t> sent_{0}, already_there_{0};
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SHIPPER_H_
