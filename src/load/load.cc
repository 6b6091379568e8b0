#include "footprint/load.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "load/load_samples.h"
#include "load/mlperf_log.h"
#include "load/sut_transport.h"
#include "run/command_cpu.h"
#include "util/clock.h"
#include "util/json_text.h"
#include "util/strings.h"
#include "util/word_table.h"

namespace footprint {
namespace {

using json = nlohmann::json;

std::string PercentName(double p) {
  char text[16];
  std::snprintf(text, sizeof text, "p%g", p * 100);
  return text;
}

// The nearest-rank percentiles people read, and the mean and maximum, of `values`.
std::map<std::string, double> Distribution(std::vector<double> values) {
  std::map<std::string, double> out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  for (double q : {0.50, 0.90, 0.95, 0.97, 0.99, 0.999}) {
    out[PercentName(q)] = NearestRankPercentile(values, q);
  }
  double sum = 0;
  for (double v : values) sum += v;
  out["mean"] = sum / static_cast<double>(values.size());
  out["max"] = values.back();
  return out;
}

// A sentence when queries were issued late enough to matter: the largest lag over
// kLagShareWarned of the bound (without one, of the target percentile's latency). The issuer
// runs on its own thread and only sleeps until the next scheduled time, so a lag that large
// means the machine did not run it on time, and every latency includes it.
std::string IssueLagWarning(const std::map<std::string, double>& lag, std::optional<double> bound_s,
                            double percentile, double at_target_s) {
  constexpr double kLagShareWarned = 0.10;
  const double reference = bound_s.value_or(at_target_s);
  if (lag.empty() || !(reference > 0) || lag.at("max") <= kLagShareWarned * reference) return "";
  char share[32];
  std::snprintf(share, sizeof share, "%.0f %%", 100 * lag.at("max") / reference);
  return "queries were issued late (p50 " + FormatDuration(lag.at("p50")) + ", p99 " +
         FormatDuration(lag.at("p99")) + ", max " + FormatDuration(lag.at("max")) + ", " + share +
         " of " + (bound_s ? "the latency bound" : "the " + PercentName(percentile) + " latency") +
         "): the machine did not run footprint's issuer on time (busy or noisy); the latencies "
         "include the lag, so a quiet machine may measure less";
}

// Each scenario's word in footprint and its name in LoadGen (and MLPerf's logs).
struct ScenarioWords {
  Scenario scenario;
  std::string_view word;
  std::string_view loadgen;
};
constexpr ScenarioWords kScenarioWords[] = {{Scenario::kSingleStream, "single", "SingleStream"},
                                            {Scenario::kMultiStream, "multi", "MultiStream"},
                                            {Scenario::kServer, "server", "Server"},
                                            {Scenario::kOffline, "offline", "Offline"}};

}  // namespace

Result<Scenario> ParseScenario(std::string_view name) {
  const std::string n = Lower(name);
  for (const ScenarioWords& w : kScenarioWords) {
    if (n == w.word || n == Lower(w.loadgen)) return w.scenario;
  }
  return InvalidArgument("unknown scenario '" + std::string(name) +
                         "'; use --scenario single, multi, server or offline");
}

std::string_view ScenarioName(Scenario scenario) {
  const ScenarioWords* w = FindRow(kScenarioWords, &ScenarioWords::scenario, scenario);
  return w ? w->word : "?";
}

std::string MlperfScenarioName(Scenario scenario) {
  const ScenarioWords* w = FindRow(kScenarioWords, &ScenarioWords::scenario, scenario);
  return std::string(w ? w->loadgen : "?");
}

double ScenarioPercentile(Scenario scenario) {
  return scenario == Scenario::kSingleStream ? 0.90 : 0.99;
}

double TargetPercentile(const LoadOptions& options) {
  return options.percentile.value_or(ScenarioPercentile(options.scenario));
}

Status ValidateLoadOptions(const LoadOptions& o) {
  if (o.scenario == Scenario::kServer && !(o.qps > 0 && std::isfinite(o.qps))) {
    return InvalidArgument("the server scenario needs --qps R, the target queries per second");
  }
  if (o.samples_per_query < 1) return InvalidArgument("--samples-per-query must be at least 1");
  if (o.min_queries < 1) return InvalidArgument("--min-queries must be at least 1");
  if (o.min_duration_ns < 0) return InvalidArgument("--duration cannot be negative");
  if (o.latency_bound_s && !(*o.latency_bound_s > 0)) {
    return InvalidArgument("--latency-bound must be a positive time, e.g. 50ms");
  }
  if (o.percentile && !(*o.percentile > 0 && *o.percentile < 1)) {
    return InvalidArgument("--percentile must lie between 0 and 100 (exclusive), e.g. 99 or 99.9");
  }
  if (o.performance_sample_count < 0) {
    return InvalidArgument("--performance-sample-count must be at least 1");
  }
  if (o.accuracy && o.expected_answers.empty()) {
    return InvalidArgument(
        "--mode accuracy scores the command's answers: give --answers FILE, one expected "
        "answer per line (line k for sample index k)");
  }
  if (o.query_timeout_ns <= 0) return InvalidArgument("--query-timeout must be positive");
  if (o.ready_timeout_ns <= 0) {
    return InvalidArgument("--ready-timeout must be positive (default 10min)");
  }
  if (!o.http_url.empty()) return ParseHttpTarget(o.http_url, o.http_body).status();
  return Status::Ok();
}

int64_t PerformanceSampleCount(const LoadOptions& options) {
  if (options.performance_sample_count > 0) return options.performance_sample_count;
  if (!options.expected_answers.empty()) {
    return static_cast<int64_t>(options.expected_answers.size());
  }
  return kDefaultPerformanceSamples;
}

double NearestRankPercentile(const std::vector<double>& sorted, double p) {
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

namespace {

// The times of a load's queries, in seconds, and the window from the first scheduled to the
// last answered, in ns on the run's timeline.
struct LoadQueryTimes {
  std::vector<double> latencies, ttft, tpot, lags;
  int64_t first_ns = INT64_MAX, last_ns = 0;
};

// Collects the queries' times, and counts into `s` the failed ones, samples and tokens.
LoadQueryTimes CollectQueryTimes(const std::vector<QueryRecord>& queries, LoadSummary& s) {
  LoadQueryTimes times;
  for (const QueryRecord& q : queries) {
    times.first_ns = std::min(times.first_ns, q.scheduled_ns);
    s.failed += q.failed ? 1 : 0;
    times.lags.push_back(static_cast<double>(q.issued_ns - q.scheduled_ns) / 1e9);
    if (!q.completed_ns) continue;
    times.latencies.push_back(q.latency_s());
    times.last_ns = std::max(times.last_ns, *q.completed_ns);
    s.samples_completed += q.samples;
    s.tokens += q.tokens;
    if (q.first_byte_ns && q.tokens > 1) {
      times.ttft.push_back(static_cast<double>(*q.first_byte_ns - q.scheduled_ns) / 1e9);
      times.tpot.push_back(static_cast<double>(*q.completed_ns - *q.first_byte_ns) / 1e9 /
                           (q.tokens - 1));
    }
  }
  return times;
}

}  // namespace

LoadSummary SummarizeLoad(const LoadOptions& options, const std::vector<QueryRecord>& queries,
                          LoadObservations seen) {
  LoadSummary s;
  s.options = options;
  s.issued = static_cast<int64_t>(queries.size());
  s.unknown_answers = seen.unknown_answers;
  s.first_unknown = std::move(seen.first_unknown);
  s.ended_because = std::move(seen.ended_because);
  s.first_failure = std::move(seen.first_failure);
  s.driver_cpu_s = seen.driver_cpu_s;
  s.ready_timed_out = seen.ready_timed_out;
  s.cpu_s = seen.cpu_s;
  s.cpu_source = std::move(seen.cpu_source);
  auto [latencies, ttft, tpot, lags, first_ns, last_ns] = CollectQueryTimes(queries, s);
  s.completed = static_cast<int64_t>(latencies.size());
  std::sort(latencies.begin(), latencies.end());
  const double p = TargetPercentile(options);
  s.early_stopping =
      JudgeEarlyStopping(options.scenario, p, latencies, s.issued, options.latency_bound_s);
  s.issue_lag_s = Distribution(std::move(lags));
  if (options.accuracy) s.accuracy = ScoreAccuracy(queries, options.expected_answers);
  if (latencies.empty()) return s;
  s.duration_s = static_cast<double>(last_ns - first_ns) / 1e9;
  s.window_start_ns = first_ns;
  s.window_end_ns = last_ns;
  if (s.duration_s > 0) {
    s.qps = static_cast<double>(s.completed) / s.duration_s;
    s.samples_per_s = static_cast<double>(s.samples_completed) / s.duration_s;
  }
  const double at_target = NearestRankPercentile(latencies, p);
  s.latency_s = Distribution(std::move(latencies));
  s.latency_s[PercentName(p)] = at_target;
  s.ttft_s = Distribution(std::move(ttft));
  s.tpot_s = Distribution(std::move(tpot));
  if (options.scenario != Scenario::kOffline) {  // offline's lag is the SUT reading its input
    s.issue_lag_warning = IssueLagWarning(s.issue_lag_s, options.latency_bound_s, p, at_target);
  }
  if (options.latency_bound_s) {
    const bool claim_holds = options.scenario == Scenario::kOffline || s.early_stopping.met;
    s.validity = at_target <= *options.latency_bound_s && s.completed == s.issued && claim_holds
                     ? "valid"
                     : "invalid";
  }
  return s;
}

std::string LoadSummaryJson(const LoadSummary& s) {
  const LoadOptions& o = s.options;
  json options = {{"scenario", ScenarioName(o.scenario)},
                  {"min_duration_s", static_cast<double>(o.min_duration_ns) / 1e9},
                  {"min_queries", o.min_queries},
                  {"mode", o.accuracy ? "accuracy" : "performance"},
                  {"seed", o.seed},
                  {"sample_seed", o.sample_seed},
                  {"performance_sample_count", PerformanceSampleCount(o)},
                  {"query_timeout_s", static_cast<double>(o.query_timeout_ns) / 1e9},
                  {"ready_timeout_s", static_cast<double>(o.ready_timeout_ns) / 1e9}};
  if (o.percentile) options["percentile"] = *o.percentile;
  if (o.scenario == Scenario::kServer) options["qps"] = o.qps;
  if (o.scenario == Scenario::kMultiStream) options["samples_per_query"] = o.samples_per_query;
  if (!o.http_url.empty()) options["http"] = {{"url", o.http_url}, {"body", o.http_body}};
  json out = {{"scenario", ScenarioName(o.scenario)},
              {"options", options},
              {"percentile", TargetPercentile(o)},
              {"issued", s.issued},
              {"queries", s.completed},
              {"samples", s.samples_completed},
              {"duration_s", s.duration_s},
              {"window_start_ns", s.window_start_ns},
              {"window_end_ns", s.window_end_ns},
              {"qps", s.qps},
              {"samples_per_s", s.samples_per_s},
              {"latency_s", s.latency_s},
              {"latency_bound_s", OrNull(o.latency_bound_s)},
              {"validity", TextOrNull(s.validity)},
              {"early_stopping", s.early_stopping.sentence},
              {"early_stopping_met", s.early_stopping.met},
              {"early_stopping_needed", s.early_stopping.needed},
              {"over_bound", s.early_stopping.over_bound},
              {"early_stopping_estimate_s", NumberOrNull(s.early_stopping.estimate_s)},
              {"issue_lag_s", s.issue_lag_s},
              {"cpu_s", NumberOrNull(s.cpu_s)},
              {"cpu_source", s.cpu_source},
              {"unknown_answers", s.unknown_answers},
              {"failed", s.failed},
              {"driver_cpu_s", s.driver_cpu_s},
              {"ended_because", s.ended_because}};
  if (s.accuracy) {
    out["accuracy"] = {{"samples", s.accuracy->samples},
                       {"correct", s.accuracy->correct},
                       {"fraction", s.accuracy->fraction}};
  }
  if (!s.issue_lag_warning.empty()) out["issue_lag_warning"] = s.issue_lag_warning;
  if (!s.first_unknown.empty()) out["first_unknown_answer"] = s.first_unknown;
  if (!s.first_failure.empty()) out["first_failure"] = s.first_failure;
  if (!s.ttft_s.empty()) {
    out["tokens"] = s.tokens;
    out["ttft_s"] = s.ttft_s;
    out["tpot_s"] = s.tpot_s;
  }
  return JsonText(out, -1);
}

LoadDriver::LoadDriver(LoadOptions options, std::function<void(const std::string&)> say,
                       SutTransport* resident)
    : options_(std::move(options)), say_(std::move(say)), resident_(resident) {}

LoadDriver::~LoadDriver() {
  if (thread_.joinable()) thread_.join();
  if (pidfd_ >= 0) ::close(pidfd_);
}

Status LoadDriver::Start(const DriverStart& start) {
  cpu_ = std::make_unique<CommandCpu>(start.command);
  if (resident_ != nullptr) {
    thread_ = std::thread([this, t0_ns = start.t0_ns] { Drive(*resident_, t0_ns); });
    return Status::Ok();
  }
  // The command is not reaped before Finish, so its pid is still its own here.
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, start.command, 0));
  std::unique_ptr<SutTransport> transport;
  if (options_.http_url.empty()) {
    transport = MakeLineTransport(start.to_command, start.from_command, *options_.env);
  } else {
    if (pidfd_ < 0) {  // without it, the server could neither be watched nor stopped
      return Unsupported(std::string("--http needs pidfd_open (Linux 5.3): ") +
                         std::strerror(errno));
    }
    FP_ASSIGN_OR_RETURN(HttpTarget target, ParseHttpTarget(options_.http_url, options_.http_body));
    target.keep_answers = options_.accuracy;
    transport = MakeHttpTransport(target, pidfd_, *options_.env);
  }
  thread_ = std::thread([this, start, t = std::shared_ptr<SutTransport>(std::move(transport))] {
    Drive(*t, start.t0_ns);
  });
  return Status::Ok();
}

