// Runs whose monitor is gone: a run still marked 'running' whose monitor process died (same
// machine and boot, PID and start time no longer alive), whose machine rebooted since, or
// which another machine has not heartbeated for two minutes, is interrupted. Readers list runs
// through here so that such runs never show as running.
#ifndef FOOTPRINT_STORE_RECONCILE_H_
#define FOOTPRINT_STORE_RECONCILE_H_

#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"

namespace footprint {

// Marks such runs interrupted in `runs` and, when the store is writable, in the store. Their
// end is their last heartbeat; "now" is `env`'s wall clock, the caller's (a server's, a test's
// driven one), never the real machine's behind its back.
Status ReconcileInterrupted(Store& store, std::vector<RunRecord>& runs, Env& env);

// Every run of the store, oldest first, reconciled as above on `env`'s clock: what the readers
// list.
Result<std::vector<RunRecord>> ListReconciledRuns(Store& store, Env& env);

// Stores as interrupted the runs of a writable store whose monitor is gone, on `env`'s clock:
// what a command that writes does, so that such runs do not stay 'running' in the database.
// Reads only the runs still marked running.
Status StoreInterruptedRuns(Store& store, Env& env);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_RECONCILE_H_
