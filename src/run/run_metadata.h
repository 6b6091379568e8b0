// What is recorded about a run besides its measurements: identity, machine, code version,
// and who is monitoring it (so that a run whose monitor died can be told from a live one).
#ifndef FOOTPRINT_RUN_RUN_METADATA_H_
#define FOOTPRINT_RUN_RUN_METADATA_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/store.h"

namespace footprint {

// A random (version 4) UUID.
std::string NewRunId();
std::string HostName();
std::string UserName();
std::string CurrentDir();
// CPU model, logical cores, memory, kernel and OS.
nlohmann::json HardwareInfo();
// {"commit": "...", "dirty": bool, "branch": "..."} when `dir` is inside a git work tree and
// git is installed; null otherwise.
nlohmann::json GitInfo(const std::string& dir);
// This process as a monitor: {"pid", "start_ticks", "boot_id", "host"}.
nlohmann::json MonitorIdentity();
// Runs argv (looked up in PATH) with stdout captured, stderr on /dev/null and `input` (a few
// KiB at most) on stdin; the environment is footprint's with `env` on top. The output, or
// nullopt unless it exits 0.
std::optional<std::string> Capture(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {},
                                   std::string_view input = {});
// The footprint version string.
std::string_view FootprintVersion();

// A new run record (status running, started now) with everything known before it starts:
// id, name (default: the command's base name), command, cwd, host, user, and in `meta` the
// tags, params, hardware, monitor identity, footprint version, and git when asked for.
RunRecord NewRunRecord(const std::vector<std::string>& command, std::string name,
                       std::string description, const std::map<std::string, std::string>& tags,
                       const std::map<std::string, std::string>& params, bool record_git,
                       nlohmann::json& meta);

// Runs still marked 'running' whose monitor is gone (same machine and boot, process dead;
// another boot of this machine; or no heartbeat for a long time) are marked interrupted, in
// `runs` and, when the store is writable, in the store. Their end is their last heartbeat.
Status ReconcileInterrupted(Store& store, std::vector<RunRecord>& runs);

// Every run of the store, oldest first, reconciled as above: what the readers list.
Result<std::vector<RunRecord>> ListReconciledRuns(Store& store);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_RUN_METADATA_H_