// Stops the command: SIGTERM through the pidfd taken at the start (once reaped, the pid may
// name another process), SIGKILL if it is still there after the grace period. Whether it could.
bool LoadDriver::StopCommand() {
  if (pidfd_ < 0 || ::syscall(SYS_pidfd_send_signal, pidfd_, SIGTERM, nullptr, 0) != 0)
    return false;
  pollfd exited{pidfd_, POLLIN, 0};
  const timespec grace = TimespecOf(kSutExitGraceNs);
  if (::ppoll(&exited, 1, &grace, nullptr) == 0) {
    ::syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    exit_note_ = "the command did not exit within " +
                 FormatDuration(static_cast<double>(kSutExitGraceNs) / 1e9) +
                 " of SIGTERM at the end of the load: killed";
  }
  return true;
}

// Waits until the SUT can take queries: "" once it can, else why not. Says once, after
// kReadyNoticeNs, what it waits for and how a command declares it; gives up after
// --ready-timeout (seen_.ready_timed_out). The transports say the same failure again when asked
// again, so that a failure found just as the notice was due is not lost.
std::string LoadDriver::AwaitReady(SutTransport& sut) {
  const int64_t start_ns = options_.env->MonotonicNs();
  const int64_t notice_ns = start_ns + kReadyNoticeNs;
  const int64_t deadline_ns = start_ns + options_.ready_timeout_ns;
  if (notice_ns < deadline_ns) {
    std::string why = sut.WaitUntilReady(notice_ns);
    if (why.empty() || options_.env->MonotonicNs() < notice_ns) return why;
    const std::string patience =
        "; footprint waits " +
        FormatDuration(static_cast<double>(options_.ready_timeout_ns) / 1e9) +
        " (--ready-timeout) before the first query";
    if (say_ && options_.http_url.empty()) {
      say_(
          "waiting for the command to write a line 'ready' on its stdout once it can take "
          "queries (the line protocol: footprint load --help; a command that serves HTTP "
          "needs --http URL)" +
          patience);
    } else if (say_) {
      say_("waiting for the server at " + Inert(options_.http_url) +
           " to take a connection (COMMAND must listen there)" + patience);
    }
  }
  std::string why = sut.WaitUntilReady(deadline_ns);
  seen_.ready_timed_out = !why.empty() && options_.env->MonotonicNs() >= deadline_ns;
  return why;
}

