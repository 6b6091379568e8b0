// ShipmentLog: what a server store records of the local buffers written to it (store/journal.h,
// docs/cluster.md), so that an entry sent twice (a commit whose answer was lost, a buffer pushed
// again) is taken once, and the ids the server gave are known again after a crash.
//
// Every call is made inside Store::InTransaction, with the entries it records: the record and
// the data commit together or not at all.
#ifndef FOOTPRINT_STORE_SHIPMENT_H_
#define FOOTPRINT_STORE_SHIPMENT_H_

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "footprint/status.h"
#include "store/journal.h"

namespace footprint {

// What one transaction of a writer's entries did.
struct Shipment {
  int64_t seq = 0;                                   // the writer's last entry the server now holds
  int64_t at_ns = 0;                                 // UTC wall clock
  std::vector<std::pair<int64_t, int64_t>> new_ids;  // the writer's id -> the server's
  std::set<std::string> runs;                        // written to by these entries
  std::set<std::string> created;                     // created by them
  std::set<std::string> finished;                    // finished by them
  bool closed = false;  // the writer is done (kClose): none of its runs waits on it any more
  // The writer died, and `footprint push` closes it: the runs it created and did not finish
  // are interrupted at their last heartbeat.
  bool died = false;
};

class ShipmentLog {
 public:
  virtual ~ShipmentLog() = default;
  // Registers the writer of `info` if new, locks its record until the transaction ends, and
  // returns the seq of its last entry the server holds (0: none).
  virtual Result<int64_t> LockWriter(const JournalInfo& info, const std::string& path) = 0;
  // The server's ids of the series and scopes the writer created, by the writer's ids.
  virtual Status LoadIds(const std::string& writer, std::unordered_map<int64_t, int64_t>& ids) = 0;
  virtual Status Record(const std::string& writer, const Shipment& shipment) = 0;
  // Closes the connection to the server; the next call opens one. A writer holds a connection
  // only while it ships, so that many writers share a server's few connection slots.
  virtual void Disconnect() = 0;
  // Whether the last failure was the server refusing a connection for lack of free slots
  // (SQLSTATE 53300, "too many clients"): busy, not away.
  virtual bool refused_for_lack_of_slots() const = 0;
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SHIPMENT_H_
