// The embedded SQLite implementation of Store.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "footprint/store.h"
#include "store/rows.h"
#include "store/schema.h"
#include "store/side_files.h"
#include "store/sql_reads.h"
#include "store/sqlite_busy.h"
#include "store/sqlite_connection.h"
#include "store/sqlite_stmt.h"
#include "store/stores.h"
#include "util/clock.h"
#include "util/json_bounded.h"
#include "util/word_table.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// The largest text or blob a connection reads or writes. footprint's largest values (a run's
// metadata) are kilobytes; a hostile database's generated column could otherwise ask for
// gigabytes.
constexpr int kMaxSqliteValueBytes = 64 << 20;

// `path` from the root, for a process started in another folder.
std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.string();
}

// Removes, once the connection is really closed, the side files a writer left beside a file
// that replaced its database (side_files.h): SQLite neither checkpoints nor deletes the WAL of
// a database that moved. Declared first among SqliteStore's members so that it runs last,
// after the statements are finalized (sqlite3_close_v2 defers the close until then).
class SideFileJanitor {
 public:
  SideFileJanitor(std::string path, std::string identity, bool writer)
      : path_(std::move(path)), identity_(std::move(identity)), writer_(writer) {}
  SideFileJanitor(const SideFileJanitor&) = delete;
  SideFileJanitor& operator=(const SideFileJanitor&) = delete;
  ~SideFileJanitor() {
    if (writer_ && DatabaseFileIdentity(path_) != identity_) RemoveSideFilesOf(path_, identity_);
  }

 private:
  std::string path_;
  std::string identity_;
  bool writer_;
};

class SqliteStore final : public SqlReads<SqliteStore> {
 public:
  static constexpr SqlDialect kDialect = SqlDialect::kSqlite;

  SqliteStore(sqlite3* db, std::string path, std::string identity, bool read_only, Env& env)
      : SqlReads(env),
        janitor_(path, identity, !read_only),
        db_(db),
        path_(std::move(path)),
        absolute_path_(AbsolutePath(path_)),
        identity_(std::move(identity)),
        read_only_(read_only) {}
  // sqlite3_close_v2 defers the close until the member statements are finalized just after.
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  Status Init(const StoreOptions& options);

