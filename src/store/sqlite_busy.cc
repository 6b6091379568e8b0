#include "store/sqlite_busy.h"

#include <algorithm>
#include <iterator>

#include "util/clock.h"

namespace footprint {

void SqliteBusyWait::InstallOn(sqlite3* db) {
  sqlite3_busy_handler(db, &SqliteBusyWait::WaitWhileBusy, this);
}

int SqliteBusyWait::WaitWhileBusy(void* wait, int refusals) {
  static constexpr int64_t kBackOffMs[] = {1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100};
  SqliteBusyWait& w = *static_cast<SqliteBusyWait*>(wait);
  const int64_t now = w.env_->MonotonicNs();
  if (refusals == 0) w.since_ns_ = now;
  const int64_t give_up_ns = w.since_ns_ + w.timeout_ns_;
  if (now >= give_up_ns) return 0;
  const size_t step = std::min<size_t>(refusals, std::size(kBackOffMs) - 1);
  w.env_->SleepUntil(std::min(now + kBackOffMs[step] * kNsPerMs, give_up_ns));
  return 1;
}

}  // namespace footprint
