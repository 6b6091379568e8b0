// RunMonitored: start a command behind a gate, measure it, reap it, store the totals.
#include "footprint/monitor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "probe/cgroup.h"
#include "probe/container_probe.h"
#include "probe/cpu_ring_probe.h"
#include "probe/perf_probe.h"
#include "probe/process_tree_probe.h"
#include "run/container.h"
#include "run/gated_child.h"
#include "run/monitor_internal.h"
#include "run/orphan_guard.h"
#include "run/profiler_session.h"
#include "run/run_metadata.h"
#include "run/stop_signals.h"
#include "session/descendants.h"
#include "session/monitor_session.h"
#include "session/probe_set.h"
#include "session/totals.h"
#include "store/reconcile.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/rusage.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// Blocks the signals footprint waits for, for the lifetime of the object, and restores the
// previous mask and subreaper flag afterwards. Signals still pending then are taken: SIGCHLD
// dropped, a stop signal passed to the group's catcher (PassStopSignal), since one that comes
// while the run is stored is not the command's (dropped, a Ctrl-C there was lost and the group
// went on).
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
    for (int sig; (sig = sigtimedwait(&set_, nullptr, &zero)) > 0;) {
      if (sig != SIGCHLD) PassStopSignal(sig);
    }
    prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
    sigaction(SIGCHLD, &old_chld_, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  const sigset_t& set() const { return set_; }
  const sigset_t& old_mask() const { return old_mask_; }
  // Takes the stop signals still pending and returns the first (0: none). One that came after
  // the command ended, while the run was stored, is not the command's: it stops a group of
  // repetitions (dropped at the scope's end, a Ctrl-C there was lost and the group went on).
  int TakePendingStop() {
    sigset_t stops;
    sigemptyset(&stops);
    for (int s : kStopSignals) sigaddset(&stops, s);
    timespec zero = {0, 0};
    int first = 0;
    for (int sig; (sig = sigtimedwait(&stops, nullptr, &zero)) > 0;) {
      if (first == 0) first = sig;
    }
    return first;
  }

 private:
  sigset_t set_, old_mask_;
  struct sigaction old_chld_;
  int old_subreaper_ = 0;
};

}  // namespace

MetricIntervals ResolveIntervals(const MonitorOptions& o) {
  MetricIntervals iv{};
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (!o.metrics.test(m)) continue;
    auto it = o.metric_interval_ns.find(static_cast<MetricId>(m));
    iv[m] = it != o.metric_interval_ns.end() ? it->second : o.interval_ns;
  }
  return iv;
}

MetricSet ExactIntervals(const MonitorOptions& o) {
  MetricSet exact;
  for (const auto& [m, ns] : o.metric_interval_ns) exact.set(static_cast<size_t>(m));
  return exact;
}

json IntervalsMeta(const MetricIntervals& intervals) {
  json meta = json::object();
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (intervals[m] > 0) meta[std::string(MetricCatalogue()[m].name)] = intervals[m];
  }
  return meta;
}

Status CheckInterval(int64_t interval_ns, const std::string& what) {
  if (interval_ns < kMinIntervalNs || interval_ns > kMaxIntervalNs) {
    char got[32];
    std::snprintf(got, sizeof got, "%g s", static_cast<double>(interval_ns) / 1e9);
    return InvalidArgument(what + " must be between 1ms and 1h (got " + got + ")");
  }
  return Status::Ok();
}

Status ValidateSampling(const MonitorOptions& o) {
  FP_RETURN_IF_ERROR(CheckInterval(o.interval_ns, "the sampling interval"));
  for (const auto& [m, ns] : o.metric_interval_ns) {
    FP_RETURN_IF_ERROR(CheckInterval(ns, "the interval of " + std::string(InfoOf(m).name)));
  }
  if (o.flush_interval_ns <= 0 || o.flush_interval_ns > kNsPerSec) {
    return InvalidArgument("the flush interval must be between 0 and 1s");
  }
  if (o.metrics.none()) return InvalidArgument("no metric selected");
  return Status::Ok();
}

