// RunExperiment: workloads in order, the runs of one workload released together through a
// barrier, each measured by a monitor process of its own.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "experiment/devices.h"
#include "experiment/plan.h"
#include "experiment/repro.h"
#include "footprint/experiment.h"
#include "footprint/monitor.h"
#include "run/run_metadata.h"
#include "run/stop_signals.h"
#include "store/reconcile.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

PlanRunState StateOf(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return PlanRunState::kRunning;
    case RunStatus::kOk:
      return PlanRunState::kOk;
    case RunStatus::kFailed:
      return PlanRunState::kFailed;
    case RunStatus::kKilled:
      return PlanRunState::kKilled;
    case RunStatus::kInterrupted:
      return PlanRunState::kInterrupted;
  }
  return PlanRunState::kPending;
}

// `cache` is null when only the options are checked (no record is made then).
MonitorOptions OptionsFor(const ExperimentPlan& plan, const PlannedRun& run,
                          const ExperimentOptions& options, experiment::ReproCache* cache) {
  MonitorOptions o;
  o.command = run.command;
  o.name = run.name;
  o.params = run.params;
  o.metrics = run.metrics;
  o.interval_ns = run.interval_ns;
  o.metric_interval_ns = run.metric_interval_ns;
  o.record_git = options.record_git;
  o.experiment = run.experiment;
  o.workload = run.workload;
  o.environment = run.env;
  o.working_dir = run.working_dir;
  // The monitor measures the GPUs the command is given.
  if (auto it = run.env.find("CUDA_VISIBLE_DEVICES"); it != run.env.end()) o.gpus = it->second;
  json extra = {{"experiment", {{"plan", plan.path}, {"format", plan.format}, {"key", run.key}}}};
  if (run.csv_row >= 0) extra["experiment"]["csv_row"] = run.csv_row;
  if (cache != nullptr) extra["repro"] = experiment::ReproRecord(run, *cache);
  o.extra_meta_json = JsonText(extra);
  return o;
}

// What the user should know of a run beyond its status: warnings, and why it did not start.
void SayNotes(const MonitorOutcome& outcome) {
  for (const std::string& w : outcome.warnings) std::cerr << "footprint: warning: " << w << "\n";
  if (!outcome.launch_error.empty()) std::cerr << "footprint: " << outcome.launch_error << "\n";
}

