#include "serve/job_queue.h"

#include <array>
#include <nlohmann/json.hpp>

#include "footprint/store.h"
#include "store/sqlite_stmt.h"
#include "util/clock.h"
#include "util/json_bounded.h"
#include "util/json_text.h"

namespace footprint::serve {
namespace {

constexpr std::array<std::string_view, 5> kStateNames = {"queued", "running", "done", "failed",
                                                         "cancelled"};

// Created beside footprint's tables, never changing them: a footprint that knows nothing of the
// queue reads the database as before.
constexpr char kQueueTables[] = R"sql(
CREATE TABLE IF NOT EXISTS queue_jobs(
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, file TEXT NOT NULL, overrides TEXT NOT NULL,
  target TEXT NOT NULL, priority INTEGER NOT NULL, state TEXT NOT NULL, owner TEXT NOT NULL,
  queued_at_ns INTEGER NOT NULL, started_at_ns INTEGER, ended_at_ns INTEGER, exit_code INTEGER,
  reason TEXT NOT NULL DEFAULT '', cancel_requested INTEGER NOT NULL DEFAULT 0,
  requeued_from INTEGER);
CREATE INDEX IF NOT EXISTS queue_jobs_waiting ON queue_jobs(state, target, priority, id);
CREATE TABLE IF NOT EXISTS queue_log(
  job_id INTEGER NOT NULL, seq INTEGER NOT NULL, t_ns INTEGER NOT NULL, stream TEXT NOT NULL,
  text BLOB NOT NULL, PRIMARY KEY(job_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue_audit(
  id INTEGER PRIMARY KEY, at_ns INTEGER NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
  job_id INTEGER, detail TEXT NOT NULL);
)sql";

constexpr char kJobColumns[] =
    "SELECT id, kind, file, overrides, target, priority, state, owner, queued_at_ns, "
    "started_at_ns, ended_at_ns, exit_code, reason, cancel_requested, requeued_from "
    "FROM queue_jobs ";

Status SqlError(sqlite3* db, std::string_view what) {
  return DatabaseError("the queue cannot " + std::string(what) + ": " + sqlite3_errmsg(db));
}

Job JobOfRow(const Stmt& s) {
  Job job{.id = s.Int(0)};
  job.request.kind = s.Text(1);
  job.request.file = s.Text(2);
  auto overrides = ParseBoundedJson(s.Text(3));
  if (overrides.ok() && overrides->is_object()) {
    for (const auto& [key, value] : overrides->items()) {
      if (value.is_string()) job.request.overrides[key] = value.get<std::string>();
    }
  }
  job.request.target = s.Text(4);
  job.request.priority = static_cast<int>(s.Int(5));
  job.state = JobStateNamed(s.Text(6)).value_or(JobState::kFailed);
  job.owner = s.Text(7);
  job.queued_at_ns = s.Int(8);
  job.started_at_ns = s.OptInt(9);
  job.ended_at_ns = s.OptInt(10);
  if (!s.IsNull(11)) job.exit_code = static_cast<int>(s.Int(11));
  job.reason = s.Text(12);
  job.cancel_requested = s.Int(13) != 0;
  job.requeued_from = s.OptInt(14);
  return job;
}

// The database is footprint's: its schema version and its runs table, before anything is
// created in it.
Status CheckFootprintDatabase(sqlite3* db, const std::string& path) {
  Stmt s;
  if (s.Prepare(db,
                "SELECT (SELECT user_version FROM pragma_user_version), "
                "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs')") !=
          SQLITE_OK ||
      s.Step() != SQLITE_ROW) {
    return SqlError(db, "read " + path);
  }
  if (s.Int(0) != kSchemaVersion || s.Int(1) != 1) {
    return InvalidArgument(path +
                           " is not a footprint database of this version; give the database "
                           "footprint run writes with -o");
  }
  return Status::Ok();
}

}  // namespace

std::string_view JobStateName(JobState state) { return kStateNames[static_cast<size_t>(state)]; }

std::optional<JobState> JobStateNamed(std::string_view name) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (kStateNames[i] == name) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

nlohmann::json JobJson(const Job& job) {
  return {{"id", job.id},
          {"kind", job.request.kind},
          {"file", job.request.file},
          {"overrides", job.request.overrides},
          {"target", job.request.target},
          {"priority", job.request.priority},
          {"state", JobStateName(job.state)},
          {"owner", job.owner},
          {"queued_at_ns", job.queued_at_ns},
          {"started_at_ns", OrNull(job.started_at_ns)},
          {"ended_at_ns", OrNull(job.ended_at_ns)},
          {"exit_code", OrNull(job.exit_code)},
          {"reason", job.reason},
          {"cancel_requested", job.cancel_requested},
          {"requeued_from", OrNull(job.requeued_from)}};
}

Result<std::unique_ptr<JobQueue>> JobQueue::Open(const std::string& db, Env& env) {
  if (db.starts_with("postgresql://") || db.starts_with("postgres://")) {
    return Unsupported(
        "the queue of footprint serve is kept in an SQLite database; give one with "
        "-o (PostgreSQL databases are served read-only, without a queue)");
  }
  FP_ASSIGN_OR_RETURN(SqliteConnection connection, OpenConnection(db, db, SQLITE_OPEN_READWRITE));
  std::unique_ptr<JobQueue> queue(new JobQueue(std::move(connection), env));
  FP_RETURN_IF_ERROR(CheckFootprintDatabase(queue->db_.get(), db));
  FP_RETURN_IF_ERROR(queue->Exec(kQueueTables));
  return queue;
}

// Waits for another connection's lock as the SQLite store does, on the Env's clock.
JobQueue::JobQueue(SqliteConnection db, Env& env)
    : busy_wait_(env, int64_t{StoreOptions{}.busy_timeout_ms} * kNsPerMs),
      db_(std::move(db)),
      env_(env) {
  busy_wait_.InstallOn(db_.get());
}

JobQueue::~JobQueue() = default;

Status JobQueue::Exec(std::string_view sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string why = error ? error : "unknown error";
    sqlite3_free(error);
    return DatabaseError("the queue cannot write its tables: " + why);
  }
  return Status::Ok();
}

Result<int64_t> JobQueue::Add(const JobRequest& request, std::string_view who) {
  std::lock_guard lock(mu_);
  Stmt count;
  if (count.Prepare(db_.get(),
                    "SELECT count(*) FROM queue_jobs WHERE state IN "
                    "('queued', 'running')") != SQLITE_OK ||
      count.Step() != SQLITE_ROW) {
    return SqlError(db_.get(), "count its jobs");
  }
  const int64_t active = count.Int(0);
  // Ends the read, so that the insert waits for another writer's lock (SQLite refuses a read
  // that turns into a write at once, without its busy handler).
  count.Reset();
  if (active >= kMaxActiveJobs) {
    return InvalidArgument("the queue holds " + std::to_string(active) +
                           " jobs queued or running, its limit; cancel some or wait");
  }
  nlohmann::json overrides = request.overrides;
  if (ExecWith(db_.get(),
               "INSERT INTO queue_jobs(kind, file, overrides, target, priority, state, owner, "
               "queued_at_ns) VALUES(?, ?, ?, ?, ?, 'queued', ?, ?)",
               request.kind, request.file, overrides.dump(), request.target, request.priority, who,
               env_.RealtimeNs()) != SQLITE_DONE) {
    return SqlError(db_.get(), "add a job");
  }
  return sqlite3_last_insert_rowid(db_.get());
}

Result<std::vector<Job>> JobQueue::Select(std::optional<int64_t> id, int64_t limit) {
  Stmt s;
  // ?1 IS NULL: every job, newest first; else the one with that id.
  std::vector<Job> jobs;
  if (s.PrepareWith(
          db_.get(),
          std::string(kJobColumns) + "WHERE ?1 IS NULL OR id = ?1 ORDER BY id DESC LIMIT ?2", id,
          limit) != SQLITE_OK ||
      !s.ForEachRow([&](const Stmt& row) { jobs.push_back(JobOfRow(row)); })) {
    return SqlError(db_.get(), "list its jobs");
  }
  return jobs;
}

Result<std::vector<Job>> JobQueue::List(int64_t limit) {
  std::lock_guard lock(mu_);
  return Select(std::nullopt, limit);
}

Result<Job> JobQueue::Get(int64_t id) {
  std::lock_guard lock(mu_);
  FP_ASSIGN_OR_RETURN(std::vector<Job> jobs, Select(id, 1));
  if (jobs.empty()) return NotFound("no job " + std::to_string(id) + " in the queue");
  return jobs.front();
}

Status JobQueue::CheckOwners(const std::vector<int64_t>& ids, std::string_view who, bool admin) {
  for (int64_t id : ids) {
    FP_ASSIGN_OR_RETURN(std::vector<Job> jobs, Select(id, 1));
    if (jobs.empty()) return NotFound("no job " + std::to_string(id) + " in the queue");
    if (!admin && jobs.front().owner != who) {
      return InvalidArgument("job " + std::to_string(id) + " is " + jobs.front().owner +
                             "'s; only an admin may change the jobs of others");
    }
  }
  return Status::Ok();
}

Status JobQueue::Cancel(const std::vector<int64_t>& ids, std::string_view who, bool admin) {
  std::lock_guard lock(mu_);
  FP_RETURN_IF_ERROR(CheckOwners(ids, who, admin));
  FP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt queued, running;
  bool ok = queued.Prepare(db_.get(),
                           "UPDATE queue_jobs SET state = 'cancelled', ended_at_ns = ?, "
                           "reason = ? WHERE id = ? AND state = 'queued'") == SQLITE_OK &&
            running.Prepare(db_.get(),
                            "UPDATE queue_jobs SET cancel_requested = 1 WHERE id = ? AND "
                            "state = 'running'") == SQLITE_OK;
  for (size_t i = 0; ok && i < ids.size(); ++i) {
    queued.Bind(1, env_.RealtimeNs());
    queued.Bind(2, "cancelled by " + std::string(who) + " before it started");
    queued.Bind(3, ids[i]);
    running.Bind(1, ids[i]);
    ok = queued.Step() == SQLITE_DONE && running.Step() == SQLITE_DONE;
    queued.Reset();
    running.Reset();
  }
  if (!ok) {
    Status error = SqlError(db_.get(), "cancel jobs");
    (void)Exec("ROLLBACK");
    return error;
  }
  return Exec("COMMIT");
}

Result<std::vector<int64_t>> JobQueue::Requeue(const std::vector<int64_t>& ids,
                                               std::string_view who, bool admin) {
  std::vector<Job> ended;
  {
    std::lock_guard lock(mu_);
    FP_RETURN_IF_ERROR(CheckOwners(ids, who, admin));
    for (int64_t id : ids) {
      FP_ASSIGN_OR_RETURN(std::vector<Job> jobs, Select(id, 1));
      const JobState state = jobs.front().state;
      if (state == JobState::kQueued || state == JobState::kRunning) {
        return InvalidArgument("job " + std::to_string(id) + " is " +
                               std::string(JobStateName(state)) +
                               "; only a job that ended can be queued again");
      }
      ended.push_back(jobs.front());
    }
  }
  std::vector<int64_t> added;
  for (const Job& job : ended) {
    FP_ASSIGN_OR_RETURN(int64_t id, Add(job.request, who));
    std::lock_guard lock(mu_);
    if (ExecWith(db_.get(), "UPDATE queue_jobs SET requeued_from = ? WHERE id = ?", job.id, id) !=
        SQLITE_DONE) {
      return SqlError(db_.get(), "requeue a job");
    }
    added.push_back(id);
  }
  return added;
}

Result<std::optional<Job>> JobQueue::ClaimNext(std::string_view target) {
  std::lock_guard lock(mu_);
  FP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt pick;
  std::optional<Job> job;
  if (pick.Prepare(db_.get(), std::string(kJobColumns) + "WHERE state = 'queued' AND target = ? "
                                                         "ORDER BY priority DESC, id LIMIT 1") ==
      SQLITE_OK) {
    pick.Bind(1, target);
    if (pick.Step() == SQLITE_ROW) job = JobOfRow(pick);
  }
  if (job &&
      ExecWith(db_.get(), "UPDATE queue_jobs SET state = 'running', started_at_ns = ? WHERE id = ?",
               env_.RealtimeNs(), job->id) != SQLITE_DONE) {
    Status error = SqlError(db_.get(), "start a job");
    (void)Exec("ROLLBACK");
    return error;
  }
  FP_RETURN_IF_ERROR(Exec("COMMIT"));
  if (job) {
    job->state = JobState::kRunning;
    log_bytes_[job->id] = 0;
  }
  return job;
}

Result<std::vector<std::string>> JobQueue::WaitingTargets() {
  std::lock_guard lock(mu_);
  Stmt s;
  std::vector<std::string> targets;
  if (s.Prepare(db_.get(), "SELECT DISTINCT target FROM queue_jobs WHERE state = 'queued'") !=
          SQLITE_OK ||
      !s.ForEachRow([&](const Stmt& r) { targets.push_back(r.Text(0)); })) {
    return SqlError(db_.get(), "list its targets");
  }
  return targets;
}

Result<std::vector<int64_t>> JobQueue::CancelRequested() {
  std::lock_guard lock(mu_);
  Stmt s;
  std::vector<int64_t> ids;
  if (s.Prepare(db_.get(),
                "SELECT id FROM queue_jobs WHERE state = 'running' AND cancel_requested = 1") !=
          SQLITE_OK ||
      !s.ForEachRow([&](const Stmt& r) { ids.push_back(r.Int(0)); })) {
    return SqlError(db_.get(), "list cancelled jobs");
  }
  return ids;
}

Status JobQueue::Finish(int64_t id, JobState state, std::optional<int> exit_code,
                        std::string_view reason) {
  std::lock_guard lock(mu_);
  log_bytes_.erase(id);
  if (ExecWith(db_.get(),
               "UPDATE queue_jobs SET state = ?, ended_at_ns = ?, exit_code = ?, reason = ? "
               "WHERE id = ?",
               JobStateName(state), env_.RealtimeNs(), exit_code, reason, id) != SQLITE_DONE) {
    return SqlError(db_.get(), "finish a job");
  }
  return Status::Ok();
}

Result<int> JobQueue::MarkInterrupted() {
  std::lock_guard lock(mu_);
  if (ExecWith(db_.get(),
               "UPDATE queue_jobs SET state = 'failed', ended_at_ns = ?, reason = "
               "'interrupted: the footprint serve that ran it stopped before it ended' "
               "WHERE state = 'running'",
               env_.RealtimeNs()) != SQLITE_DONE) {
    return SqlError(db_.get(), "mark interrupted jobs");
  }
  return sqlite3_changes(db_.get());
}

Status JobQueue::AppendLog(int64_t id, std::string_view stream, std::string_view text) {
  std::lock_guard lock(mu_);
  int64_t& kept = log_bytes_[id];
  if (kept >= kMaxJobLogBytes) return Status::Ok();
  std::string chunk(text.substr(0, static_cast<size_t>(kMaxJobLogBytes - kept)));
  kept += static_cast<int64_t>(text.size());
  if (kept >= kMaxJobLogBytes) {
    chunk += "\n[footprint serve: output past " + std::to_string(kMaxJobLogBytes >> 20) +
             " MiB is not kept]\n";
  }
  if (ExecWith(db_.get(),
               "INSERT INTO queue_log(job_id, seq, t_ns, stream, text) VALUES(?1, "
               "(SELECT ifnull(max(seq), 0) + 1 FROM queue_log WHERE job_id = ?1), ?2, ?3, ?4)",
               id, env_.RealtimeNs(), stream, SqlBlob{chunk}) != SQLITE_DONE) {
    return SqlError(db_.get(), "keep a job's output");
  }
  return Status::Ok();
}

Result<std::vector<JobLogChunk>> JobQueue::LogAfter(int64_t id, int64_t after_seq, int64_t limit) {
  std::lock_guard lock(mu_);
  Stmt s;
  std::vector<JobLogChunk> chunks;
  auto keep = [&](const Stmt& r) {
    chunks.push_back(
        {.seq = r.Int(0), .t_ns = r.Int(1), .stream = r.Text(2), .text = std::string(r.Blob(3))});
  };
  if (s.PrepareWith(db_.get(),
                    "SELECT seq, t_ns, stream, text FROM queue_log WHERE job_id = ? AND seq > ? "
                    "ORDER BY seq LIMIT ?",
                    id, after_seq, limit) != SQLITE_OK ||
      !s.ForEachRow(keep)) {
    return SqlError(db_.get(), "read a job's output");
  }
  return chunks;
}

Status JobQueue::Audit(std::string_view who, std::string_view action, std::optional<int64_t> job_id,
                       std::string_view detail) {
  std::lock_guard lock(mu_);
  if (ExecWith(db_.get(),
               "INSERT INTO queue_audit(at_ns, who, action, job_id, detail) VALUES(?, ?, ?, ?, ?)",
               env_.RealtimeNs(), who, action, job_id, detail) != SQLITE_DONE) {
    return SqlError(db_.get(), "write its audit row");
  }
  return Status::Ok();
}

Result<std::vector<AuditEntry>> JobQueue::AuditLog(int64_t limit) {
  std::lock_guard lock(mu_);
  Stmt s;
  std::vector<AuditEntry> rows;
  auto keep = [&](const Stmt& r) {
    rows.push_back({.id = r.Int(0),
                    .at_ns = r.Int(1),
                    .who = r.Text(2),
                    .action = r.Text(3),
                    .job_id = r.OptInt(4),
                    .detail = r.Text(5)});
  };
  if (s.PrepareWith(db_.get(),
                    "SELECT id, at_ns, who, action, job_id, detail FROM queue_audit "
                    "ORDER BY id DESC LIMIT ?",
                    limit) != SQLITE_OK ||
      !s.ForEachRow(keep)) {
    return SqlError(db_.get(), "read its audit rows");
  }
  return rows;
}

}  // namespace footprint::serve