  Status CreateRun(const RunRecord& run) override;
  Result<int64_t> EnsureSeries(const SeriesRecord& series) override;
  Status Append(const std::string& run_id, std::span<const SamplePoint> samples,
                int64_t heartbeat_ns) override;
  Status FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) override;
  Status MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) override;
  Status InTransaction(const std::function<Status()>& body) override;
  Result<int64_t> InsertScope(const ScopeRecord& scope) override;
  Status EndScope(int64_t scope_id, int64_t end_ns) override;
  Status InsertValue(const ValueRecord& value) override;
  Status PutArtifact(const ArtifactRecord& artifact) override;
  Result<std::vector<double>> LoadValues(int64_t series_id, std::vector<int64_t>* times) override;
  Status ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                          const std::function<void(int64_t, double)>& visit) override;
  Result<std::optional<int64_t>> SeriesEnd(int64_t series_id) override;
  Result<std::optional<int64_t>> LastSampleTime(const std::string& run_id) override;
  const std::string& location() const override { return path_; }
  const std::string& open_location() const override { return absolute_path_; }
  bool read_only() const override { return read_only_; }
  Status CheckLocation() override;
  Status SaveCopyTo(const std::string& path) override;
  // True when the last error was the disk (or the file size limit) refusing more bytes.
  bool OutOfSpace() const;

 private:
  // Journal mode, pragmas and schema: the steps of Init that other connections can lock.
  Status Configure();
  // An error from the last call on db_, phrased for people.
  Status Error(std::string_view doing) const;
  // Prepares `s` on first use (statements kept for the writer's repeated inserts).
  Status PrepareOnce(Stmt& s, std::string_view sql) {
    if (!s.get() && s.Prepare(db_, sql) != SQLITE_OK) return Error("cannot write to");
    return Status::Ok();
  }
  // Runs `sql`, a write, with `args` bound (Stmt::BindAll); Error(doing) when it failed.
  template <typename... Args>
  Status ExecWrite(std::string_view sql, std::string_view doing, const Args&... args) {
    return ExecWith(db_, sql, args...) == SQLITE_DONE ? Status::Ok() : Error(doing);
  }
  // Steps a bound write statement once, resets it for its next use, and checks that it ran.
  Status StepWrite(Stmt& s, std::string_view doing) {
    int rc = s.Step();
    s.Reset();
    return rc == SQLITE_DONE ? Status::Ok() : Error(doing);
  }
  // Runs a read query with `params` bound in order, calling `row` for each row (SqlReads's way
  // in, and this store's own reads').
  friend class SqlReads<SqliteStore>;
  template <typename RowFn>
  Status QueryRows(std::string_view sql, const std::vector<SqlParam>& params, RowFn row) {
    Stmt s;
    if (s.Prepare(db_, sql) != SQLITE_OK) return Error("cannot read");
    for (size_t i = 0; i < params.size(); ++i) {
      std::visit([&](const auto& v) { s.Bind(static_cast<int>(i + 1), v); }, params[i]);
    }
    if (!s.ForEachRow(row)) return Error("cannot read");
    return Status::Ok();
  }
  Status Exec(std::string_view sql, std::string_view doing);
  Status Migrate();
  // The indexes that page the runs list (Store::ListRunsPage): by start and by status.
  Status EnsureListIndexes();

  // Errors unless the database is footprint's (or empty), reading only: checked before
  // anything is written, so that another program's database is left as it was.
  Status CheckSchemaIsFootprints();

  SideFileJanitor janitor_;
  sqlite3* db_;
  std::string path_;
  std::string absolute_path_;
  std::string identity_;  // of the file opened (side_files.h)
  bool read_only_;
  std::optional<std::pair<dev_t, ino_t>> opened_file_;  // the file opened, for CheckLocation
  Stmt insert_sample_, heartbeat_;                      // prepared once, for the writer's hot path
  Stmt insert_scope_, end_scope_, insert_value_, ensure_series_;  // prepared on first use
  std::optional<SqliteBusyWait> busy_wait_;                       // installed in Init
};

// True when the database at `path` or its WAL has grown to the process's file size limit
// (ulimit -f): the write that failed was refused with EFBIG. SQLite's own record of the
// system error is the errno of whatever call came last, not of the refused write.
bool ReachedFileSizeLimit(const std::string& path) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return false;
  constexpr off_t kLargestWrite = 1 << 17;  // a page and its WAL frame header, with room
  for (const std::string& file : {path, path + "-wal"}) {
    struct stat st;
    if (::stat(file.c_str(), &st) == 0 &&
        static_cast<rlim_t>(st.st_size + kLargestWrite) >= limit.rlim_cur) {
      return true;
    }
  }
  return false;
}

// An error from the last call on `db`, the database at `path`, phrased for people.
Status DescribeError(sqlite3* db, const std::string& path, std::string_view doing) {
  int code = sqlite3_extended_errcode(db);
  std::string what = std::string(doing) + " " + path + ": " + sqlite3_errmsg(db);
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return DatabaseError(path + " is not a footprint database (" + sqlite3_errmsg(db) +
                           "); give another file with -o or $FOOTPRINT_DB");
    case SQLITE_CORRUPT:
      return DatabaseError("the database " + path + " is corrupted (" + sqlite3_errmsg(db) +
                           "); restore it from a backup or give another file with -o");
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return DatabaseError(what +
                           "; check that the file and its folder are writable, or give "
                           "another file with -o");
    case SQLITE_FULL:
      return DatabaseError(what + "; free some disk space");
    case SQLITE_IOERR: {  // "disk I/O error": the system's reason says more
      const int err = sqlite3_system_errno(db);
      if (err == ENOSPC || err == EDQUOT) {
        return DatabaseError(what + " (the disk is full); free some disk space");
      }
      if (err == EFBIG || ReachedFileSizeLimit(path)) {
        return DatabaseError(what +
                             " (the file size limit was reached); raise it (ulimit -f) or "
                             "give another file with -o");
      }
      return DatabaseError(err != 0 ? what + " (" + std::strerror(err) + ")" : what);
    }
    case SQLITE_BUSY:
      return DatabaseError(what + "; another process held the database too long, try again");
    default:
      return DatabaseError(what);
  }
}

