// RunExperiment: workloads in order, the runs of one workload released together through a
// barrier, each measured by a monitor process of its own.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "experiment/devices.h"
#include "experiment/plan.h"
#include "experiment/repro.h"
#include "footprint/env.h"
#include "footprint/experiment.h"
#include "footprint/monitor.h"
#include "run/run_metadata.h"
#include "run/stop_signals.h"
#include "store/reconcile.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/strings.h"
#include "util/word_table.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// Each state of a planned run: the run status it mirrors (none while pending), its word, and
// radT's Status word (MLflow's run statuses), which radT reads back to skip finished rows.
struct PlanStateWords {
  PlanRunState state;
  std::optional<RunStatus> run_status;
  std::string_view word;
  std::string_view mlflow;
};
constexpr PlanStateWords kPlanStateWords[] = {
    {PlanRunState::kPending, std::nullopt, "pending", "SCHEDULED"},
    {PlanRunState::kRunning, RunStatus::kRunning, "running", "RUNNING"},
    {PlanRunState::kOk, RunStatus::kOk, "ok", "FINISHED"},
    {PlanRunState::kFailed, RunStatus::kFailed, "failed", "FAILED"},
    {PlanRunState::kKilled, RunStatus::kKilled, "killed", "KILLED"},
    {PlanRunState::kInterrupted, RunStatus::kInterrupted, "interrupted", "KILLED"}};

const PlanStateWords& WordsOf(PlanRunState state) {
  const PlanStateWords* w = FindRow(kPlanStateWords, &PlanStateWords::state, state);
  return w ? *w : kPlanStateWords[0];
}

PlanRunState StateOf(RunStatus s) {
  const PlanStateWords* w = FindRow(kPlanStateWords, &PlanStateWords::run_status, s);
  return w ? w->state : PlanRunState::kPending;
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
  o.profiler = run.profiler;
  if (o.profiler) o.profiler->required = options.require_profiler;
  // The monitor measures the GPUs the command is given.
  if (auto it = run.env.find("CUDA_VISIBLE_DEVICES"); it != run.env.end()) o.gpus = it->second;
  json extra = {{"experiment", {{"plan", plan.path}, {"format", plan.format}, {"key", run.key}}}};
  if (run.csv_row >= 0) extra["experiment"]["csv_row"] = run.csv_row;
  if (plan.format == "yaml") {  // a YAML plan's parameters keep their types: lr 0.01 a number
    json& params = extra["params"] = json::object();
    for (const auto& [k, v] : run.params) params[k] = experiment::YamlTypedValue(v);
  }
  if (cache != nullptr) extra["repro"] = experiment::ReproRecord(run, *cache);
  o.extra_meta_json = JsonText(extra);
  return o;
}

// One line of footprint's own on stderr, made inert as a whole: it quotes run keys, commands
// and messages that come from the plan.
void Say(std::string_view message) { std::cerr << "footprint: " << Inert(message) << "\n"; }

// What the user should know of a run beyond its status: warnings, and why it did not start.
void SayNotes(const MonitorOutcome& outcome) {
  for (const std::string& w : outcome.warnings) Say("warning: " + w);
  if (!outcome.launch_error.empty()) Say(outcome.launch_error);
}

// A monitor's report to footprint's main process, one inert line each: "W warning", "N why
// the command did not start", then "EXIT_STATUS RUN_ID STATUS"; or "E message" when
// footprint could not run it. The main process says the notes, each warning once for the
// whole plan (a GPU that is missing is missing for every run).
std::string ReportText(const MonitorOutcome& outcome) {
  std::string text;
  for (const std::string& w : outcome.warnings) text += "W " + Inert(w) + "\n";
  if (!outcome.launch_error.empty()) text += "N " + Inert(outcome.launch_error) + "\n";
  return text + std::to_string(outcome.exit_status) + " " + outcome.run.id + " " +
         std::string(RunStatusName(outcome.run.status)) + "\n";
}

