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

#include "run/sut_transport.h"
#include "util/clock.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr int64_t kExitGraceNs = 10'000'000'000;  // for the command to exit after its stdin

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

}  // namespace

Result<Scenario> ParseScenario(std::string_view name) {
  const std::string n = Lower(name);
  if (n == "single" || n == "singlestream") return Scenario::kSingleStream;
  if (n == "multi" || n == "multistream") return Scenario::kMultiStream;
  if (n == "server") return Scenario::kServer;
  if (n == "offline") return Scenario::kOffline;
  return InvalidArgument("unknown scenario '" + std::string(name) +
                         "'; use --scenario single, multi, server or offline");
}

std::string_view ScenarioName(Scenario scenario) {
  switch (scenario) {
    case Scenario::kSingleStream:
      return "single";
    case Scenario::kMultiStream:
      return "multi";
    case Scenario::kServer:
      return "server";
    case Scenario::kOffline:
      return "offline";
  }
  return "?";
}

double ScenarioPercentile(Scenario scenario) {
  return scenario == Scenario::kSingleStream ? 0.90 : 0.99;
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
  if (o.query_timeout_ns <= 0) return InvalidArgument("--query-timeout must be positive");
  if (!o.http_url.empty()) return ParseHttpTarget(o.http_url, o.http_body).status();
  return Status::Ok();
}

double NearestRankPercentile(const std::vector<double>& sorted, double p) {
  const double rank = std::ceil(p * static_cast<double>(sorted.size()));
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

int64_t EarlyStoppingMinimum(double percentile) {
  if (std::abs(percentile - 0.90) < 1e-9) return 64;
  if (std::abs(percentile - 0.99) < 1e-9) return 662;
  return 0;
}

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
  std::vector<double> latencies, ttft, tpot;
  int64_t first_ns = INT64_MAX, last_ns = 0;
  for (const QueryRecord& q : queries) {
    first_ns = std::min(first_ns, q.scheduled_ns);
    s.failed += q.failed ? 1 : 0;
    if (!q.completed_ns) continue;
    latencies.push_back(q.latency_s());
    last_ns = std::max(last_ns, *q.completed_ns);
    s.samples_completed += q.samples;
    s.tokens += q.tokens;
    if (q.first_byte_ns && q.tokens > 1) {
      ttft.push_back(static_cast<double>(*q.first_byte_ns - q.scheduled_ns) / 1e9);
      tpot.push_back(static_cast<double>(*q.completed_ns - *q.first_byte_ns) / 1e9 /
                     (q.tokens - 1));
    }
  }
  s.completed = static_cast<int64_t>(latencies.size());
  const double p = ScenarioPercentile(options.scenario);
  const int64_t minimum = EarlyStoppingMinimum(p);
  s.early_stopping = std::to_string(s.completed) +
                     " queries answered: " + (s.completed >= minimum ? "enough" : "too few") +
                     " for a " + PercentName(p) + " claim (MLPerf's early stopping needs " +
                     std::to_string(minimum) + ")";
  if (latencies.empty()) return s;
  s.duration_s = static_cast<double>(last_ns - first_ns) / 1e9;
  s.window_start_ns = first_ns;
  s.window_end_ns = last_ns;
  if (s.duration_s > 0) {
    s.qps = static_cast<double>(s.completed) / s.duration_s;
    s.samples_per_s = static_cast<double>(s.samples_completed) / s.duration_s;
  }
  s.latency_s = Distribution(std::move(latencies));
  s.ttft_s = Distribution(std::move(ttft));
  s.tpot_s = Distribution(std::move(tpot));
  if (options.latency_bound_s) {
    s.validity = s.latency_s[PercentName(p)] <= *options.latency_bound_s && s.completed == s.issued
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
                  {"seed", o.seed},
                  {"query_timeout_s", static_cast<double>(o.query_timeout_ns) / 1e9}};
  if (o.scenario == Scenario::kServer) options["qps"] = o.qps;
  if (o.scenario == Scenario::kMultiStream) options["samples_per_query"] = o.samples_per_query;
  if (!o.http_url.empty()) options["http"] = {{"url", o.http_url}, {"body", o.http_body}};
  json out = {{"scenario", ScenarioName(o.scenario)},
              {"options", options},
              {"percentile", ScenarioPercentile(o.scenario)},
              {"issued", s.issued},
              {"queries", s.completed},
              {"samples", s.samples_completed},
              {"duration_s", s.duration_s},
              {"window_start_ns", s.window_start_ns},
              {"window_end_ns", s.window_end_ns},
              {"qps", s.qps},
              {"samples_per_s", s.samples_per_s},
              {"latency_s", s.latency_s},
              {"latency_bound_s", o.latency_bound_s ? json(*o.latency_bound_s) : json(nullptr)},
              {"validity", s.validity.empty() ? json(nullptr) : json(s.validity)},
              {"early_stopping", s.early_stopping},
              {"unknown_answers", s.unknown_answers},
              {"failed", s.failed},
              {"driver_cpu_s", s.driver_cpu_s},
              {"ended_because", s.ended_because}};
  if (!s.first_unknown.empty()) out["first_unknown_answer"] = s.first_unknown;
  if (!s.first_failure.empty()) out["first_failure"] = s.first_failure;
  if (!s.ttft_s.empty()) {
    out["tokens"] = s.tokens;
    out["ttft_s"] = s.ttft_s;
    out["tpot_s"] = s.tpot_s;
  }
  return JsonText(out, -1);
}