Status ValidateMonitorOptions(const MonitorOptions& o) {
  if (o.command.empty() || o.command[0].empty()) {
    return InvalidArgument("no command to run; write it after --, e.g. footprint run -- sleep 1");
  }
  FP_RETURN_IF_ERROR(ValidateSampling(o));
  if (o.driver && !o.output.empty()) {
    return InvalidArgument("a driven command's stdout is its driver's; drop --output");
  }
  return CheckProfilerPresent(o);
}

Result<PreparedRun> PrepareRun(const MonitorOptions& opt, const MetricIntervals& intervals) {
  PreparedRun p;
  p.run = NewRunRecord(opt.command, opt.name, opt.description, opt.tags, opt.params, opt.record_git,
                       p.meta, *opt.env);
  if (!opt.working_dir.empty()) {
    struct stat st;
    if (::stat(opt.working_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("the working folder " + opt.working_dir + " is not a folder");
    }
    p.run.cwd = opt.working_dir[0] == '/' ? opt.working_dir : p.run.cwd + "/" + opt.working_dir;
  }
  p.meta["intervals_ns"] = IntervalsMeta(intervals);
  if (!opt.group_id.empty()) {
    p.run.group_id = opt.group_id;
    p.run.repetition = opt.repetition;
    p.meta["group"] = {{"repetitions", opt.planned_repetitions}, {"warmups", opt.planned_warmups}};
  }
  p.run.experiment = opt.experiment;
  p.run.workload = opt.workload;
  if (!opt.extra_meta_json.empty()) {
    json extra = json::parse(opt.extra_meta_json, nullptr, false);
    if (!extra.is_object()) return InvalidArgument("extra_meta_json is not a JSON object");
    p.meta.update(extra);
  }
  if (!opt.use_cgroup) {
    p.sources["cgroup_unavailable"] = "disabled with --no-cgroup";
    return p;
  }
  static const CgroupSupport support = DetectCgroups();
  auto cg = RunCgroup::Create(support, "footprint-" + p.run.id);
  if (cg.ok()) {
    p.cgroup = std::move(cg).value();
  } else {
    p.sources["cgroup_unavailable"] = cg.status().message();
  }
  return p;
}

Result<std::unique_ptr<Probe>> OpenCpuRing(const MonitorOptions& opt, PreparedRun& p,
                                           const MetricIntervals& intervals) {
  using Choice = MonitorOptions::CpuSampler;
  const int64_t interval = intervals[static_cast<size_t>(MetricId::kCpu)];
  if (interval <= 0) return std::unique_ptr<Probe>();
  std::string why;
  if (opt.cpu_sampler == Choice::kTimer) {
    why = "--cpu-sampler timer";
  } else if (opt.cpu_sampler == Choice::kAuto && interval >= kCpuRingBelowIntervalNs) {
    why = "cpu's interval is 10 ms or more: its wake-ups cost less than a ring per CPU";
  } else if (!p.cgroup) {
    why = "the run has no cgroup to count on";
  } else if (auto ring = CpuRingProbe::Open(*p.cgroup, interval); ring.ok()) {
    return std::unique_ptr<Probe>(std::move(ring).value());
  } else {
    why = ring.status().message();
  }
  if (opt.cpu_sampler == Choice::kRing) {
    return Unsupported("--cpu-sampler ring: " + why +
                       "; --cpu-sampler auto falls back to reading cpu.stat");
  }
  p.meta["cpu_sampler"] = {{"sampler", "timer"}, {"why", why}};
  return std::unique_ptr<Probe>();
}

ProbeChoice CommandProbeChoice(const MonitorOptions& opt, const PreparedRun& p,
                               PerfProbe::Options perf, const ReapedTotals& reaped,
                               UnavailableMetrics& unavailable_gpu) {
  // Filled in member by member: GCC 12 at -O3 takes a nested braced Options for one whose
  // std::string may be used uninitialized (-Wmaybe-uninitialized), which -Werror stops.
  ProbeChoice choice;
  choice.tree.monitor_pid = ::getpid();
  if (p.cgroup && !p.cgroup->procs_path().empty()) choice.tree.cgroup = p.cgroup.get();
  choice.tree.reaped = &reaped;
  choice.tree.proc_root = opt.env->ProcRoot();
  choice.exact_intervals = ExactIntervals(opt);
  choice.energy = true;
  choice.perf = std::move(perf);
  choice.gpu = GpuChoice(opt.metrics, opt.gpus, unavailable_gpu);
  return choice;
}

namespace {

// How the command ended, and what footprint saw meanwhile.
struct WaitResult {
  int wait_status = 0;
  int signal_received = 0;
  int forwarded = 0;
};

// Reaps every process that has ended, summing its rusage; true when `child` was among them
// (its wait status in `child_status`).
bool ReapEnded(pid_t child, ReapedUsage& usage, ReapedTotals& reaped, int& child_status) {
  bool child_done = false;
  int status;
  rusage ru;
  pid_t pid;
  while ((pid = ::wait4(-1, &status, WNOHANG, &ru)) > 0) {
    const double user = Seconds(ru.ru_utime), system = Seconds(ru.ru_stime);
    usage.user_s += user;
    usage.system_s += system;
    usage.max_rss_bytes = std::max<int64_t>(usage.max_rss_bytes, ru.ru_maxrss * 1024);
    usage.read_bytes += ru.ru_inblock * 512;
    usage.write_bytes += ru.ru_oublock * 512;
    ++usage.reaped;
    reaped.cpu_ns.fetch_add(static_cast<int64_t>((user + system) * 1e9), std::memory_order_relaxed);
    reaped.read_bytes.fetch_add(ru.ru_inblock * 512, std::memory_order_relaxed);
    reaped.write_bytes.fetch_add(ru.ru_oublock * 512, std::memory_order_relaxed);
    if (pid == child) {
      child_status = status;
      child_done = true;
    }
  }
  return child_done;
}

}  // namespace

void KillTree(Env& env) {
  const int64_t give_up_ns = env.MonotonicNs() + kKillTreeGiveUpNs;
  for (;;) {
    bool alive = false;
    for (pid_t pid : Descendants(env)) {
      auto stat = ReadWholeFile(env.ProcRoot() + "/" + std::to_string(pid) + "/stat");
      std::optional<ProcStat> ps = stat.ok() ? ParseProcStat(*stat) : std::nullopt;
      if (!ps || ps->state == 'Z' || ps->state == 'X') continue;
      ::kill(pid, SIGKILL);
      alive = true;
    }
    const int64_t now = env.MonotonicNs();
    if (!alive || now >= give_up_ns) return;
    env.SleepUntil(std::min(now + kKillTreePassNs, give_up_ns));
  }
}

namespace {

// A stop signal the command outlives (Ctrl-C, SIGTERM, ...): the second makes footprint say
// what a third does, the third kills the whole tree (a command that ignores them can always be
// stopped).
void Escalate(Env& env, int stops) {
  if (stops == 2) {
    WarnOnStderr(
        "the command is still running after 2 stop signals (Ctrl-C, SIGTERM, ...); a third "
        "kills it and every process it started (SIGKILL)");
  } else if (stops == 3) {
    WarnOnStderr("killing the command and every process it started (SIGKILL): 3 stop signals");
    KillTree(env);
  }
}

// The next of `signals`, or 0 once the session's tick is due: it is made then.
int NextSignal(Env& env, const sigset_t& signals, siginfo_t& info, MonitorSession& session) {
  const int64_t due_ns = session.next_tick_ns();
  if (due_ns == INT64_MAX) return sigwaitinfo(&signals, &info);
  const int64_t wait_ns = std::max<int64_t>(0, due_ns - env.MonotonicNs());
  const timespec wait{static_cast<time_t>(wait_ns / kNsPerSec),
                      static_cast<long>(wait_ns % kNsPerSec)};
  const int sig = sigtimedwait(&signals, &info, &wait);
  if (sig < 0 && errno == EAGAIN) {
    session.Tick();
    return 0;
  }
  return sig;
}

// Reaps every process that ends and forwards stop signals until `child` ended, making the
// session's ticks when they are due (MonitorSession::StartDeferred). Signals sent by a
// process are passed on; a terminal's (SI_KERNEL) already reached the command's process group
// and is not sent twice.
WaitResult WaitForCommand(Env& env, pid_t child, const sigset_t& signals, ReapedUsage& usage,
                          ReapedTotals& reaped, ProfilerSession* profiler,
                          MonitorSession& session) {
  WaitResult w;
  bool done = false;
  int stops = 0;
  while (!done) {
    siginfo_t info;
    int sig = NextSignal(env, signals, info, session);
    if (sig <= 0) continue;  // EINTR, or the threads started
    if (sig == SIGCHLD) {
      if (profiler) profiler->BeforeReap(child);
      done = ReapEnded(child, usage, reaped, w.wait_status);
      continue;
    }
    if (w.signal_received == 0) w.signal_received = sig;
    if (info.si_code != SI_KERNEL) {
      ::kill(child, sig);
      ++w.forwarded;
    }
    Escalate(env, ++stops);
  }
  if (w.signal_received == 0) {  // one that arrived as the command ended, still pending
    sigset_t pending;
    sigpending(&pending);
    for (int s : kStopSignals) {
      if (sigismember(&pending, s) == 1) {
        w.signal_received = s;
        break;
      }
    }
  }
  return w;
}

// The kernel's accounts of the tree, beside what the session sampled, as the totals function
// takes them.
TotalsInputs KernelAccounts(const MonitorSession& session, const ReapedUsage& usage,
                            const RunCgroup* cgroup) {
  TotalsInputs in = session.SampledTotalsInputs();
  in.reaped = usage;
  if (cgroup && cgroup->has_cpu()) {
    in.tree_cpu_ns = cgroup->CpuUserSystemNs();
    in.tree_cpu_source = cgroup->cpu_source();
  }
  if (cgroup && cgroup->has_memory()) {
    in.cgroup_memory_peak_bytes = cgroup->MemoryPeakBytes();
    in.cgroup_memory_source = cgroup->memory_source();
  }
  return in;
}

// The run's status and exit code from how the command ended, its totals and metadata.
void Conclude(const WaitResult& w, const TotalsInputs& accounts, MonitorSession& session,
              PreparedRun& p, MonitorOutcome& out) {
  out.exit_status = ShellStatus(w.wait_status);
  p.run.status = WIFSIGNALED(w.wait_status) ? RunStatus::kKilled
                 : out.exit_status == 0     ? RunStatus::kOk
                                            : RunStatus::kFailed;
  p.run.exit_code = out.exit_status;
  RecordTotals(ComputeRunTotals(accounts), session, p, out);
  p.meta["monitor"]["signals_forwarded"] = w.forwarded;
  if (!out.launch_error.empty()) p.meta["launch_error"] = out.launch_error;
}

}  // namespace

void RecordTotals(const RunTotals& totals, MonitorSession& session, PreparedRun& p,
                  MonitorOutcome& out) {
  p.meta["sources"] = p.sources;
  ProbeFindings findings{out.totals, p.meta, out.warnings};
  session.Finish(totals, findings);
}

void AddDriverResult(CommandDriver& driver, Store& store, PreparedRun& p, MonitorOutcome& out) {
  DriverResult result;
  if (Status st = driver.Finish(store, p.run.id, result); !st.ok()) {
    out.warnings.push_back("the command's driver could not store what it measured: " +
                           st.message());
  }
  out.totals.insert(result.totals.begin(), result.totals.end());
  if (result.stopped_command && p.run.status == RunStatus::kKilled &&
      out.exit_status == 128 + SIGTERM) {
    p.run.status = RunStatus::kOk;
    p.run.exit_code = out.exit_status = 0;
    p.meta["stopped_by_driver"] = "SIGTERM, once the load was done";
  }
  if (!result.meta_key.empty()) {
    p.meta[result.meta_key] = json::parse(result.meta_json, nullptr, false);
  }
  out.warnings.insert(out.warnings.end(), result.warnings.begin(), result.warnings.end());
}

namespace {

// A database deleted or replaced during the run keeps taking writes nobody will read: what the
// open handle holds is copied next to where it was, else to $TMPDIR (or /tmp).
void RescueIfVanished(Env& env, Store& store, MonitorOutcome& out) {
  const Status where = store.CheckLocation();
  if (where.ok()) return;
  out.database_vanished = true;
  const std::string name = "footprint-rescued-" + out.run.id.substr(0, 8) + ".db";
  std::string folder = store.location();
  folder = folder.rfind('/') == std::string::npos ? "." : folder.substr(0, folder.rfind('/'));
  const std::string tmp = env.Var("TMPDIR").value_or("");
  std::string why;
  for (const std::string& dir : {folder, tmp.empty() ? std::string("/tmp") : tmp}) {
    const std::string path = dir + "/" + name;
    if (Status st = store.SaveCopyTo(path); !st.ok()) {
      why = st.message();
      continue;
    }
    out.saved_to = path;
    out.warnings.push_back(where.message() + "; the run was saved to " + path +
                           " instead (footprint show -o " + path + ")");
    return;
  }
  out.warnings.push_back(where.message() + ", and the run could not be saved elsewhere (" + why +
                         "): it is lost");
}

// The file MonitorOptions::output names, open for the child to write (close-on-exec: the
// child's dup2 copies are what the command keeps); -1 for none. A relative path is
// footprint's, not the working folder's, as the hooks' (RunAndWait) is.
// The pipes between a CommandDriver and the command: the command's ends are dup'ed onto its
// stdin and stdout in the child; footprint's ends go to the driver. All close-on-exec, so the
// command holds no copy of footprint's ends (it would never read end-of-file).
struct DriverPipes {
  int command_in = -1, to_command = -1;     // the command's stdin: read end, write end
  int from_command = -1, command_out = -1;  // the command's stdout: read end, write end
  static Result<DriverPipes> Open(bool wanted) {
    DriverPipes p;
    if (!wanted) return p;
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0)
      return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
      int err = errno;
      ::close(in[0]);
      ::close(in[1]);
      return IoError(std::string("cannot create a pipe: ") + std::strerror(err));
    }
    p.command_in = in[0];
    p.to_command = in[1];
    p.from_command = out[0];
    p.command_out = out[1];
    return p;
  }
  DriverPipes() = default;
  DriverPipes(DriverPipes&& o) noexcept
      : command_in(std::exchange(o.command_in, -1)),
        to_command(std::exchange(o.to_command, -1)),
        from_command(std::exchange(o.from_command, -1)),
        command_out(std::exchange(o.command_out, -1)) {}
  ~DriverPipes() {
    for (int* fd : {&command_in, &to_command, &from_command, &command_out}) CloseFd(*fd);
  }
  // After the fork: the command's ends are the child's alone.
  void CloseCommandEnds() {
    CloseFd(command_in);
    CloseFd(command_out);
  }
};