// The end of the queries: the command should exit now (a server is stopped, and so is a
// command that never became ready); a resident one finishes the load and stays.
void LoadDriver::EndCommand(SutTransport& sut, const AnswerSink& answer) {
  if (resident_ != nullptr) {  // it goes on to the next load once it has finished this one
    if (seen_.ended_because != "done") return;
    sut.SendControl("#end");
    const std::string why =
        sut.WaitUntilReady(options_.env->MonotonicNs() + options_.ready_timeout_ns);
    resident_ready_ = why.empty();
    if (!why.empty()) exit_note_ = "the resident command did not finish the load: " + why;
    return;
  }
  sut.EndQueries();
  if (seen_.ready_timed_out) {
    StopCommand();  // its death by SIGTERM is no normal end: the load never started
  } else if (sut.StopsCommandAtEnd()) {
    stopped_command_ = StopCommand();
  } else if (!sut.WaitForEnd(options_.env->MonotonicNs() + kSutExitGraceNs, answer)) {
    exit_note_ = "the command's output was still open " +
                 FormatDuration(static_cast<double>(kSutExitGraceNs) / 1e9) +
                 " after the end of its stdin: " +
                 (StopCommand() ? "stopped with SIGTERM"
                                : "the command had exited; a process it started may hold it");
  }
}