Status SqliteStore::Error(std::string_view doing) const { return DescribeError(db_, path_, doing); }

// The schema version footprint wrote into the database (0: none).
Result<int> SchemaVersion(sqlite3* db, const std::string& path) {
  Stmt s;
  if (s.Prepare(db, "PRAGMA user_version") != SQLITE_OK || s.Step() != SQLITE_ROW) {
    return DescribeError(db, path, "cannot read");
  }
  return static_cast<int>(s.Int(0));
}

// Errors unless `db` holds footprint's schema, at a version this footprint knows, or nothing.
// Reads only, in one statement: another process may be creating the schema meanwhile.
Status CheckIsFootprintSchema(sqlite3* db, const std::string& path) {
  Stmt s;
  if (s.Prepare(db,
                "SELECT user_version, (SELECT count(*) FROM sqlite_master), (SELECT count(*) "
                "FROM sqlite_master WHERE type = 'table' AND name = 'runs') "
                "FROM pragma_user_version") != SQLITE_OK ||
      s.Step() != SQLITE_ROW) {
    return DescribeError(db, path, "cannot read");
  }
  const int64_t version = s.Int(0), objects = s.Int(1), runs_tables = s.Int(2);
  if (version > kSchemaVersion) {
    return DatabaseError(path + " was written by a newer footprint (schema v" +
                         std::to_string(version) + "; this footprint knows up to v" +
                         std::to_string(kSchemaVersion) +
                         "); upgrade footprint to read it, or give another file with -o");
  }
  if (version == 0 ? objects != 0 : runs_tables != 1) {
    return DatabaseError(path +
                         " is an SQLite database but not a footprint one; footprint left it as "
                         "it was: give another file with -o or $FOOTPRINT_DB");
  }
  return Status::Ok();
}

Status SqliteStore::CheckSchemaIsFootprints() { return CheckIsFootprintSchema(db_, path_); }

Status SqliteStore::Exec(std::string_view sql, std::string_view doing) {
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return Error(doing);
  return Status::Ok();
}

// True when the last error on `db` was another connection's lock.
static bool Busy(sqlite3* db) {
  const int rc = sqlite3_errcode(db) & 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

Status SqliteStore::Migrate() {
  auto version = [&]() { return SchemaVersion(db_, path_); };
  Result<int> v = version();
  if (!v.ok()) return v.status();
  if (*v == kSchemaVersion) return read_only_ ? Status::Ok() : EnsureListIndexes();
  if (read_only_) {
    return DatabaseError(path_ + " has schema v" + std::to_string(*v) +
                         " and must be upgraded; open it once with write access");
  }
  // Another process may be creating or migrating the schema at this moment: everything from
  // here on, the version check included, happens under the write lock.
  FP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "cannot lock"));
  v = version();
  Status st = v.ok() ? CheckSchemaIsFootprints() : v.status();
  auto migrations = SqliteMigrations();
  for (int i = v.ok() ? *v : kSchemaVersion; st.ok() && i < kSchemaVersion; ++i) {
    st = Exec(migrations[static_cast<size_t>(i)], "cannot create the schema in");
    if (st.ok()) {
      st = Exec("PRAGMA user_version = " + std::to_string(i + 1), "cannot set version of");
    }
  }
  if (!st.ok()) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return st;
  }
  FP_RETURN_IF_ERROR(Exec("COMMIT", "cannot commit the schema to"));
  return EnsureListIndexes();
}

