#include "footprint/load.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "util/clock.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr int64_t kExitGraceNs = 10'000'000'000;  // for the command to exit after its stdin
constexpr size_t kMaxLine = 1 << 20;              // an answer line longer than this is garbage

std::string PercentName(double p) {
  char text[16];
  std::snprintf(text, sizeof text, "p%g", p * 100);
  return text;
}

// The line protocol's two ends, non-blocking, driven by poll().
class Channel {
 public:
  Channel(int to, int from) : to_(to), from_(from) {
    ::fcntl(to_, F_SETFL, ::fcntl(to_, F_GETFL) | O_NONBLOCK);
    ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
  }
  ~Channel() {
    CloseInput();
    if (from_ >= 0) ::close(from_);
  }
  void Queue(std::string_view line) { out_.append(line); }
  bool pending() const { return written_ < out_.size(); }
  bool input_open() const { return to_ >= 0; }
  // The command's stdin closed: it reads end-of-file once it has read what was sent.
  void CloseInput() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }
  // Waits up to `timeout_ns` for the command's output (and room in its input, when there is
  // something to send); sends what fits. False when the command closed its stdin (EPIPE).
  bool Wait(int64_t timeout_ns) {
    pollfd fds[2] = {{from_, POLLIN, 0}, {pending() && to_ >= 0 ? to_ : -1, POLLOUT, 0}};
    const int ms =
        static_cast<int>(std::clamp<int64_t>((timeout_ns + 999'999) / 1'000'000, 0, 100));
    ::poll(fds, 2, ms);
    while (pending() && to_ >= 0) {
      ssize_t n = ::write(to_, out_.data() + written_, out_.size() - written_);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EPIPE) return false;
      break;  // full for now
    }
    if (!pending()) {
      out_.clear();
      written_ = 0;
    }
    return true;
  }
  // Reads what the command wrote; each whole line goes to `line(text, read_ns)`, with the
  // monotonic time its read() returned. False at end-of-file.
  template <typename F>
  bool Read(F&& line) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(from_, buf, sizeof buf);
      const int64_t read_ns = MonotonicNs();
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      in_.append(buf, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t nl; (nl = in_.find('\n', start)) != std::string::npos; start = nl + 1) {
        line(std::string_view(in_).substr(start, nl - start), read_ns);
      }
      in_.erase(0, start);
      if (in_.size() > kMaxLine) {
        line(std::string_view(in_).substr(0, 200), read_ns);
        in_.clear();
      }
    }
  }

 private:
  int to_, from_;
  std::string out_, in_;
  size_t written_ = 0;
};

// Reads the command's first line, which must be `ready`: "" once it is, else why not.
std::string WaitUntilReady(Channel& channel, int64_t timeout_ns) {
  const int64_t deadline = MonotonicNs() + timeout_ns;
  std::string first;
  bool got = false;
  while (!got) {
    if (MonotonicNs() > deadline) {
      return "the command did not say 'ready' within " +
             FormatDuration(static_cast<double>(timeout_ns) / 1e9);
    }
    if (!channel.Wait(deadline - MonotonicNs())) return "the command stopped reading";
    const bool open = channel.Read([&](std::string_view line, int64_t) {
      if (!got) first = std::string(line.substr(0, 120));
      got = true;
    });
    if (!got && !open) return "the command closed its output before it said 'ready'";
  }
  if (Trim(first) != "ready") {
    return "the command's first line was '" + Inert(first) +
           "', not 'ready' (the line protocol of footprint load --help)";
  }
  return "";
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
                          int64_t unknown_answers, std::string first_unknown,
                          std::string ended_because) {
  LoadSummary s;
  s.options = options;
  s.issued = static_cast<int64_t>(queries.size());
  s.unknown_answers = unknown_answers;
  s.first_unknown = std::move(first_unknown);
  s.ended_because = std::move(ended_because);
  std::vector<double> latencies;
  int64_t first_ns = INT64_MAX, last_ns = 0;
  for (const QueryRecord& q : queries) {
    first_ns = std::min(first_ns, q.scheduled_ns);
    if (!q.completed_ns) continue;
    latencies.push_back(q.latency_s());
    last_ns = std::max(last_ns, *q.completed_ns);
    s.samples_completed += q.samples;
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
  std::sort(latencies.begin(), latencies.end());
  for (double q : {0.50, 0.90, 0.95, 0.97, 0.99, 0.999}) {
    s.latency_s[PercentName(q)] = NearestRankPercentile(latencies, q);
  }
  double sum = 0;
  for (double v : latencies) sum += v;
  s.latency_s["mean"] = sum / static_cast<double>(latencies.size());
  s.latency_s["max"] = latencies.back();
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
              {"ended_because", s.ended_because}};
  if (!s.first_unknown.empty()) out["first_unknown_answer"] = s.first_unknown;
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
  thread_ = std::thread([this, start] { Drive(start); });
  return Status::Ok();
}

