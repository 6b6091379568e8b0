// The queue of `footprint serve` (docs/evaluation.md, "The queue"): jobs that name a file of a
// folder given to serve (an evaluation manifest with overrides, or a plan), kept in tables of
// the footprint database itself, so that a restarted serve still has them and every client
// (the web UI, the HTTP API, `footprint queue`) sees one queue.
//
// A job waits `queued` for its target (this machine's CPU, one GPU, a Slurm partition), is
// `running` while serve's runner (job_runner.h) has its processes, and ends `done` (exit 0),
// `failed` or `cancelled`. Of the jobs queued for one target, the highest priority starts
// first, then the oldest. A job that was running when its serve died is marked failed, with the
// reason said, by the next serve (MarkInterrupted). Every launch, cancel and requeue leaves an
// audit row (who, what, when).
//
// Only SQLite databases hold a queue: the tables are created, beside footprint's own, in a file
// that is footprint's. A job's output is kept as chunks of its stdout and stderr.
//
// Thread-safety: a JobQueue may be used from many threads (one connection, locked); several
// processes may open the same database (SQLite's locking, a busy timeout).
#ifndef FOOTPRINT_SERVE_JOB_QUEUE_H_
#define FOOTPRINT_SERVE_JOB_QUEUE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "store/sqlite_busy.h"
#include "store/sqlite_connection.h"

namespace footprint::serve {

// At most this many jobs queued or running at once (Add refuses more).
inline constexpr int64_t kMaxActiveJobs = 1'000;
// At most this much output kept per job; past it, one line says what was left out.
inline constexpr int64_t kMaxJobLogBytes = 8 << 20;

enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view JobStateName(JobState state);
std::optional<JobState> JobStateNamed(std::string_view name);

// What a client asks for: a file of a folder, its overrides, where and how urgently.
struct JobRequest {
  std::string kind;                              // "evaluate", "plan" or "load"
  std::string file;                              // relative to the folder of its kind
  std::map<std::string, std::string> overrides;  // evaluate: model, device, batch_sizes, ...
  std::string target;                            // "cpu", "gpu:N", "slurm:PARTITION"
  int priority = 0;                              // higher starts first
};

struct Job {
  int64_t id = 0;
  JobRequest request;
  JobState state = JobState::kQueued;
  std::string owner;  // who added it
  int64_t queued_at_ns = 0;
  std::optional<int64_t> started_at_ns, ended_at_ns;
  std::optional<int> exit_code;
  std::string reason;  // why it failed or was cancelled, said once
  bool cancel_requested = false;
  std::optional<int64_t> requeued_from;
};

struct JobLogChunk {
  int64_t seq = 0;
  int64_t t_ns = 0;    // wall clock
  std::string stream;  // "out" or "err"
  std::string text;
};

struct AuditEntry {
  int64_t id = 0;
  int64_t at_ns = 0;  // wall clock
  std::string who, action;
  std::optional<int64_t> job_id;
  std::string detail;
};

// A job as the API and `footprint queue list --json` give it: {id, kind, file, overrides, target,
// priority, state, owner, queued_at_ns, started_at_ns, ended_at_ns, exit_code, reason,
// cancel_requested, requeued_from}, null where not yet known.
nlohmann::json JobJson(const Job& job);

class JobQueue {
 public:
  // Opens the queue of an existing footprint SQLite database, creating its tables when absent.
  // Unsupported for a postgresql:// location; the store's errors for a missing file or one that
  // is not footprint's. Jobs, output and audit rows are stamped with `env`'s wall clock.
  static Result<std::unique_ptr<JobQueue>> Open(const std::string& db, Env& env = Env::Default());
  ~JobQueue();

  // Queues a request (checked by the caller, job_spec.h) for `who`. InvalidArgument when
  // kMaxActiveJobs are already queued or running.
  Result<int64_t> Add(const JobRequest& request, std::string_view who);
  // Jobs, newest first, at most `limit`.
  Result<std::vector<Job>> List(int64_t limit = 200);
  // NotFound for an unknown id.
  Result<Job> Get(int64_t id);

  // Cancels each job: a queued one at once, a running one by asking the runner (its state
  // changes when its processes are gone). A job owned by another needs `admin`. Ids that ended
  // already are left as they are. InvalidArgument naming the first id refused; nothing is
  // changed then.
  Status Cancel(const std::vector<int64_t>& ids, std::string_view who, bool admin);
  // Queues each ended job again as a new job (requeued_from names it); the new ids.
  Result<std::vector<int64_t>> Requeue(const std::vector<int64_t>& ids, std::string_view who,
                                       bool admin);

  // The runner's side. The next queued job of `target` (by priority, then age), marked
  // running; nullopt when none waits.
  Result<std::optional<Job>> ClaimNext(std::string_view target);
  // The targets that have queued jobs.
  Result<std::vector<std::string>> WaitingTargets();
  // Running jobs whose cancel was asked for.
  Result<std::vector<int64_t>> CancelRequested();
  Status Finish(int64_t id, JobState state, std::optional<int> exit_code, std::string_view reason);
  // Jobs left running by a serve that died: failed, "interrupted: ...". How many.
  Result<int> MarkInterrupted();

  Status AppendLog(int64_t id, std::string_view stream, std::string_view text);
  // Chunks after `after_seq`, at most `limit`.
  Result<std::vector<JobLogChunk>> LogAfter(int64_t id, int64_t after_seq, int64_t limit = 1000);

  Status Audit(std::string_view who, std::string_view action, std::optional<int64_t> job_id,
               std::string_view detail);
  Result<std::vector<AuditEntry>> AuditLog(int64_t limit = 200);

 private:
  JobQueue(SqliteConnection db, Env& env);
  Status Exec(std::string_view sql);
  // The job `id`, or with nullopt every job, newest first; at most `limit`.
  Result<std::vector<Job>> Select(std::optional<int64_t> id, int64_t limit);
  Status CheckOwners(const std::vector<int64_t>& ids, std::string_view who, bool admin);

  std::mutex mu_;
  SqliteBusyWait busy_wait_;  // the connection's, on env_'s clock: outlives it
  SqliteConnection db_;
  Env& env_;
  std::map<int64_t, int64_t> log_bytes_;  // per running job, to cap its log
};

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_JOB_QUEUE_H_
