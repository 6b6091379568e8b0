// RunMonitored: start a command behind a gate, measure it, reap it, store the totals.
#include "footprint/monitor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "probe/cgroup.h"
#include "probe/gpu_probe.h"
#include "probe/perf_probe.h"
#include "probe/process_tree_probe.h"
#include "probe/rapl_probe.h"
#include "probe/system_probe.h"
#include "run/run_metadata.h"
#include "run/stop_signals.h"
#include "sampler/sampler.h"
#include "store/writer.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/proc_parse.h"

namespace footprint {
namespace {

using json = nlohmann::json;

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

// Sums of the kernel's rusage for every process footprint reaps. The command's own rusage
// includes all descendants it (transitively) waited for; orphans re-parented to footprint are
// reaped here and added separately, so nothing is counted twice.
struct RusageTotals {
  double user_s = 0;
  double system_s = 0;
  int64_t max_rss_bytes = 0;
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
  int reaped = 0;
};

// Blocks the signals footprint waits for, for the lifetime of the object, and restores the
// previous mask and subreaper flag afterwards (dropping signals that arrived meanwhile, which
// were meant for the command).
class SignalScope {
 public:
  SignalScope() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGCHLD);
    for (int s : kStopSignals) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
    struct sigaction sa = {};
    sa.sa_handler = [](int) {};  // a handler, so SIGCHLD is never discarded as ignored
    sigaction(SIGCHLD, &sa, &old_chld_);
    prctl(PR_GET_CHILD_SUBREAPER, &old_subreaper_);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~SignalScope() {
    timespec zero = {0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
    sigaction(SIGCHLD, &old_chld_, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  const sigset_t& set() const { return set_; }
  const sigset_t& old_mask() const { return old_mask_; }

 private:
  sigset_t set_, old_mask_;
  struct sigaction old_chld_;
  int old_subreaper_ = 0;
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// What a program using the API needs to join the run (include/footprint/api.h).
struct JoinEnvironment {
  const char* run_id;
  const char* db;
  const std::map<std::string, std::string>* extra;  // MonitorOptions::environment
};

// In the child, between fork and exec. The parent forks before starting any thread, so the
// child may allocate (setenv); nothing here touches footprint's own state.
// If exec fails, the child sends its errno through the close-on-exec `report_fd`.
[[noreturn]] void ChildExec(char* const* argv, const sigset_t& mask, const JoinEnvironment& env,
                            int gate_fd, int report_fd) {
  for (int s : kStopSignals) signal(s, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  // The gate opens with the run's start on the monotonic clock, for programs that join it.
  int64_t t0 = 0;
  if (::read(gate_fd, &t0, sizeof t0) != sizeof t0) _exit(125);  // footprint gave up
  char t0_text[24];
  snprintf(t0_text, sizeof t0_text, "%lld", static_cast<long long>(t0));
  setenv("FOOTPRINT_T0_NS", t0_text, 1);
  setenv("FOOTPRINT_RUN_ID", env.run_id, 1);
  setenv("FOOTPRINT_DB", env.db, 1);
  for (const auto& [name, value] : *env.extra) setenv(name.c_str(), value.c_str(), 1);
  execvp(argv[0], argv);
  int error = errno;
  (void)!::write(report_fd, &error, sizeof error);
  _exit(error == ENOENT || error == ENOTDIR ? 127 : 126);
}

MetricIntervals ResolveIntervals(const MonitorOptions& o) {
  MetricIntervals iv{};
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (!o.metrics.test(m)) continue;
    auto it = o.metric_interval_ns.find(static_cast<MetricId>(m));
    iv[m] = it != o.metric_interval_ns.end() ? it->second : o.interval_ns;
  }
  return iv;
}

}  // namespace

Status ValidateMonitorOptions(const MonitorOptions& o) {
  if (o.command.empty() || o.command[0].empty()) {
    return InvalidArgument("no command to run; write it after --, e.g. footprint run -- sleep 1");
  }
  auto check = [](int64_t ns, const std::string& what) -> Status {
    if (ns < kMinIntervalNs) {
      return InvalidArgument(what + " must be at least 1ms (got " + std::to_string(ns) + " ns)");
    }
    return Status::Ok();
  };
  FP_RETURN_IF_ERROR(check(o.interval_ns, "the sampling interval"));
  for (const auto& [m, ns] : o.metric_interval_ns) {
    FP_RETURN_IF_ERROR(check(ns, "the interval of " + std::string(InfoOf(m).name)));
  }
  if (o.flush_interval_ns <= 0 || o.flush_interval_ns > kNsPerSec) {
    return InvalidArgument("the flush interval must be between 0 and 1s");
  }
  if (o.metrics.none()) return InvalidArgument("no metric selected");
  return Status::Ok();
}

Result<MonitorOutcome> RunMonitored(Store& store, const MonitorOptions& opt) {
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(opt));
  const MetricIntervals intervals = ResolveIntervals(opt);
  Result<PerfProbe::Options> perf_options = PerfProbe::Options::FromEnvironment();
  if (!perf_options.ok()) return perf_options.status();

  // --- Everything slow or fallible happens before the command exists. -----------------
  json meta;
  RunRecord run = NewRunRecord(opt.command, opt.name, opt.description, opt.tags, opt.params,
                               opt.record_git, meta);
  json interval_meta = json::object();
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (intervals[m] > 0) interval_meta[std::string(MetricCatalogue()[m].name)] = intervals[m];
  }
  meta["intervals_ns"] = interval_meta;
  if (!opt.group_id.empty()) {
    run.group_id = opt.group_id;
    run.repetition = opt.repetition;
    meta["group"] = {{"repetitions", opt.planned_repetitions}, {"warmups", opt.planned_warmups}};
  }
  run.experiment = opt.experiment;
  run.workload = opt.workload;
  if (!opt.extra_meta_json.empty()) {
    json extra = json::parse(opt.extra_meta_json, nullptr, false);
    if (!extra.is_object()) return InvalidArgument("extra_meta_json is not a JSON object");
    meta.update(extra);
  }

  std::unique_ptr<RunCgroup> cgroup;
  json sources = json::object();
  if (opt.use_cgroup) {
    static const CgroupSupport support = DetectCgroups();
    auto cg = RunCgroup::Create(support, "footprint-" + run.id);
    if (cg.ok()) {
      cgroup = std::move(cg).value();
    } else {
      sources["cgroup_unavailable"] = cg.status().message();
    }
  } else {
    sources["cgroup_unavailable"] = "disabled with --no-cgroup";
  }

  ReapedTotals reaped;
  auto tree_owned = std::make_unique<ProcessTreeProbe>(ProcessTreeProbe::Options{
      ::getpid(), cgroup && !cgroup->procs_path().empty() ? cgroup.get() : nullptr, &reaped,
      "/proc"});
  ProcessTreeProbe* tree = tree_owned.get();
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::move(tree_owned));
  probes.push_back(std::make_unique<SystemProbe>());
  probes.push_back(std::make_unique<RaplProbe>());
  probes.push_back(std::make_unique<PerfProbe>(std::move(perf_options).value()));
  // Loads NVML only when a GPU metric is wanted; without a GPU (or driver) meta.gpu says why,
  // and a warning too when -m chose GPU metrics (a selection that narrows the defaults and
  // keeps them); the default set, alone or extended, quietly has none then.
  UnavailableMetrics unavailable_gpu;
  const bool chose_gpu = (opt.metrics & DefaultMetrics()) != DefaultMetrics();
  if (auto gpu = GpuProbe::Open(opt.metrics, tree, opt.gpus, meta,
                                chose_gpu ? &unavailable_gpu : nullptr)) {
    probes.push_back(std::move(gpu));
  }
  SampleQueue queue(1 << 16);
  Sampler sampler(std::move(probes), intervals, queue);

