#include "slurm/agent.h"

#include <dirent.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "probe/process_tree_probe.h"
#include "run/monitor_internal.h"
#include "run/run_metadata.h"
#include "run/slurm.h"
#include "run/stop_signals.h"
#include "session/descendants.h"
#include "session/monitor_session.h"
#include "session/probe_set.h"
#include "session/totals.h"
#include "util/file.h"
#include "util/host.h"
#include "util/json_text.h"
#include "util/proc_parse.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr int64_t kPollNs = 50'000'000;  // how often the agent looks for the step's start and end

bool IsNumber(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "slurmstepd: [42.0]" -> {"42", "0"}; nullopt for any other process title.
std::optional<std::pair<std::string, std::string>> StepOfTitle(std::string_view title) {
  constexpr std::string_view kPrefix = "slurmstepd: [";
  if (!title.starts_with(kPrefix)) return std::nullopt;
  title.remove_prefix(kPrefix.size());
  const size_t close = title.find(']');
  const size_t dot = title.find('.');
  if (close == std::string_view::npos || dot == std::string_view::npos || dot > close) {
    return std::nullopt;
  }
  return std::pair{std::string(title.substr(0, dot)),
                   std::string(title.substr(dot + 1, close - dot - 1))};
}

// The NUL-separated words of /proc/PID/FILE (cmdline, environ); empty when it is gone.
std::vector<std::string> ProcWords(const std::string& proc_root, pid_t pid, const char* file) {
  return ReadNulSeparatedWords(proc_root + "/" + std::to_string(pid) + "/" + file);
}

// The step to wait for: job, step ("" for any), and the agent's own step, never measured.
struct WantedStep {
  std::string job, step, except;
  std::string node;  // the agent's node (SLURMD_NODENAME): a host may run several
};

// `own` is the agent's own task (SlurmJob), null outside a job: only the syntax is checked then.
Result<WantedStep> ParseStep(const std::string& arg, const json& own) {
  auto text = [&](const char* key) {
    const json& v = own.is_object() ? own.value(key, json()) : json();
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump();
  };
  WantedStep w{text("job_id"), "", text("step_id"), text("node")};
  if (arg.empty()) return w;
  const size_t dot = arg.find('.');
  if (dot != std::string::npos) w.job = arg.substr(0, dot);
  w.step = dot == std::string::npos ? arg : arg.substr(dot + 1);
  const bool job_ok = dot == std::string::npos || IsNumber(w.job);
  if (!job_ok || w.step.empty() || w.step.find_first_of("]. ") != std::string::npos) {
    return InvalidArgument("--step takes STEP or JOB.STEP (e.g. 1 or 4242.1), not '" + arg + "'");
  }
  return w;
}

// Whether the process behind `stat` still runs (not gone, not a zombie).
bool Alive(const KernelFile& stat) {
  char buf[1024];
  std::optional<ProcStat> st = ParseProcStat(stat.Read(buf, sizeof buf));
  return st && st->state != 'Z' && st->state != 'X';
}

// The step as its first task was told (step id, tasks, nodes, GPUs), without the task's own
// number: the agent measures all the tasks of its node.
using Vars = std::map<std::string, std::string, std::less<>>;

// A process's environment variables.
Vars Variables(const std::string& proc_root, pid_t pid) {
  Vars vars;
  for (const std::string& kv : ProcWords(proc_root, pid, "environ")) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return vars;
}

// The step as its first task was told (`told`: step id, tasks, nodes, GPUs), without the
// task's own number: the agent measures all the tasks of its node.
json StepJob(const Vars& told, const json& own, const StepDaemon& daemon) {
  json slurm = SlurmJob([&](std::string_view name) {
    auto it = told.find(name);
    return it == told.end() ? std::string() : it->second;
  });
  if (slurm.is_null()) slurm = own;
  slurm.erase("task");
  slurm.erase("local_task");
  slurm["step_id"] = IsNumber(daemon.step) ? json(std::stoll(daemon.step)) : json(daemon.step);
  return slurm;
}

// The step found running on this node: its daemon, its tasks, what the first was told.
struct StartedStep {
  StepDaemon daemon;
  std::vector<pid_t> tasks;
  Vars told;
};

// Naps of kPollNs on `env`'s clock.
class Napper {
 public:
  explicit Napper(Env& env) : env_(env), lock_(mu_) {}
  void Nap() {
    env_.WaitUntil(never_, lock_, env_.MonotonicNs() + kPollNs, [] { return false; });
  }

 private:
  Env& env_;
  std::mutex mu_;
  std::condition_variable never_;
  std::unique_lock<std::mutex> lock_;
};

// Waits until the wanted step has a task on this node (the agent's node, where a host runs
// several slurmd); NotFound after `wait_ns`, or when a stop signal comes first.
Result<StartedStep> WaitForStep(Env& env, const WantedStep& wanted, int64_t wait_ns,
                                const StopSignalCatcher& stop) {
  const std::string proc = env.ProcRoot();
  const std::string what = "step " + wanted.job + "." + (wanted.step.empty() ? "*" : wanted.step);
  const int64_t deadline = env.MonotonicNs() + wait_ns;
  Napper napper(env);
  while (stop.received() == 0) {
    for (const StepDaemon& d : FindStepDaemons(proc, wanted.job, wanted.step, wanted.except)) {
      StartedStep found{d, ChildrenOf(proc, d.pid), {}};
      if (found.tasks.empty()) continue;
      found.told = Variables(proc, found.tasks[0]);
      // A task slurmstepd forked but has not yet given the step's environment (before its
      // exec) names no job: what it was told is read at a later pass.
      if (!found.told.contains("SLURM_JOB_ID") && !found.told.contains("SLURM_JOBID")) continue;
      auto node = found.told.find("SLURMD_NODENAME");
      if (wanted.node.empty() || node == found.told.end() || node->second == wanted.node) {
        return found;
      }
    }
    if (env.MonotonicNs() > deadline) {
      return NotFound(what + " did not start on this node within " +
                      std::to_string(wait_ns / 1'000'000'000) + " s (see --step, --wait)");
    }
    napper.Nap();
  }
  return NotFound("stopped before " + what + " started on this node");
}

// The node's part of the run: named after the first task's command unless named, its
// meta.slurm the step's, meta.span the step's key and this node.
RunRecord PartRecord(const MonitorOptions& mo, const StartedStep& started, const json& own,
                     json& meta) {
  const StepDaemon& daemon = started.daemon;
  std::vector<std::string> command = ProcWords(mo.env->ProcRoot(), started.tasks[0], "cmdline");
  if (command.empty()) command = {"slurmstepd: [" + daemon.job + "." + daemon.step + "]"};
  RunRecord run = NewRunRecord(command, mo.name, mo.description, mo.tags, mo.params,
                               /*record_git=*/false, meta, *mo.env);
  json slurm = StepJob(started.told, own, daemon);
  const std::string node = slurm.value("node", HostName());
  meta["span"] = {
      {"key", slurm.value("cluster", std::string("slurm")) + ":" + daemon.job + "." + daemon.step},
      {"host", node},
      {"hosts", slurm.value("num_nodes", json(1))}};
  meta["slurm"] = std::move(slurm);
  meta["agent"] = {{"step_daemon", daemon.pid}};
  meta["tree_membership"] = "proc walk (the descendants of the step's slurmstepd)";
  return run;
}

// What to measure of a step on this node: the step daemon's descendants, the machine, GPUs.
ProbeChoice StepProbeChoice(const MonitorOptions& mo, pid_t daemon, const std::string& node,
                            UnavailableMetrics& unavailable_gpu) {
  ProbeChoice choice;  // member by member: see CommandProbeChoice (monitor.cc)
  choice.tree.monitor_pid = daemon;
  choice.tree.proc_root = mo.env->ProcRoot();
  choice.exact_intervals = ExactIntervals(mo);
  choice.gpu = GpuChoice(mo.metrics, mo.gpus, unavailable_gpu);
  choice.tree.foreign_root = true;
  choice.tree.entity = node;
  return choice;
}

// The step's part of the run, its totals, as the kernel's accounts of its processes allow.
RunTotals StepTotals(const MonitorSession& session, bool cpu_sampled, const std::string& node) {
  TotalsInputs in = session.SampledTotalsInputs();
  if (cpu_sampled) {
    in.tree_cpu_ns = session.tree()->cpu_user_system_ns();
    in.tree_cpu_source = "the step's processes on " + node +
                         " (slurmstepd's descendants at the last sample, and the tasks it "
                         "waited for)";
    in.tree_cpu_key = "step";
  }
  RunTotals totals = ComputeRunTotals(in);
  if (!cpu_sampled) {
    totals.totals.erase("cpu_user_s");
    totals.totals.erase("cpu_system_s");
    totals.sources["cpu"] = "not sampled (-m without cpu)";
  }
  // The step's processes are slurmstepd's children: their block I/O never reaches the agent.
  totals.totals.erase("io_read_bytes");
  totals.totals.erase("io_write_bytes");
  totals.sources["io"] = "not totalled by the agent: see the io.read and io.write series";
  return totals;
}

// Waits until the step's daemon (`daemon_stat`) exits here or the agent is stopped: the
// signal, 0 if none.
int AwaitStepEnd(Env& env, const KernelFile& daemon_stat, const StopSignalCatcher& stop) {
  Napper napper(env);
  while (stop.received() == 0 && Alive(daemon_stat)) napper.Nap();
  return stop.received();
}

// The node's part as the session measured it: its status, totals and meta, its end stored.
MonitorOutcome ConcludeStep(const MonitorOptions& mo, MonitorSession& session, RunRecord& run,
                            json& meta, int signal_received, UnavailableMetrics& unavailable_gpu) {
  MonitorOutcome out;
  out.signal_received = signal_received;
  run.status = signal_received ? RunStatus::kInterrupted : RunStatus::kOk;
  if (signal_received) {
    meta["agent"]["stopped_by"] = std::string(sigabbrev_np(signal_received));
    out.exit_status = 128 + signal_received;
  }
  const bool cpu_sampled = mo.metrics.test(size_t(MetricId::kCpu));
  const std::string node = meta["span"]["host"];
  ProbeFindings findings{out.totals, meta, out.warnings};
  session.Finish(StepTotals(session, cpu_sampled, node), findings);
  unavailable_gpu.Warn(out.warnings);
  out.end_stored = session.StoreEnd(out.totals, out.warnings).ok();
  return out;
}

}  // namespace

std::vector<StepDaemon> FindStepDaemons(const std::string& proc_root, std::string_view job,
                                        std::string_view step, std::string_view except) {
  std::vector<StepDaemon> found;
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) return found;
  while (dirent* e = ::readdir(dir)) {
    if (!IsNumber(e->d_name)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(e->d_name));
    std::vector<std::string> title = ProcWords(proc_root, pid, "cmdline");
    if (title.empty()) continue;
    auto of = StepOfTitle(title[0]);
    if (!of || of->first != job) continue;
    if (step.empty() ? IsNumber(of->second) && of->second != except : of->second == step) {
      found.push_back({pid, of->first, of->second});
    }
  }
  ::closedir(dir);
  return found;
}

bool IsNodeAgent(const json& own) { return own.value("local_task", json(0)) == json(0); }

Result<MonitorOutcome> MonitorSlurmStep(Store& store, const StepAgentOptions& opt) {
  const MonitorOptions& mo = opt.measure;
  Env& env = *mo.env;
  FP_RETURN_IF_ERROR(ValidateSampling(mo));
  const json own = SlurmJob(env);
  FP_ASSIGN_OR_RETURN(WantedStep wanted, ParseStep(opt.step, own));
  if (own.is_null()) {
    return InvalidArgument(
        "footprint agent measures a Slurm step from inside its job, and SLURM_JOB_ID is not "
        "set: start it with srun --overlap --ntasks-per-node=1 footprint agent ...");
  }
  StopSignalCatcher stop;
  FP_ASSIGN_OR_RETURN(StartedStep started, WaitForStep(env, wanted, opt.wait_ns, stop));

  // --- The part of the run this node stores. -------------------------------------------------
  json meta;
  RunRecord run = PartRecord(mo, started, own, meta);
  const std::string node = meta["span"]["host"];
  const MetricIntervals intervals = ResolveIntervals(mo);
  meta["intervals_ns"] = IntervalsMeta(intervals);
  UnavailableMetrics unavailable_gpu;
  MonitorSession session(
      store, run.id, StepProbeChoice(mo, started.daemon.pid, node, unavailable_gpu), meta,
      {.env = &env, .intervals = intervals, .flush_interval_ns = mo.flush_interval_ns});
  FP_RETURN_IF_ERROR(session.CreateRun(run, meta));

  // --- Measure until the step's daemon exits here, or the agent is stopped. -----------------
  const KernelFile daemon_stat(env.ProcRoot() + "/" + std::to_string(started.daemon.pid) + "/stat");
  FP_RETURN_IF_ERROR(session.Start().status());
  const int signal_received = AwaitStepEnd(env, daemon_stat, stop);
  session.Stop();
  MonitorOutcome out = ConcludeStep(mo, session, run, meta, signal_received, unavailable_gpu);
  out.run = std::move(run);
  return out;
}

}  // namespace footprint
