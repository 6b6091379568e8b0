// Opening an SQLite connection the way every footprint connection is opened (the SQLite store,
// and the job queue of `footprint serve`, src/serve/job_queue.h, which keeps its tables in the
// same database file).
#ifndef FOOTPRINT_STORE_SQLITE_CONNECTION_H_
#define FOOTPRINT_STORE_SQLITE_CONNECTION_H_

#include <sqlite3.h>

#include <memory>
#include <string>

#include "footprint/status.h"

namespace footprint {

struct SqliteCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
// An SQLite connection until it is handed over (release()).
using SqliteConnection = std::unique_ptr<sqlite3, SqliteCloser>;

// Opens `name` (a path or an SQLite URI for the file `path`) with `flags`, guarded: no schema
// object runs a function SQLite does not deem safe (trusted_schema off), no direct change of the
// file's structure (defensive), and no value, statement or expression larger than footprint ever
// writes, so that a hostile database costs bounded memory and time. DatabaseError, one line.
Result<SqliteConnection> OpenConnection(const std::string& name, const std::string& path,
                                        int flags);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SQLITE_CONNECTION_H_
