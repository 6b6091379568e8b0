#include "store/journal.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <type_traits>

#include "store/sqlite_stmt.h"
#include "util/clock.h"
#include "util/file.h"

namespace footprint {
namespace {

static_assert(std::is_trivially_copyable_v<SamplePoint> && sizeof(SamplePoint) == 24);

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS journal_info(
  writer TEXT NOT NULL, location TEXT NOT NULL, host TEXT NOT NULL, created_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  op INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  record TEXT NOT NULL,
  samples BLOB);
)sql";

// Opens the SQLite connection to the journal at `path`.
Status Connect(const std::string& path, sqlite3*& db) {
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    db = nullptr;
    return DatabaseError("cannot open the local buffer " + path + ": " + why);
  }
  sqlite3_extended_result_codes(db, 1);
  return Status::Ok();
}

// The file whose flock says who has the journal at `path` open. Not the journal itself: a
// descriptor of it closed while this process holds an SQLite connection to it (another store
// of the process writing that buffer) would drop that connection's locks.
std::string LockPath(const std::string& path) { return path + ".lock"; }

// Opens `path` (created when `create`, failing if it exists) and takes its lock without
// waiting: lock_fd is -1 when another process holds it.
Status OpenLocked(const std::string& path, bool create, sqlite3*& db, int& lock_fd) {
  auto failed = [&](const std::string& file) {
    return DatabaseError("cannot " + std::string(create ? "create" : "open") +
                         " the local buffer " + file + ": " + std::strerror(errno));
  };
  if (create) {  // claims the name; nothing of this process can have it open yet
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return failed(path);
    CloseFd(fd);
  } else if (::access(path.c_str(), F_OK) != 0) {
    return failed(path);
  }
  lock_fd = ::open(LockPath(path).c_str(), O_RDWR | O_CLOEXEC | O_CREAT, 0600);
  if (lock_fd < 0) return failed(LockPath(path));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    CloseFd(lock_fd);
    return Status::Ok();
  }
  Status st = Connect(path, db);
  if (!st.ok()) CloseFd(lock_fd);
  return st;
}

}  // namespace

// Another connection's lock is awaited as the SQLite store awaits it, on the Env's clock.
Journal::Journal(sqlite3* db, std::string path, int lock_fd, Env& env)
    : env_(env),
      busy_wait_(env, int64_t{StoreOptions{}.busy_timeout_ms} * kNsPerMs),
      db_(db),
      path_(std::move(path)),
      lock_fd_(lock_fd) {
  busy_wait_.InstallOn(db_);
}

Journal::~Journal() {
  sqlite3_close_v2(db_);
  CloseFd(lock_fd_);
}

Status Journal::Error(std::string_view doing) const {
  return DatabaseError(std::string(doing) + " the local buffer " + path_ + ": " +
                       sqlite3_errmsg(db_));
}

Status Journal::Exec(const char* sql, std::string_view doing) {
  return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK ? Status::Ok()
                                                                        : Error(doing);
}

Result<std::unique_ptr<Journal>> Journal::Create(const std::string& path, const JournalInfo& info,
                                                 Env& env) {
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    return DatabaseError("cannot create the folder of local buffers " + folder.string() + ": " +
                         ec.message() + "; set FOOTPRINT_BUFFER_DIR to a writable folder");
  }
  ::chmod(folder.c_str(), 0700);
  sqlite3* db = nullptr;
  int lock_fd = -1;
  FP_RETURN_IF_ERROR(OpenLocked(path, /*create=*/true, db, lock_fd));
  if (lock_fd < 0) return DatabaseError("another process took the new local buffer " + path);
  std::unique_ptr<Journal> j(new Journal(db, path, lock_fd, env));
  FP_RETURN_IF_ERROR(
      j->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", "cannot set up"));
  FP_RETURN_IF_ERROR(j->Exec(kSchema, "cannot set up"));
  Stmt s;
  if (s.Prepare(db, "INSERT INTO journal_info VALUES ($1, $2, $3, $4)") != SQLITE_OK) {
    return j->Error("cannot set up");
  }
  s.Bind(1, info.writer);
  s.Bind(2, info.location);
  s.Bind(3, info.host);
  s.Bind(4, info.created_ns);
  if (s.Step() != SQLITE_DONE) return j->Error("cannot set up");
  j->info_ = info;
  return j;
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, Env& env) {
  sqlite3* db = nullptr;
  int lock_fd = -1;
  FP_RETURN_IF_ERROR(OpenLocked(path, /*create=*/false, db, lock_fd));
  if (lock_fd < 0) return std::unique_ptr<Journal>();
  std::unique_ptr<Journal> j(new Journal(db, path, lock_fd, env));
  Stmt s;
  if (s.Prepare(db, "SELECT writer, location, host, created_ns FROM journal_info") != SQLITE_OK ||
      s.Step() != SQLITE_ROW) {
    return DatabaseError(path + " is not a local buffer of footprint (" + sqlite3_errmsg(db) +
                         "); move it out of the buffer folder");
  }
  j->info_ = {s.Text(0), s.Text(1), s.Text(2), s.Int(3)};
  return j;
}