struct MonitorReport {
  PlanRunStatus status{PlanRunState::kFailed, ""};
  int exit_status = 125;
  std::vector<std::string> warnings;
  std::string launch_error;
  std::string error;  // footprint could not run it
};

MonitorReport ParseReport(std::string_view text) {
  MonitorReport report;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    const std::string rest(Trim(line.substr(1)));
    if (line[0] == 'W') {
      report.warnings.push_back(rest);
    } else if (line[0] == 'N') {
      report.launch_error = rest;
    } else if (line[0] == 'E') {
      report.error = rest;
    } else if (auto words = Split(line, ' '); words.size() == 3) {
      report.exit_status = static_cast<int>(ParseInt(words[0]).value_or(125));
      report.status = {StateOf(RunStatusFromName(words[2]).value_or(RunStatus::kFailed)),
                       std::string(words[1])};
    }
  }
  return report;
}

// The monitor process of one run: prepares the run, reports 'R' (ready) on `report_fd` (a
// socket), waits for the release byte on `release_fd`, runs, and reports (ReportText). The
// command writes its stdout and stderr to `output_fd` when it is not -1.
[[noreturn]] void MonitorChild(const ExperimentOptions& options, MonitorOptions mo, int report_fd,
                               int release_fd, pid_t parent, int output_fd) {
  // If footprint's main process dies (even by SIGKILL), stop the command: the run is stored as
  // killed and --resume runs it again, instead of a monitor nobody waits for.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) _exit(1);
  if (output_fd >= 0) {
    ::dup2(output_fd, STDOUT_FILENO);
    ::dup2(output_fd, STDERR_FILENO);
    ::close(output_fd);
  }
  // A socket, not a pipe: if footprint is gone, the message is lost (EPIPE) instead of
  // killing the monitor with SIGPIPE before it stores its run. (Ignoring SIGPIPE instead
  // would leave it ignored in the command too.)
  auto send = [&](const std::string& text) {
    (void)!::send(report_fd, text.data(), text.size(), MSG_NOSIGNAL);
  };
  auto store = OpenStore(options.db);
  if (!store.ok()) {
    send("E " + Inert(store.status().message()) + "\n");
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
    send("E " + Inert(outcome.status().message()) + "\n");
    _exit(1);
  }
  send(ReportText(*outcome));
  _exit(0);
}

// radT's names of the runs of a workload in the output they share: the run's Devices ("-"
// for none), then _A, _B, ... when several runs have the same Devices, then _COLLOCATION.
std::vector<std::string> RunLetters(const std::vector<const PlannedRun*>& runs) {
  std::vector<std::string> devices;
  std::map<std::string, int> sharing, seen;
  for (const PlannedRun* r : runs) {
    std::string joined;
    for (const std::string& d : r->devices) joined += (joined.empty() ? "" : "+") + d;
    devices.push_back(joined.empty() ? "-" : joined);
    ++sharing[devices.back()];
  }
  std::vector<std::string> letters;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string letter = devices[i];
    if (sharing[letter] > 1) {
      const int n = seen[devices[i]]++;
      letter += "_" + (n < 26 ? std::string(1, static_cast<char>('A' + n)) : std::to_string(n + 1));
    }
    if (runs[i]->collocation.mode == Collocation::Mode::kMps) letter += "_mps";
    if (runs[i]->collocation.mode == Collocation::Mode::kMig) {
      letter += "_" + runs[i]->collocation.mig_profile;
    }
    letters.push_back(letter);
  }
  return letters;
}

// The stdout and stderr of one run of a workload whose runs share the terminal, written to
// footprint's stdout line by line behind radT's "[RUN LETTER]:", so that collocated runs'
// lines can be told apart. A carriage return ends a line too (progress bars), as in radT,
// which reads the output as text.
class PrefixedOutput {
 public:
  explicit PrefixedOutput(const std::string& letter) {
    prefix_ = "[RUN " + letter + "]:";
    prefix_.resize(std::max<size_t>(prefix_.size(), 20), ' ');  // radT's ljust(20)
    prefix_ += ' ';
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    // Only footprint's end: the command's writes block as they would on a terminal.
    ::fcntl(read_fd_, F_SETFL, ::fcntl(read_fd_, F_GETFL) | O_NONBLOCK);
  }
  ~PrefixedOutput() {
    CloseFd(write_fd_);
    CloseFd(read_fd_);
  }
  PrefixedOutput(const PrefixedOutput&) = delete;
  PrefixedOutput& operator=(const PrefixedOutput&) = delete;

