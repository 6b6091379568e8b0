// The records as rows, the same in every store: the queries (parameters $1, $2, ..., which
// SQLite reads too), and the records written through a binder and read through a row reader
// of the store's own kind (Row: Text(i), Int(i), Real(i), OptInt(i), IsNull(i); 0-based).
#ifndef FOOTPRINT_STORE_ROWS_H_
#define FOOTPRINT_STORE_ROWS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "footprint/store.h"
#include "util/json_bounded.h"
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
  nlohmann::json cmd = ParseStoredJson(s.Text(7));
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

// A runs-table page (Store::ListRunsPage) as SQL, in either store's dialect. `where` and `order`
// hold placeholders for `params`; a count binds only the first `where_params` of them.
enum class SqlDialect { kSqlite, kPostgres };
using SqlParam = std::variant<int64_t, std::string>;
struct RunPageSql {
  std::string where;
  std::string order;  // the ORDER BY list
  std::vector<SqlParam> params;
  size_t where_params = 0;
};

namespace run_page_sql {

// Placeholders typed by a CAST that both dialects read (PostgreSQL cannot infer the type of
// a parameter inside a function call); SQLite numbers them ?N, PostgreSQL $N.
class Placeholders {
 public:
  Placeholders(SqlDialect dialect, std::vector<SqlParam>& params)
      : dialect_(dialect), params_(params) {}
  std::string Int(int64_t v) { return Add(v, "BIGINT"); }
  std::string Text(std::string v) { return Add(std::move(v), "TEXT"); }
  SqlDialect dialect() const { return dialect_; }

