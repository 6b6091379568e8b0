// `footprint run --container ID|NAME`: a running container measured from its engine's own
// cgroups (docs/containers.md#attach), from the attach until it exits, a duration passes or a
// stop signal arrives.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <string_view>
#include <utility>

#include "footprint/profiler.h"
#include "run/container.h"
#include "run/monitor_internal.h"
#include "run/run_metadata.h"
#include "run/stop_signals.h"
#include "session/monitor_session.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr const char* kAttachEngines[] = {"podman", "docker", "nerdctl"};

// Engines name containers with [a-zA-Z0-9][a-zA-Z0-9_.-]*; ids are hex, the same alphabet.
bool IsContainerName(std::string_view name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.' && ch != '-') {
      return false;
    }
  }
  return true;
}

// What `ENGINE inspect` says of the container: id, main PID, running, image, image id, exit
// code, tab-separated; nullopt when the engine does not know it.
std::optional<std::vector<std::string>> Inspect(const std::string& engine,
                                                const std::string& name) {
  std::optional<std::string> out =
      Capture({engine, "inspect", "--type", "container", "--format",
               "{{.Id}}\t{{.State.Pid}}\t{{.State.Running}}\t{{.Config.Image}}\t{{.Image}}\t{{"
               ".State.ExitCode}}",
               name});
  if (!out) return std::nullopt;
  std::vector<std::string> fields;
  for (std::string_view f : Split(Trim(*out), '\t')) fields.emplace_back(f);
  if (fields.size() != 6) return std::nullopt;
  return fields;
}

}  // namespace

Result<RunningContainer> FindRunningContainer(const std::string& name) {
  if (!IsContainerName(name)) {
    return InvalidArgument("--container " + name +
                           ": not a container name or id (letters, digits, _ . - only)");
  }
  std::string engines_asked;
  for (const char* engine : kAttachEngines) {
    if (!FindOnPath(Env::Default(), engine)) continue;
    engines_asked += (engines_asked.empty() ? "" : ", ") + std::string(engine);
    std::optional<std::vector<std::string>> f = Inspect(engine, name);
    if (!f) continue;
    if ((*f)[2] != "true") {
      return NotFound("container " + name + " (" + engine + ") is not running (it exited with " +
                      (*f)[5] + "): there is nothing to attach to");
    }
    RunningContainer c{.engine = engine, .id = (*f)[0], .image = (*f)[3], .image_id = (*f)[4]};
    c.pid = static_cast<pid_t>(ParseInt((*f)[1]).value_or(0));
    c.engine_version = CaptureFirstLine({engine, "--version"});
    return c;
  }
  if (engines_asked.empty()) {
    return NotFound(
        "--container needs a container engine: none of podman, docker, nerdctl is on PATH "
        "(footprint doctor lists what it finds)");
  }
  return NotFound("no container " + name + " in " + engines_asked +
                  " (`podman ps` / `docker ps` list the running ones)");
}

namespace {

// Blocks the stop signals for its lifetime (the sampler threads inherit the mask), so that they
// are taken by sigtimedwait and end the attach instead of footprint.
class BlockedStopSignals {
 public:
  BlockedStopSignals() {
    sigemptyset(&set_);
    for (int s : kStopSignals) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedStopSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  const sigset_t& set() const { return set_; }

 private:
  sigset_t set_, old_;
};

// Waits while the container runs, up to `duration_ns` (0: no limit) after `t0` or until a stop
// signal (returned; 0 otherwise). Why it stopped goes to `ended`.
int WaitWhileAttached(const RunCgroup& cgroup, Env& env, int64_t t0, int64_t duration_ns,
                      const sigset_t& signals, std::string& ended) {
  const timespec poll = {0, 20'000'000};
  while (cgroup.Populated()) {
    if (duration_ns > 0 && env.MonotonicNs() - t0 >= duration_ns) {
      ended = "--duration passed";
      return 0;
    }
    siginfo_t info;
    if (const int sig = sigtimedwait(&signals, &info, &poll); sig > 0) {
      ended = std::string("SIG") + sigabbrev_np(sig) + " came";
      PassStopSignal(sig);
      return sig;
    }
  }
  ended = "it exited";
  return 0;
}

json AttachMeta(const RunningContainer& c, const std::string& cgroup_dir) {
  return {{"engine", c.engine},
          {"engine_version", c.engine_version},
          {"id", c.id},
          {"image", c.image},
          {"image_id", c.image_id},
          {"attached", true},
          {"cgroup", cgroup_dir},
          {"ran", true},
          {"main_pid", c.pid}};
}

}  // namespace

Result<MonitorOutcome> RunAttachedContainer(Store& store, const MonitorOptions& opt,
                                            const std::string& name, int64_t duration_ns) {
  FP_RETURN_IF_ERROR(ValidateSampling(opt));
  FP_ASSIGN_OR_RETURN(RunningContainer found, FindRunningContainer(name));
  const CgroupSupport dirs = CgroupsOfProcess(found.pid);
  auto cgroup = RunCgroup::Observe(dirs);
  if (!cgroup.ok() || !(*cgroup)->Populated()) {
    return NotFound("container " + name +
                    " exited before footprint found its cgroups: " + "nothing was measured");
  }
  Env& env = *opt.env;
  const MetricIntervals intervals = ResolveIntervals(opt);
  MonitorOutcome out;
  json meta;
  RunRecord& run = out.run;
  run = NewRunRecord({"--container", name}, opt.name.empty() ? name : opt.name, opt.description,
                     opt.tags, opt.params, opt.record_git, meta, env);
  meta["intervals_ns"] = IntervalsMeta(intervals);
  meta["container"] = AttachMeta(found, dirs.v2_dir.empty() ? dirs.v1_cpuacct_dir : dirs.v2_dir);
  ProbeChoice choice{.exact_intervals = ExactIntervals(opt),
                     .gpu = ProbeChoice::Gpu{.wanted = opt.metrics, .devices = opt.gpus},
                     .container = cgroup->get(),
                     .attached = true};
  BlockedStopSignals signals;
  MonitorSession session(
      store, run.id, std::move(choice), meta,
      {.env = &env, .intervals = intervals, .flush_interval_ns = opt.flush_interval_ns});
  FP_RETURN_IF_ERROR(session.CreateRun(run, meta));
  FP_ASSIGN_OR_RETURN(const int64_t t0, session.Start());
  std::string ended;
  out.signal_received = WaitWhileAttached(**cgroup, env, t0, duration_ns, signals.set(), ended);
  session.Stop();
  RunTotals totals;  // the container's own figures are its probe's
  totals.totals["duration_s"] = static_cast<double>(session.duration_ns()) / 1e9;
  ProbeFindings findings{out.totals, meta, out.warnings};
  session.Finish(totals, findings);
  meta["container"]["ended"] = ended;
  run.status = RunStatus::kOk;
  out.end_stored = session.StoreEnd(out.totals, out.warnings).ok();
  return out;
}

}  // namespace footprint