LoadDriver::LoadDriver(LoadOptions options) : options_(std::move(options)) {}

LoadDriver::~LoadDriver() {
  if (thread_.joinable()) thread_.join();
  if (pidfd_ >= 0) ::close(pidfd_);
}

Status LoadDriver::Start(const DriverStart& start) {
  // The command is not reaped before Finish, so its pid is still its own here.
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, start.command, 0));
  std::unique_ptr<SutTransport> transport;
  if (options_.http_url.empty()) {
    transport = MakeLineTransport(start.to_command, start.from_command);
  } else {
    if (pidfd_ < 0) {  // without it, the server could neither be watched nor stopped
      return Unsupported(std::string("--http needs pidfd_open (Linux 5.3): ") +
                         std::strerror(errno));
    }
    FP_ASSIGN_OR_RETURN(HttpTarget target, ParseHttpTarget(options_.http_url, options_.http_body));
    transport = MakeHttpTransport(target, pidfd_);
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
  const timespec grace = TimespecOf(kExitGraceNs);
  if (::ppoll(&exited, 1, &grace, nullptr) == 0) {
    ::syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    exit_note_ = "the command did not exit within " +
                 FormatDuration(static_cast<double>(kExitGraceNs) / 1e9) +
                 " of SIGTERM at the end of the load: killed";
  }
  return true;
}