class OutputFile {
 public:
  static Result<OutputFile> Open(const std::string& path) {
    OutputFile f;
    if (path.empty()) return f;
    f.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f.fd_ < 0) {
      return InvalidArgument("cannot open the command's output file " + path + ": " +
                             std::strerror(errno));
    }
    return f;
  }
  OutputFile(OutputFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ~OutputFile() { CloseFd(fd_); }
  int fd() const { return fd_; }

 private:
  OutputFile() = default;
  int fd_ = -1;
};

// A command's run as RunMonitored assembles it: what is prepared before the command exists
// (the run, its cgroup and probes, the command as started) and what its end is concluded from.
struct CommandRun {
  MetricIntervals intervals{};
  PreparedRun p;
  ReapedTotals reaped;  // what WaitForCommand reaped, for the tree probe
  ReapedUsage usage;    // the same, for the totals
  UnavailableMetrics unavailable_gpu;
  // A container the command starts is measured in a parent cgroup footprint makes for it
  // (docs/containers.md): its engine's processes are not the command's.
  std::unique_ptr<ContainerWatch> container;
  // The command as it is started: inside a profiler when one is asked for and present.
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;
  std::unique_ptr<ProfilerSession> profiler;
};

// The run's record and cgroup (PrepareRun), a container's cgroup, the kernel's ring for `cpu`,
// and what its session is to measure, which it returns: slow or fallible, all before the
// command exists.
Result<ProbeChoice> PrepareCommandRun(const MonitorOptions& opt, PerfProbe::Options perf,
                                      CommandRun& r) {
  r.intervals = ResolveIntervals(opt);
  FP_ASSIGN_OR_RETURN(r.p, PrepareRun(opt, r.intervals));
  FP_ASSIGN_OR_RETURN(r.container, ContainerWatch::ForCommand(opt.command, r.p.run.id));
  ProbeChoice choice = CommandProbeChoice(opt, r.p, std::move(perf), r.reaped, r.unavailable_gpu);
  FP_ASSIGN_OR_RETURN(choice.cpu_ring, OpenCpuRing(opt, r.p, r.intervals));
  if (r.container) choice.container = &r.container->cgroup();
  return choice;
}