namespace {

// The queries of one load as they are issued and answered, which LoadDriver::Drive's loop
// steps through. A query's id is its index in `queries`. The unanswered ones: their count,
// and the oldest (a cursor that only moves forward), so that no step scans them all.
class LoadIssuer {
 public:
  LoadIssuer(const LoadOptions& o, SutTransport& sut, int64_t t0_ns,
             std::vector<QueryRecord>& queries, LoadObservations& seen)
      : o_(o),
        sut_(sut),
        t0_ns_(t0_ns),
        queries_(queries),
        seen_(seen),
        per_query_(o.scenario == Scenario::kMultiStream ? o.samples_per_query : 1),
        rng_(o.seed),
        gap_s_(o.scenario == Scenario::kServer ? o.qps : 1.0),
        draw_(o) {}

  int64_t Now() const { return o_.env->MonotonicNs() - t0_ns_; }
  // The command said it was ready: the load starts now.
  void Begin() {
    start_ns_ = Now();
    next_arrival_ns_ = start_ns_;
  }
  // Issues what the scenario schedules up to `t`; false once the load has issued enough.
  bool IssueDue(int64_t t);
  // Records an answer of the command (an unknown id or a second answer is counted apart).
  void Answer(const SutAnswer& a);
  size_t outstanding() const { return outstanding_; }
  int64_t next_arrival_ns() const { return next_arrival_ns_; }
  // Why the load ends at `t`, if its oldest unanswered query waited too long; "" if not.
  std::string HungReason(int64_t t) const;
  // " after answering N of M queries", to follow why a load ended early.
  std::string Progress() const;

