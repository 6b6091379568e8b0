// RunExperimentOnSlurm: a job per workload, a step per run, the jobs chained so that workloads
// run one after another; footprint waits on squeue (once per poll for all of them), and each
// step's own footprint reads sstat of its step and stores the cross-check with its run
// (RunStepWithSstat). Where Slurm has an accounting database, a run whose step stored no
// cross-check gets one from sacct once its job ended (FinishJob).
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "footprint/env.h"
#include "footprint/experiment.h"
#include "run/stop_signals.h"
#include "slurm/jobs.h"
#include "util/file.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/rusage.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using experiment::StepUsage;

// A workload's job and the runs it runs.
struct WorkloadJob {
  int64_t id = 0;
  std::vector<const PlannedRun*> runs;
  bool adopted = false;       // found in the queue (--resume): it may have stored a run already
  int64_t left_queue_ns = 0;  // when footprint first found it gone from the queue (monotonic)
};

// How long after a job left the queue footprint waits for sacct's records of it to end:
// slurmctld sends them to slurmdbd then, in its own time.
constexpr int64_t kSacctLagNs = 30'000'000'000;

// What sstat last said of a step, and when footprint asked (UTC ns).
struct Reading {
  StepUsage usage;
  int64_t at_ns = 0;
  int64_t sstat_rss_bytes = 0;  // the most sstat itself held: a process of the step it reads
  double helper_cpu_s = 0;      // the CPU of the helper and its sstat calls, also of the step
};
using Readings = std::map<std::pair<int64_t, int64_t>, Reading>;  // by (job, step)

Status RefuseCollocations(const ExperimentPlan& plan) {
  for (const PlannedWorkload& w : plan.workloads) {
    for (const PlannedRun& r : w.runs) {
      if (r.collocation.mode != Collocation::Mode::kNone) {
        return InvalidArgument(r.key +
                               ": --executor slurm does not set up MPS or MIG collocations; "
                               "ask Slurm for them (gres mps or a MIG gres) through --sbatch, "
                               "or run the plan with --executor local on the GPU node");
      }
    }
  }
  return Status::Ok();
}

std::string PlanStem(const std::string& plan_path) {
  std::string name = plan_path.substr(plan_path.rfind('/') + 1);
  return name.substr(0, name.rfind('.'));
}

// The job's script: one step per run, started together, each `footprint experiment PLAN
// --run-key KEY` measuring its run's command. The database comes through the environment
// ($FOOTPRINT_DB, which sbatch passes on): a URI's password is never written into the script.
std::string JobScript(const ExperimentPlan& plan, const PlannedWorkload& workload,
                      const std::vector<const PlannedRun*>& runs,
                      const SlurmExecutorOptions& slurm) {
  std::string script =
      "#!/bin/sh\n# Written by footprint experiment --executor slurm: " + Inert(plan.path) +
      ", experiment " + Inert(workload.experiment) + ", workload " + Inert(workload.workload) +
      ".\n# A step per run, started together.\n"
      ": \"${FOOTPRINT_DB:?is not set in the job: keep sbatch's --export=ALL, "
      "or add FOOTPRINT_DB to it}\"\n";
  for (const PlannedRun* r : runs) {
    std::vector<std::string> words = {"srun",
                                      "--overlap",
                                      "--ntasks=1",
                                      "--nodes=1",
                                      "--job-name",
                                      r->key,
                                      slurm.footprint,
                                      "experiment",
                                      plan.path,
                                      "--run-key",
                                      r->key,
                                      "--poll",
                                      std::to_string(slurm.poll_ns / 1'000'000) + "ms"};
    words.insert(words.end(), slurm.step_args.begin(), slurm.step_args.end());
    script += ShellCommandLine(words) + " &\n";
  }
  return script + "wait\n";
}