Status SqliteStore::EnsureListIndexes() {
  // Not a migration: an index changes no answer, and a new schema version would make older
  // footprints refuse the file. Made once by the first writer that finds it missing (a read
  // of the schema otherwise); a writer that finds the database busy leaves it to the next.
  Stmt s;
  if (s.Prepare(db_,
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                "('runs_by_start', 'runs_by_status')") != SQLITE_OK ||
      s.Step() != SQLITE_ROW) {
    return Error("cannot read");
  }
  if (s.Int(0) == 2) return Status::Ok();
  s.Reset();
  if (sqlite3_exec(db_,
                   "CREATE INDEX IF NOT EXISTS runs_by_start ON runs(started_at_ns);"
                   "CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status)",
                   nullptr, nullptr, nullptr) != SQLITE_OK &&
      !Busy(db_)) {
    return Error("cannot index");
  }
  return Status::Ok();
}

Status SqliteStore::Init(const StoreOptions& options) {
  const int64_t busy_timeout_ns = int64_t{options.busy_timeout_ms} * kNsPerMs;
  busy_wait_.emplace(*options.env, busy_timeout_ns);
  busy_wait_->InstallOn(db_);
  sqlite3_extended_result_codes(db_, 1);
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) opened_file_ = {st.st_dev, st.st_ino};
  // SQLite answers "database is locked" at once, without its busy handler, where waiting could
  // deadlock: switching to WAL, or a read turning into a write while another connection
  // creates the same new file. Such steps are retried here within the same busy timeout.
  Env& env = *options.env;
  const int64_t give_up_ns = env.MonotonicNs() + busy_timeout_ns;
  Status st_init;
  for (int attempt = 0;; ++attempt) {
    st_init = Configure();
    if (st_init.ok() || !Busy(db_) || env.MonotonicNs() > give_up_ns) break;
    env.SleepUntil(env.MonotonicNs() + (1 + attempt % 10) * kNsPerMs);
  }
  FP_RETURN_IF_ERROR(st_init);
  if (!read_only_) {
    if (insert_sample_.Prepare(
            db_, "INSERT OR REPLACE INTO samples(series_id, t_ns, value) VALUES (?, ?, ?)") !=
            SQLITE_OK ||
        heartbeat_.Prepare(db_, "UPDATE runs SET heartbeat_ns = ? WHERE id = ?") != SQLITE_OK) {
      return Error("cannot prepare statements on");
    }
    StampSideFiles(path_, identity_);
  }
  return Status::Ok();
}

Status SqliteStore::Configure() {
  FP_RETURN_IF_ERROR(CheckSchemaIsFootprints());
  if (!read_only_) {
    // WAL: readers never block the writer, and a killed writer leaves a valid database.
    Stmt mode;
    if (mode.Prepare(db_, "PRAGMA journal_mode") != SQLITE_OK || mode.Step() != SQLITE_ROW) {
      return Error("cannot open");
    }
    bool wal = mode.Text(0) == "wal";
    mode.Reset();  // ends the statement's read transaction, which would forbid the switch
    if (!wal) FP_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL", "cannot use"));
    FP_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL", "cannot configure"));
  }
  if (read_only_) FP_RETURN_IF_ERROR(Exec("PRAGMA query_only=ON", "cannot configure"));
  FP_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON", "cannot configure"));
  // Appends need little cache; the default 2 MiB grew footprint's resident set by as much.
  FP_RETURN_IF_ERROR(Exec("PRAGMA cache_size=-256", "cannot configure"));
  return Migrate();
}

Status SqliteStore::CheckLocation() {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) {
    return DatabaseError("the database " + path_ + " was deleted while footprint wrote to it (" +
                         std::strerror(errno) + ")");
  }
  if (opened_file_ && (st.st_dev != opened_file_->first || st.st_ino != opened_file_->second)) {
    return DatabaseError("the database " + path_ +
                         " was replaced by another file while footprint wrote to it");
  }
  return Status::Ok();
}

bool SqliteStore::OutOfSpace() const {
  const int err = sqlite3_system_errno(db_);
  return (sqlite3_errcode(db_) & 0xff) == SQLITE_FULL || err == ENOSPC || err == EDQUOT ||
         err == EFBIG || ReachedFileSizeLimit(path_);
}