void LoadDriver::Drive(DriverStart start) {
  // A write to a command that closed its stdin fails with EPIPE instead of killing footprint:
  // SIGPIPE is directed at the writing thread, which blocks it (and drops it at the end).
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  Channel channel(start.to_command, start.from_command);
  auto now = [&] { return MonotonicNs() - start.t0_ns; };
  const LoadOptions& o = options_;
  const int per_query = o.scenario == Scenario::kMultiStream ? o.samples_per_query : 1;
  std::mt19937_64 rng(o.seed);
  std::exponential_distribution<double> gap_s(o.scenario == Scenario::kServer ? o.qps : 1.0);
  int64_t next_arrival_ns = 0;
  // A query's id is its index in queries_. The unanswered ones: their count, and the oldest
  // (a cursor that only moves forward), so that no step scans them all.
  size_t outstanding = 0, oldest = 0;
  int64_t next_sample = 0;
  auto issue = [&](int64_t scheduled_ns) {
    QueryRecord q;
    q.id = static_cast<int64_t>(queries_.size());
    q.samples = per_query;
    q.scheduled_ns = scheduled_ns;
    q.issued_ns = now();
    std::string line = std::to_string(q.id) + "\t";
    for (int k = 0; k < per_query; ++k) line += (k ? "," : "") + std::to_string(next_sample++);
    channel.Queue(line + "\n");
    ++outstanding;
    queries_.push_back(q);
  };
  int64_t start_ns = 0;  // when the command said it was ready
  auto enough = [&](int64_t at_ns) {
    const auto issued = static_cast<int64_t>(queries_.size());
    if (o.scenario == Scenario::kOffline) return issued >= o.min_queries;
    return issued >= o.min_queries && at_ns - start_ns >= o.min_duration_ns;
  };
  auto answer = [&](std::string_view line, int64_t at_ns) {
    const size_t tab = line.find('\t');
    int64_t id = -1;
    const std::string_view head = line.substr(0, tab);
    auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), id);
    const bool known = ec == std::errc() && end == head.data() + head.size() &&
                       tab != std::string_view::npos && id >= 0 &&
                       id < static_cast<int64_t>(queries_.size()) &&
                       !queries_[static_cast<size_t>(id)].completed_ns;
    if (!known) {
      if (unknown_answers_++ == 0) first_unknown_ = Inert(line.substr(0, 120));
      return;
    }
    queries_[static_cast<size_t>(id)].completed_ns = at_ns;
    --outstanding;
    while (oldest < queries_.size() && queries_[oldest].completed_ns) ++oldest;
  };
  // The command says `ready` once it can take queries (its model loaded): the load starts
  // then, and nothing before it is charged to a query.
  ended_because_ = WaitUntilReady(channel, o.ready_timeout_ns);
  start_ns = now();
  next_arrival_ns = start_ns;
  bool issuing = ended_because_.empty();
  while (ended_because_.empty()) {
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
      ended_because_ = "done";
      break;
    }
    if (outstanding > 0 && t - queries_[oldest].issued_ns > o.query_timeout_ns) {
      ended_because_ = "query " + std::to_string(oldest) + " got no answer within " +
                       FormatDuration(static_cast<double>(o.query_timeout_ns) / 1e9) +
                       "; the command seems hung";
      break;
    }
    const int64_t wake =
        o.scenario == Scenario::kServer && issuing ? next_arrival_ns - t : o.query_timeout_ns;
    if (!channel.Wait(wake)) {
      ended_because_ = "the command stopped reading its queries after " +
                       std::to_string(queries_.size() - outstanding) + " answers";
      break;
    }
    if (!channel.Read([&](std::string_view line, int64_t at) { answer(line, at - start.t0_ns); })) {
      ended_because_ = "the command closed its output after answering " +
                       std::to_string(queries_.size() - outstanding) + " of " +
                       std::to_string(queries_.size()) + " queries";
      break;
    }
  }
  // The end of the queries; the command should exit now. Lines after it are not answers.
  channel.CloseInput();
  const int64_t deadline = MonotonicNs() + kExitGraceNs;
  bool open = true;
  while (open && MonotonicNs() < deadline) {
    channel.Wait(deadline - MonotonicNs());
    open = channel.Read([&](std::string_view line, int64_t at) { answer(line, at - start.t0_ns); });
  }
  if (open) {
    // Through the pidfd taken at the start: once reaped, the pid may name another process.
    const bool stopped =
        pidfd_ >= 0 ? ::syscall(SYS_pidfd_send_signal, pidfd_, SIGTERM, nullptr, 0) == 0 : false;
    exit_note_ = "the command's output was still open " +
                 FormatDuration(static_cast<double>(kExitGraceNs) / 1e9) +
                 " after the end of its stdin: " +
                 (stopped ? "stopped with SIGTERM"
                          : "the command had exited; a process it started may hold it");
  }
  timespec zero{};
  while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
  }
}

Status LoadDriver::Finish(Store& store, const std::string& run_id, DriverResult& result) {
  if (thread_.joinable()) thread_.join();
  summary_ = SummarizeLoad(options_, queries_, unknown_answers_, first_unknown_, ended_because_);
  const LoadSummary& s = summary_;
  result.meta_key = "load";
  result.meta_json = LoadSummaryJson(s);
  result.totals["load_queries"] = static_cast<double>(s.completed);
  result.totals["load_qps"] = s.qps;
  result.totals["load_sample_rate"] = s.samples_per_s;
  for (const char* p : {"p50", "p90", "p99"}) {
    if (auto it = s.latency_s.find(p); it != s.latency_s.end()) {
      result.totals[std::string("load_latency_") + p + "_s"] = it->second;
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
      v.data_json = JsonText(data, -1);
      FP_RETURN_IF_ERROR(store.InsertValue(v));
    }
    return Status::Ok();
  });
}

}  // namespace footprint
