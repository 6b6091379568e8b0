#include "store/reconcile.h"

#include <nlohmann/json.hpp>

#include "util/clock.h"
#include "util/host.h"
#include "util/json_bounded.h"

namespace footprint {

using json = nlohmann::json;

Status ReconcileInterrupted(Store& store, std::vector<RunRecord>& runs, Env& env) {
  // Without a heartbeat for this long, a run monitored on another machine counts as lost.
  constexpr int64_t kStaleNs = 120 * kNsPerSec;
  const std::string host = HostName();
  const std::string boot = BootId();
  const int64_t now = env.RealtimeNs();
  for (RunRecord& r : runs) {
    if (r.status != RunStatus::kRunning) continue;
    json meta = ParseStoredJson(r.meta_json);
    json mon = meta.is_object() ? meta.value("monitor", json::object()) : json::object();
    bool dead;
    if (mon.value("host", "") == host && mon.value("boot_id", "") == boot) {
      auto pid = mon.value("pid", 0);
      auto ticks = StartTicks(static_cast<pid_t>(pid));
      dead = pid <= 0 || !ticks || *ticks != mon.value("start_ticks", uint64_t{0});
    } else if (mon.value("host", "") == host) {
      dead = true;  // the machine rebooted since
    } else {
      dead = now - r.heartbeat_ns.value_or(r.started_at_ns) > kStaleNs;
    }
    if (!dead) continue;
    r.status = RunStatus::kInterrupted;
    r.ended_at_ns = r.heartbeat_ns.value_or(r.started_at_ns);
    FP_RETURN_IF_ERROR(store.MarkInterrupted(r.id, *r.ended_at_ns));
  }
  return Status::Ok();
}

Status StoreInterruptedRuns(Store& store, Env& env) {
  FP_ASSIGN_OR_RETURN(auto running, store.ListRunsWithStatus(RunStatus::kRunning));
  return ReconcileInterrupted(store, running, env);
}

Result<std::vector<RunRecord>> ListReconciledRuns(Store& store, Env& env) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return runs;
  FP_RETURN_IF_ERROR(ReconcileInterrupted(store, *runs, env));
  return runs;
}

}  // namespace footprint
