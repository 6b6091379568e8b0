// The JSON objects of a run record and of its scopes, shared by `show --json` and `export --format
// json` so that both describe a run with the same fields.
#ifndef FOOTPRINT_REPORT_RUN_JSON_H_
#define FOOTPRINT_REPORT_RUN_JSON_H_

#include <nlohmann/json.hpp>

#include "footprint/store.h"

namespace footprint {

// {id, name, description, status, exit_code, group_id, repetition, command, cwd, host, user,
//  started_at_ns, ended_at_ns} plus experiment and workload when set. Unknown values are null.
nlohmann::json RunJson(const RunRecord& run);

// {id, parent_id, name, thread, start_ns, end_ns} of a scope (`export --format json`, the web
// API); a scope still open has a null end.
nlohmann::json ScopeJson(const ScopeRecord& scope);

// The run's meta JSON, or {} when it does not parse.
nlohmann::json RunMeta(const RunRecord& run);

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_RUN_JSON_H_