// The command as it is started (a container's rewritten, inside a profiler when one is asked
// for) and its environment.
Status PrepareCommand(const MonitorOptions& opt, Store& store, CommandRun& r) {
  r.command = opt.command;
  if (r.container) r.container->Rewrite(r.command);
  r.environment = opt.environment;
  if (!opt.profiler) return Status::Ok();
  FP_ASSIGN_OR_RETURN(r.profiler,
                      ProfilerSession::Prepare(opt, r.p.run.id, r.p.run.name, store.location(),
                                               r.command, r.environment, r.p.meta));
  return Status::Ok();
}

// The command started behind its gate, and the guard that stops its cgroup if footprint dies.
struct GatedCommand {
  std::unique_ptr<GatedChild> child;
  std::unique_ptr<OrphanGuard> guard;
};

// Starts the command at its gate (it does not run until the gate opens), in the run's cgroup
// before the clock starts, so that the first sample already sees it; guards that cgroup; and
// lets the probes that follow the command's processes attach to it. `mask`: the signal mask
// the command gets.
Result<GatedCommand> GateCommand(const MonitorOptions& opt, Store& store, CommandRun& r,
                                 const sigset_t& mask, const OutputFile& output, DriverPipes& pipes,
                                 MonitorSession& session) {
  const JoinEnvironment join_env{
      r.p.run.id.c_str(), store.open_location().c_str(),
      &r.environment,     opt.working_dir.empty() ? nullptr : opt.working_dir.c_str(),
      output.fd(),        pipes.command_in,
      pipes.command_out,  r.p.cgroup || opt.keep_running ? 0 : ::getpid()};
  GatedCommand gated;
  FP_ASSIGN_OR_RETURN(gated.child, GatedChild::Start(r.command, mask, join_env, r.p.cgroup.get()));
  pipes.CloseCommandEnds();
  if (r.p.cgroup && !opt.keep_running && !r.p.cgroup->procs_path().empty()) {
    FP_ASSIGN_OR_RETURN(gated.guard, OrphanGuard::Start(r.p.cgroup->procs_path()));
  }
  session.AttachToCommand(gated.child->pid());
  return gated;
}

