// The records as rows, the same in every store: the queries (parameters $1, $2, ..., which
// SQLite reads too), and the records written through a binder and read through a row reader
// of the store's own kind (Row: Text(i), Int(i), Real(i), OptInt(i), IsNull(i); 0-based).
#ifndef FOOTPRINT_STORE_ROWS_H_
#define FOOTPRINT_STORE_ROWS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "footprint/store.h"
#include "util/json_text.h"

namespace footprint {

// "user" is quoted: PostgreSQL reserves the word (SQLite reads it quoted too).
inline constexpr std::string_view kRunColumns =
    "id, name, description, experiment, workload, group_id, repetition, command, cwd, host, "
    "\"user\", started_at_ns, ended_at_ns, status, exit_code, meta, heartbeat_ns";
inline constexpr int kRunColumnCount = 17;

// Binds the columns of `r` as parameters 1..17. Binder: Text(i, string_view), Int(i, int64_t),
// Null(i).
template <typename Binder>
void BindRun(Binder& b, const RunRecord& r) {
  auto text_or_null = [&](int i, const std::string& v) { v.empty() ? b.Null(i) : b.Text(i, v); };
  auto opt = [&](int i, const auto& v) { v ? b.Int(i, static_cast<int64_t>(*v)) : b.Null(i); };
  b.Text(1, r.id);
  b.Text(2, r.name);
  b.Text(3, r.description);
  text_or_null(4, r.experiment);
  text_or_null(5, r.workload);
  text_or_null(6, r.group_id);
  b.Int(7, r.repetition);
  b.Text(8, JsonText(nlohmann::json(r.command)));
  b.Text(9, r.cwd);
  b.Text(10, r.host);
  b.Text(11, r.user);
  b.Int(12, r.started_at_ns);
  opt(13, r.ended_at_ns);
  b.Text(14, RunStatusName(r.status));
  opt(15, r.exit_code);
  b.Text(16, r.meta_json);
  opt(17, r.heartbeat_ns);
}

// The run in a row selected with kRunColumns.
template <typename Row>
RunRecord ReadRun(const Row& s) {
  RunRecord r;
  r.id = s.Text(0);
  r.name = s.Text(1);
  r.description = s.Text(2);
  r.experiment = s.Text(3);
  r.workload = s.Text(4);
  r.group_id = s.Text(5);
  r.repetition = static_cast<int>(s.Int(6));
  nlohmann::json cmd = nlohmann::json::parse(s.Text(7), nullptr, /*allow_exceptions=*/false);
  if (cmd.is_array()) {
    for (const auto& a : cmd) {
      if (a.is_string()) r.command.push_back(a.template get<std::string>());
    }
  }
  r.cwd = s.Text(8);
  r.host = s.Text(9);
  r.user = s.Text(10);
  r.started_at_ns = s.Int(11);
  r.ended_at_ns = s.OptInt(12);
  r.status = RunStatusFromName(s.Text(13)).value_or(RunStatus::kInterrupted);
  if (auto code = s.OptInt(14)) r.exit_code = static_cast<int>(*code);
  r.meta_json = s.Text(15);
  r.heartbeat_ns = s.OptInt(16);
  return r;
}

// One run's scopes, values, artifacts and series ($1: the run id), each with its reader.
inline constexpr std::string_view kScopesOfRun =
    "SELECT id, run_id, parent_id, name, thread, start_ns, end_ns FROM scopes WHERE run_id = $1 "
    "ORDER BY start_ns, id";
template <typename Row>
ScopeRecord ReadScope(const Row& s) {
  return {s.Int(0), s.Text(1), s.OptInt(2), s.Text(3), s.Int(4), s.Int(5), s.OptInt(6)};
}

inline constexpr std::string_view kValuesOfRun =
    "SELECT run_id, scope_id, name, step, t_ns, value, data FROM run_values WHERE run_id = $1 "
    "ORDER BY name, step, t_ns, id";
template <typename Row>
ValueRecord ReadValue(const Row& s) {
  ValueRecord v{s.Text(0), s.OptInt(1), s.Text(2), s.OptInt(3), s.Int(4), std::nullopt, s.Text(6)};
  if (!s.IsNull(5)) v.value = s.Real(5);
  return v;
}

inline constexpr std::string_view kArtifactsOfRun =
    "SELECT run_id, name, path, sha256, size FROM artifacts WHERE run_id = $1 ORDER BY name";
template <typename Row>
ArtifactRecord ReadArtifact(const Row& s) {
  return {s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4)};
}

inline constexpr std::string_view kSeriesOfRun =
    "SELECT id, run_id, metric, unit, entity, scope_id FROM series WHERE run_id = $1 ORDER BY id";
template <typename Row>
SeriesRecord ReadSeries(const Row& s) {
  return {s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.OptInt(5)};
}

inline constexpr std::string_view kTotalsOfRun =
    "SELECT name, value FROM run_totals WHERE run_id = $1";

}  // namespace footprint

#endif  // FOOTPRINT_STORE_ROWS_H_
