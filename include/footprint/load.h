// Load scenarios in the manner of MLPerf LoadGen (`footprint load`): footprint drives the
// measured command, the system under test (SUT), through a line protocol, and records each
// query's latency on the run's timeline.
//
// Line protocol: the command first writes a line `ready` on its stdout once it can take queries
// (its model loaded: nothing before it is charged to a query, and the load's clock starts
// then). footprint then writes one query per line to the command's stdin, `ID<TAB>PAYLOAD`
// (ID: 0, 1, 2, ...; PAYLOAD: the query's sample indices, comma-separated); the command
// answers one line per completed query on its stdout, `ID<TAB>RESULT`, in any order and from
// any number of threads (whole lines). When the load is done footprint closes the command's
// stdin: the command should then exit.
//
// HTTP (LoadOptions::http_url): the command runs an HTTP server; the load starts once it
// accepts a connection. Each query is a POST of http_body (its {id} and {samples} replaced) on
// a keep-alive connection; a 2xx response answers it (else the query failed). The body's first
// byte and its tokens (server-sent events, or chunks) give the time to first token and the
// time per output token of a streamed answer. When the load is done footprint stops the
// command with SIGTERM, which is then its normal end.
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

#include <cstdint>
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

class SutTransport;

enum class Scenario { kSingleStream, kMultiStream, kServer, kOffline };

// "single", "multi", "server", "offline" (LoadGen's names, e.g. "SingleStream", too).
Result<Scenario> ParseScenario(std::string_view name);
std::string_view ScenarioName(Scenario scenario);
// The percentile a scenario is judged by: 0.90 for single, 0.99 otherwise.
double ScenarioPercentile(Scenario scenario);

struct LoadOptions {
  Scenario scenario = Scenario::kSingleStream;
  double qps = 0;                            // server: the target rate (queries/s), > 0
  int samples_per_query = 8;                 // multi
  int64_t min_duration_ns = 10'000'000'000;  // issuing goes on at least this long (not offline)
  int64_t min_queries = 100;  // and at least this many queries (offline: exactly this many)
  std::optional<double> latency_bound_s;  // server: validity; others: reported against it
  uint64_t seed = 1;                      // server's arrivals
  // A query unanswered this long after it was issued ends the load: the command is taken
  // for hung, its stdin closed, and it is stopped (SIGTERM) if it does not exit.
  int64_t query_timeout_ns = 60'000'000'000;
  // How long the command may take to say `ready` (loading its model).
  int64_t ready_timeout_ns = 600'000'000'000;
  std::string http_url;  // not empty: an HTTP SUT (http://HOST:PORT/PATH), not the line protocol
  std::string http_body = R"({"id": {id}, "samples": [{samples}]})";
};

// InvalidArgument, one line, for options that cannot make a load.
Status ValidateLoadOptions(const LoadOptions& options);

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
  double latency_s() const { return static_cast<double>(*completed_ns - scheduled_ns) / 1e9; }
};

// The nearest-rank percentile of `sorted` (ascending, non-empty): the smallest value with at
// least p of the values at or below it.
double NearestRankPercentile(const std::vector<double>& sorted, double p);

// Queries needed before a percentile claim may stop early (LoadGen's early-stopping minimums
// with no query over the bound): 64 for p90, 662 for p99; 0 for other percentiles.
int64_t EarlyStoppingMinimum(double percentile);

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
  // Against the bound: "valid", "invalid" (the scenario's percentile is over it), or "" when
  // no bound was given.
  std::string validity;
  std::string early_stopping;   // one sentence: whether the query count supports the claim
  int64_t unknown_answers = 0;  // lines that were not ID<TAB>RESULT of an outstanding query
  std::string first_unknown;    // the first such line (cut)
  std::string ended_because;    // "done", or why the load stopped early
  int64_t failed = 0;           // HTTP: queries answered with an error
  std::string first_failure;    // the first such error
  double driver_cpu_s = 0;      // the driver thread's own CPU time (issuing and reading)
};

// What the driver saw besides the queries.
struct LoadObservations {
  int64_t unknown_answers = 0;
  std::string first_unknown, first_failure, ended_because;
  double driver_cpu_s = 0;
};
LoadSummary SummarizeLoad(const LoadOptions& options, const std::vector<QueryRecord>& queries,
                          LoadObservations seen);
// The `load` object of show --json (docs/evaluation.md).
std::string LoadSummaryJson(const LoadSummary& summary);

// Drives a command under RunMonitored (MonitorOptions::driver) with a load scenario.
class LoadDriver final : public CommandDriver {
 public:
  explicit LoadDriver(LoadOptions options);
  ~LoadDriver() override;

  Status Start(const DriverStart& start) override;
  bool wants_pipes() const override { return options_.http_url.empty(); }
  Status Finish(Store& store, const std::string& run_id, DriverResult& result) override;

  const LoadSummary& summary() const { return summary_; }

 private:
  void Drive(SutTransport& sut, int64_t t0_ns);
  bool StopCommand();

  LoadOptions options_;
  std::thread thread_;
  std::vector<QueryRecord> queries_;
  LoadObservations seen_;
  std::string exit_note_;  // how the command was stopped, when it had to be
  bool stopped_command_ = false;
  int pidfd_ = -1;  // the command, to stop it safely (-1 on kernels before 5.3)
  LoadSummary summary_;
};

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_H_