// The clock runs from t0: the profiler starts, the gate opens (the command runs from here on,
// or out.launch_error says why it could not; the session's first pass is taken while it
// execs), and the command's driver starts on its pipes.
void OpenGate(const MonitorOptions& opt, CommandRun& r, GatedChild& child, DriverPipes& pipes,
              int64_t t0, MonitorSession& session, MonitorOutcome& out) {
  if (r.profiler) r.profiler->Start();
  out.launch_error = child.Open(t0, r.command[0], [&session] { session.Tick(); });
  if (!opt.driver) return;
  // The driver owns its ends from here on, even when it fails to start.
  const DriverStart start{std::exchange(pipes.to_command, -1),
                          std::exchange(pipes.from_command, -1), child.pid(), t0};
  if (Status st = opt.driver->Start(start); !st.ok()) {
    out.warnings.push_back("the command's driver failed: " + st.message());
    ::kill(child.pid(), SIGTERM);
  }
}

// Waits for the command, and a detached container it started, to end (reaping, forwarding
// stop signals), then ends the run's clock and reaps the orphans that ended meanwhile.
WaitResult AwaitCommand(Env& env, CommandRun& r, GatedCommand& gated, const sigset_t& signals,
                        MonitorSession& session) {
  WaitResult w = WaitForCommand(env, gated.child->pid(), signals, r.usage, r.reaped,
                                r.profiler.get(), session);
  if (r.container && w.signal_received == 0) {  // a detached container runs on: followed
    while (session.next_tick_ns() != INT64_MAX) session.Tick();  // sampled from here on
    w.signal_received = r.container->WaitWhileRunning(signals);
  }
  gated.guard.reset();  // the command ended: what it left running is its own choice
  session.Stop();
  int unused;
  ReapEnded(-1, r.usage, r.reaped, unused);  // orphans that ended meanwhile
  return w;
}