  run.started_at_ns = RealtimeNs();
  run.meta_json = JsonText(meta);
  std::vector<int64_t> series_ids;
  FP_RETURN_IF_ERROR(store.InTransaction([&]() -> Status {  // one commit for run and series
    FP_RETURN_IF_ERROR(store.CreateRun(run));
    auto ids = RegisterSeries(store, run.id, sampler.series());
    if (!ids.ok()) return ids.status();
    series_ids = std::move(ids).value();
    return Status::Ok();
  }));

  // From here on the run exists: if footprint fails before the command starts, the run is
  // stored as failed with the reason (never left 'running', to be taken for interrupted).
  auto abandon = [&](Status st) -> Status {
    run.status = RunStatus::kFailed;
    run.ended_at_ns = RealtimeNs();
    meta["launch_error"] = st.message();
    run.meta_json = JsonText(meta);
    (void)store.FinishRun(run, {});
    return st;
  };

  // The environment tells a program using footprint's API which run it belongs to.
  std::string db_path = store.location();
  if (!db_path.empty() && db_path[0] != '/') db_path = CurrentDir() + "/" + db_path;
  const JoinEnvironment join_env{run.id.c_str(), db_path.c_str(), &opt.environment};
  std::vector<char*> argv;
  for (const auto& a : opt.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // --- Start the command behind a gate. -------------------------------------------------
  SignalScope signals;
  int gate[2], report[2];
  if (::pipe2(gate, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    return abandon(IoError(std::string("cannot create a pipe: ") + std::strerror(errno)));
  }
  pid_t child = ::fork();
  if (child < 0) {
    int err = errno;
    for (int fd : {gate[0], gate[1], report[0], report[1]}) ::close(fd);
    return abandon(
        IoError(std::string("cannot start the command: fork failed: ") + std::strerror(err)));
  }
  if (child == 0) {
    // Only the parent may hold the gate's write end: with a copy here, the child would never
    // read end-of-file when footprint gives up before opening the gate, and never exit.
    ::close(gate[1]);
    ::close(report[0]);
    ChildExec(argv.data(), signals.old_mask(), join_env, gate[0], report[1]);
  }
  CloseFd(gate[0]);
  CloseFd(report[1]);
  // Into the cgroup before the clock starts, so that the first sample already sees it (the
  // child waits at the gate meanwhile; moving it can take tens of milliseconds).
  if (cgroup) {
    if (Status st = cgroup->Join(child); !st.ok()) {
      CloseFd(gate[1]);  // the child reads end-of-file and exits without running the command
      CloseFd(report[0]);
      ::waitpid(child, nullptr, 0);
      return abandon(st);
    }
  }

  for (Probe* probe : sampler.probes()) probe->AttachToCommand(child);

  if (opt.before_start) {
    if (Status st = opt.before_start(); !st.ok()) {
      CloseFd(gate[1]);  // the child reads end-of-file and exits without running the command
      CloseFd(report[0]);
      ::waitpid(child, nullptr, 0);
      return abandon(st);
    }
  }

  Writer writer(store, queue, run.id, opt.flush_interval_ns);
  int64_t t0 = 0;
  try {
    writer.Start();
    t0 = MonotonicNs();
    run.started_at_ns = RealtimeNs();
    sampler.Start(t0, series_ids);
  } catch (const std::system_error& e) {
    CloseFd(gate[1]);  // the child reads EOF and exits without running the command
    CloseFd(report[0]);
    ::waitpid(child, nullptr, 0);
    return abandon(InternalError(std::string("cannot start footprint's threads: ") + e.what()));
  }
  (void)!::write(gate[1], &t0, sizeof t0);
  CloseFd(gate[1]);

  MonitorOutcome out;
  int exec_error = 0;
  ssize_t got;
  while ((got = ::read(report[0], &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  CloseFd(report[0]);
  if (got == sizeof exec_error) {
    out.launch_error =
        "cannot run '" + opt.command[0] + "': " +
        (exec_error == ENOENT ? std::string("command not found") : std::strerror(exec_error));
  }

  // --- Wait: reap everything, forward signals. ----------------------------------------
  RusageTotals usage;
  int wait_status = 0;
  bool command_done = false;
  int forwarded = 0;
  auto reap_all = [&] {
    int status;
    rusage ru;
    pid_t pid;
    while ((pid = ::wait4(-1, &status, WNOHANG, &ru)) > 0) {
      usage.user_s += Seconds(ru.ru_utime);
      usage.system_s += Seconds(ru.ru_stime);
      usage.max_rss_bytes = std::max<int64_t>(usage.max_rss_bytes, ru.ru_maxrss * 1024);
      usage.read_bytes += ru.ru_inblock * 512;
      usage.write_bytes += ru.ru_oublock * 512;
      ++usage.reaped;
      reaped.cpu_ns.fetch_add(
          static_cast<int64_t>((Seconds(ru.ru_utime) + Seconds(ru.ru_stime)) * 1e9),
          std::memory_order_relaxed);
      reaped.read_bytes.fetch_add(ru.ru_inblock * 512, std::memory_order_relaxed);
      reaped.write_bytes.fetch_add(ru.ru_oublock * 512, std::memory_order_relaxed);
      if (pid == child) {
        wait_status = status;
        command_done = true;
      }
    }
  };
  while (!command_done) {
    siginfo_t info;
    int sig = sigwaitinfo(&signals.set(), &info);
    if (sig < 0) continue;  // EINTR
    if (sig != SIGCHLD && out.signal_received == 0) out.signal_received = sig;
    if (sig == SIGCHLD) {
      reap_all();
    } else if (info.si_code != SI_KERNEL) {
      // Sent to footprint by a process (kill, a scheduler): pass it on. A terminal's
      // SIGINT/SIGQUIT comes with SI_KERNEL and already reached the command's process group.
      ::kill(child, sig);
      ++forwarded;
    }
  }
  const int64_t t_end = MonotonicNs();
  if (out.signal_received == 0) {  // one that arrived as the command ended, still pending
    sigset_t pending;
    sigpending(&pending);
    for (int s : kStopSignals) {
      if (sigismember(&pending, s) == 1) {
        out.signal_received = s;
        break;
      }
    }
  }
  run.ended_at_ns = run.started_at_ns + (t_end - t0);
  sampler.Stop();
  reap_all();  // orphans that ended meanwhile
  writer.Stop();

  // --- Outcome and totals. --------------------------------------------------------------
  if (WIFSIGNALED(wait_status)) {
    out.exit_status = 128 + WTERMSIG(wait_status);
    run.status = RunStatus::kKilled;
  } else {
    out.exit_status = WEXITSTATUS(wait_status);
    run.status = out.exit_status == 0 ? RunStatus::kOk : RunStatus::kFailed;
  }
  run.exit_code = out.exit_status;

  std::map<std::string, double>& t = out.totals;
  t["duration_s"] = static_cast<double>(t_end - t0) / 1e9;
  sources["cpu"] = "rusage (wait4 of the command and of re-parented orphans)";
  t["cpu_user_s"] = usage.user_s;
  t["cpu_system_s"] = usage.system_s;
  json accounting = {{"rusage_user_s", usage.user_s},
                     {"rusage_system_s", usage.system_s},
                     {"processes_reaped", usage.reaped}};
  if (cgroup && cgroup->has_cpu()) {
    if (auto us = cgroup->CpuUserSystemNs()) {
      // The cgroup's total is exact and also holds processes nobody waited for and ones still
      // running. Its user/system split is approximate (the kernel attributes whole scheduler
      // ticks), while rusage's is per process: keep rusage's proportions, scaled to the total.
      const double cg_user = static_cast<double>(us->first) / 1e9;
      const double cg_system = static_cast<double>(us->second) / 1e9;
      const double total = cg_user + cg_system;
      const double ru_total = usage.user_s + usage.system_s;
      // Both scaled (not system = total - user), so that a part rusage saw as 0 stays 0
      // instead of a rounding residue such as 3e-17.
      t["cpu_user_s"] = ru_total > 0 ? total * usage.user_s / ru_total : cg_user;
      t["cpu_system_s"] = ru_total > 0 ? total * usage.system_s / ru_total : cg_system;
      accounting["cgroup_user_s"] = cg_user;
      accounting["cgroup_system_s"] = cg_system;
      sources["cpu"] = cgroup->cpu_source() + " total, split as rusage";
    }
  }
  int64_t max_process = std::max(usage.max_rss_bytes, tree->peak_process_rss_bytes());
  int64_t peak = std::max(max_process, tree->peak_tree_rss_bytes());
  json peaks = {{"max_process_hwm_bytes", usage.max_rss_bytes},
                {"sampled_tree_rss_bytes", tree->peak_tree_rss_bytes()}};
  sources["peak_memory"] = "sampled sum of RSS, raised to the largest process high-water mark";
  if (cgroup && cgroup->has_memory()) {
    if (auto cg_peak = cgroup->MemoryPeakBytes()) {
      peaks["cgroup_peak_bytes"] = *cg_peak;
      // The cgroup's peak includes page cache the tree caused and misses shared pages
      // charged elsewhere, so the reported peak is the largest of the three.
      if (*cg_peak >= peak) sources["peak_memory"] = cgroup->memory_source();
      peak = std::max(peak, *cg_peak);
    }
  }
  t["peak_memory_bytes"] = static_cast<double>(peak);
  t["max_process_peak_bytes"] = static_cast<double>(max_process);
  t["io_read_bytes"] = static_cast<double>(usage.read_bytes);
  t["io_write_bytes"] = static_cast<double>(usage.write_bytes);
  sources["io"] = "rusage block I/O of reaped processes";
  rusage self;
  ::getrusage(RUSAGE_SELF, &self);
  t["monitor_cpu_s"] = Seconds(self.ru_utime) + Seconds(self.ru_stime);
  // VmHWM, not ru_maxrss: the kernel starts a process's ru_maxrss at its parent's resident size
  // when it was started with vfork/posix_spawn (as Python's subprocess does), so ru_maxrss
  // could report the parent's memory as footprint's.
  auto status = ReadWholeFile("/proc/self/status");
  std::optional<int64_t> hwm_kib = status.ok() ? FindKeyedValue(*status, "VmHWM") : std::nullopt;
  t["monitor_peak_rss_bytes"] = static_cast<double>(hwm_kib.value_or(self.ru_maxrss)) * 1024;

  ProbeFindings findings{t, meta, out.warnings};
  for (Probe* probe : sampler.probes()) probe->Finish(findings);

  Sampler::Stats ss = sampler.stats();
  Writer::Stats ws = writer.stats();
  meta["sources"] = sources;
  meta["accounting"] = accounting;
  meta["memory_peaks"] = peaks;
  meta["tree_membership"] = tree->uses_cgroup() ? "cgroup" : "proc walk (subreaper)";
  meta["monitor"]["sampler"] = {{"passes", ss.passes},
                                {"missed_deadlines", ss.missed_deadlines},
                                {"cpu_s", static_cast<double>(ss.cpu_ns) / 1e9}};
  meta["monitor"]["writer"] = {{"flushes", ws.flushes},
                               {"samples_written", ws.samples_written},
                               {"failed_flushes", ws.failed_flushes}};
  meta["monitor"]["samples_dropped"] = queue.dropped();
  meta["monitor"]["signals_forwarded"] = forwarded;
  if (!out.launch_error.empty()) meta["launch_error"] = out.launch_error;
  run.meta_json = JsonText(meta);

  unavailable_gpu.Warn(out.warnings);
  if (queue.dropped() > 0) {
    out.warnings.push_back(std::to_string(queue.dropped()) +
                           " samples were dropped because the database could not keep up");
  }
  if (ws.failed_flushes > 0) {
    out.warnings.push_back(std::to_string(ws.failed_flushes) +
                           " writes to the database failed; last error: " + ws.last_error);
  }
  if (int64_t left = tree->CountLiveProcesses(); left > 0) {
    out.warnings.push_back(std::to_string(left) +
                           " process(es) started by the command were still running when it "
                           "exited; they were measured until then");
  }
  // The command has run: its status must reach the caller even if the database fails now.
  if (Status st = store.FinishRun(run, out.totals); !st.ok()) {
    out.warnings.push_back("the end of the run could not be stored (" + st.message() +
                           "); it will show as interrupted");
  }
  out.run = std::move(run);
  return out;
}

namespace {

// Set by the handler StopSignalCatcher installs: a stop signal that arrived between two runs.
volatile sig_atomic_t g_stop_signal = 0;

}  // namespace

StopSignalCatcher::StopSignalCatcher() {
  g_stop_signal = 0;
  struct sigaction sa = {};
  sa.sa_handler = [](int sig) {
    if (g_stop_signal == 0) g_stop_signal = sig;
  };
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &sa, &old_[i]);
  }
}

StopSignalCatcher::~StopSignalCatcher() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &old_[i], nullptr);
  }
}

int StopSignalCatcher::received() const { return g_stop_signal; }

Result<GroupOutcome> RunRepeated(Store& store, MonitorOptions options, const RepeatOptions& repeat,
                                 const std::function<void(const MonitorOutcome&)>& on_run) {
  if (repeat.repetitions < 1) {
    return InvalidArgument("-r/--repetitions must be at least 1 (got " +
                           std::to_string(repeat.repetitions) + ")");
  }
  if (repeat.warmups < 0) {
    return InvalidArgument("--warmup must be 0 or more (got " + std::to_string(repeat.warmups) +
                           ")");
  }
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(options));
  GroupOutcome group;
  group.group_id = NewRunId();
  options.group_id = group.group_id;
  options.planned_repetitions = repeat.repetitions;
  options.planned_warmups = repeat.warmups;
  StopSignalCatcher catcher;
  const int total = repeat.warmups + repeat.repetitions;
  for (int i = 0; i < total; ++i) {
    if (int sig = catcher.received(); sig != 0) {
      group.signal_received = sig;
      if (group.exit_status == 0) group.exit_status = 128 + sig;
      return group;
    }
    // Warm-ups are numbered -W..-1, measured repetitions 1..N.
    options.repetition = i < repeat.warmups ? i - repeat.warmups : i - repeat.warmups + 1;
    auto outcome = RunMonitored(store, options);
    if (!outcome.ok()) return outcome.status();
    if (on_run) on_run(*outcome);
    group.runs.push_back(std::move(outcome).value());
    const MonitorOutcome& last = group.runs.back();
    if (last.exit_status != 0 && group.exit_status == 0) group.exit_status = last.exit_status;
    if (last.signal_received != 0) {
      group.signal_received = last.signal_received;
      if (group.exit_status == 0) group.exit_status = 128 + last.signal_received;
      return group;
    }
    if (last.exit_status != 0 && !repeat.keep_going) return group;
  }
  group.signal_received = catcher.received();
  group.complete = true;
  return group;
}

}  // namespace footprint