void LoadDriver::Drive(SutTransport& sut, int64_t t0_ns) {
  // A write to a command that closed its stdin fails with EPIPE instead of killing footprint:
  // SIGPIPE is directed at the writing thread, which blocks it (and drops it at the end).
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  // The issuer's waits end when asked, not up to 50 µs later (the default timer slack).
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  auto now = [&] { return MonotonicNs() - t0_ns; };
  const LoadOptions& o = options_;
  const int per_query = o.scenario == Scenario::kMultiStream ? o.samples_per_query : 1;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap_s(o.scenario == Scenario::kServer ? o.qps : 1.0);
  int64_t next_arrival_ns = 0;
  // A query's id is its index in queries_. The unanswered ones: their count, and the oldest
  // (a cursor that only moves forward), so that no step scans them all.
  size_t outstanding = 0, oldest = 0;
  int64_t next_sample = 0;
  std::string samples;
  auto issue = [&](int64_t scheduled_ns) {
    QueryRecord q;
    q.id = static_cast<int64_t>(queries_.size());
    q.samples = per_query;
    q.scheduled_ns = scheduled_ns;
    q.issued_ns = now();
    samples.clear();
    for (int k = 0; k < per_query; ++k) {
      if (k) samples += ',';
      samples += std::to_string(next_sample++);
    }
    sut.Send(q.id, samples);
    ++outstanding;
    queries_.push_back(q);
  };
  int64_t start_ns = 0;  // when the command said it was ready
  auto enough = [&](int64_t at_ns) {
    const auto issued = static_cast<int64_t>(queries_.size());
    if (o.scenario == Scenario::kOffline) return issued >= o.min_queries;
    return issued >= o.min_queries && at_ns - start_ns >= o.min_duration_ns;
  };
  const AnswerSink answer = [&](const SutAnswer& a) {
    QueryRecord* q = a.id >= 0 && a.id < static_cast<int64_t>(queries_.size())
                         ? &queries_[static_cast<size_t>(a.id)]
                         : nullptr;
    if (q == nullptr || q->completed_ns || q->failed) {
      if (seen_.unknown_answers++ == 0) seen_.first_unknown = Inert(a.text.substr(0, 120));
      return;
    }
    if (a.error.empty()) {
      q->completed_ns = a.completed_ns - t0_ns;
    } else {
      q->failed = true;
      if (seen_.first_failure.empty()) {
        seen_.first_failure = "query " + std::to_string(a.id) + ": " + std::string(a.error);
      }
    }
    if (a.first_byte_ns) q->first_byte_ns = *a.first_byte_ns - t0_ns;
    q->tokens = a.tokens;
    --outstanding;
    while (oldest < queries_.size() && (queries_[oldest].completed_ns || queries_[oldest].failed))
      ++oldest;
  };
  auto progress = [&] {
    const auto answered = std::count_if(queries_.begin(), queries_.end(),
                                        [](const QueryRecord& q) { return q.completed_ns; });
    return " after answering " + std::to_string(answered) + " of " +
           std::to_string(queries_.size()) + " queries";
  };
  // The SUT says it is ready once it can take queries (its model loaded): the load starts
  // then, and nothing before it is charged to a query.
  std::string& ended = seen_.ended_because;
  // Room for the queries this load is expected to issue, and half again: growing the vector
  // under way copies every record, a pause of tens of milliseconds at 300k queries/s that
  // the queries scheduled meanwhile would be charged with.
  const double expected =
      o.scenario == Scenario::kServer ? o.qps * static_cast<double>(o.min_duration_ns) / 1e9 : 0;
  queries_.reserve(static_cast<size_t>(
      std::min(1.5 * std::max(expected, static_cast<double>(o.min_queries)), 5e7)));
  ended = sut.WaitUntilReady(MonotonicNs() + o.ready_timeout_ns);
  start_ns = now();
  next_arrival_ns = start_ns;
  bool issuing = ended.empty();
  while (ended.empty()) {
    int64_t t = now();
    if (issuing) {
      switch (o.scenario) {
        case Scenario::kSingleStream:
        case Scenario::kMultiStream:
          if (enough(t)) {
            issuing = false;
          } else if (outstanding == 0) {
            issue(t);
          }
          break;
        case Scenario::kServer:
          while (next_arrival_ns <= t && !enough(next_arrival_ns)) {
            issue(next_arrival_ns);
            next_arrival_ns += static_cast<int64_t>(std::llround(gap_s(rng) * 1e9));
          }
          if (enough(next_arrival_ns)) issuing = false;
          break;
        case Scenario::kOffline:
          while (!enough(t)) issue(start_ns);
          issuing = false;
          break;
      }
    }
    if (!issuing && outstanding == 0) {
      ended = "done";
      break;
    }
    if (outstanding > 0 && t - queries_[oldest].issued_ns > o.query_timeout_ns) {
      ended = "query " + std::to_string(oldest) + " got no answer within " +
              FormatDuration(static_cast<double>(o.query_timeout_ns) / 1e9) +
              "; the command seems hung";
      break;
    }
    const int64_t wake =
        o.scenario == Scenario::kServer && issuing ? next_arrival_ns - t : o.query_timeout_ns;
    if (std::string why = sut.Pump(wake, answer); !why.empty()) ended = why + progress();
  }
  // The end of the queries; the command should exit now (a server is stopped).
  sut.EndQueries();
  if (sut.StopsCommandAtEnd()) {
    stopped_command_ = StopCommand();
  } else if (!sut.WaitForEnd(MonotonicNs() + kExitGraceNs, answer)) {
    exit_note_ = "the command's output was still open " +
                 FormatDuration(static_cast<double>(kExitGraceNs) / 1e9) +
                 " after the end of its stdin: " +
                 (StopCommand() ? "stopped with SIGTERM"
                                : "the command had exited; a process it started may hold it");
  }
  timespec zero{}, cpu{};
  while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  seen_.driver_cpu_s = static_cast<double>(NsOf(cpu)) / 1e9;
}