// The monitor process of one run: prepares the run, reports 'R' (ready) on `report_fd` (a
// socket), waits
// for the release byte on `release_fd`, runs, and reports "exit_status run_id status\n" — or
// "E message\n" when footprint could not run it.
[[noreturn]] void MonitorChild(const ExperimentOptions& options, MonitorOptions mo, int report_fd,
                               int release_fd, pid_t parent) {
  // If footprint's main process dies (even by SIGKILL), stop the command: the run is stored as
  // killed and --resume runs it again, instead of a monitor nobody waits for.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) _exit(1);
  // A socket, not a pipe: if footprint is gone, the message is lost (EPIPE) instead of
  // killing the monitor with SIGPIPE before it stores its run. (Ignoring SIGPIPE instead
  // would leave it ignored in the command too.)
  auto send = [&](const std::string& text) {
    (void)!::send(report_fd, text.data(), text.size(), MSG_NOSIGNAL);
  };
  auto store = OpenStore(options.db);
  if (!store.ok()) {
    send("E " + store.status().message() + "\n");
    _exit(1);
  }
  mo.before_start = [&]() -> Status {
    send("R");
    char go = 0;
    ssize_t n;
    while ((n = ::read(release_fd, &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) return InternalError("not started: another run of its workload could not start");
    return Status::Ok();
  };
  auto outcome = RunMonitored(**store, mo);
  store->reset();  // _exit runs no destructor: a server store's buffer is closed here
  if (!outcome.ok()) {
    send("E " + outcome.status().message() + "\n");
    _exit(1);
  }
  SayNotes(*outcome);
  send(std::to_string(outcome->exit_status) + " " + outcome->run.id + " " +
       std::string(RunStatusName(outcome->run.status)) + "\n");
  _exit(0);
}

struct Monitor {
  const PlannedRun* run;
  pid_t pid = -1;
  int fd = -1;  // footprint's end of its report socket
  std::string text;
  bool ready = false, eof = false;
};

// Runs one workload's runs together. Returns the stop signal received meanwhile (0 if none).
Result<int> RunWorkload(const ExperimentPlan& plan, const std::vector<const PlannedRun*>& runs,
                        const ExperimentOptions& options, const StopSignalCatcher& stop,
                        experiment::ReproCache& cache, ExperimentOutcome& outcome) {
  // Devices and collocation first; torn down when this function returns, however it ends.
  auto devices = experiment::DeviceSession::Start(runs);
  if (!devices.ok()) {
    return Status(devices.status().code(), "workload " + runs[0]->experiment + "/" +
                                               runs[0]->workload + ": " +
                                               devices.status().message());
  }
  std::vector<MonitorOptions> prepared;
  for (size_t i = 0; i < runs.size(); ++i) {
    PlannedRun run = *runs[i];
    for (const auto& [k, v] : (*devices)->EnvFor(i)) run.env[k] = v;
    prepared.push_back(OptionsFor(plan, run, options, &cache));
  }
  std::cout.flush();
  std::cerr.flush();
  int release[2];
  if (::pipe2(release, O_CLOEXEC) != 0) {
    return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::vector<Monitor> monitors;
  const pid_t self = ::getpid();
  for (size_t i = 0; i < runs.size(); ++i) {
    int report[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, report) != 0) break;
    pid_t pid = ::fork();
    if (pid == 0) {
      // Only its own pipes: another monitor's write end held here would hide that one's end.
      ::close(release[1]);
      ::close(report[0]);
      for (const Monitor& m : monitors) ::close(m.fd);
      MonitorChild(options, std::move(prepared[i]), report[1], release[0], self);
    }
    ::close(report[1]);
    if (pid < 0) {
      ::close(report[0]);
      break;
    }
    monitors.push_back({runs[i], pid, report[0]});
  }
  ::close(release[0]);
  bool released = false;
  int release_fd = release[1];
  auto open_gate = [&](bool go) {
    if (release_fd < 0) return;
    if (go) {
      std::string bytes(monitors.size(), 'g');
      (void)!::write(release_fd, bytes.data(), bytes.size());
      released = true;
    }
    ::close(release_fd);  // without the bytes: every monitor gives up before its command
    release_fd = -1;
  };
  if (monitors.size() != runs.size()) open_gate(false);  // a fork failed: none runs

  int forwarded = 0;
  size_t open = monitors.size();
  while (open > 0) {
    int sig = stop.received();
    if (sig != 0 && forwarded != sig) {
      open_gate(false);
      for (const Monitor& m : monitors) {
        if (!m.eof) ::kill(m.pid, sig);  // each forwards it to its command
      }
      forwarded = sig;
    }
    std::vector<pollfd> fds;
    std::vector<Monitor*> owners;
    for (Monitor& m : monitors) {
      if (m.eof) continue;
      fds.push_back({m.fd, POLLIN, 0});
      owners.push_back(&m);
    }
    int n = ::poll(fds.data(), fds.size(), 200);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Monitor& m = *owners[i];
      char buf[512];
      ssize_t got = ::read(m.fd, buf, sizeof buf);
      if (got <= 0) {
        m.eof = true;
        ::close(m.fd);
        --open;
        if (!m.ready) open_gate(false);  // it died before its command: the others stop too
        continue;
      }
      m.text.append(buf, static_cast<size_t>(got));
      if (!m.ready && !m.text.empty() && m.text[0] == 'R') {
        m.ready = true;
        m.text.erase(0, 1);
      }
    }
    if (!released && release_fd >= 0 &&
        std::all_of(monitors.begin(), monitors.end(), [](const Monitor& m) { return m.ready; })) {
      open_gate(true);
    }
  }
  open_gate(false);
  for (Monitor& m : monitors) {
    int status;
    while (::waitpid(m.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    PlanRunStatus st;
    st.state = PlanRunState::kFailed;
    int exit_status = 125;
    if (i < monitors.size()) {
      std::string_view text = Trim(monitors[i].text);
      if (!text.empty() && text[0] == 'E') {
        std::cerr << "footprint: " << runs[i]->key << ": " << Trim(text.substr(1)) << "\n";
      } else {
        auto words = Split(text, ' ');
        if (words.size() == 3) {
          exit_status = static_cast<int>(ParseInt(words[0]).value_or(125));
          st.run_id = std::string(words[1]);
          st.state = StateOf(RunStatusFromName(words[2]).value_or(RunStatus::kFailed));
        }
      }
    }
    outcome.Count(st);
    if (options.on_run) options.on_run(*runs[i], st, exit_status);
  }
  return stop.received();
}

// One run measured by this process itself, without a monitor process: what each step of
// --executor slurm runs, so that the step's task is footprint and the command's tree only.
Result<ExperimentOutcome> RunOneHere(const ExperimentPlan& plan, const PlannedRun& run,
                                     const ExperimentOptions& options) {
  FP_ASSIGN_OR_RETURN(auto devices, experiment::DeviceSession::Start({&run}));
  PlannedRun prepared = run;
  for (const auto& [k, v] : devices->EnvFor(0)) prepared.env[k] = v;
  experiment::ReproCache cache;
  MonitorOptions mo = OptionsFor(plan, prepared, options, &cache);
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
  if (options.on_workload) {
    const PlannedWorkload w{run.experiment, run.workload, {}};
    options.on_workload(w, {&run});
  }
  FP_ASSIGN_OR_RETURN(MonitorOutcome measured, RunMonitored(*store, mo));
  SayNotes(measured);
  const PlanRunStatus st{StateOf(measured.run.status), measured.run.id};
  ExperimentOutcome outcome;
  outcome.Count(st);
  outcome.signal_received = measured.signal_received;
  outcome.complete = measured.signal_received == 0;
  if (options.on_run) options.on_run(run, st, measured.exit_status);
  return outcome;
}

// options.only_key's run: its devices checked (not the plan's: a step runs on a node of its
// own), skipped when --resume finds it ok.
Result<ExperimentOutcome> RunOnlyKey(const ExperimentPlan& plan, const ExperimentOptions& options) {
  for (const PlannedWorkload& w : plan.workloads) {
    for (const PlannedRun& r : w.runs) {
      if (r.key != options.only_key) continue;
      ExperimentPlan alone = plan;
      alone.workloads = {{w.experiment, w.workload, {r}}};
      FP_RETURN_IF_ERROR(experiment::CheckPlanDevices(alone));
      if (options.resume) {
        FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
        FP_ASSIGN_OR_RETURN(auto done, LoadPlanStatus(*store, plan));
        if (StoredOk(done, r.key)) {
          return ExperimentOutcome{.runs_skipped = 1, .complete = true};
        }
      }
      return RunOneHere(plan, r, options);
    }
  }
  return InvalidArgument("no run " + QuotedInert(options.only_key) + " in " + plan.path +
                         "; footprint experiment " + plan.path + " --dry-run lists the keys");
}

}  // namespace

std::string_view PlanRunStateName(PlanRunState state) {
  switch (state) {
    case PlanRunState::kPending:
      return "pending";
    case PlanRunState::kRunning:
      return "running";
    case PlanRunState::kOk:
      return "ok";
    case PlanRunState::kFailed:
      return "failed";
    case PlanRunState::kKilled:
      return "killed";
    case PlanRunState::kInterrupted:
      return "interrupted";
  }
  return "pending";
}

// radT's Status words (MLflow's run statuses), which radT reads back to skip finished rows.
std::string_view MlflowStatusName(PlanRunState state) {
  switch (state) {
    case PlanRunState::kOk:
      return "FINISHED";
    case PlanRunState::kFailed:
      return "FAILED";
    case PlanRunState::kKilled:
    case PlanRunState::kInterrupted:
      return "KILLED";
    case PlanRunState::kRunning:
      return "RUNNING";
    case PlanRunState::kPending:
      break;
  }
  return "SCHEDULED";
}

Result<std::map<std::string, PlanRunStatus>> LoadPlanStatus(Store& store,
                                                            const ExperimentPlan& plan) {
  FP_ASSIGN_OR_RETURN(auto runs, ListReconciledRuns(store));
  std::map<std::string, PlanRunStatus> status;
  for (const RunRecord& r : runs) {  // oldest first: the latest run of a key wins
    if (r.experiment.empty()) continue;
    json meta = json::parse(r.meta_json, nullptr, false);
    if (!meta.is_object() || !meta.contains("experiment")) continue;
    const json& e = meta["experiment"];
    if (!e.is_object() || e.value("plan", "") != plan.path) continue;
    status[e.value("key", "")] = {StateOf(r.status), r.id};
  }
  return status;
}

bool StoredOk(const std::map<std::string, PlanRunStatus>& status, const std::string& key) {
  auto it = status.find(key);
  return it != status.end() && it->second.state == PlanRunState::kOk;
}

Status CheckPlanRuns(const ExperimentPlan& plan, const ExperimentOptions& options) {
  for (const auto& w : plan.workloads) {
    for (const auto& r : w.runs) {
      MonitorOptions mo = OptionsFor(plan, r, options, nullptr);
      if (Status st = ValidateMonitorOptions(mo); !st.ok()) {
        return InvalidArgument(r.key + ": " + st.message());
      }
    }
  }
  return Status::Ok();
}

Result<ExperimentOutcome> RunExperiment(const ExperimentPlan& plan,
                                        const ExperimentOptions& options) {
  FP_RETURN_IF_ERROR(CheckPlanRuns(plan, options));
  if (!options.only_key.empty()) return RunOnlyKey(plan, options);
  // GPU rows on a machine that cannot run them fail here, before anything starts.
  FP_RETURN_IF_ERROR(experiment::CheckPlanDevices(plan));
  std::map<std::string, PlanRunStatus> done;
  {
    // Closed before any monitor is forked: an SQLite connection must not cross a fork (the
    // monitors open their own).
    FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
    if (options.resume) {
      FP_ASSIGN_OR_RETURN(done, LoadPlanStatus(*store, plan));
    }
  }
  ExperimentOutcome outcome;
  experiment::ReproCache cache;
  StopSignalCatcher stop;
  for (const PlannedWorkload& w : plan.workloads) {
    if (int sig = stop.received(); sig != 0) {
      outcome.signal_received = sig;
      return outcome;
    }
    std::vector<const PlannedRun*> runs;
    for (const PlannedRun& r : w.runs) {
      if (StoredOk(done, r.key)) {
        ++outcome.runs_skipped;
      } else {
        runs.push_back(&r);
      }
    }
    if (runs.empty()) continue;
    if (options.on_workload) options.on_workload(w, runs);
    FP_ASSIGN_OR_RETURN(auto sig, RunWorkload(plan, runs, options, stop, cache, outcome));
    if (sig != 0) {
      outcome.signal_received = sig;
      return outcome;
    }
  }
  outcome.complete = true;
  return outcome;
}

Status WriteCsvStatus(const ExperimentPlan& plan,
                      const std::map<std::string, PlanRunStatus>& status,
                      const std::string& out_path) {
  if (plan.format != "csv") {
    return InvalidArgument("--write-status needs a CSV plan (radT's format); " + plan.path +
                           " is " + plan.format);
  }
  FP_ASSIGN_OR_RETURN(auto records, experiment::TokenizeCsv(plan.source));
  std::map<int, const PlanRunStatus*> by_row;
  std::map<int, const PlannedRun*> runs_by_row;
  for (const auto& w : plan.workloads) {
    for (const auto& r : w.runs) {
      runs_by_row[r.csv_row] = &r;
      auto it = status.find(r.key);
      if (it != status.end()) by_row[r.csv_row] = &it->second;
    }
  }
  auto& header = records.front().fields;
  int status_col = -1, run_col = -1;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string name = Lower(header[i].value);
    if (name == "status") status_col = static_cast<int>(i);
    if (name == "run") run_col = static_cast<int>(i);
  }
  if (status_col < 0) {
    status_col = static_cast<int>(header.size());
    header.push_back({" Status", "Status"});
  }
  if (run_col < 0) {
    run_col = static_cast<int>(header.size());
    header.push_back({" Run", "Run"});
  }
  std::string out;
  for (size_t r = 0; r < records.size(); ++r) {
    auto& fields = (records)[r].fields;
    if (r > 0) {
      fields.resize(std::max(fields.size(), header.size()));
      auto it = by_row.find(static_cast<int>(r - 1));
      const PlanRunStatus none;
      const PlanRunStatus& st = it == by_row.end() ? none : *it->second;
      // Keep the column's padding: the new value is written where the old one started.
      auto put = [&](int col, const std::string& value) {
        std::string& raw = fields[static_cast<size_t>(col)].raw;
        size_t lead = raw.find_first_not_of(" \t");
        std::string pad = raw.substr(0, lead == std::string::npos ? raw.size() : lead);
        if (pad.empty() && col > 0) pad = " ";
        std::string text = pad + experiment::CsvQuote(value);
        if (text.size() < raw.size()) text.append(raw.size() - text.size(), ' ');
        raw = text;
      };
      put(status_col, st.run_id.empty() ? "" : std::string(MlflowStatusName(st.state)));
      put(run_col, st.run_id);
    }
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i].raw;
    out += "\n";
  }
  FILE* f = std::fopen(out_path.c_str(), "w");
  if (f == nullptr) {
    return IoError("cannot write " + out_path + ": " + std::strerror(errno) +
                   "; choose a writable path for --write-status");
  }
  bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return IoError("cannot write " + out_path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace footprint
