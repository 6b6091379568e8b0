// Load scenarios in the manner of MLPerf LoadGen (`footprint load`): footprint drives the
// measured command, the system under test (SUT), through a line protocol, and records each
// query's latency on the run's timeline.
//
// Line protocol: the command first writes a line `ready` on its stdout once it can take queries
// (its model loaded: nothing before it is charged to a query, and the load's clock starts
// then). footprint then writes one query per line to the command's stdin, `ID<TAB>PAYLOAD`
// (ID: 0, 1, 2, ...; PAYLOAD: the query's sample indices, comma-separated, drawn as
// src/run/load_samples.h says); the command answers one line per completed query on its
// stdout, `ID<TAB>RESULT`, in any order and from any number of threads (whole lines). RESULT
// is read in accuracy mode: one answer per sample, comma-separated when there are several. When the
// load is done footprint closes the command's stdin: the command should then exit.
//
// HTTP (LoadOptions::http_url): the command runs an HTTP server; the load starts once it
// accepts a connection. Each query is a POST of http_body (its {id} and {samples} replaced) on
// a keep-alive connection; a 2xx response answers it (else the query failed). The body's first
// byte and its tokens (server-sent events, or chunks) give the time to first token and the
// time per output token of a streamed answer; in accuracy mode its body (an event stream: its
// events' data) is the RESULT. When the load is done footprint stops the command with SIGTERM,
// which is then its normal end.
//
// Readiness: while footprint waits for `ready` (or for the server to take a connection) it
// says after kReadyNoticeNs what it waits for and how to declare it, and after
// LoadOptions::ready_timeout_ns it gives up: the command is stopped (SIGTERM, SIGKILL after
// 10 s), the run is stored, and LoadSummary::ready_timed_out tells the caller.
//
// Scenarios (reimplemented from LoadGen's documented rules):
//   single   one query of one sample at a time; the next is issued when the previous is
//            answered; figure of merit p90 latency
//   multi    one query of N samples (--samples-per-query) at a time, as single; p99
//   server   one-sample queries at Poisson arrivals of rate --qps (seeded), issued at their
//            scheduled times whatever is outstanding; valid when p99 <= --latency-bound
//   offline  every query (--min-queries of them) scheduled at the start, issued at once;
//            samples per second
// Every latency runs from the query's *scheduled* time, so an issuer that lags is charged.
// Issuing stops once both the minimum duration and the minimum query count are reached (for
// offline: the count); then footprint waits for the outstanding answers.
//
// Thread-safety: a LoadDriver is driven by RunMonitored (its thread, then Finish); the pure
// functions are thread-safe.
#ifndef FOOTPRINT_LOAD_H_
#define FOOTPRINT_LOAD_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "footprint/monitor.h"
#include "footprint/status.h"

