// SQLite's busy handler on an Env's clock, for every footprint connection that waits for
// another's lock (the job queue of `footprint serve`, the local buffer's journal): it sleeps as
// sqlite3_busy_timeout would, ever longer up to 100 ms, through Env::SleepUntil, until its
// timeout has passed since the lock now awaited was first refused; then the statement fails
// with SQLITE_BUSY. On FakeEnv's driven clock a test sees the wait end exactly at its timeout.
#ifndef FOOTPRINT_STORE_SQLITE_BUSY_H_
#define FOOTPRINT_STORE_SQLITE_BUSY_H_

#include <sqlite3.h>

#include <cstdint>

#include "footprint/env.h"

namespace footprint {

class SqliteBusyWait {
 public:
  SqliteBusyWait(Env& env, int64_t timeout_ns) : env_(&env), timeout_ns_(timeout_ns) {}
  // Makes this `db`'s busy handler: it must outlive every statement of `db`.
  void InstallOn(sqlite3* db);

 private:
  static int WaitWhileBusy(void* wait, int refusals);

  Env* env_;
  int64_t timeout_ns_;
  int64_t since_ns_ = 0;  // when the lock now awaited was first refused
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SQLITE_BUSY_H_