 private:
  void Issue(int64_t scheduled_ns);
  bool Enough(int64_t at_ns) const;

  const LoadOptions& o_;
  SutTransport& sut_;
  const int64_t t0_ns_;
  std::vector<QueryRecord>& queries_;
  LoadObservations& seen_;
  const int per_query_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_s_;
  SampleDraw draw_;
  std::string samples_;
  int64_t start_ns_ = 0;  // when the command said it was ready
  int64_t next_arrival_ns_ = 0;
  size_t outstanding_ = 0, oldest_ = 0;
};

void LoadIssuer::Issue(int64_t scheduled_ns) {
  QueryRecord q;
  q.id = static_cast<int64_t>(queries_.size());
  q.scheduled_ns = scheduled_ns;
  q.issued_ns = Now();
  samples_.clear();
  for (int k = 0; k < per_query_ && !draw_.exhausted(); ++k) {
    q.sample_indices.push_back(draw_.Next());
    if (k) samples_ += ',';
    samples_ += std::to_string(q.sample_indices.back());
  }
  q.samples = static_cast<int>(q.sample_indices.size());
  sut_.Send(q.id, samples_);
  ++outstanding_;
  queries_.push_back(q);
}

bool LoadIssuer::Enough(int64_t at_ns) const {
  const auto issued = static_cast<int64_t>(queries_.size());
  if (o_.accuracy) return draw_.exhausted();  // every sample once, whatever the time
  if (o_.scenario == Scenario::kOffline) return issued >= o_.min_queries;
  return issued >= o_.min_queries && at_ns - start_ns_ >= o_.min_duration_ns;
}

bool LoadIssuer::IssueDue(int64_t t) {
  switch (o_.scenario) {
    case Scenario::kSingleStream:
    case Scenario::kMultiStream:
      if (Enough(t)) return false;
      if (outstanding_ == 0) Issue(t);
      return true;
    case Scenario::kServer:
      while (next_arrival_ns_ <= t && !Enough(next_arrival_ns_)) {
        Issue(next_arrival_ns_);
        next_arrival_ns_ += static_cast<int64_t>(std::llround(gap_s_(rng_) * 1e9));
      }
      return !Enough(next_arrival_ns_);
    case Scenario::kOffline:
      while (!Enough(t)) Issue(start_ns_);
      return false;
  }
  return true;
}

void LoadIssuer::Answer(const SutAnswer& a) {
  QueryRecord* q = a.id >= 0 && a.id < static_cast<int64_t>(queries_.size())
                       ? &queries_[static_cast<size_t>(a.id)]
                       : nullptr;
  if (q == nullptr || q->completed_ns || q->failed) {
    if (seen_.unknown_answers++ == 0) seen_.first_unknown = Inert(a.text.substr(0, 120));
    return;
  }
  if (a.error.empty()) {
    q->completed_ns = a.completed_ns - t0_ns_;
    if (o_.accuracy) q->result = a.result;
  } else {
    q->failed = true;
    if (seen_.first_failure.empty()) {
      seen_.first_failure = "query " + std::to_string(a.id) + ": " + std::string(a.error);
    }
  }
  if (a.first_byte_ns) q->first_byte_ns = *a.first_byte_ns - t0_ns_;
  q->tokens = a.tokens;
  --outstanding_;
  while (oldest_ < queries_.size() && (queries_[oldest_].completed_ns || queries_[oldest_].failed))
    ++oldest_;
}

std::string LoadIssuer::HungReason(int64_t t) const {
  if (outstanding_ == 0 || t - queries_[oldest_].issued_ns <= o_.query_timeout_ns) return "";
  return "query " + std::to_string(oldest_) + " got no answer within " +
         FormatDuration(static_cast<double>(o_.query_timeout_ns) / 1e9) +
         "; the command seems hung";
}

std::string LoadIssuer::Progress() const {
  const auto answered = std::count_if(queries_.begin(), queries_.end(),
                                      [](const QueryRecord& q) { return q.completed_ns; });
  return " after answering " + std::to_string(answered) + " of " + std::to_string(queries_.size()) +
         " queries";
}

// Room for the queries a load is expected to issue, and half again: growing the vector under
// way copies every record, a pause of tens of milliseconds at 300k queries/s that the queries
// scheduled meanwhile would be charged with.
size_t ExpectedQueryRoom(const LoadOptions& o) {
  const double expected = o.accuracy ? static_cast<double>(o.expected_answers.size())
                          : o.scenario == Scenario::kServer
                              ? o.qps * static_cast<double>(o.min_duration_ns) / 1e9
                              : 0;
  return static_cast<size_t>(
      std::min(1.5 * std::max(expected, static_cast<double>(o.min_queries)), 5e7));
}

}  // namespace