Status SqliteStore::SaveCopyTo(const std::string& path) {
  if (::access(path.c_str(), F_OK) == 0) {
    return DatabaseError("cannot save a copy to " + path + ": the file exists");
  }
  sqlite3* copy = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  sqlite3_backup* backup =
      rc == SQLITE_OK ? sqlite3_backup_init(copy, "main", db_, "main") : nullptr;
  if (backup != nullptr) {
    rc = sqlite3_backup_step(backup, -1);
    sqlite3_backup_finish(backup);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  } else if (rc == SQLITE_OK) {
    rc = sqlite3_errcode(copy);
  }
  std::string why = rc == SQLITE_OK ? "" : (copy ? sqlite3_errmsg(copy) : sqlite3_errstr(rc));
  sqlite3_close_v2(copy);
  if (rc != SQLITE_OK) return DatabaseError("cannot save a copy to " + path + ": " + why);
  return Status::Ok();
}

Status SqliteStore::CreateRun(const RunRecord& r) {
  Stmt s;
  if (s.Prepare(db_, "INSERT INTO runs(" + std::string(kRunColumns) +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") != SQLITE_OK) {
    return Error("cannot write to");
  }
  StmtBinder binder{s};
  BindRun(binder, r);
  int rc = s.Step();
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) return InvalidArgument("run " + r.id + " exists");
  if (rc != SQLITE_DONE) return Error("cannot write to");
  return Status::Ok();
}

Result<int64_t> SqliteStore::EnsureSeries(const SeriesRecord& r) {
  // The no-op update makes RETURNING give the id of an existing series too.
  Stmt& s = ensure_series_;
  FP_RETURN_IF_ERROR(
      PrepareOnce(s,
                  "INSERT INTO series(run_id, metric, unit, entity, scope_id) VALUES (?,?,?,?,?) "
                  "ON CONFLICT DO UPDATE SET unit = excluded.unit RETURNING id"));
  s.Bind(1, r.run_id);
  s.Bind(2, r.metric);
  s.Bind(3, r.unit);
  s.Bind(4, r.entity);
  s.BindOpt(5, r.scope_id);
  const int rc = s.Step();
  const int64_t id = rc == SQLITE_ROW ? s.Int(0) : 0;
  s.Reset();  // as StepWrite does: the error stays readable
  if (rc != SQLITE_ROW) return Error("cannot write to");
  return id;
}

Status SqliteStore::Append(const std::string& run_id, std::span<const SamplePoint> samples,
                           int64_t heartbeat_ns) {
  return InTransaction([&]() -> Status {
    for (const SamplePoint& p : samples) {
      insert_sample_.Bind(1, p.series_id);
      insert_sample_.Bind(2, p.t_ns);
      insert_sample_.Bind(3, p.value);
      FP_RETURN_IF_ERROR(StepWrite(insert_sample_, "cannot write samples to"));
    }
    heartbeat_.Bind(1, heartbeat_ns);
    heartbeat_.Bind(2, run_id);
    return StepWrite(heartbeat_, "cannot write to");
  });
}

Status SqliteStore::FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) {
  return InTransaction([&]() -> Status {
    FP_RETURN_IF_ERROR(ExecWrite(
        "UPDATE runs SET status = ?, exit_code = ?, started_at_ns = ?, ended_at_ns = ?, meta = ?, "
        "heartbeat_ns = ? WHERE id = ?",
        "cannot write to", RunStatusName(run.status), run.exit_code, run.started_at_ns,
        run.ended_at_ns, run.meta_json, run.ended_at_ns, run.id));
    Stmt tot;
    if (tot.Prepare(db_, "INSERT OR REPLACE INTO run_totals(run_id, name, value) VALUES (?,?,?)") !=
        SQLITE_OK) {
      return Error("cannot write to");
    }
    for (const auto& [name, value] : totals) {
      tot.BindAll(run.id, name, value);
      FP_RETURN_IF_ERROR(StepWrite(tot, "cannot write totals to"));
    }
    return Status::Ok();
  });
}

Status SqliteStore::MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) {
  if (read_only_) return Status::Ok();
  return ExecWrite(
      "UPDATE runs SET status = 'interrupted', ended_at_ns = ? WHERE id = ? AND status = 'running'",
      "cannot write to", ended_at_ns, run_id);
}

