#include "store/schema.h"

#include <array>
#include <string>
#include <vector>

#include "footprint/store.h"
#include "store/rows.h"
#include "util/word_table.h"

namespace footprint {
namespace {

// The data model both databases hold, described once (DESIGN.md's, plus run_totals: exact
// end-of-run figures queryable without parsing JSON, and runs.heartbeat_ns: to tell a live run
// from an interrupted one). Each dialect's v1 is written from it; only the samples differ. Tables
// are rendered into each dialect's words by CreateTable; PostgreSQL's v2 is described likewise.
enum class Type {
  kText,
  kInt,     // 32 bits are enough (exit codes, counts)
  kBigInt,  // ns, ids, sizes
  kSerial,  // numbered by the database: with PRIMARY KEY, SQLite's rowid
  kReal,
  kBytes,
  kBool,
};

struct Column {
  std::string_view name;
  Type type;
  std::string_view rest = "";  // NOT NULL, DEFAULT, CHECK, REFERENCES ...
};

struct Table {
  std::string_view name;
  std::vector<Column> columns;
  std::string_view key = "";                   // PRIMARY KEY (...) of several columns
  bool sqlite_without_rowid = false;           // a table looked up by its key only
  std::vector<std::string_view> indexes = {};  // "[UNIQUE ]name ON (columns)"
};

constexpr std::string_view kOfRun = "NOT NULL REFERENCES runs(id) ON DELETE CASCADE";

const std::vector<Table>& SharedTables() {
  static const std::vector<Table> tables = {
      {"runs",
       {{"id", Type::kText, "PRIMARY KEY"},
        {"name", Type::kText, "NOT NULL"},
        {"description", Type::kText, "NOT NULL DEFAULT ''"},
        {"experiment", Type::kText},
        {"workload", Type::kText},
        {"group_id", Type::kText},
        {"repetition", Type::kInt, "NOT NULL DEFAULT 0"},
        {"command", Type::kText, "NOT NULL"},
        {"cwd", Type::kText},
        {"host", Type::kText},
        {"user", Type::kText},
        {"started_at_ns", Type::kBigInt, "NOT NULL"},
        {"ended_at_ns", Type::kBigInt},
        {"status", Type::kText,
         "NOT NULL\n    CHECK (status IN ('running', 'ok', 'failed', 'killed', 'interrupted'))"},
        {"exit_code", Type::kInt},
        {"meta", Type::kText, "NOT NULL DEFAULT '{}'"},
        {"heartbeat_ns", Type::kBigInt}},
       "",
       false,
       {"runs_by_name ON (name, started_at_ns)",
        "runs_by_group ON (experiment, workload, group_id)"}},
      {"series",
       {{"id", Type::kSerial, "PRIMARY KEY"},
        {"run_id", Type::kText, kOfRun},
        {"metric", Type::kText, "NOT NULL"},
        {"unit", Type::kText, "NOT NULL"},
        {"entity", Type::kText, "NOT NULL"},
        {"scope_id", Type::kBigInt}},
       "",
       false,
       {"UNIQUE series_key ON (run_id, metric, entity, coalesce(scope_id, -1))"}},
      {"scopes",
       {{"id", Type::kSerial, "PRIMARY KEY"},
        {"run_id", Type::kText, kOfRun},
        {"parent_id", Type::kBigInt},
        {"name", Type::kText, "NOT NULL"},
        {"thread", Type::kBigInt},
        {"start_ns", Type::kBigInt, "NOT NULL"},
        {"end_ns", Type::kBigInt}},
       "",
       false,
       {"scopes_by_run ON (run_id, start_ns)"}},
      {"run_values",
       {{"id", Type::kSerial, "PRIMARY KEY"},
        {"run_id", Type::kText, kOfRun},
        {"scope_id", Type::kBigInt},
        {"name", Type::kText, "NOT NULL"},
        {"step", Type::kBigInt},
        {"t_ns", Type::kBigInt},
        {"value", Type::kReal},
        {"data", Type::kText}},
       "",
       false,
       {"run_values_by_run ON (run_id, name, step)"}},
      {"artifacts",
       {{"run_id", Type::kText, kOfRun},
        {"name", Type::kText, "NOT NULL"},
        {"path", Type::kText},
        {"sha256", Type::kText},
        {"size", Type::kBigInt}},
       "PRIMARY KEY (run_id, name)"},
      {"run_totals",
       {{"run_id", Type::kText, kOfRun},
        {"name", Type::kText, "NOT NULL"},
        {"value", Type::kReal, "NOT NULL"}},
       "PRIMARY KEY (run_id, name)",
       true},
  };
  return tables;
}

// SQLite's samples: one row per sample, found by its key.
const Table kSqliteSamples = {"samples",
                              {{"series_id", Type::kBigInt, "NOT NULL"},
                               {"t_ns", Type::kBigInt, "NOT NULL"},
                               {"value", Type::kReal, "NOT NULL"}},
                              "PRIMARY KEY (series_id, t_ns)",
                              true};

// PostgreSQL's samples are chunks: one row per series per write, its times and values packed in
// time order as 8-byte big-endian numbers (int64 ns, IEEE-754 doubles; in SQL the i-th time is
// ('x' || encode(substr(t_ns, 8 * i + 1, 8), 'hex'))::bit(64)::bigint). Measured on PostgreSQL
// 15 with 1 M samples (docs/cluster.md): 17 bytes per sample as arrays against 52 for one row
// per sample with a BRIN index and 84 with a B-tree, and COPY moves one row per series per flush
// instead of one per sample; packed bytes rather than arrays because PostgreSQL sends an array
// element by element (a series of 1 M samples took 165 ms of the server's time, bytes ~15 ms).
// A chunk is found by (series_id, t_first); `seq` orders the writes, so that where chunks
// overlap (a replayed write) readers keep the value written last for each time.
const Table kPostgresSampleChunks = {"sample_chunks",
                                     {{"series_id", Type::kBigInt, "NOT NULL"},
                                      {"t_first", Type::kBigInt, "NOT NULL"},
                                      {"seq", Type::kSerial},
                                      {"t_last", Type::kBigInt, "NOT NULL"},
                                      {"n", Type::kInt, "NOT NULL"},
                                      {"t_ns", Type::kBytes, "NOT NULL"},
                                      {"value", Type::kBytes, "NOT NULL"}},
                                     "PRIMARY KEY (series_id, t_first, seq)"};

// Each type's name in SQLite and in PostgreSQL.
struct TypeWords {
  Type type;
  std::string_view sqlite, postgres;
};
constexpr TypeWords kTypeWords[] = {{Type::kText, "TEXT", "TEXT"},
                                    {Type::kInt, "INTEGER", "INTEGER"},
                                    {Type::kBigInt, "INTEGER", "BIGINT"},
                                    {Type::kSerial, "INTEGER", "BIGSERIAL"},
                                    {Type::kReal, "REAL", "DOUBLE PRECISION"},
                                    {Type::kBytes, "BLOB", "BYTEA"},
                                    {Type::kBool, "INTEGER", "BOOLEAN"}};

std::string_view TypeName(Type type, SqlDialect d) {
  const TypeWords* w = FindRow(kTypeWords, &TypeWords::type, type);
  if (w == nullptr) return "";
  return d == SqlDialect::kPostgres ? w->postgres : w->sqlite;
}

// CREATE TABLE and its CREATE INDEX statements in `d`'s words.
std::string CreateTable(const Table& t, SqlDialect d) {
  std::string sql = "CREATE TABLE " + std::string(t.name) + "(\n";
  for (const Column& c : t.columns) {
    // "user" is a reserved word in PostgreSQL, a plain name in SQLite.
    const bool quote = d == SqlDialect::kPostgres && c.name == "user";
    sql += "  " + (quote ? "\"" + std::string(c.name) + "\"" : std::string(c.name)) + " " +
           std::string(TypeName(c.type, d)) + (c.rest.empty() ? "" : " ") + std::string(c.rest) +
           (&c != &t.columns.back() || !t.key.empty() ? ",\n" : "\n");
  }
  if (!t.key.empty()) sql += "  " + std::string(t.key) + "\n";
  sql += d == SqlDialect::kSqlite && t.sqlite_without_rowid ? ") WITHOUT ROWID;\n" : ");\n";
  for (std::string_view index : t.indexes) {
    const bool unique = index.starts_with("UNIQUE ");
    if (unique) index.remove_prefix(7);
    const size_t on = index.find(" ON (");
    sql += std::string(unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ") +
           std::string(index.substr(0, on)) + " ON " + std::string(t.name) +
           std::string(index.substr(on + 4)) + ";\n";
  }
  return sql;
}

std::string Version1(SqlDialect d) {
  std::string sql;
  for (const Table& t : SharedTables()) {
    sql += CreateTable(t, d);
    if (t.name == "series") {  // the samples where they were in the written-out schema
      sql += CreateTable(d == SqlDialect::kSqlite ? kSqliteSamples : kPostgresSampleChunks, d);
    }
  }
  return sql;
}

// PostgreSQL v2: what the server knows of the local buffers its writers send through
// (store/journal.h): how far each writer's entries arrived (a replayed entry is taken once),
// the server's ids of the series and scopes it created, and which of its runs it may still
// hold entries of (`footprint show` says so while `closed` is false). SQLite has no v2: it is
// written directly, never through a buffer.
constexpr std::string_view kOfWriter =
    "NOT NULL REFERENCES buffer_writers(writer) ON DELETE CASCADE";

const std::vector<Table>& PostgresBufferTables() {
  static const std::vector<Table> tables = {
      {"buffer_writers",
       {{"writer", Type::kText, "PRIMARY KEY"},
        {"host", Type::kText, "NOT NULL"},
        {"path", Type::kText, "NOT NULL"},
        {"shipped_seq", Type::kBigInt, "NOT NULL"},
        {"shipped_at_ns", Type::kBigInt, "NOT NULL"}}},
      {"buffer_runs",
       {{"writer", Type::kText, kOfWriter},
        {"run_id", Type::kText, kOfRun},
        {"creator", Type::kBool, "NOT NULL DEFAULT false"},
        {"closed", Type::kBool, "NOT NULL DEFAULT false"}},
       "PRIMARY KEY (writer, run_id)",
       false,
       {"buffer_runs_by_run ON (run_id)"}},
      {"buffer_ids",
       {{"writer", Type::kText, kOfWriter},
        {"local_id", Type::kBigInt, "NOT NULL"},
        {"remote_id", Type::kBigInt, "NOT NULL"}},
       "PRIMARY KEY (writer, local_id)"},
  };
  return tables;
}

}  // namespace

std::span<const std::string_view> SqliteMigrations() {
  static const std::string v1 = Version1(SqlDialect::kSqlite);
  static const std::array<std::string_view, kSchemaVersion> migrations = {v1};
  return migrations;
}

std::span<const std::string_view> PostgresMigrations() {
  static const std::string v1 = Version1(SqlDialect::kPostgres);
  static const std::string v2 = [] {
    std::string sql;
    for (const Table& t : PostgresBufferTables()) sql += CreateTable(t, SqlDialect::kPostgres);
    return sql;
  }();
  static const std::array<std::string_view, kPostgresSchemaVersion> migrations = {v1, v2};
  return migrations;
}

}  // namespace footprint