void LoadDriver::Drive(SutTransport& sut, int64_t t0_ns) {
  // A write to a command that closed its stdin fails with EPIPE instead of killing footprint:
  // SIGPIPE is directed at the writing thread, which blocks it (and drops it at the end).
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  // The issuer's waits end when asked, not up to 50 µs later (the default timer slack).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  const LoadOptions& o = options_;
  LoadIssuer issuer(o, sut, t0_ns, queries_, seen_);
  const AnswerSink answer = [&](const SutAnswer& a) { issuer.Answer(a); };
  // The SUT says it is ready once it can take queries (its model loaded): the load starts
  // then, and nothing before it is charged to a query.
  std::string& ended = seen_.ended_because;
  queries_.reserve(ExpectedQueryRoom(o));
  ended = AwaitReady(sut);
  const std::optional<double> cpu_at_start = ended.empty() ? cpu_->Read() : std::optional<double>();
  issuer.Begin();
  bool issuing = ended.empty();
  while (ended.empty()) {
    int64_t t = issuer.Now();
    if (issuing) issuing = issuer.IssueDue(t);
    if (!issuing && issuer.outstanding() == 0) {
      ended = "done";
      break;
    }
    if (std::string hung = issuer.HungReason(t); !hung.empty()) {
      ended = std::move(hung);
      break;
    }
    const int64_t wake = o.scenario == Scenario::kServer && issuing ? issuer.next_arrival_ns() - t
                                                                    : o.query_timeout_ns;
    if (std::string why = sut.Pump(wake, answer); !why.empty()) ended = why + issuer.Progress();
  }
  // The command's CPU over the queries, read as the last answer came (the loop ends then).
  if (const std::optional<double> cpu_at_end = cpu_->Read(); cpu_at_start && cpu_at_end) {
    seen_.cpu_s = *cpu_at_end - *cpu_at_start;
    seen_.cpu_source = cpu_->source();
  }
  EndCommand(sut, answer);
  timespec zero{};
  while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
  }
  seen_.driver_cpu_s = static_cast<double>(options_.env->CpuNs(CLOCK_THREAD_CPUTIME_ID)) / 1e9;
  finished_.store(true, std::memory_order_release);
}