Status SqliteStore::InTransaction(const std::function<Status()>& body) {
  if (read_only_) return DatabaseError(path_ + " is open read-only");
  FP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "cannot lock"));
  Status st = body();
  if (st.ok()) st = Exec("COMMIT", "cannot commit to");
  if (!st.ok()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  return st;
}

Result<int64_t> SqliteStore::InsertScope(const ScopeRecord& r) {
  FP_RETURN_IF_ERROR(PrepareOnce(insert_scope_,
                                 "INSERT INTO scopes(run_id, parent_id, name, thread, start_ns, "
                                 "end_ns) VALUES (?,?,?,?,?,?)"));
  insert_scope_.BindAll(r.run_id, r.parent_id, r.name, r.thread, r.start_ns, r.end_ns);
  FP_RETURN_IF_ERROR(StepWrite(insert_scope_, "cannot write scopes to"));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status SqliteStore::EndScope(int64_t scope_id, int64_t end_ns) {
  FP_RETURN_IF_ERROR(PrepareOnce(end_scope_, "UPDATE scopes SET end_ns = ? WHERE id = ?"));
  end_scope_.BindAll(end_ns, scope_id);
  return StepWrite(end_scope_, "cannot write scopes to");
}

Status SqliteStore::InsertValue(const ValueRecord& r) {
  FP_RETURN_IF_ERROR(PrepareOnce(insert_value_,
                                 "INSERT INTO run_values(run_id, scope_id, name, step, t_ns, "
                                 "value, data) VALUES (?,?,?,?,?,?,?)"));
  std::optional<std::string_view> data;  // none: NULL
  if (!r.data_json.empty()) data = r.data_json;
  insert_value_.BindAll(r.run_id, r.scope_id, r.name, r.step, r.t_ns, r.value, data);
  return StepWrite(insert_value_, "cannot write values to");
}

Status SqliteStore::PutArtifact(const ArtifactRecord& r) {
  return ExecWrite(
      "INSERT OR REPLACE INTO artifacts(run_id, name, path, sha256, size) VALUES (?,?,?,?,?)",
      "cannot write artifacts to", r.run_id, r.name, r.path, r.sha256, r.size);
}

Result<std::vector<double>> SqliteStore::LoadValues(int64_t series_id,
                                                    std::vector<int64_t>* times) {
  std::vector<double> values;
  if (times) {
    FP_RETURN_IF_ERROR(
        QueryRows("SELECT t_ns, value FROM samples WHERE series_id = ? ORDER BY t_ns", {series_id},
                  [&](const Stmt& s) {
                    times->push_back(s.Int(0));
                    values.push_back(s.Real(1));
                  }));
  } else {  // the common case of show: one column less to decode per sample
    FP_RETURN_IF_ERROR(QueryRows("SELECT value FROM samples WHERE series_id = ? ORDER BY t_ns",
                                 {series_id}, [&](const Stmt& s) { values.push_back(s.Real(0)); }));
  }
  return values;
}

Status SqliteStore::ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                                     const std::function<void(int64_t, double)>& visit) {
  return QueryRows(
      "SELECT t_ns, value FROM samples WHERE series_id = ? AND t_ns > ? ORDER BY t_ns LIMIT ?",
      {series_id, after_ns, limit ? static_cast<int64_t>(limit) : int64_t{-1}},  // -1: no limit
      [&](const Stmt& s) { visit(s.Int(0), s.Real(1)); });
}

Result<std::optional<int64_t>> SqliteStore::SeriesEnd(int64_t series_id) {
  std::optional<int64_t> last;
  FP_RETURN_IF_ERROR(QueryRows("SELECT max(t_ns) FROM samples WHERE series_id = ?", {series_id},
                               [&](const Stmt& s) { last = s.OptInt(0); }));
  return last;
}

