// What is recorded about a run besides its measurements: identity, machine, code version,
// and who is monitoring it (so that a run whose monitor died can be told from a live one:
// store/reconcile.h).
#ifndef FOOTPRINT_RUN_RUN_METADATA_H_
#define FOOTPRINT_RUN_RUN_METADATA_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"
#include "util/host.h"

namespace footprint {

// CPU model, logical cores, memory, kernel and OS.
nlohmann::json HardwareInfo();
// {"commit": "...", "dirty": bool, "branch": "..."} when `dir` is inside a git work tree with
// a commit checked out; null otherwise. Read from `.git` itself through `env`; git is started
// only for what its files do not settle (run/git_state.h), and "dirty" is left out when that
// git is missing.
nlohmann::json GitInfo(const std::string& dir, Env& env);
// This process as a monitor: {"pid", "start_ticks", "boot_id", "host"}.
nlohmann::json MonitorIdentity();

// The name of a run started without one: the base name of the program, or, for an
// interpreter running a script (python3 train.py, bash run.sh, node app.js), the script's
// base name; `python3 -m pkg.mod` gives the module and `python3 -c CODE` the interpreter.
// The interpreter's options before the script are skipped (-W and -X with their value).
// "program" for an empty command.
std::string DefaultRunName(const std::vector<std::string>& command);

// A new run record (status running, started now) with everything known before it starts:
// id, name (default: DefaultRunName), command, cwd, host, user, and in `meta` the
// tags, params, hardware, monitor identity, footprint version, and git when asked for. The
// user (USER where the password database has no name), the Slurm job and git through `env`.
RunRecord NewRunRecord(const std::vector<std::string>& command, std::string name,
                       std::string description, const std::map<std::string, std::string>& tags,
                       const std::map<std::string, std::string>& params, bool record_git,
                       nlohmann::json& meta, Env& env);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_RUN_METADATA_H_