namespace footprint {

class CommandCpu;
class SutTransport;
struct SutAnswer;

enum class Scenario { kSingleStream, kMultiStream, kServer, kOffline };

// "single", "multi", "server", "offline" (LoadGen's names, e.g. "SingleStream", too).
Result<Scenario> ParseScenario(std::string_view name);
std::string_view ScenarioName(Scenario scenario);
// The percentile a scenario is judged by: 0.90 for single, 0.99 otherwise (LoadGen's defaults).
double ScenarioPercentile(Scenario scenario);

struct LoadOptions {
  Scenario scenario = Scenario::kSingleStream;
  double qps = 0;                            // server: the target rate (queries/s), > 0
  int samples_per_query = 8;                 // multi
  int64_t min_duration_ns = 10'000'000'000;  // issuing goes on at least this long (not offline)
  int64_t min_queries = 100;  // and at least this many queries (offline: exactly this many)
  std::optional<double> latency_bound_s;  // server: validity; others: reported against it
  uint64_t seed = 1;                      // server's arrivals
  // The percentile judged against the bound and by early stopping (--percentile), in (0, 1);
  // none: the scenario's (ScenarioPercentile).
  std::optional<double> percentile;
  // A query unanswered this long after it was issued ends the load: the command is taken
  // for hung, its stdin closed, and it is stopped (SIGTERM) if it does not exit.
  int64_t query_timeout_ns = 60'000'000'000;
  // How long the command may take to say `ready` (loading its model), or its server to take a
  // connection (--ready-timeout).
  int64_t ready_timeout_ns = 600'000'000'000;
  // The clock that times the queries and every wait for the command, and the driver thread's
  // CPU-time clock: the run's Env (MonitorOptions::env), on whose clock DriverStart::t0_ns is.
  Env* env = &Env::Default();
  std::string http_url;  // not empty: an HTTP SUT (http://HOST:PORT/PATH), not the line protocol
  std::string http_body = R"({"id": {id}, "samples": [{samples}]})";
  // Sample indices (src/run/load_samples.cc): drawn with their own seed (--sample-seed), apart
  // from the schedule's (`seed`), uniformly from a performance sample set of this many
  // (--performance-sample-count; 0: PerformanceSampleCount's default).
  int64_t performance_sample_count = 0;
  uint64_t sample_seed = 1;
  // Accuracy mode (--mode accuracy): every sample of `expected_answers` (--answers FILE, line
  // k for sample index k) is issued once, in the scenario's queries, and the command's
  // RESULTs are scored against them; duration and query count do not apply.
  bool accuracy = false;
  std::vector<std::string> expected_answers;
  // Not empty: the folder MLPerf's log files are written to (--mlperf-log).
  std::string mlperf_log_dir;
};

// LoadGen's default performance sample count here: the answers' count when there are some,
// else kDefaultPerformanceSamples (the ResNet-50 reference's), unless the options name one.
inline constexpr int64_t kDefaultPerformanceSamples = 1024;
int64_t PerformanceSampleCount(const LoadOptions& options);

// InvalidArgument, one line, for options that cannot make a load.
Status ValidateLoadOptions(const LoadOptions& options);

// The percentile a load is judged by: LoadOptions::percentile, else the scenario's.
double TargetPercentile(const LoadOptions& options);

// How long footprint waits for `ready` before it says what it waits for.
inline constexpr int64_t kReadyNoticeNs = 5'000'000'000;

// One query: times in ns on the run's timeline (0 = the clock's start).
struct QueryRecord {
  int64_t id = 0;
  int samples = 1;
  int64_t scheduled_ns = 0;
  int64_t issued_ns = 0;
  std::optional<int64_t> completed_ns;   // unanswered (or failed): none
  std::optional<int64_t> first_byte_ns;  // HTTP: the response body's first byte
  int tokens = 0;                        // HTTP: the events or chunks it streamed
  bool failed = false;                   // HTTP: answered with an error
  std::vector<int64_t> sample_indices;   // what the query carried, in its payload's order
  std::string result;                    // accuracy mode: the command's RESULT
  double latency_s() const { return static_cast<double>(*completed_ns - scheduled_ns) / 1e9; }
};

// The nearest-rank percentile of `sorted` (ascending, non-empty): the smallest value with at
// least p of the values at or below it.
double NearestRankPercentile(const std::vector<double>& sorted, double p);

// MLPerf LoadGen's early stopping (src/run/early_stopping.cc): with `over` queries over the
// bound, the fewest queries under it for a `percentile` claim to hold with 99 % confidence,
// i.e. that a system whose true percentile were over the bound would show at most `over` of
// them over it with a chance under 1 %. 0 over: 459 for p99, 44 for p90; 1 over: 661, 63.
int64_t PassingQueriesNeeded(int64_t over, double percentile);

struct EarlyStopping {
  bool met = false;        // the query count supports the claim
  int64_t needed = 0;      // queries the claim needs (single, multi: with one over it)
  int64_t over_bound = 0;  // server: queries over the bound, unanswered ones included
  // Single, multi: LoadGen's estimate of the percentile, the latency below the highest ones
  // that the query count lets it set aside.
  std::optional<double> estimate_s;
  std::string sentence;  // for people; empty for offline (no percentile claim)
};
// Server: `issued` queries with those over `bound_s` counted (none without a bound); single
// and multi: enough answered queries (`sorted_latencies`, ascending), and the estimate;
// offline: nothing.
EarlyStopping JudgeEarlyStopping(Scenario scenario, double percentile,
                                 const std::vector<double>& sorted_latencies, int64_t issued,
                                 std::optional<double> bound_s);

// Accuracy mode: the samples answered as expected, of all the samples issued.
struct LoadAccuracy {
  int64_t samples = 0, correct = 0;
  double fraction = 0;
};

// What a load measured, for show and the run's meta (`load`) and totals (`load_*`).
struct LoadSummary {
  LoadOptions options;
  int64_t issued = 0, completed = 0;
  int64_t samples_completed = 0;
  double duration_s = 0;  // from the first scheduled time to the last answer
  int64_t window_start_ns = 0, window_end_ns = 0;  // those two times, ns since the run's start
  double qps = 0;                                  // completed queries per second over duration_s
  double samples_per_s = 0;
  std::map<std::string, double> latency_s;  // p50, p90, p95, p97, p99, p99.9, mean, max
  // Streamed answers (HTTP, more than one token): the time to the first token from the
  // scheduled time, and the time per output token after it, (completed - first) / (tokens - 1),
  // with the same percentiles; empty without streamed answers.
  std::map<std::string, double> ttft_s, tpot_s;
  int64_t tokens = 0;  // over the answered queries
  // Against the bound: "valid" (the target percentile within it, every query answered and,
  // as LoadGen has it, early stopping met), "invalid", or "" when no bound was given.
  std::string validity;
  EarlyStopping early_stopping;
  // How late queries were issued after their scheduled time (p50, p99, max, ...), and a
  // sentence when that is large against the bound (else the target percentile's latency): a
  // busy machine that did not run the issuer on time.
  std::map<std::string, double> issue_lag_s;
  std::string issue_lag_warning;
  // The command's CPU time over the load (from its first query to its last answer), without
  // the start-up before `ready` and the exit after the end; and where it came from.
  std::optional<double> cpu_s;
  std::string cpu_source;
  int64_t unknown_answers = 0;   // lines that were not ID<TAB>RESULT of an outstanding query
  std::string first_unknown;     // the first such line (cut)
  std::string ended_because;     // "done", or why the load stopped early
  bool ready_timed_out = false;  // the command was not ready within options.ready_timeout_ns
  int64_t failed = 0;            // HTTP: queries answered with an error
  std::string first_failure;     // the first such error
  double driver_cpu_s = 0;       // the driver thread's own CPU time (issuing and reading)
  std::optional<LoadAccuracy> accuracy;  // accuracy mode's score
};

// What the driver saw besides the queries.
struct LoadObservations {
  int64_t unknown_answers = 0;
  std::string first_unknown, first_failure, ended_because;
  double driver_cpu_s = 0;
  bool ready_timed_out = false;
  std::optional<double> cpu_s;  // the command's CPU over the load (LoadSummary::cpu_s)
  std::string cpu_source;
};
LoadSummary SummarizeLoad(const LoadOptions& options, const std::vector<QueryRecord>& queries,
                          LoadObservations seen);
// The `load` object of show --json (docs/evaluation.md).
std::string LoadSummaryJson(const LoadSummary& summary);

// footprint load --find-peak: one trial run of the server scenario at `qps`, and whether it
// was valid against the bound.
struct PeakTrial {
  double qps = 0;
  bool valid = false;
};
inline constexpr int kMaxPeakTrials = 16;
// The rate to try next (src/run/peak_search.cc): `start_qps` first, then doubling (halving)
// until the bound is crossed, then bisecting until the largest valid rate and the smallest
// invalid one are within `tolerance` of each other; nullopt when done, or after kMaxPeakTrials.
std::optional<double> NextPeakRate(double start_qps, const std::vector<PeakTrial>& trials,
                                   double tolerance = 0.05);

// Drives a command under RunMonitored (MonitorOptions::driver) with a load scenario.
class LoadDriver final : public CommandDriver {
 public:
  // `say` (if set) receives, from the driver's thread, a line to tell the user while the load
  // runs: what it waits for, when the command is slow to be ready.
  // `resident` (if set): the command already runs and serves several loads through it (a
  // ResidentCommand, src/run/resident_command.h, sent its `#run` line before Start): the
  // driver waits for the `ready` that answers it, and once the load is done sends `#end` and
  // waits (up to the ready timeout) for its `ready` instead of closing the command's stdin.
  explicit LoadDriver(LoadOptions options, std::function<void(const std::string&)> say = {},
                      SutTransport* resident = nullptr);
  ~LoadDriver() override;

