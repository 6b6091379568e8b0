#include "store/schema.h"

#include <array>

#include "footprint/store.h"

namespace footprint {
namespace {

// v1: the data model of DESIGN.md, plus run_totals (exact end-of-run figures, queryable
// without parsing JSON) and runs.heartbeat_ns (to tell a live run from an interrupted one).
constexpr std::string_view kV1 = R"sql(
CREATE TABLE runs(
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  experiment TEXT,
  workload TEXT,
  group_id TEXT,
  repetition INTEGER NOT NULL DEFAULT 0,
  command TEXT NOT NULL,
  cwd TEXT,
  host TEXT,
  user TEXT,
  started_at_ns INTEGER NOT NULL,
  ended_at_ns INTEGER,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'ok', 'failed', 'killed', 'interrupted')),
  exit_code INTEGER,
  meta TEXT NOT NULL DEFAULT '{}',
  heartbeat_ns INTEGER
);
CREATE INDEX runs_by_name ON runs(name, started_at_ns);
CREATE INDEX runs_by_group ON runs(experiment, workload, group_id);
CREATE TABLE series(
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  entity TEXT NOT NULL,
  scope_id INTEGER
);
CREATE UNIQUE INDEX series_key ON series(run_id, metric, entity, ifnull(scope_id, -1));
CREATE TABLE samples(
  series_id INTEGER NOT NULL,
  t_ns INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (series_id, t_ns)
) WITHOUT ROWID;
CREATE TABLE scopes(
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  parent_id INTEGER,
  name TEXT NOT NULL,
  thread INTEGER,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER
);
CREATE INDEX scopes_by_run ON scopes(run_id, start_ns);
CREATE TABLE run_values(
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  scope_id INTEGER,
  name TEXT NOT NULL,
  step INTEGER,
  t_ns INTEGER,
  value REAL,
  data TEXT
);
CREATE INDEX run_values_by_run ON run_values(run_id, name, step);
CREATE TABLE artifacts(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  path TEXT,
  sha256 TEXT,
  size INTEGER,
  PRIMARY KEY (run_id, name)
);
CREATE TABLE run_totals(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
)sql";

constexpr std::array<std::string_view, 1> kMigrations = {kV1};
static_assert(kMigrations.size() == kSchemaVersion, "one migration per schema version");

// PostgreSQL v1: the same tables, with one difference of layout. Samples are stored as
// chunks: one row per series per write, its times and values packed in time order as 8-byte
// big-endian numbers (int64 ns, IEEE-754 doubles; in SQL the i-th time is
// ('x' || encode(substr(t_ns, 8 * i + 1, 8), 'hex'))::bit(64)::bigint). Measured on PostgreSQL
// 15 with 1 M samples (docs/cluster.md): 17 bytes per sample as arrays against 52 for one row
// per sample with a BRIN index and 84 with a B-tree, and COPY moves one row per series per flush
// instead of one per sample; packed bytes rather than arrays because PostgreSQL sends an array
// element by element (a series of 1 M samples took 165 ms of the server's time, bytes ~15 ms).
// A chunk is found by (series_id, t_first); `seq` orders the writes, so that where chunks
// overlap (a replayed write) readers keep the value written last for each time.
constexpr std::string_view kPostgresV1 = R"sql(
CREATE TABLE runs(
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  experiment TEXT,
  workload TEXT,
  group_id TEXT,
  repetition INTEGER NOT NULL DEFAULT 0,
  command TEXT NOT NULL,
  cwd TEXT,
  host TEXT,
  "user" TEXT,
  started_at_ns BIGINT NOT NULL,
  ended_at_ns BIGINT,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'ok', 'failed', 'killed', 'interrupted')),
  exit_code INTEGER,
  meta TEXT NOT NULL DEFAULT '{}',
  heartbeat_ns BIGINT
);
CREATE INDEX runs_by_name ON runs(name, started_at_ns);
CREATE INDEX runs_by_group ON runs(experiment, workload, group_id);
CREATE TABLE series(
  id BIGSERIAL PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  entity TEXT NOT NULL,
  scope_id BIGINT
);
CREATE UNIQUE INDEX series_key ON series(run_id, metric, entity, coalesce(scope_id, -1));
CREATE TABLE sample_chunks(
  series_id BIGINT NOT NULL,
  t_first BIGINT NOT NULL,
  seq BIGSERIAL,
  t_last BIGINT NOT NULL,
  n INTEGER NOT NULL,
  t_ns BYTEA NOT NULL,
  value BYTEA NOT NULL,
  PRIMARY KEY (series_id, t_first, seq)
);
CREATE TABLE scopes(
  id BIGSERIAL PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  parent_id BIGINT,
  name TEXT NOT NULL,
  thread BIGINT,
  start_ns BIGINT NOT NULL,
  end_ns BIGINT
);
CREATE INDEX scopes_by_run ON scopes(run_id, start_ns);
CREATE TABLE run_values(
  id BIGSERIAL PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  scope_id BIGINT,
  name TEXT NOT NULL,
  step BIGINT,
  t_ns BIGINT,
  value DOUBLE PRECISION,
  data TEXT
);
CREATE INDEX run_values_by_run ON run_values(run_id, name, step);
CREATE TABLE artifacts(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  path TEXT,
  sha256 TEXT,
  size BIGINT,
  PRIMARY KEY (run_id, name)
);
CREATE TABLE run_totals(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (run_id, name)
);
)sql";

// PostgreSQL v2: what the server knows of the local buffers its writers send through
// (store/journal.h): how far each writer's entries arrived (a replayed entry is taken once),
// the server's ids of the series and scopes it created, and which of its runs it may still
// hold entries of (`footprint show` says so while `closed` is false). SQLite has no v2: it is
// written directly, never through a buffer.
constexpr std::string_view kPostgresV2 = R"sql(
CREATE TABLE buffer_writers(
  writer TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  path TEXT NOT NULL,
  shipped_seq BIGINT NOT NULL,
  shipped_at_ns BIGINT NOT NULL
);
CREATE TABLE buffer_runs(
  writer TEXT NOT NULL REFERENCES buffer_writers(writer) ON DELETE CASCADE,
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  creator BOOLEAN NOT NULL DEFAULT false,
  closed BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (writer, run_id)
);
CREATE INDEX buffer_runs_by_run ON buffer_runs(run_id);
CREATE TABLE buffer_ids(
  writer TEXT NOT NULL REFERENCES buffer_writers(writer) ON DELETE CASCADE,
  local_id BIGINT NOT NULL,
  remote_id BIGINT NOT NULL,
  PRIMARY KEY (writer, local_id)
);
)sql";

constexpr std::array<std::string_view, 2> kPostgresMigrations = {kPostgresV1, kPostgresV2};
static_assert(kPostgresMigrations.size() == kPostgresSchemaVersion,
              "one migration per schema version");

}  // namespace

std::span<const std::string_view> SqliteMigrations() { return kMigrations; }
std::span<const std::string_view> PostgresMigrations() { return kPostgresMigrations; }

}  // namespace footprint
