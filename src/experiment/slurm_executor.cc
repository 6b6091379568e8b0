// RunExperimentOnSlurm: a job per workload, a step per run, the jobs chained so that workloads
// run one after another; footprint waits on squeue (once per poll for all of them), and each
// step's own footprint reads sstat of its step and stores the cross-check with its run
// (RunStepWithSstat).
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
#include <chrono>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "experiment/slurm_jobs.h"
#include "footprint/env.h"
#include "footprint/experiment.h"
#include "run/stop_signals.h"
#include "util/file.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using experiment::StepUsage;

// A workload's job and the runs it runs.
struct WorkloadJob {
  int64_t id = 0;
  std::vector<const PlannedRun*> runs;
  bool adopted = false;  // found in the queue (--resume): it may have stored a run already
};

// What sstat last said of a step, and when footprint asked (UTC ns).
struct Reading {
  StepUsage usage;
  int64_t at_ns = 0;
  int64_t sstat_rss_bytes = 0;  // the most sstat itself held: a process of the step it reads
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
                            {{"FOOTPRINT_DB", options.db}});
}

double Total(const std::map<std::string, double>& totals, const std::string& name) {
  auto it = totals.find(name);
  return it == totals.end() ? 0 : it->second;
}

// The run beside sstat's last reading of its step; nullopt when sstat never saw it.
std::optional<SstatCheck> CrossCheck(const std::string& key, const RunRecord& run,
                                     const std::map<std::string, double>& totals,
                                     const Readings& readings) {
  json meta = ParseStoredJson(run.meta_json);
  if (!meta.is_object() || !meta.contains("slurm")) return std::nullopt;
  const json& s = meta["slurm"];
  if (!s.value("job_id", json()).is_number() || !s.value("step_id", json()).is_number()) {
    return std::nullopt;
  }
  const int64_t job = s["job_id"].get<int64_t>(), step = s["step_id"].get<int64_t>();
  auto it = readings.find({job, step});
  if (it == readings.end()) return std::nullopt;
  SstatCheck c;
  c.key = key;
  c.run_id = run.id;
  c.step = std::to_string(job) + "." + std::to_string(step);
  c.cpu_s =
      Total(totals, "cpu_user_s") + Total(totals, "cpu_system_s") + Total(totals, "monitor_cpu_s");
  c.sstat_cpu_s = it->second.usage.cpu_s;
  c.rss_bytes = Total(totals, "rss_sum_peak_bytes") + Total(totals, "monitor_peak_rss_bytes") +
                static_cast<double>(it->second.sstat_rss_bytes);
  c.sstat_max_rss_bytes = it->second.usage.max_rss_bytes;
  c.read_before_end_s =
      static_cast<double>(run.ended_at_ns.value_or(it->second.at_ns) - it->second.at_ns) / 1e9;
  return c;
}

// Stores the cross-check with its run: sstat's figures as values, footprint's beside them.
Status StoreCheck(Store& store, const RunRecord& run, const SstatCheck& c) {
  const int64_t end_ns = run.ended_at_ns.value_or(run.started_at_ns) - run.started_at_ns;
  auto value = [&](const std::string& name, double sstat, double footprint) {
    json data = {{"kind", "sstat"},
                 {"step", c.step},
                 {"footprint", footprint},
                 {"read_before_end_s", c.read_before_end_s}};
    return store.InsertValue(
        {run.id, std::nullopt, name, std::nullopt, end_ns, sstat, JsonText(data)});
  };
  FP_RETURN_IF_ERROR(value("sstat.cpu_s", c.sstat_cpu_s, c.cpu_s));
  return value("sstat.max_rss_bytes", c.sstat_max_rss_bytes, c.rss_bytes);
}

// The cross-check the run's step stored (StoreCheck), as it was; nullopt when it stored none.
Result<std::optional<SstatCheck>> StoredCheck(Store& store, const std::string& key,
                                              const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(std::vector<ValueRecord> values, store.ListValues(run_id));
  std::optional<SstatCheck> c;
  for (const ValueRecord& v : values) {
    const json data = ParseStoredJson(v.data_json);
    if (!v.value || !data.is_object() || data.value("kind", "") != "sstat") continue;
    if (!c) c = SstatCheck{.key = key, .run_id = run_id, .step = data.value("step", "")};
    const double footprint = data.value("footprint", 0.0);
    c->read_before_end_s = data.value("read_before_end_s", 0.0);
    if (v.name == "sstat.cpu_s") {
      c->cpu_s = footprint;
      c->sstat_cpu_s = *v.value;
    } else if (v.name == "sstat.max_rss_bytes") {
      c->rss_bytes = footprint;
      c->sstat_max_rss_bytes = *v.value;
    }
  }
  return c;
}