Result<int64_t> SubmitWorkload(const ExperimentPlan& plan, size_t index,
                               const std::vector<const PlannedRun*>& runs,
                               const std::vector<int64_t>& after, const ExperimentOptions& options,
                               const SlurmExecutorOptions& slurm) {
  const PlannedWorkload& w = plan.workloads[index];
  const std::string base =
      slurm.spool_dir + "/" + PlanStem(plan.path) + "." + std::to_string(index + 1);
  FP_RETURN_IF_ERROR(WriteFile(base + ".sh", JobScript(plan, w, runs, slurm), /*create=*/true));
  std::vector<std::string> args = {"--job-name=" + w.experiment + "/" + w.workload,
                                   "--comment=" + experiment::JobComment(plan.path, index),
                                   "--ntasks=" + std::to_string(runs.size()),
                                   "--output=" + slurm.spool_dir + "/%j.out"};
  if (!after.empty()) {
    std::string dependency = "--dependency=afterany";
    for (int64_t id : after) dependency += ":" + std::to_string(id);
    args.push_back(dependency);
  }
  args.insert(args.end(), slurm.sbatch_args.begin(), slurm.sbatch_args.end());
  return experiment::Submit(args, base + ".sh", slurm.spool_dir + "/sbatch.log",
                            {{"FOOTPRINT_DB", options.db}}, Env::Default());
}

double Total(const std::map<std::string, double>& totals, const std::string& name) {
  auto it = totals.find(name);
  return it == totals.end() ? 0 : it->second;
}

// The (job, step) the run's meta records; nullopt outside a numbered step.
std::optional<std::pair<int64_t, int64_t>> StepOfRun(const RunRecord& run) {
  json meta = ParseStoredJson(run.meta_json);
  if (!meta.is_object() || !meta.contains("slurm")) return std::nullopt;
  const json& s = meta["slurm"];
  if (!s.value("job_id", json()).is_number() || !s.value("step_id", json()).is_number()) {
    return std::nullopt;
  }
  return std::make_pair(s["job_id"].get<int64_t>(), s["step_id"].get<int64_t>());
}

// The run beside `source`'s reading of its step (`step`, as StepOfRun says).
SstatCheck CrossCheck(const std::string& key, const RunRecord& run,
                      const std::map<std::string, double>& totals, std::pair<int64_t, int64_t> step,
                      const Reading& reading, const std::string& source) {
  SstatCheck c;
  c.key = key;
  c.run_id = run.id;
  c.source = source;
  c.step = std::to_string(step.first) + "." + std::to_string(step.second);
  c.cpu_s = Total(totals, "cpu_user_s") + Total(totals, "cpu_system_s") +
            Total(totals, "monitor_cpu_s") + reading.helper_cpu_s;
  c.sstat_cpu_s = reading.usage.cpu_s;
  c.rss_bytes = Total(totals, "rss_sum_peak_bytes") + Total(totals, "monitor_peak_rss_bytes") +
                static_cast<double>(reading.sstat_rss_bytes);
  c.sstat_max_rss_bytes = reading.usage.max_rss_bytes;
  c.read_before_end_s =
      static_cast<double>(run.ended_at_ns.value_or(reading.at_ns) - reading.at_ns) / 1e9;
  return c;
}

// Stores the cross-check with its run: Slurm's figures as values (SOURCE.cpu_s,
// SOURCE.max_rss_bytes, of kind SOURCE), footprint's beside them.
Status StoreCheck(Store& store, const RunRecord& run, const SstatCheck& c) {
  const int64_t end_ns = run.ended_at_ns.value_or(run.started_at_ns) - run.started_at_ns;
  auto value = [&](const std::string& name, double slurm, double footprint) {
    json data = {{"kind", c.source},
                 {"step", c.step},
                 {"footprint", footprint},
                 {"read_before_end_s", c.read_before_end_s}};
    return store.InsertValue(
        {run.id, std::nullopt, c.source + name, std::nullopt, end_ns, slurm, JsonText(data)});
  };
  FP_RETURN_IF_ERROR(value(".cpu_s", c.sstat_cpu_s, c.cpu_s));
  return value(".max_rss_bytes", c.sstat_max_rss_bytes, c.rss_bytes);
}