 private:
  std::string Add(SqlParam v, const char* type) {
    params_.push_back(std::move(v));
    const char prefix = dialect_ == SqlDialect::kSqlite ? '?' : '$';
    return "CAST(" + std::string(1, prefix) + std::to_string(params_.size()) + " AS " + type + ")";
  }
  SqlDialect dialect_;
  std::vector<SqlParam>& params_;
};

// `expr` lower-cased as footprint's Lower does: ASCII letters only (SQLite's lower() is that;
// PostgreSQL's follows the database's locale).
inline std::string LowerSql(SqlDialect d, const std::string& expr) {
  if (d == SqlDialect::kSqlite) return "lower(" + expr + ")";
  return "translate(" + expr + ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')";
}

// Byte order for text, as std::string compares.
inline std::string Bytewise(SqlDialect d, const std::string& expr) {
  return d == SqlDialect::kSqlite ? expr : expr + " COLLATE \"C\"";
}

// "id IN (...)" for the runs read as interrupted; "" when there are none.
inline std::string InterruptedIn(const RunQuery& q, Placeholders& p) {
  if (q.interrupted_ids.empty()) return "";
  std::string ids;
  for (const std::string& id : q.interrupted_ids) ids += (ids.empty() ? "" : ", ") + p.Text(id);
  return "id IN (" + ids + ")";
}

// The status as readers show it.
inline std::string StatusSql(const RunQuery& q, Placeholders& p) {
  std::string interrupted = InterruptedIn(q, p);
  if (interrupted.empty()) return "status";
  return "(CASE WHEN " + interrupted + " THEN 'interrupted' ELSE status END)";
}

// The duration in ns as RunDuration computes it without totals (a running run's lasts until
// its last heartbeat, or now).
inline std::string DurationSql(const RunQuery& q, Placeholders& p, int64_t now_ns) {
  std::string end = "coalesce(ended_at_ns, heartbeat_ns, " + p.Int(now_ns) + ")";
  if (std::string interrupted = InterruptedIn(q, p); !interrupted.empty()) {
    end = "(CASE WHEN " + interrupted + " THEN coalesce(heartbeat_ns, started_at_ns) ELSE " + end +
          " END)";
  }
  const std::string length = "(" + end + " - started_at_ns)";
  return "(CASE WHEN " + length + " < 0 THEN 0 ELSE " + length + " END)";
}

// The search of q.text: in the id, name, description, or one string of the command's JSON
// array (a command that is not one matches on nothing, as ReadRun reads no words from it).
inline std::string TextSql(const RunQuery& q, Placeholders& p) {
  const SqlDialect d = p.dialect();
  const std::string needle = p.Text(q.text);
  auto contains = [&](const std::string& hay) {
    return (d == SqlDialect::kSqlite ? "instr(" : "strpos(") + LowerSql(d, hay) + ", " + needle +
           ") > 0";
  };
  std::string words;
  if (d == SqlDialect::kSqlite) {
    words =
        "EXISTS (SELECT 1 FROM json_each(CASE WHEN NOT json_valid(command) THEN '[]' "
        "WHEN json_type(command) = 'array' THEN command ELSE '[]' END) "
        "WHERE type = 'text' AND " +
        contains("value") + ")";
  } else {
    words =
        "EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN json_typeof(command::json) = "
        "'array' THEN command::json ELSE '[]'::json END) AS word WHERE json_typeof(word) = "
        "'string' AND " +
        contains("(word #>> '{}')") + ")";
  }
  return "(" + contains("id") + " OR " + contains("name") + " OR " + contains("description") +
         " OR " + words + ")";
}

inline std::string WhereSql(const RunQuery& q, Placeholders& p) {
  std::vector<std::string> terms;
  if (q.status)
    terms.push_back(StatusSql(q, p) + " = " + p.Text(std::string(RunStatusName(*q.status))));
  if (q.from_ns) terms.push_back("started_at_ns >= " + p.Int(*q.from_ns));
  if (q.to_ns) terms.push_back("started_at_ns < " + p.Int(*q.to_ns));
  if (q.experiment) terms.push_back("coalesce(experiment, '') = " + p.Text(*q.experiment));
  if (q.workload) terms.push_back("coalesce(workload, '') = " + p.Text(*q.workload));
  if (q.group_prefix) {
    const std::string prefix = p.Text(*q.group_prefix);
    terms.push_back("substr(coalesce(group_id, ''), 1, length(" + prefix + ")) = " + prefix);
  }
  if (!q.text.empty()) terms.push_back(TextSql(q, p));
  std::string where = terms.empty() ? "1 = 1" : "";
  for (const std::string& term : terms) where += (where.empty() ? "" : " AND ") + term;
  return where;
}

inline std::string OrderSql(const RunQuery& q, Placeholders& p, int64_t now_ns) {
  const SqlDialect d = p.dialect();
  std::string key;
  switch (q.sort) {
    case RunQuery::Sort::kStarted:
      key = "started_at_ns";
      break;
    case RunQuery::Sort::kName:
      key = Bytewise(d, LowerSql(d, "name"));
      break;
    case RunQuery::Sort::kStatus:
      key = Bytewise(d, StatusSql(q, p));
      break;
    case RunQuery::Sort::kDuration:
      key = DurationSql(q, p, now_ns);
      break;
  }
  // Ties stay newest first, as in the list ListRuns gives reversed.
  return key + (q.descending ? " DESC" : " ASC") + ", started_at_ns DESC, " + Bytewise(d, "id") +
         " DESC";
}

}  // namespace run_page_sql

// The SQL of `query`; `now_ns` ends the duration of running runs.
inline RunPageSql BuildRunPageSql(const RunQuery& query, SqlDialect dialect, int64_t now_ns) {
  RunPageSql sql;
  run_page_sql::Placeholders p(dialect, sql.params);
  sql.where = run_page_sql::WhereSql(query, p);
  sql.where_params = sql.params.size();
  sql.order = run_page_sql::OrderSql(query, p, now_ns);
  return sql;
}

// The page's runs (kRunColumns), binding every parameter: the ids are chosen first, so that
// only the page's rows are read whole (meta is kilobytes a run).
inline std::string RunPageSelectSql(const RunPageSql& sql, const RunQuery& query) {
  return "SELECT " + std::string(kRunColumns) +
         " FROM runs JOIN (SELECT id AS page_id FROM runs WHERE " + sql.where + " ORDER BY " +
         sql.order + " LIMIT " + std::to_string(query.limit) + " OFFSET " +
         std::to_string(query.offset) + ") AS page ON id = page_id ORDER BY " + sql.order;
}

// How many runs the query selects, binding the first `where_params`.
inline std::string RunPageCountSql(const RunPageSql& sql) {
  return "SELECT count(*) FROM runs WHERE " + sql.where;
}

}  // namespace footprint

#endif  // FOOTPRINT_STORE_ROWS_H_