// The run's end from how the command ended: its status, totals and meta, what the container,
// the profiler and the driver add, and what the user should know.
void ConcludeCommand(const MonitorOptions& opt, Store& store, CommandRun& r, const WaitResult& w,
                     MonitorSession& session, MonitorOutcome& out) {
  PreparedRun& p = r.p;
  ProcessTreeProbe& tree = *session.tree();
  p.meta["tree_membership"] = tree.uses_cgroup() ? "cgroup" : "proc walk (subreaper)";
  if (r.container) {
    const int client_status = ShellStatus(w.wait_status);
    p.meta["container"] = r.container->Meta(client_status);
    if (std::string line = r.container->NotRunLine(client_status); !line.empty()) {
      session.container()->ContainerDidNotRun();
      out.warnings.push_back(line);
    }
  }
  const TotalsInputs accounts = KernelAccounts(session, r.usage, p.cgroup.get());
  Conclude(w, accounts, session, p, out);
  if (r.profiler) r.profiler->Finish(store, p.run.id, out.totals, p.meta, out.warnings);
  if (opt.driver) AddDriverResult(*opt.driver, store, p, out);
  r.unavailable_gpu.Warn(out.warnings);
  if (int64_t left = tree.CountLiveProcesses(); left > 0) {
    out.warnings.push_back(std::to_string(left) +
                           " process(es) started by the command were still running when it "
                           "exited; they were measured until then");
  }
}

