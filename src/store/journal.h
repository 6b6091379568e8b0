// Journal: the local durable buffer of one writer to a server store (docs/cluster.md), an
// SQLite file holding the writes not yet sent, in the order they were made.
//
// Each write is one entry: an operation, the run it belongs to, its record as JSON and, for
// samples, their packed bytes. Entries are numbered by `seq` (1, 2, ...: never reused), which is
// what the server records of each writer to take a replayed entry only once. An entry is kept
// until the server has committed it. The file survives a crash of its writer (WAL,
// synchronous=NORMAL: every committed entry outlives the process; an entry of the last
// moments before a power cut may not) and is removed once everything in it reached the server.
//
// Its lock file (PATH.lock, never the database itself: see journal.cc) is locked (flock) while
// a writer or `footprint push` has it open, so that a buffer being written is never pushed by
// another process, nor pushed twice at once.
//
// Thread-safety: none; one Journal per thread (SecondConnection for another). Connections wait
// up to 30 s for each other's writes.
#ifndef FOOTPRINT_STORE_JOURNAL_H_
#define FOOTPRINT_STORE_JOURNAL_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"
#include "store/sqlite_busy.h"

namespace footprint {

// What an entry does to the server, in Store's terms.
enum class JournalOp : int {
  kCreateRun = 1,
  kSeries = 2,  // EnsureSeries; -seq is the series' id in the writer's calls (WriterId)
  kSamples = 3,
  kFinishRun = 4,
  kScope = 5,  // InsertScope; -seq is the scope's id, as for series
  kEndScope = 6,
  kValue = 7,
  kArtifact = 8,
  kClose = 9,  // the writer is done: everything it will ever write is before this entry
};

struct JournalEntry {
  int64_t seq = 0;
  JournalOp op = JournalOp::kClose;
  std::string run_id;
  std::string record;   // JSON
  std::string samples;  // kSamples: SamplePoint structs, as this machine lays them out
};

// Who wrote a journal and where its entries go.
struct JournalInfo {
  std::string writer;    // a UUID
  std::string location;  // the server, without a password (RedactedLocation)
  std::string host;
  int64_t created_ns = 0;
};

// What waits in a journal.
struct JournalBacklog {
  int64_t entries = 0;
  int64_t samples = 0;
  bool closed = false;  // its writer wrote kClose
  std::vector<std::string> runs;
};

class Journal {
 public:
  // Creates the file at `path` (its folder too, readable by its owner only) for `info`. Its
  // connections wait for another's lock on `env`'s clock (SqliteBusyWait); `env` must outlive
  // the journal.
  static Result<std::unique_ptr<Journal>> Create(const std::string& path, const JournalInfo& info,
                                                 Env& env);
  // Opens an existing journal: nullptr when another process holds it (a live writer or a
  // push), kDatabase when it is not a journal. Waits for locks on `env`'s clock, as Create.
  static Result<std::unique_ptr<Journal>> Open(const std::string& path, Env& env);
  // Another connection to this journal, for another thread of the process that holds it (the
  // shipper's); it takes no lock of its own. Destroy it before this one.
  Result<std::unique_ptr<Journal>> SecondConnection() const;
  ~Journal();

  const JournalInfo& info() const { return info_; }
  const std::string& path() const { return path_; }

  // Appends an entry and returns its seq (in the transaction open, else committed at once).
  Result<int64_t> Add(JournalOp op, std::string_view run_id, std::string_view record,
                      std::span<const SamplePoint> samples = {});
  // Runs `body` in one transaction of the file: its entries are kept all or none.
  Status InTransaction(const std::function<Status()>& body);
  // The first entries after `after_seq`, in order: at most `limit`, and no more once their
  // samples reach `max_sample_bytes` (at least one entry).
  Status Read(int64_t after_seq, int limit, size_t max_sample_bytes,
              std::vector<JournalEntry>& out);
  // Forgets the entries up to `seq`: the server holds them.
  Status Forget(int64_t seq);
  Result<JournalBacklog> Backlog();
  // Closes and deletes the file (with its -wal and -shm): call once the backlog is empty.
  Status Remove();

 private:
  Journal(sqlite3* db, std::string path, int lock_fd, Env& env);
  Status Error(std::string_view doing) const;
  Status Exec(const char* sql, std::string_view doing);

  Env& env_;
  SqliteBusyWait busy_wait_;  // db_'s, on env_'s clock
  sqlite3* db_;
  std::string path_;
  int lock_fd_;
  JournalInfo info_;
  bool in_transaction_ = false;
};

// The id a writer's calls know a series or scope by until the server gave its own: the
// negative of the seq of the entry that created it (the server's ids are positive, so both
// can be told apart wherever an id is passed).
inline int64_t WriterId(int64_t seq) { return -seq; }

// The samples of a kSamples entry.
std::vector<SamplePoint> UnpackSamples(std::string_view bytes);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_JOURNAL_H_