Result<std::optional<int64_t>> SqliteStore::LastSampleTime(const std::string& run_id) {
  std::optional<int64_t> last;
  FP_RETURN_IF_ERROR(QueryRows(
      "SELECT max(t_ns) FROM samples WHERE series_id IN (SELECT id FROM series WHERE run_id = ?)",
      {run_id}, [&](const Stmt& s) { last = s.OptInt(0); }));
  return last;
}

}  // namespace

std::optional<std::string> IncompleteReason(const RunRecord& run) {
  if (run.meta_json.find("\"incomplete\"") == std::string::npos) return std::nullopt;  // fast
  json meta = ParseStoredJson(run.meta_json);
  if (!meta.is_object() || !meta.contains("incomplete") || !meta["incomplete"].is_string()) {
    return std::nullopt;
  }
  return meta["incomplete"].get<std::string>();
}

namespace {

// Each run status and its word, as stored and shown.
struct RunStatusWord {
  RunStatus status;
  std::string_view word;
};
constexpr RunStatusWord kRunStatusWords[] = {{RunStatus::kRunning, "running"},
                                             {RunStatus::kOk, "ok"},
                                             {RunStatus::kFailed, "failed"},
                                             {RunStatus::kKilled, "killed"},
                                             {RunStatus::kInterrupted, "interrupted"}};

}  // namespace

std::string_view RunStatusName(RunStatus s) {
  const RunStatusWord* w = FindRow(kRunStatusWords, &RunStatusWord::status, s);
  return w ? w->word : "interrupted";
}

std::optional<RunStatus> RunStatusFromName(std::string_view name) {
  const RunStatusWord* w = FindRow(kRunStatusWords, &RunStatusWord::word, name);
  return w ? std::optional(w->status) : std::nullopt;
}

