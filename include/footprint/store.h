// Store: where runs, their series, samples and totals live.
//
// One interface, two implementations: embedded SQLite (the default) and a PostgreSQL server
// (docs/cluster.md). A store is opened from a location string: a file path or `sqlite:PATH`,
// or a libpq URI `postgresql://[user@]host[:port]/database[?param=value...]`. Opening for
// writing creates the file (SQLite) or the tables (PostgreSQL) and applies schema migrations;
// a database written by a newer footprint (higher schema version) is refused with a message
// that says so, and never modified.
//
// Durability: every Append/Finish call is one transaction; with SQLite the database runs in
// WAL mode, so a process killed at any point leaves a valid database holding everything
// committed before the kill. Several processes may write one database at once (with SQLite
// each call waits up to `busy_timeout` for the write lock).
//
// Credentials of a PostgreSQL store come from the URI, PGPASSFILE/~/.pgpass or PGPASSWORD;
// location() never shows a password, open_location() carries it to the measured command.
//
// Thread-safety: a Store object is NOT thread-safe. Use one per thread, or hand it over
// (the run monitor gives its store to the writer thread for the run's duration).
#ifndef FOOTPRINT_STORE_H_
#define FOOTPRINT_STORE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint {

// Schema version this build writes and understands (SQLite `PRAGMA user_version`).
inline constexpr int kSchemaVersion = 1;

enum class RunStatus { kRunning, kOk, kFailed, kKilled, kInterrupted };
std::string_view RunStatusName(RunStatus s);
std::optional<RunStatus> RunStatusFromName(std::string_view name);

struct RunRecord {
  std::string id;  // UUID (v4, lower-case)
  std::string name;
  std::string description;
  std::string experiment;
  std::string workload;
  std::string group_id;
  int repetition = 0;
  std::vector<std::string> command;
  std::string cwd;
  std::string host;
  std::string user;
  int64_t started_at_ns = 0;  // UTC wall clock, ns since the epoch
  std::optional<int64_t> ended_at_ns;
  RunStatus status = RunStatus::kRunning;
  std::optional<int> exit_code;
  std::string meta_json = "{}";         // tags, params, git, hardware, sources, monitor, ...
  std::optional<int64_t> heartbeat_ns;  // UTC wall clock of the last flush while running
};

// Why the run's series are not whole (meta "incomplete": samples lost to a failing or slow
// database), or nullopt when nothing was lost.
std::optional<std::string> IncompleteReason(const RunRecord& run);

struct SeriesRecord {
  int64_t id = 0;
  std::string run_id;
  std::string metric;
  std::string unit;
  std::string entity;
  std::optional<int64_t> scope_id;
};

struct SamplePoint {
  int64_t series_id;
  int64_t t_ns;  // monotonic ns since the run's start
  double value;
};

// A scope on a run's timeline (a statement, function or stage), from the API.
struct ScopeRecord {
  int64_t id = 0;  // assigned by the store
  std::string run_id;
  std::optional<int64_t> parent_id;
  std::string name;
  int64_t thread = 0;             // kernel thread id
  int64_t start_ns = 0;           // ns since the run's start
  std::optional<int64_t> end_ns;  // none while open, or when the process died inside it
};

// A valued metric: a scalar (loss, accuracy, ...) and/or a JSON document (confusion matrix,
// hyperparameter set), optionally within a scope and at a step.
struct ValueRecord {
  std::string run_id;
  std::optional<int64_t> scope_id;
  std::string name;
  std::optional<int64_t> step;
  int64_t t_ns = 0;
  std::optional<double> value;
  std::string data_json;  // empty when none
};

struct ArtifactRecord {
  std::string run_id;
  std::string name;
  std::string path;
  std::string sha256;
  int64_t size = 0;
};

// A writer that sends a run to a server through a local buffer (docs/cluster.md) and has not
// said it is done with it: what it wrote last may still wait in `path` on `host`.
struct PendingBuffer {
  std::string writer;
  std::string host;
  std::string path;
  int64_t shipped_at_ns = 0;  // UTC wall clock of its last entries that arrived
};