// The cross-check stored with the run (StoreCheck: by its step, or from sacct), as it was;
// nullopt when there is none.
Result<std::optional<SstatCheck>> StoredCheck(Store& store, const std::string& key,
                                              const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(std::vector<ValueRecord> values, store.ListValues(run_id));
  std::optional<SstatCheck> c;
  for (const ValueRecord& v : values) {
    const json data = ParseStoredJson(v.data_json);
    const std::string kind = data.is_object() ? data.value("kind", "") : "";
    if (!v.value || (kind != "sstat" && kind != "sacct")) continue;
    if (!c) c = SstatCheck{.key = key, .run_id = run_id, .step = data.value("step", "")};
    c->source = kind;
    const double footprint = data.value("footprint", 0.0);
    c->read_before_end_s = data.value("read_before_end_s", 0.0);
    if (v.name == kind + ".cpu_s") {
      c->cpu_s = footprint;
      c->sstat_cpu_s = *v.value;
    } else if (v.name == kind + ".max_rss_bytes") {
      c->rss_bytes = footprint;
      c->sstat_max_rss_bytes = *v.value;
    }
  }
  return c;
}

// A run of a job that left the queue, as the store has it.
struct Finished {
  const PlannedRun* planned;
  PlanRunStatus status{PlanRunState::kFailed, ""};
  std::optional<RunRecord> run;  // nullopt: the job did not store it
  std::optional<SstatCheck> check;
};

// The job's runs as the store has them (a run whose latest stored run is still the one before
// the job never started), each with the cross-check stored with it.
Result<std::vector<Finished>> StoredRuns(Store& store, const WorkloadJob& job,
                                         const ExperimentPlan& plan,
                                         const std::map<std::string, PlanRunStatus>& before) {
  FP_ASSIGN_OR_RETURN(auto now, LoadPlanStatus(store, plan, Env::Default()));
  std::vector<Finished> runs;
  for (const PlannedRun* r : job.runs) {
    Finished f{r};
    auto it = now.find(r->key);
    auto was = before.find(r->key);
    if (it != now.end() &&
        (job.adopted || was == before.end() || was->second.run_id != it->second.run_id)) {
      f.status = it->second;
      FP_ASSIGN_OR_RETURN(f.run, store.GetRun(f.status.run_id));
      FP_ASSIGN_OR_RETURN(f.check, StoredCheck(store, r->key, f.run->id));
    }
    runs.push_back(std::move(f));
  }
  return runs;
}

// Gives each stored run without a cross-check sacct's figures of its step, and stores them
// with it. sacct's are the step's at its end: read after the run's end, not before it.
Status CheckFromSacct(Store& store, std::vector<Finished>& runs,
                      const experiment::JobAccount& account) {
  for (Finished& f : runs) {
    auto step = f.run && !f.check ? StepOfRun(*f.run) : std::nullopt;
    if (!step) continue;
    auto usage = std::find_if(account.steps.begin(), account.steps.end(), [&](const auto& u) {
      return std::make_pair(u.job_id, u.step_id) == *step;
    });
    if (usage == account.steps.end()) continue;
    FP_ASSIGN_OR_RETURN(auto totals, store.LoadTotals(f.run->id));
    const Reading at_end{*usage, f.run->ended_at_ns.value_or(0), 0};
    f.check = CrossCheck(f.planned->key, *f.run, totals, *step, at_end, "sacct");
    FP_RETURN_IF_ERROR(StoreCheck(store, *f.run, *f.check));
  }
  return Status::Ok();
}

// The job left the queue: reports each of its runs as the store has it with its cross-check,
// sacct's where its step stored none and `sacct` (Slurm has an accounting database). False
// while sacct's records of the job have not ended yet (for kSacctLagNs): ask again later.
Result<bool> FinishJob(WorkloadJob& job, const ExperimentPlan& plan,
                       const std::map<std::string, PlanRunStatus>& before,
                       const ExperimentOptions& options, const SlurmExecutorOptions& slurm,
                       bool sacct, ExperimentOutcome& outcome) {
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
  FP_ASSIGN_OR_RETURN(std::vector<Finished> runs, StoredRuns(*store, job, plan, before));
  std::optional<experiment::JobAccount> account;
  if (sacct && std::any_of(runs.begin(), runs.end(), [](const Finished& f) { return !f.check; })) {
    account = experiment::AccountOf(job.id);
    const int64_t now = Env::Default().MonotonicNs();
    if (job.left_queue_ns == 0) job.left_queue_ns = now;
    if (account && !account->ended && now - job.left_queue_ns < kSacctLagNs) return false;
  }
  if (account) FP_RETURN_IF_ERROR(CheckFromSacct(*store, runs, *account));
  for (const Finished& f : runs) {
    if (f.check) outcome.sstat.push_back(*f.check);
    if (!f.run) {
      std::cerr << "footprint: " << f.planned->key << ": job " << job.id << " ended"
                << (account && account->ended ? " (" + account->state + ")" : "")
                << " without storing this run; see " << slurm.spool_dir << "/" << job.id
                << ".out\n";
    }
    outcome.Count(f.status);
    if (options.on_run) {
      options.on_run(*f.planned, f.status, f.run ? f.run->exit_code.value_or(125) : 125);
    }
  }
  return true;
}