namespace {

// True when the folder holding `path` is on a file system mounted read-only.
bool OnReadOnlyMedium(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  return ::access(dir.c_str(), W_OK) != 0 && errno == EROFS;
}

// `path` with the characters a URI filename reserves percent-encoded.
std::string UriEscaped(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

Result<SqliteConnection> OpenConnection(const std::string& name, const std::string& path,
                                        int flags) {
  // No bulk page-cache allocation per connection (SQLite's default: 20 pages, written through
  // at open): footprint's connections touch a few pages, and the bulk cost page faults at
  // every start and stayed in the monitor's resident set. Refused (harmlessly) when SQLite is
  // already initialized, e.g. by Python's sqlite3 in the same process.
  static const int page_cache_configured = sqlite3_config(SQLITE_CONFIG_PAGECACHE, nullptr, 0, 0);
  (void)page_cache_configured;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteConnection db(raw);
  if (rc != SQLITE_OK) {
    const std::string why = raw ? sqlite3_errmsg(raw) : "out of memory";
    const int err = errno;
    const bool writing = (flags & SQLITE_OPEN_READWRITE) != 0;
    return DatabaseError("cannot " + std::string(writing ? "create or open " : "open ") + path +
                         ": " + why + (err ? std::string(" (") + std::strerror(err) + ")" : "") +
                         "; check that its folder exists and is writable, or give another "
                         "file with -o");
  }
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, kMaxSqliteValueBytes);
  sqlite3_limit(raw, SQLITE_LIMIT_SQL_LENGTH, 1 << 20);
  sqlite3_limit(raw, SQLITE_LIMIT_EXPR_DEPTH, 100);
  sqlite3_limit(raw, SQLITE_LIMIT_COLUMN, 200);
  sqlite3_limit(raw, SQLITE_LIMIT_ATTACHED, 0);
  return db;
}

namespace {

// How the database file's header (its first 100 bytes) says it is journaled, read through the
// connection's own descriptor: a descriptor of footprint's own, once closed, would drop the
// locks SQLite holds on the file (https://www.sqlite.org/howtocorrupt.html, 2.2).
enum class JournalMode { kNone, kRollback, kWal };  // kNone: empty, or not an SQLite header
JournalMode JournalOf(sqlite3* db) {
  sqlite3_file* file = nullptr;
  unsigned char header[100] = {};
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr ||
      file->pMethods->xRead(file, header, sizeof header, 0) != SQLITE_OK ||
      std::memcmp(header, "SQLite format 3", 16) != 0) {
    return JournalMode::kNone;
  }
  return header[18] == 2 && header[19] == 2 ? JournalMode::kWal : JournalMode::kRollback;
}

// True when `db`, a read-only connection to `path`, should give way to a read-write one: see
// SqliteReaderMayWrite.
bool ReaderMayWrite(sqlite3* db, const std::string& path) {
  return JournalOf(db) == JournalMode::kWal && !HasHotWal(path) &&
         ::access(path.c_str(), W_OK) == 0;
}

// A connection for reading `path`, as SqliteReaderMayWrite says.
Result<SqliteConnection> OpenForReading(const std::string& path) {
  // On a read-only medium nobody can write the file, and SQLite could not create the shared
  // memory file a WAL database is read through: it is opened as immutable instead.
  if (OnReadOnlyMedium(path)) {
    return OpenConnection("file:" + UriEscaped(path) + "?immutable=1", path,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  FP_ASSIGN_OR_RETURN(SqliteConnection db, OpenConnection(path, path, SQLITE_OPEN_READONLY));
  if (!ReaderMayWrite(db.get(), path)) return db;
  db.reset();
  return OpenConnection(path, path, SQLITE_OPEN_READWRITE);
}

// A connection for writing `path`. A file in rollback mode is another program's unless its
// schema says otherwise, and reading it for writing could roll back that program's hot
// journal: it is checked through a read-only connection first, and left as it was.
Result<SqliteConnection> OpenForWriting(const std::string& path) {
  FP_ASSIGN_OR_RETURN(SqliteConnection db,
                      OpenConnection(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return DatabaseError("cannot write to " + path +
                         ": the file is read-only; make it writable or give another file with -o");
  }
  if (JournalOf(db.get()) == JournalMode::kRollback) {
    FP_ASSIGN_OR_RETURN(SqliteConnection probe, OpenConnection(path, path, SQLITE_OPEN_READONLY));
    FP_RETURN_IF_ERROR(CheckIsFootprintSchema(probe.get(), path));
  }
  return db;
}

}  // namespace

Result<bool> SqliteReaderMayWrite(const std::string& path) {
  FP_ASSIGN_OR_RETURN(SqliteConnection db, OpenConnection(path, path, SQLITE_OPEN_READONLY));
  return ReaderMayWrite(db.get(), path);
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& location,
                                               const StoreOptions& options) {
  std::string path = location;
  if (path.rfind("sqlite:", 0) == 0) path = path.substr(7);
  if (path.rfind("//", 0) == 0) path = path.substr(2);  // sqlite://PATH
  if (path.empty()) return InvalidArgument("empty database location; give a file with -o");
  if (location.find("://") != std::string::npos && location.rfind("sqlite:", 0) != 0) {
    return InvalidArgument("unsupported database location '" + location +
                           "'; give a file path (SQLite) or a postgresql:// URI");
  }
  const bool read_only = options.read_only;
  struct stat st;
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (read_only && !existed) {
    return DatabaseError("no database at " + path + "; record a run first (footprint run -o " +
                         path + " -- COMMAND) or give another file with -o");
  }
  if (existed && S_ISDIR(st.st_mode)) {
    return DatabaseError(path + " is a folder; give a database file with -o");
  }
  if (existed) FP_RETURN_IF_ERROR(CheckSideFilesBelong(path, DatabaseFileIdentity(path)));
  FP_ASSIGN_OR_RETURN(SqliteConnection db, read_only ? OpenForReading(path) : OpenForWriting(path));
  auto store = std::make_unique<SqliteStore>(db.release(), path, DatabaseFileIdentity(path),
                                             read_only, *options.env);
  if (Status st_init = store->Init(options); !st_init.ok()) {
    // A database this open created on a full disk holds nothing: it is not left behind empty.
    const bool remove = !existed && store->OutOfSpace();
    store.reset();
    if (remove && ::stat(path.c_str(), &st) == 0 && st.st_size == 0 && !HasHotWal(path)) {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        ::unlink((path + suffix).c_str());
      }
    }
    return st_init;
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace footprint