// One page of the runs table (Store::ListRunsPage): the runs meeting every given criterion,
// in `sort` order (ties newest first), `limit` of them from `offset`. What SQL can select;
// filters and sorts on meta (tags, params) or totals are the caller's.
struct RunQuery {
  enum class Sort { kStarted, kName, kStatus, kDuration };
  std::optional<RunStatus> status;
  std::optional<int64_t> from_ns, to_ns;  // started in [from_ns, to_ns)
  std::optional<std::string> experiment, workload;
  std::optional<std::string> group_prefix;
  // Lower-case (ASCII); in the lower-cased id, name, description or one word of the command.
  std::string text;
  // Runs stored as running whose monitor is gone (store/reconcile.h): they select and sort as
  // interrupted, ended at their last heartbeat (or start), as readers show them.
  std::vector<std::string> interrupted_ids;
  Sort sort = Sort::kStarted;  // kName: by lower-cased name; kDuration: as RunDuration
  bool descending = true;
  int64_t limit = 100;
  int64_t offset = 0;
};

struct RunPage {
  std::vector<RunRecord> runs;  // as stored (not reconciled)
  int64_t total = 0;            // of the runs the query selects, all pages
};

struct StoreOptions {
  // Reads only, and leaves the file as it found it: no schema migration, no journal-mode
  // change, no -wal/-shm/-journal file left behind (a WAL database is read through them while
  // open: they are made, then removed at close as SQLite's last connection does).
  bool read_only = false;
  // How long a statement waits for another connection's lock before failing as busy. SQLite
  // waits on the clock of `env`: its busy handler and footprint's retries sleep through it.
  int busy_timeout_ms = 30000;
  Env* env = &Env::Default();
};

class Store {
 public:
  virtual ~Store() = default;

  // Inserts a new run (status kRunning normally). InvalidArgument if the id exists.
  virtual Status CreateRun(const RunRecord& run) = 0;

  // Returns the id of series (run, metric, entity, scope), creating it if needed.
  virtual Result<int64_t> EnsureSeries(const SeriesRecord& series) = 0;

  // Appends samples and records the heartbeat of `run_id`, in one transaction.
  // Duplicate (series_id, t_ns) pairs keep the last value.
  virtual Status Append(const std::string& run_id, std::span<const SamplePoint> samples,
                        int64_t heartbeat_ns) = 0;

  // Ends a run: writes its final status, exit code, start and end times and meta JSON (the
  // other fields of `run` are not changed) and its totals (name -> value), in one transaction.
  virtual Status FinishRun(const RunRecord& run, const std::map<std::string, double>& totals) = 0;

  // Runs `body` in one write transaction: committed if it returns OK, rolled back otherwise.
  virtual Status InTransaction(const std::function<Status()>& body) = 0;
  // Scopes and values (inside InTransaction for batches).
  virtual Result<int64_t> InsertScope(const ScopeRecord& scope) = 0;
  virtual Status EndScope(int64_t scope_id, int64_t end_ns) = 0;
  virtual Status InsertValue(const ValueRecord& value) = 0;
  // Adds or replaces the artifact `name` of a run.
  virtual Status PutArtifact(const ArtifactRecord& artifact) = 0;

  // Marks a run whose monitor died as interrupted (no-op on read-only stores).
  virtual Status MarkInterrupted(const std::string& run_id, int64_t ended_at_ns) = 0;

  // All runs, oldest first.
  virtual Result<std::vector<RunRecord>> ListRuns() = 0;
  // The runs with `status`, oldest first.
  virtual Result<std::vector<RunRecord>> ListRunsWithStatus(RunStatus status) = 0;
  virtual Result<RunRecord> GetRun(const std::string& id) = 0;
  // One page of the runs a query selects, and how many it selects: a page of 100 k runs
  // costs what the page holds, not what the database holds.
  virtual Result<RunPage> ListRunsPage(const RunQuery& query) = 0;