  bool ok() const { return read_fd_ >= 0; }
  int read_fd() const { return read_fd_; }
  int write_fd() const { return write_fd_; }
  bool at_end() const { return at_end_; }
  void CloseWriteEnd() { CloseFd(write_fd_); }

  // Writes the complete lines that can be read now (at most 1 MiB of them: a command that
  // writes without pause does not hold the other runs' reports back).
  void Pump() {
    char buf[8192];
    for (size_t total = 0; !at_end_ && total < (size_t{1} << 20);) {
      const ssize_t n = ::read(read_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) {
        at_end_ = true;
        break;
      }
      total += static_cast<size_t>(n);
      pending_.append(buf, static_cast<size_t>(n));
      WriteLines();
    }
    std::cout.flush();
  }

  // After the run: what is left to read, and a last line without its end.
  void Finish() {
    Pump();
    if (!pending_.empty()) std::cout << prefix_ << pending_ << "\n";
    pending_.clear();
    std::cout.flush();
  }

 private:
  void WriteLines() {
    size_t start = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const char c = pending_[i];
      if (c != '\n' && c != '\r') continue;
      // "\r\n" ends one line, at its '\r'.
      if (!(c == '\n' && after_cr_ && i == start)) {
        std::cout << prefix_ << std::string_view(pending_).substr(start, i - start) << "\n";
      }
      after_cr_ = c == '\r';
      start = i + 1;
    }
    pending_.erase(0, start);
    if (pending_.size() >= kMaxLine) {  // a line without end is written in pieces
      std::cout << prefix_ << pending_ << "\n";
      pending_.clear();
    }
  }

  static constexpr size_t kMaxLine = 64 * 1024;
  std::string prefix_;
  std::string pending_;  // the start of a line not yet ended
  bool after_cr_ = false;
  bool at_end_ = false;
  int read_fd_ = -1, write_fd_ = -1;
};

struct Monitor {
  const PlannedRun* run;
  pid_t pid = -1;
  int fd = -1;  // footprint's end of its report socket
  std::string text;
  bool ready = false, eof = false;
  std::unique_ptr<PrefixedOutput> output;  // null: the command writes to footprint's own
};

// A workload's monitors and the barrier they wait at: a pipe from which each reads one byte
// before its command starts; closed without the bytes, it makes every monitor give up.
struct StartedWorkload {
  std::vector<Monitor> monitors;
  int release_fd = -1;  // the barrier's write end, -1 once opened or abandoned
  bool released = false;

  void OpenGate(bool go) {
    if (release_fd < 0) return;
    if (go) {
      std::string bytes(monitors.size(), 'g');
      (void)!::write(release_fd, bytes.data(), bytes.size());
      released = true;
    }
    ::close(release_fd);
    release_fd = -1;
  }
};