Result<std::unique_ptr<Journal>> Journal::SecondConnection() const {
  sqlite3* db = nullptr;
  FP_RETURN_IF_ERROR(Connect(path_, db));
  std::unique_ptr<Journal> j(new Journal(db, path_, -1, env_));
  j->info_ = info_;
  return j;
}

Result<int64_t> Journal::Add(JournalOp op, std::string_view run_id, std::string_view record,
                             std::span<const SamplePoint> samples) {
  Stmt s;
  if (s.Prepare(db_, "INSERT INTO journal(op, run_id, record, samples) VALUES ($1,$2,$3,$4)") !=
      SQLITE_OK) {
    return Error("cannot write to");
  }
  s.Bind(1, static_cast<int64_t>(op));
  s.Bind(2, run_id);
  s.Bind(3, record);
  if (samples.empty()) {
    s.BindNull(4);
  } else {
    s.BindBlob(4, {reinterpret_cast<const char*>(samples.data()), samples.size_bytes()});
  }
  if (s.Step() != SQLITE_DONE) return Error("cannot write to");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status Journal::InTransaction(const std::function<Status()>& body) {
  if (in_transaction_) return body();
  FP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "cannot write to"));
  in_transaction_ = true;
  Status st = body();
  in_transaction_ = false;
  if (st.ok()) st = Exec("COMMIT", "cannot write to");
  if (!st.ok()) (void)Exec("ROLLBACK", "cannot roll back");
  return st;
}

Status Journal::Read(int64_t after_seq, int limit, size_t max_sample_bytes,
                     std::vector<JournalEntry>& out) {
  out.clear();
  Stmt s;
  if (s.Prepare(db_,
                "SELECT seq, op, run_id, record, samples FROM journal WHERE seq > $1 "
                "ORDER BY seq LIMIT $2") != SQLITE_OK) {
    return Error("cannot read");
  }
  s.Bind(1, after_seq);
  s.Bind(2, int64_t{limit});
  int rc;
  size_t bytes = 0;
  while (bytes < max_sample_bytes && (rc = s.Step()) == SQLITE_ROW) {
    out.push_back(
        {s.Int(0), static_cast<JournalOp>(s.Int(1)), s.Text(2), s.Text(3), std::string(s.Blob(4))});
    bytes += out.back().samples.size();
  }
  return bytes >= max_sample_bytes || rc == SQLITE_DONE ? Status::Ok() : Error("cannot read");
}

Status Journal::Forget(int64_t seq) {
  Stmt s;
  if (s.Prepare(db_, "DELETE FROM journal WHERE seq <= $1") != SQLITE_OK) {
    return Error("cannot write to");
  }
  s.Bind(1, seq);
  return s.Step() == SQLITE_DONE ? Status::Ok() : Error("cannot write to");
}

Result<JournalBacklog> Journal::Backlog() {
  JournalBacklog b;
  Stmt s;
  if (s.Prepare(db_,
                "SELECT count(*), coalesce(sum(length(samples)), 0) / 24, "
                "coalesce(max(op = 9), 0) FROM journal") != SQLITE_OK ||
      s.Step() != SQLITE_ROW) {
    return Error("cannot read");
  }
  b.entries = s.Int(0);
  b.samples = s.Int(1);
  b.closed = s.Int(2) != 0;
  Stmt runs;
  if (runs.Prepare(db_, "SELECT DISTINCT run_id FROM journal WHERE run_id != '' ORDER BY 1") !=
      SQLITE_OK) {
    return Error("cannot read");
  }
  while (runs.Step() == SQLITE_ROW) b.runs.push_back(runs.Text(0));
  return b;
}

Status Journal::Remove() {
  sqlite3_close_v2(db_);
  db_ = nullptr;
  for (const char* suffix : {"-wal", "-shm", ""}) ::unlink((path_ + suffix).c_str());
  ::unlink(LockPath(path_).c_str());
  CloseFd(lock_fd_);
  return Status::Ok();
}

std::vector<SamplePoint> UnpackSamples(std::string_view bytes) {
  std::vector<SamplePoint> out(bytes.size() / sizeof(SamplePoint));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(SamplePoint));
  return out;
}

}  // namespace footprint