  virtual Result<std::vector<SeriesRecord>> ListSeries(const std::string& run_id) = 0;
  // Values of one series in time order (times too when `times` is non-null).
  virtual Result<std::vector<double>> LoadValues(int64_t series_id,
                                                 std::vector<int64_t>* times = nullptr) = 0;
  // Calls `visit(t_ns, value)` for each sample of one series taken after `after_ns`, in time
  // order, at most `limit` of them (0: no limit), found through the index and holding none
  // of them: the pages of a long series, the new samples of a live one.
  virtual Status ScanSamplesAfter(int64_t series_id, int64_t after_ns, size_t limit,
                                  const std::function<void(int64_t, double)>& visit) = 0;
  // Every sample of one series, as above: one pass however long it is.
  Status ScanSamples(int64_t series_id, const std::function<void(int64_t, double)>& visit) {
    return ScanSamplesAfter(series_id, std::numeric_limits<int64_t>::min(), 0, visit);
  }
  // Time of the last sample of one series (none when it has no samples), from the index.
  virtual Result<std::optional<int64_t>> SeriesEnd(int64_t series_id) = 0;
  // Time of the last sample of the run, if any (used to date an interrupted run's end).
  virtual Result<std::optional<int64_t>> LastSampleTime(const std::string& run_id) = 0;
  virtual Result<std::map<std::string, double>> LoadTotals(const std::string& run_id) = 0;
  // Scopes by start time; values by name, step and time; artifacts by name.
  virtual Result<std::vector<ScopeRecord>> ListScopes(const std::string& run_id) = 0;
  virtual Result<std::vector<ValueRecord>> ListValues(const std::string& run_id) = 0;
  virtual Result<std::vector<ArtifactRecord>> ListArtifacts(const std::string& run_id) = 0;

  // The buffers that may still hold entries of `run_id` (none for a store written directly).
  virtual Result<std::vector<PendingBuffer>> PendingBuffers(const std::string& run_id) {
    (void)run_id;
    return std::vector<PendingBuffer>{};
  }

  // Where this handle's writes wait before they are in the database: "" when they are there;
  // for a server store, its local buffer while the server has not taken them (it first waits
  // for them to arrive, as long as the server takes some).
  virtual std::string WaitingIn() { return ""; }

  // Human-readable location, for messages and records: never a password.
  virtual const std::string& location() const = 0;
  // What OpenStore needs to open this store again from another process or folder (an
  // absolute file path, or the URI as given, password included): handed to the measured
  // command as $FOOTPRINT_DB, never printed or recorded.
  virtual const std::string& open_location() const = 0;
  virtual bool read_only() const = 0;

  // Whether what this handle wrote can still be found at location(): a database file deleted
  // (or its folder) or replaced by another file while open goes on taking writes that nobody
  // will read. OK, or kDatabase saying what happened to it.
  virtual Status CheckLocation() = 0;
  // Writes a consistent copy of everything this handle sees to a new file at `path` (the
  // rescue of a database that vanished). kDatabase when it cannot.
  virtual Status SaveCopyTo(const std::string& path) = 0;
};

// Opens (and, unless read-only, creates and migrates) the store at `location`.
// Errors (kDatabase) say which file, what is wrong and what to do.
Result<std::unique_ptr<Store>> OpenStore(const std::string& location,
                                         const StoreOptions& options = {});

// True when `location` names a database server (a postgresql:// or postgres:// URI), not a file.
bool IsServerLocation(std::string_view location);

// `location` without the password a URI may carry (user:secret@host, password=...): what
// messages, records and web pages show.
std::string RedactedLocation(std::string_view location);

// The database used when none is given: $FOOTPRINT_DB (read through `env`), else
// ./footprint.db.
std::string DefaultStoreLocation(Env& env = Env::Default());

}  // namespace footprint

#endif  // FOOTPRINT_STORE_H_