// Forks one monitor per run, all behind the barrier; when the workload has several runs,
// each command's output goes through a PrefixedOutput. When a fork fails, none runs.
Result<StartedWorkload> StartMonitors(const std::vector<const PlannedRun*>& runs,
                                      std::vector<MonitorOptions>& prepared,
                                      const ExperimentOptions& options) {
  std::cout.flush();
  std::cerr.flush();
  int release[2];
  if (::pipe2(release, O_CLOEXEC) != 0) {
    return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  StartedWorkload w{.release_fd = release[1]};
  const std::vector<std::string> letters =
      runs.size() > 1 ? RunLetters(runs) : std::vector<std::string>{};
  const pid_t self = ::getpid();
  for (size_t i = 0; i < runs.size(); ++i) {
    auto output = letters.empty() ? nullptr : std::make_unique<PrefixedOutput>(letters[i]);
    int report[2];
    if ((output && !output->ok()) ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, report) != 0) {
      break;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      // Only its own pipes: another monitor's write end held here would hide that one's end.
      ::close(release[1]);
      ::close(report[0]);
      for (const Monitor& m : w.monitors) {
        ::close(m.fd);
        if (m.output) ::close(m.output->read_fd());
      }
      if (output) ::close(output->read_fd());
      MonitorChild(options, std::move(prepared[i]), report[1], release[0], self,
                   output ? output->write_fd() : -1);
    }
    ::close(report[1]);
    if (output) output->CloseWriteEnd();
    if (pid < 0) {
      ::close(report[0]);
      break;
    }
    w.monitors.push_back({runs[i], pid, report[0], "", false, false, std::move(output)});
  }
  ::close(release[0]);
  if (w.monitors.size() != runs.size()) w.OpenGate(false);
  return w;
}

// Reads what monitor `m` reported; marks it ended at end of file.
void ReadReport(Monitor& m, StartedWorkload& w) {
  char buf[512];
  const ssize_t got = ::read(m.fd, buf, sizeof buf);
  if (got <= 0) {
    m.eof = true;
    ::close(m.fd);
    if (!m.ready) w.OpenGate(false);  // it died before its command: the others stop too
    return;
  }
  m.text.append(buf, static_cast<size_t>(got));
  if (!m.ready && !m.text.empty() && m.text[0] == 'R') {
    m.ready = true;
    m.text.erase(0, 1);
  }
}