// The job left the queue: reports each of its runs as the store has it (a run whose latest
// stored run is still the one before the job never started) with the cross-check its step
// stored.
Status FinishJob(const WorkloadJob& job, const ExperimentPlan& plan,
                 const std::map<std::string, PlanRunStatus>& before,
                 const ExperimentOptions& options, const SlurmExecutorOptions& slurm,
                 ExperimentOutcome& outcome) {
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(options.db));
  FP_ASSIGN_OR_RETURN(auto now, LoadPlanStatus(*store, plan));
  for (const PlannedRun* r : job.runs) {
    PlanRunStatus st{PlanRunState::kFailed, ""};
    int exit_status = 125;
    auto it = now.find(r->key);
    auto was = before.find(r->key);
    const bool stored = it != now.end() && (job.adopted || was == before.end() ||
                                            was->second.run_id != it->second.run_id);
    if (stored) {
      st = it->second;
      FP_ASSIGN_OR_RETURN(RunRecord run, store->GetRun(st.run_id));
      exit_status = run.exit_code.value_or(125);
      FP_ASSIGN_OR_RETURN(std::optional<SstatCheck> check, StoredCheck(*store, r->key, run.id));
      if (check) outcome.sstat.push_back(*check);
    } else {
      std::cerr << "footprint: " << r->key << ": job " << job.id
                << " ended without storing this run; see " << slurm.spool_dir << "/" << job.id
                << ".out\n";
    }
    outcome.Count(st);
    if (options.on_run) options.on_run(*r, st, exit_status);
  }
  return Status::Ok();
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

// Sleeps `ns` in short slices; false when a stop signal came meanwhile.
bool SleepUnlessStopped(int64_t ns, const StopSignalCatcher& stop) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (stop.received() == 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return stop.received() == 0;
}

// Waits until every job left the queue (one squeue a poll for all of them), and finishes each.
Status WaitForJobs(std::vector<WorkloadJob> jobs, const ExperimentPlan& plan,
                   const std::map<std::string, PlanRunStatus>& before,
                   const ExperimentOptions& options, const SlurmExecutorOptions& slurm,
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
        if (queued.contains(job->id)) {
          ++job;
          continue;
        }
        FP_RETURN_IF_ERROR(FinishJob(*job, plan, before, options, slurm, outcome));
        job = jobs.erase(job);
      }
    }
    if (!jobs.empty() && !SleepUnlessStopped(slurm.poll_ns, stop)) {
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
  // Stops reading; the reading kept, by (job, step).
  Readings Stop() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);  // the helper reads end-of-file and exits
    if (thread_.joinable()) thread_.join();
    if (pid_ > 0) {
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    return readings_;
  }

 private:
  // One reading as the helper sends it.
  struct Sent {
    double cpu_s, max_rss_bytes;
    int64_t at_ns, sstat_rss_bytes;
  };
  // The helper: a reading every poll_ns until the parent shuts its end.
  [[noreturn]] static void Poll(int fd, int64_t job, int64_t step, int64_t poll_ns) {
    pollfd parent{fd, POLLIN, 0};
    do {
      int64_t sstat_rss = 0;
      for (const StepUsage& u : experiment::StepsUsage(job, &sstat_rss)) {
        if (u.step_id != step) continue;
        rusage self{};  // the helper and its sstat are both in the step while it reads
        ::getrusage(RUSAGE_SELF, &self);
        const Sent sent{u.cpu_s, u.max_rss_bytes, Env::Default().RealtimeNs(),
                        sstat_rss + int64_t{self.ru_maxrss} * 1024};
        if (::send(fd, &sent, sizeof sent, MSG_NOSIGNAL) != sizeof sent) _exit(0);
      }
    } while (::poll(&parent, 1, static_cast<int>(poll_ns / 1'000'000)) == 0);
    _exit(0);
  }
  void Read(int64_t job, int64_t step) {
    Sent sent;
    while (::recv(fd_, &sent, sizeof sent, MSG_WAITALL) == sizeof sent) {
      const StepUsage u{job, step, sent.cpu_s, sent.max_rss_bytes};
      auto [it, first] = readings_.try_emplace({job, step}, Reading{u, sent.at_ns, 0});
      Reading& r = it->second;
      const double max_rss = std::max(r.usage.max_rss_bytes, u.max_rss_bytes);
      if (!first && u.cpu_s >= r.usage.cpu_s) r = {u, sent.at_ns, r.sstat_rss_bytes};
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
  FP_ASSIGN_OR_RETURN(auto status, LoadPlanStatus(*store, plan));
  auto stored = status.find(options.only_key);
  if (stored == status.end() || stored->second.run_id.empty()) return outcome;
  FP_ASSIGN_OR_RETURN(RunRecord run, store->GetRun(stored->second.run_id));
  FP_ASSIGN_OR_RETURN(auto totals, store->LoadTotals(run.id));
  if (auto check = CrossCheck(options.only_key, run, totals, readings)) {
    FP_RETURN_IF_ERROR(StoreCheck(*store, run, *check));
    outcome.sstat.push_back(*check);
  }
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
    FP_ASSIGN_OR_RETURN(before, LoadPlanStatus(*store, plan));
  }
  FP_ASSIGN_OR_RETURN(auto queued, JobsToAdopt(plan, options.resume));
  if (::mkdir(slurm.spool_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create " + slurm.spool_dir + ": " + std::strerror(errno) +
                   "; choose a writable folder with --slurm-dir");
  }
  ExperimentOutcome outcome;
  FP_ASSIGN_OR_RETURN(auto jobs, SubmitWorkloads(plan, before, queued, options, slurm, outcome));
  FP_RETURN_IF_ERROR(WaitForJobs(std::move(jobs), plan, before, options, slurm, outcome));
  outcome.complete = outcome.signal_received == 0;
  return outcome;
}

}  // namespace footprint