// The command has run: its status must reach the caller even if the database fails now.
void StoreCommandEnd(Env& env, Store& store, MonitorSession& session, MonitorOutcome& out) {
  out.end_stored = session.StoreEnd(out.totals, out.warnings).ok();
  // Housekeeping for runs of other monitors that died: their failure is not this run's. Not
  // while this run's own data waits for a server that does not take it: reading would wait for
  // that server again.
  if (out.end_stored && store.WaitingIn().empty()) (void)StoreInterruptedRuns(store, env);
}

}  // namespace

Result<MonitorOutcome> RunMonitored(Store& store, const MonitorOptions& opt) {
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(opt));
  FP_ASSIGN_OR_RETURN(PerfProbe::Options perf, PerfProbe::Options::FromEnv(*opt.env));
  FP_ASSIGN_OR_RETURN(OutputFile output, OutputFile::Open(opt.output));
  // --- Everything slow or fallible happens before the command exists. -----------------
  CommandRun r;
  FP_ASSIGN_OR_RETURN(ProbeChoice probes, PrepareCommandRun(opt, std::move(perf), r));
  MonitorSession session(
      store, r.p.run.id, std::move(probes), r.p.meta,
      {.env = opt.env, .intervals = r.intervals, .flush_interval_ns = opt.flush_interval_ns});
  FP_RETURN_IF_ERROR(PrepareCommand(opt, store, r));
  FP_RETURN_IF_ERROR(session.CreateRun(r.p.run, r.p.meta));  // one commit for run and series
  // From here on the run exists: if footprint fails before the command starts, the session
  // stores it as failed with the reason (never left 'running', to be taken for interrupted).
  auto pipes = DriverPipes::Open(opt.driver != nullptr && opt.driver->wants_pipes());
  if (!pipes.ok()) return session.Abandon(pipes.status());

  // --- Start the command behind a gate. -------------------------------------------------
  SignalScope signals;
  auto gated = GateCommand(opt, store, r, signals.old_mask(), output, *pipes, session);
  if (!gated.ok()) return session.Abandon(gated.status());
  if (opt.before_start) {
    if (Status st = opt.before_start(); !st.ok()) return session.Abandon(st);
  }
  const int64_t t0 = session.StartDeferred();
  MonitorOutcome out;
  OpenGate(opt, r, *gated->child, *pipes, t0, session, out);

  // --- Wait: reap everything, forward signals; then the run's end. ---------------------
  const WaitResult w = AwaitCommand(*opt.env, r, *gated, signals.set(), session);
  out.signal_received = w.signal_received;
  ConcludeCommand(opt, store, r, w, session, out);
  StoreCommandEnd(*opt.env, store, session, out);
  const int late_stop = signals.TakePendingStop();
  if (out.signal_received == 0) out.signal_received = late_stop;
  out.run = std::move(r.p.run);
  RescueIfVanished(*opt.env, store, out);
  return out;
}

}  // namespace footprint
