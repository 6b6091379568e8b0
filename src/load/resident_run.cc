// RunResidentLoad: a load of a command that runs already, measured as a run of its own.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "load/resident_command.h"
#include "run/monitor_internal.h"
#include "run/stop_signals.h"
#include "session/monitor_session.h"
#include "session/totals.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/proc_parse.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// The process's user and system CPU time so far, ns (all its threads); {0, 0} once it is gone.
std::pair<int64_t, int64_t> ProcessCpuNs(const KernelFile& stat) {
  char buf[1024];
  const auto parsed = ParseProcStat(stat.Read(buf, sizeof buf));
  if (!parsed) return {0, 0};
  const double ns_per_tick = 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return {static_cast<int64_t>(static_cast<double>(parsed->utime) * ns_per_tick),
          static_cast<int64_t>(static_cast<double>(parsed->stime) * ns_per_tick)};
}

// The run's totals: the CPU the command's process used between the run's two ends, the
// sampled peaks; no I/O totals (the kernel folds a process's block I/O into its parent only
// when it is reaped, after the run).
RunTotals ResidentTotals(const MonitorSession& session, std::pair<int64_t, int64_t> cpu_before,
                         std::pair<int64_t, int64_t> cpu_after) {
  TotalsInputs in = session.SampledTotalsInputs();
  in.tree_cpu_ns =
      std::make_pair(cpu_after.first - cpu_before.first, cpu_after.second - cpu_before.second);
  in.tree_cpu_source =
      "the resident command's process over the run (utime and stime of /proc/PID/stat at its "
      "two ends, 10 ms ticks)";
  in.tree_cpu_key = "resident";
  RunTotals totals = ComputeRunTotals(in);
  totals.totals.erase("io_read_bytes");
  totals.totals.erase("io_write_bytes");
  totals.sources["io"] = "not totalled for a resident command: see the io.read and io.write series";
  return totals;
}

// Waits for the load to end, looking every 20 ms of `env`'s clock. A stop signal to footprint
// stops the command (a terminal's Ctrl-C reached it already), whose output then closes and ends
// the load.
void AwaitLoad(Env& env, LoadDriver& driver, pid_t command, const StopSignalCatcher& stop) {
  for (bool stopped = false; !driver.finished();) {
    if (!stopped && stop.received() != 0) stopped = ::kill(command, SIGTERM) == 0;
    env.SleepUntil(env.MonotonicNs() + 20 * kNsPerMs);
  }
  driver.AwaitEnd();
}

// The run's status and exit status from how its load ended (or a signal), and its end stored.
void StoreResidentEnd(MonitorSession& session, const LoadDriver& driver, RunRecord& run,
                      MonitorOutcome& out) {
  const bool done = driver.summary().ended_because == "done";
  run.status = out.signal_received ? RunStatus::kInterrupted
               : done              ? RunStatus::kOk
                                   : RunStatus::kFailed;
  run.exit_code = out.exit_status = out.signal_received ? 128 + out.signal_received : done ? 0 : 1;
  out.end_stored = session.StoreEnd(out.totals, out.warnings).ok();
}

}  // namespace

Result<MonitorOutcome> RunResidentLoad(Store& store, const MonitorOptions& options,
                                       ResidentCommand& command, LoadDriver& driver,
                                       const json& settings) {
  StopSignalCatcher stop;  // Ctrl-C: the run is stored as interrupted, footprint goes on
  MonitorOptions opt = options;
  opt.use_cgroup = false;  // the memory it holds was charged to footprint's: walk it instead
  FP_RETURN_IF_ERROR(ValidateSampling(opt));
  Env& env = *opt.env;
  const MetricIntervals intervals = ResolveIntervals(opt);
  FP_ASSIGN_OR_RETURN(PerfProbe::Options perf, PerfProbe::Options::FromEnv(env));
  FP_ASSIGN_OR_RETURN(PreparedRun p, PrepareRun(opt, intervals));
  p.sources["cgroup_unavailable"] = "a resident command, started before the run";
  ReapedTotals reaped;
  UnavailableMetrics unavailable_gpu;
  MonitorSession session(
      store, p.run.id, CommandProbeChoice(opt, p, std::move(perf), reaped, unavailable_gpu), p.meta,
      {.env = &env, .intervals = intervals, .flush_interval_ns = opt.flush_interval_ns});
  p.meta["resident"] = {{"pid", command.pid()}, {"ready_s", command.ready_s()}};
  p.meta["tree_membership"] = "proc walk (footprint's children: the resident command)";
  FP_RETURN_IF_ERROR(session.CreateRun(p.run, p.meta));
  const KernelFile stat("/proc/" + std::to_string(command.pid()) + "/stat");
  const auto cpu_before = ProcessCpuNs(stat);
  FP_ASSIGN_OR_RETURN(const int64_t t0, session.Start());
  MonitorOutcome out;
  json run = settings;
  run.update({{"run_id", p.run.id}, {"db", store.open_location()}, {"t0_ns", t0}});
  command.transport().SendControl("#run\t" + JsonText(run, -1));
  (void)driver.Start({-1, -1, command.pid(), t0});  // a resident driver starts its thread only
  AwaitLoad(env, driver, command.pid(), stop);
  out.signal_received = stop.received();
  session.Stop();
  RecordTotals(ResidentTotals(session, cpu_before, ProcessCpuNs(stat)), session, p, out);
  AddDriverResult(driver, store, p, out);
  unavailable_gpu.Warn(out.warnings);
  StoreResidentEnd(session, driver, p.run, out);
  out.run = std::move(p.run);
  return out;
}

}  // namespace footprint