void LoadDriver::AwaitEnd() {
  if (thread_.joinable()) thread_.join();
}

namespace {

// The run's totals of a load: its throughput, CPU, accuracy and latency percentiles.
void AddLoadTotals(const LoadSummary& s, std::map<std::string, double>& totals) {
  totals["load_queries"] = static_cast<double>(s.completed);
  totals["load_qps"] = s.qps;
  totals["load_sample_rate"] = s.samples_per_s;
  if (s.cpu_s) totals["load_cpu_s"] = *s.cpu_s;
  if (s.accuracy) totals["load_accuracy"] = s.accuracy->fraction;
  const std::pair<const char*, const std::map<std::string, double>*> distributions[] = {
      {"latency", &s.latency_s}, {"ttft", &s.ttft_s}, {"tpot", &s.tpot_s}};
  for (const auto& [name, values] : distributions) {
    for (const char* p : {"p50", "p90", "p99"}) {
      if (auto it = values->find(p); it != values->end()) {
        totals[std::string("load_") + name + "_" + p + "_s"] = it->second;
      }
    }
  }
}

// What went wrong during a load, a line each, in the order a person reads them.
void AddLoadWarnings(const LoadSummary& s, const std::string& exit_note,
                     const Status& mlperf_written, std::vector<std::string>& warnings) {
  if (s.ready_timed_out) {
    warnings.push_back("the load never started: " + s.ended_because + "; the command was stopped");
  } else if (s.ended_because != "done") {
    warnings.push_back("the load ended early: " + s.ended_because);
  }
  if (!exit_note.empty()) warnings.push_back(exit_note);
  if (!mlperf_written.ok()) {
    warnings.push_back("MLPerf's log files were not written: " + mlperf_written.message());
  }
  if (!s.issue_lag_warning.empty()) warnings.push_back(s.issue_lag_warning);
  if (s.unknown_answers > 0) {
    warnings.push_back(std::to_string(s.unknown_answers) +
                       " line(s) of the command's output were not ID<TAB>RESULT of an "
                       "outstanding query, e.g. '" +
                       s.first_unknown + "'");
  }
  if (s.failed > 0) {
    warnings.push_back(std::to_string(s.failed) + " quer" + (s.failed == 1 ? "y" : "ies") +
                       " failed, e.g. " + s.first_failure);
  }
}

// A query as a value on the run's timeline: its latency by query id, and its times.
ValueRecord QueryValue(const QueryRecord& q, const std::string& run_id, bool accuracy) {
  ValueRecord v;
  v.run_id = run_id;
  v.name = "load.latency";
  v.step = q.id;
  v.t_ns = q.completed_ns.value_or(q.issued_ns);
  if (q.completed_ns) v.value = q.latency_s();
  json data = {
      {"scheduled_ns", q.scheduled_ns}, {"issued_ns", q.issued_ns}, {"samples", q.samples}};
  data["completed_ns"] = OrNull(q.completed_ns);
  if (q.first_byte_ns) data["first_byte_ns"] = *q.first_byte_ns;
  if (q.tokens > 0) data["tokens"] = q.tokens;
  if (q.failed) data["failed"] = true;
  data["sample_indices"] = q.sample_indices;
  if (accuracy) data["result"] = q.result;
  v.data_json = JsonText(data, -1);
  return v;
}

}  // namespace

Status LoadDriver::Finish(Store& store, const std::string& run_id, DriverResult& result) {
  AwaitEnd();
  summary_ = SummarizeLoad(options_, queries_, seen_);
  const LoadSummary& s = summary_;
  result.meta_key = "load";
  result.meta_json = LoadSummaryJson(s);
  result.stopped_command = stopped_command_;
  AddLoadTotals(s, result.totals);
  const Status mlperf_written = options_.mlperf_log_dir.empty()
                                    ? Status::Ok()
                                    : WriteMlperfLogs(options_.mlperf_log_dir, s, queries_);
  AddLoadWarnings(s, exit_note_, mlperf_written, result.warnings);
  return store.InTransaction([&]() -> Status {
    for (const QueryRecord& q : queries_) {
      FP_RETURN_IF_ERROR(store.InsertValue(QueryValue(q, run_id, options_.accuracy)));
    }
    return Status::Ok();
  });
}

}  // namespace footprint