// The plan's jobs in the queue, by workload index.
Result<std::map<size_t, experiment::QueuedJob>> PlanJobsQueued(const ExperimentPlan& plan) {
  FP_ASSIGN_OR_RETURN(auto queue, experiment::ListQueue());
  std::map<size_t, experiment::QueuedJob> jobs;
  for (experiment::QueuedJob& j : queue) {
    auto index = experiment::WorkloadOfComment(j.comment, plan.path);
    if (index && *index < plan.workloads.size()) jobs[*index] = std::move(j);
  }
  return jobs;
}

// Sleeps `ns` on the Env's clock in slices of 50 ms; false when a stop signal came meanwhile.
bool SleepUnlessStopped(int64_t ns, const StopSignalCatcher& stop, Env& env) {
  const int64_t end = env.MonotonicNs() + ns;
  for (int64_t now = env.MonotonicNs(); stop.received() == 0 && now < end;
       now = env.MonotonicNs()) {
    env.SleepUntil(std::min(end, now + 50'000'000));
  }
  return stop.received() == 0;
}

// Waits until every job left the queue (one squeue a poll for all of them), and finishes each.
Status WaitForJobs(std::vector<WorkloadJob> jobs, const ExperimentPlan& plan,
                   const std::map<std::string, PlanRunStatus>& before,
                   const ExperimentOptions& options, const SlurmExecutorOptions& slurm, bool sacct,
                   ExperimentOutcome& outcome) {
  StopSignalCatcher stop;
  bool said_unreachable = false;
  while (!jobs.empty()) {
    auto queue = experiment::ListQueue();
    if (!queue.ok()) {
      if (!said_unreachable) std::cerr << "footprint: " << queue.status().message() << "\n";
      said_unreachable = true;
    } else {
      said_unreachable = false;
      std::set<int64_t> queued;
      for (const auto& q : *queue) queued.insert(q.id);
      for (auto job = jobs.begin(); job != jobs.end();) {
        bool finished = false;
        if (!queued.contains(job->id)) {
          FP_ASSIGN_OR_RETURN(finished,
                              FinishJob(*job, plan, before, options, slurm, sacct, outcome));
        }
        job = finished ? jobs.erase(job) : job + 1;
      }
    }
    if (!jobs.empty() && !SleepUnlessStopped(slurm.poll_ns, stop, Env::Default())) {
      outcome.signal_received = stop.received();
      for (const WorkloadJob& job : jobs) outcome.queued_jobs.push_back(job.id);
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// The plan's jobs still in the queue, by workload: adopted with --resume, refused without it
// (so that nothing runs twice).
Result<std::map<size_t, experiment::QueuedJob>> JobsToAdopt(const ExperimentPlan& plan,
                                                            bool resume) {
  FP_ASSIGN_OR_RETURN(auto queued, PlanJobsQueued(plan));
  if (queued.empty() || resume) return queued;
  std::string ids;
  for (const auto& [index, job] : queued) ids += (ids.empty() ? "" : ", ") + std::to_string(job.id);
  return InvalidArgument(plan.path + " has job(s) in the queue already (" + ids +
                         "): add --resume to wait for them and submit the rest, or scancel "
                         "them first");
}

// A job for each workload with runs to run: the queued one, else a new one that waits for
// every job before it.
Result<std::vector<WorkloadJob>> SubmitWorkloads(
    const ExperimentPlan& plan, const std::map<std::string, PlanRunStatus>& before,
    const std::map<size_t, experiment::QueuedJob>& queued, const ExperimentOptions& options,
    const SlurmExecutorOptions& slurm, ExperimentOutcome& outcome) {
  std::vector<WorkloadJob> jobs;
  std::vector<int64_t> after;  // what the next submission waits for
  for (const auto& [index, job] : queued) after.push_back(job.id);
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const PlannedWorkload& w = plan.workloads[i];
    auto adopted = queued.find(i);
    WorkloadJob job{0, {}, adopted != queued.end()};
    for (const PlannedRun& r : w.runs) {
      if (options.resume && StoredOk(before, r.key)) {
        ++outcome.runs_skipped;
      } else {
        job.runs.push_back(&r);
      }
    }
    if (job.runs.empty()) continue;
    if (job.adopted) {
      job.id = adopted->second.id;
    } else {
      FP_ASSIGN_OR_RETURN(job.id, SubmitWorkload(plan, i, job.runs, after, options, slurm));
      after = {job.id};
    }
    if (slurm.on_job) slurm.on_job(w, job.runs.size(), job.id, job.adopted);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Reads sstat of one step every poll_ns. Keeps the reading of the most CPU (sstat counts live
// processes only: once the command ended, a later reading has less), with the largest MaxRSS
// and sstat's own largest RSS seen.
//
// sstat runs in a helper process of its own, forked before the run starts, which sends its
// readings over a socket: the step's footprint reaps every child of its own while it measures
// (wait4(-1)) and would take sstat's for the command's.
class StepWatch {
 public:
  StepWatch(int64_t job, int64_t step, int64_t poll_ns) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(0);
      Poll(fds[1], job, step, poll_ns);
    }
    ::close(fds[1]);
    if (pid_ < 0) {
      ::close(fds[0]);
      return;
    }
    fd_ = fds[0];
    // The thread takes no signal: SIGCHLD must reach the thread that waits for the command.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([this, job, step] { Read(job, step); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  ~StepWatch() { Stop(); }
  // Stops reading; the reading kept, by (job, step). None when the helper did not last to
  // the end (killed): its last reading is then from some time before the end, and the step
  // is better without one (sacct's, where Slurm keeps accounts, or none) than with it.
  Readings Stop() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);  // the helper reads end-of-file and exits
    if (thread_.joinable()) thread_.join();
    bool lasted = false;
    if (pid_ > 0) {
      int status = 0;
      pid_t reaped;
      while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
      }
      // ECHILD: the run's wait4(-1) reaped it, so it ended before the run did
      lasted = reaped == pid_ && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      pid_ = -1;
    }
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    if (!lasted) readings_.clear();
    return readings_;
  }

 private:
  // One reading as the helper sends it.
  struct Sent {
    double cpu_s, max_rss_bytes, helper_cpu_s;
    int64_t at_ns, sstat_rss_bytes;
  };
  // The helper: a reading every poll_ns until the parent shuts its end.
  [[noreturn]] static void Poll(int fd, int64_t job, int64_t step, int64_t poll_ns) {
    pollfd parent{fd, POLLIN, 0};
    do {
      int64_t sstat_rss = 0;
      for (const StepUsage& u : experiment::StepsUsage(job, &sstat_rss)) {
        if (u.step_id != step) continue;
        rusage self{}, calls{};  // the helper and its sstat are both in the step while it reads
        ::getrusage(RUSAGE_SELF, &self);
        ::getrusage(RUSAGE_CHILDREN, &calls);
        const Sent sent{u.cpu_s, u.max_rss_bytes, RusageCpuSeconds(self) + RusageCpuSeconds(calls),
                        Env::Default().RealtimeNs(), sstat_rss + int64_t{self.ru_maxrss} * 1024};
        if (::send(fd, &sent, sizeof sent, MSG_NOSIGNAL) != sizeof sent) _exit(0);
      }
    } while (::poll(&parent, 1, static_cast<int>(poll_ns / 1'000'000)) == 0);
    _exit(0);
  }
  void Read(int64_t job, int64_t step) {
    Sent sent;
    while (::recv(fd_, &sent, sizeof sent, MSG_WAITALL) == sizeof sent) {
      const StepUsage u{job, step, sent.cpu_s, sent.max_rss_bytes};
      auto [it, first] = readings_.try_emplace({job, step}, Reading{u, sent.at_ns, 0, 0});
      Reading& r = it->second;
      const double max_rss = std::max(r.usage.max_rss_bytes, u.max_rss_bytes);
      if (!first && u.cpu_s >= r.usage.cpu_s) r = {u, sent.at_ns, r.sstat_rss_bytes, 0};
      r.helper_cpu_s = std::max(r.helper_cpu_s, sent.helper_cpu_s);
      r.usage.max_rss_bytes = max_rss;
      r.sstat_rss_bytes = std::max(r.sstat_rss_bytes, sent.sstat_rss_bytes);
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  Readings readings_;  // the thread's until Stop joins it
  std::thread thread_;
};

// The number a SLURM_* variable holds; nullopt when unset or not a number ("batch").
std::optional<int64_t> SlurmNumber(const char* name) {
  std::optional<std::string> text = Env::Default().Var(name);
  if (!text || text->empty() || text->find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(*text);
}

}  // namespace

Result<ExperimentOutcome> RunStepWithSstat(const ExperimentPlan& plan,
                                           const ExperimentOptions& options, int64_t poll_ns) {
  const std::optional<int64_t> job = SlurmNumber("SLURM_JOB_ID"),
                               step = SlurmNumber("SLURM_STEP_ID");
  if (!job || !step || options.only_key.empty()) return RunExperiment(plan, options);
  StepWatch watch(*job, *step, poll_ns);
  FP_ASSIGN_OR_RETURN(ExperimentOutcome outcome, RunExperiment(plan, options));
  const Readings readings = watch.Stop();
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
  FP_ASSIGN_OR_RETURN(auto status, LoadPlanStatus(*store, plan, Env::Default()));
  auto stored = status.find(options.only_key);
  if (stored == status.end() || stored->second.run_id.empty()) return outcome;
  FP_ASSIGN_OR_RETURN(RunRecord run, store->GetRun(stored->second.run_id));
  const auto step_of_run = StepOfRun(run);
  auto reading = step_of_run ? readings.find(*step_of_run) : readings.end();
  if (reading == readings.end()) return outcome;  // sstat never saw the step
  FP_ASSIGN_OR_RETURN(auto totals, store->LoadTotals(run.id));
  outcome.sstat.push_back(
      CrossCheck(options.only_key, run, totals, *step_of_run, reading->second, "sstat"));
  FP_RETURN_IF_ERROR(StoreCheck(*store, run, outcome.sstat.back()));
  return outcome;
}

Result<ExperimentOutcome> RunExperimentOnSlurm(const ExperimentPlan& plan,
                                               const ExperimentOptions& options,
                                               const SlurmExecutorOptions& slurm) {
  FP_RETURN_IF_ERROR(CheckPlanRuns(plan, options));
  FP_RETURN_IF_ERROR(RefuseCollocations(plan));
  std::map<std::string, PlanRunStatus> before;
  {
    // Made here, not by the steps: several nodes creating one SQLite file at once would race.
    FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
    FP_ASSIGN_OR_RETURN(before, LoadPlanStatus(*store, plan, Env::Default()));
  }
  FP_ASSIGN_OR_RETURN(auto queued, JobsToAdopt(plan, options.resume));
  if (::mkdir(slurm.spool_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create " + slurm.spool_dir + ": " + std::strerror(errno) +
                   "; choose a writable folder with --slurm-dir");
  }
  ExperimentOutcome outcome;
  FP_ASSIGN_OR_RETURN(auto jobs, SubmitWorkloads(plan, before, queued, options, slurm, outcome));
  // Asked once: without an accounting database, sacct never answers and is not asked again.
  const bool sacct = !jobs.empty() && experiment::AccountingAnswers();
  FP_RETURN_IF_ERROR(WaitForJobs(std::move(jobs), plan, before, options, slurm, sacct, outcome));
  outcome.complete = outcome.signal_received == 0;
  return outcome;
}

}  // namespace footprint