// Until every monitor has reported: releases the runs together once all are ready, passes a
// stop signal on to the monitors, and writes the runs' output as it comes.
void AwaitMonitors(StartedWorkload& w, const StopSignalCatcher& stop) {
  int forwarded = 0;
  auto running = [&] {
    return std::any_of(w.monitors.begin(), w.monitors.end(), [](auto& m) { return !m.eof; });
  };
  while (running()) {
    if (int sig = stop.received(); sig != 0 && forwarded != sig) {
      w.OpenGate(false);
      for (const Monitor& m : w.monitors) {
        if (!m.eof) ::kill(m.pid, sig);  // each forwards it to its command
      }
      forwarded = sig;
    }
    std::vector<pollfd> fds;
    std::vector<std::function<void()>> on_ready;
    for (Monitor& m : w.monitors) {
      if (!m.eof) {
        fds.push_back({m.fd, POLLIN, 0});
        on_ready.push_back([&m, &w] { ReadReport(m, w); });
      }
      if (m.output && !m.output->at_end()) {
        fds.push_back({m.output->read_fd(), POLLIN, 0});
        on_ready.push_back([&m] { m.output->Pump(); });
      }
    }
    if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) on_ready[i]();
    }
    if (!w.released && std::all_of(w.monitors.begin(), w.monitors.end(),
                                   [](const Monitor& m) { return m.ready; })) {
      w.OpenGate(true);
    }
  }
  w.OpenGate(false);
  for (Monitor& m : w.monitors) {
    int status;
    while (::waitpid(m.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (m.output) m.output->Finish();
  }
}

// What RunExperiment carries from one workload to the next.
struct ExperimentContext {
  const ExperimentPlan& plan;
  const ExperimentOptions& options;
  const StopSignalCatcher& stop;
  experiment::ReproCache cache;
  std::set<std::string> warnings_said;  // each said once for the whole plan
  ExperimentOutcome outcome;
};

// Says what the monitors reported and counts their runs.
void ReportRuns(const std::vector<const PlannedRun*>& runs, const StartedWorkload& w,
                ExperimentContext& ctx) {
  for (size_t i = 0; i < runs.size(); ++i) {
    const MonitorReport report =
        i < w.monitors.size() ? ParseReport(w.monitors[i].text) : MonitorReport{};
    if (!report.error.empty()) Say(runs[i]->key + ": " + report.error);
    for (const std::string& warning : report.warnings) {
      if (ctx.warnings_said.insert(warning).second) Say("warning: " + warning);
    }
    if (!report.launch_error.empty()) Say(report.launch_error);
    ctx.outcome.Count(report.status);
    if (ctx.options.on_run) ctx.options.on_run(*runs[i], report.status, report.exit_status);
  }
}

// Runs one workload's runs together. Returns the stop signal received meanwhile (0 if none).
Result<int> RunWorkload(const std::vector<const PlannedRun*>& runs, ExperimentContext& ctx) {
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
    // Output through a PrefixedOutput is a pipe, which Python buffers: unbuffered, as radT
    // runs its scripts, lines come as they are printed. Unless the user chose otherwise.
    if (runs.size() > 1 && !Env::Default().Var("PYTHONUNBUFFERED")) {
      run.env.try_emplace("PYTHONUNBUFFERED", "1");
    }
    prepared.push_back(OptionsFor(ctx.plan, run, ctx.options, &ctx.cache));
  }
  FP_ASSIGN_OR_RETURN(StartedWorkload w, StartMonitors(runs, prepared, ctx.options));
  AwaitMonitors(w, ctx.stop);
  ReportRuns(runs, w, ctx);
  return ctx.stop.received();
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
        FP_ASSIGN_OR_RETURN(auto done, LoadPlanStatus(*store, plan, Env::Default()));
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

std::string_view PlanRunStateName(PlanRunState state) { return WordsOf(state).word; }

Result<std::map<std::string, PlanRunStatus>> LoadPlanStatus(Store& store,
                                                            const ExperimentPlan& plan, Env& env) {
  FP_ASSIGN_OR_RETURN(auto runs, ListReconciledRuns(store, env));
  // A plan is known by its canonical path. Runs stored before footprint canonicalized it
  // hold the path as it was typed ("/home/me/../me/plan.csv"): canonicalized here, once each.
  std::map<std::string, bool, std::less<>> is_this_plan = {{plan.path, true}};
  auto of_this_plan = [&](const std::string& stored) {
    auto [it, added] = is_this_plan.try_emplace(stored, false);
    if (added) it->second = experiment::CanonicalPath(stored) == plan.path;
    return it->second;
  };
  std::map<std::string, PlanRunStatus> status;
  for (const RunRecord& r : runs) {  // oldest first: the latest run of a key wins
    if (r.experiment.empty()) continue;
    json meta = json::parse(r.meta_json, nullptr, false);
    if (!meta.is_object() || !meta.contains("experiment")) continue;
    const json& e = meta["experiment"];
    if (!e.is_object() || !of_this_plan(e.value("plan", ""))) continue;
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
      FP_ASSIGN_OR_RETURN(done, LoadPlanStatus(*store, plan, Env::Default()));
    }
  }
  StopSignalCatcher stop;
  ExperimentContext ctx{.plan = plan, .options = options, .stop = stop};
  for (const PlannedWorkload& w : plan.workloads) {
    if (int sig = stop.received(); sig != 0) {
      ctx.outcome.signal_received = sig;
      return ctx.outcome;
    }
    std::vector<const PlannedRun*> runs;
    for (const PlannedRun& r : w.runs) {
      if (StoredOk(done, r.key)) {
        ++ctx.outcome.runs_skipped;
      } else {
        runs.push_back(&r);
      }
    }
    if (runs.empty()) continue;
    if (options.on_workload) options.on_workload(w, runs);
    FP_ASSIGN_OR_RETURN(auto sig, RunWorkload(runs, ctx));
    if (sig != 0) {
      ctx.outcome.signal_received = sig;
      return ctx.outcome;
    }
  }
  ctx.outcome.complete = true;
  return ctx.outcome;
}