  Status Start(const DriverStart& start) override;
  bool wants_pipes() const override { return options_.http_url.empty() && resident_ == nullptr; }
  Status Finish(Store& store, const std::string& run_id, DriverResult& result) override;
  // Waits until the driver's thread is done: a resident command has no exit to wait for.
  void AwaitEnd();
  // Whether the driver's thread is done (any thread may ask).
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // A resident command's load was done and it said `ready` after `#end`: it can serve another.
  bool resident_ready() const { return resident_ready_; }

  const LoadSummary& summary() const { return summary_; }

 private:
  void Drive(SutTransport& sut, int64_t t0_ns);
  std::string AwaitReady(SutTransport& sut);
  void EndCommand(SutTransport& sut, const std::function<void(const SutAnswer&)>& answer);
  bool StopCommand();

  LoadOptions options_;
  std::function<void(const std::string&)> say_;
  SutTransport* resident_ = nullptr;
  bool resident_ready_ = false;
  std::atomic<bool> finished_{false};
  std::thread thread_;
  std::vector<QueryRecord> queries_;
  LoadObservations seen_;
  std::string exit_note_;  // how the command was stopped, when it had to be
  bool stopped_command_ = false;
  int pidfd_ = -1;                   // the command, to stop it safely (-1 on kernels before 5.3)
  std::unique_ptr<CommandCpu> cpu_;  // the command's CPU time, read at the load's two ends
  LoadSummary summary_;
};

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_H_