Status LoadDriver::Finish(Store& store, const std::string& run_id, DriverResult& result) {
  if (thread_.joinable()) thread_.join();
  summary_ = SummarizeLoad(options_, queries_, seen_);
  const LoadSummary& s = summary_;
  result.meta_key = "load";
  result.meta_json = LoadSummaryJson(s);
  result.stopped_command = stopped_command_;
  result.totals["load_queries"] = static_cast<double>(s.completed);
  result.totals["load_qps"] = s.qps;
  result.totals["load_sample_rate"] = s.samples_per_s;
  const std::pair<const char*, const std::map<std::string, double>*> distributions[] = {
      {"latency", &s.latency_s}, {"ttft", &s.ttft_s}, {"tpot", &s.tpot_s}};
  for (const auto& [name, values] : distributions) {
    for (const char* p : {"p50", "p90", "p99"}) {
      if (auto it = values->find(p); it != values->end()) {
        result.totals[std::string("load_") + name + "_" + p + "_s"] = it->second;
      }
    }
  }
  if (s.ended_because != "done")
    result.warnings.push_back("the load ended early: " + s.ended_because);
  if (!exit_note_.empty()) result.warnings.push_back(exit_note_);
  if (s.unknown_answers > 0) {
    result.warnings.push_back(std::to_string(s.unknown_answers) +
                              " line(s) of the command's output were not ID<TAB>RESULT of an "
                              "outstanding query, e.g. '" +
                              s.first_unknown + "'");
  }
  if (s.failed > 0) {
    result.warnings.push_back(std::to_string(s.failed) + " quer" + (s.failed == 1 ? "y" : "ies") +
                              " failed, e.g. " + s.first_failure);
  }
  // Each query as a value on the run's timeline: latency by query id, and its times.
  return store.InTransaction([&]() -> Status {
    for (const QueryRecord& q : queries_) {
      ValueRecord v;
      v.run_id = run_id;
      v.name = "load.latency";
      v.step = q.id;
      v.t_ns = q.completed_ns.value_or(q.issued_ns);
      if (q.completed_ns) v.value = q.latency_s();
      json data = {
          {"scheduled_ns", q.scheduled_ns}, {"issued_ns", q.issued_ns}, {"samples", q.samples}};
      data["completed_ns"] = q.completed_ns ? json(*q.completed_ns) : json(nullptr);
      if (q.first_byte_ns) data["first_byte_ns"] = *q.first_byte_ns;
      if (q.tokens > 0) data["tokens"] = q.tokens;
      if (q.failed) data["failed"] = true;
      v.data_json = JsonText(data, -1);
      FP_RETURN_IF_ERROR(store.InsertValue(v));
    }
    return Status::Ok();
  });
}

}  // namespace footprint