namespace {

// The Status and Run columns of a CSV plan's records (appended when missing) filled from
// `by_row` (by data row), each value written where the old one started, the plan's padding
// kept: a blank after each comma only where the plan's header has one.
void FillStatusColumns(std::vector<experiment::CsvRecord>& records,
                       const std::map<int, const PlanRunStatus*>& by_row) {
  auto& header = records.front().fields;
  const std::string blank = header.size() > 1 && header[1].raw.starts_with(' ') ? " " : "";
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (Lower(header[i].value) == Lower(name)) return i;
    }
    header.push_back({blank + name, name});
    return header.size() - 1;
  };
  const size_t status_col = column("Status"), run_col = column("Run");
  for (size_t r = 1; r < records.size(); ++r) {
    auto& fields = records[r].fields;
    fields.resize(std::max(fields.size(), header.size()));
    auto it = by_row.find(static_cast<int>(r - 1));
    const PlanRunStatus none;
    const PlanRunStatus& st = it == by_row.end() ? none : *it->second;
    auto put = [&](size_t col, const std::string& value) {
      std::string& raw = fields[col].raw;
      size_t lead = raw.find_first_not_of(" \t");
      std::string pad = raw.substr(0, lead == std::string::npos ? raw.size() : lead);
      if (pad.empty() && col > 0) pad = blank;
      std::string text = pad + experiment::CsvQuote(value);
      if (text.size() < raw.size()) text.append(raw.size() - text.size(), ' ');
      raw = text;
    };
    put(status_col, st.run_id.empty() ? "" : std::string(WordsOf(st.state).mlflow));
    put(run_col, st.run_id);
  }
}

// Writes `text` to `fd` and closes it; false (errno set) when either fails.
bool WriteAndClose(int fd, const std::string& text) {
  bool ok = true;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0 || (n < 0 && errno == EINTR);
    if (n > 0) done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0 && ok;
}

// Replaces the file at `path` (the file a link there points to) with `text` as a whole: a
// copy beside it renamed over it, with the old file's permissions, so that a plan written
// back in place is never left half written. What is not a regular file (/dev/stdout) is
// written to as it is.
Status ReplaceFile(const std::string& path, const std::string& text) {
  const std::string target = experiment::CanonicalPath(path);
  struct stat old;
  const bool replacing = ::stat(target.c_str(), &old) == 0;
  const bool in_place = replacing && !S_ISREG(old.st_mode);
  const std::string written =
      in_place ? target : target + ".footprint-" + std::to_string(::getpid());
  int fd = ::open(written.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    return IoError("cannot write " + path + ": " + std::strerror(errno) +
                   "; choose a writable path for --write-status");
  }
  // The old file's permissions, which the umask must not narrow; a new file gets the umask's.
  bool ok = in_place || !replacing || ::fchmod(fd, old.st_mode & 07777) == 0;
  ok = WriteAndClose(fd, text) && ok;
  if (!in_place && (!ok || std::rename(written.c_str(), target.c_str()) != 0)) {
    const std::string why = std::strerror(errno);
    ::unlink(written.c_str());
    return IoError("cannot write " + path + ": " + why);
  }
  if (!ok) return IoError("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status WriteCsvStatus(const ExperimentPlan& plan,
                      const std::map<std::string, PlanRunStatus>& status,
                      const std::string& out_path) {
  if (plan.format != "csv") {
    return InvalidArgument("--write-status needs a CSV plan (radT's format); " + plan.path +
                           " is " + plan.format);
  }
  FP_ASSIGN_OR_RETURN(auto records, experiment::TokenizeCsv(plan.source));
  std::map<int, const PlanRunStatus*> by_row;
  for (const auto& w : plan.workloads) {
    for (const auto& r : w.runs) {
      auto it = status.find(r.key);
      if (it != status.end()) by_row[r.csv_row] = &it->second;
    }
  }
  FillStatusColumns(records, by_row);
  std::string out;
  for (const experiment::CsvRecord& record : records) {
    for (size_t i = 0; i < record.fields.size(); ++i) {
      out += (i ? "," : "") + record.fields[i].raw;
    }
    out += "\n";
  }
  return ReplaceFile(out_path, out);
}

}  // namespace footprint
