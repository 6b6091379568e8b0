// footprint experiment: run a plan (radT's CSV or YAML sweep, or footprint's YAML plan) of
// collocated workloads.
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"
#include "experiment/plan.h"
#include "footprint/experiment.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

std::string CollocationText(const PlannedRun& r) {
  switch (r.collocation.mode) {
    case Collocation::Mode::kNone:
      return "-";
    case Collocation::Mode::kMps:
      return r.mps_thread_percentage ? "mps:" + std::to_string(*r.mps_thread_percentage) : "mps";
    case Collocation::Mode::kMig:
      return r.collocation.mig_profile;
  }
  return "-";
}

// "experiment E, workload W": where a workload sits in its plan.
std::string WorkloadText(const PlannedWorkload& w) {
  return "experiment " + w.experiment + ", workload " + w.workload;
}

// Whether any run has a name of its own (radT's Name column), not its key.
bool HasNames(const ExperimentPlan& plan) {
  for (const PlannedWorkload& w : plan.workloads) {
    for (const PlannedRun& r : w.runs) {
      if (r.name != r.key) return true;
    }
  }
  return false;
}

// The whole plan as it would run: one block per workload, one line per run.
void PrintPlan(const ExperimentPlan& plan, const std::map<std::string, PlanRunStatus>& status) {
  PrintLine(std::cout, plan.path + ": " + std::to_string(plan.workloads.size()) + " workload(s), " +
                           std::to_string(plan.run_count()) +
                           " run(s); the runs of a workload start together");
  const bool names = HasNames(plan);
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const PlannedWorkload& w = plan.workloads[i];
    std::cout << "\n";
    PrintLine(std::cout, "workload " + std::to_string(i + 1) + ": " + WorkloadText(w));
    std::vector<std::string> columns = {"key",         "status",  "devices",
                                        "collocation", "command", "env"};
    if (names) columns.insert(columns.begin() + 1, "name");
    Table t(columns);
    for (const PlannedRun& r : w.runs) {
      auto it = status.find(r.key);
      std::string devices;
      for (const auto& d : r.devices) devices += (devices.empty() ? "" : "+") + d;
      std::string env;
      for (const auto& [k, v] : r.env) env += (env.empty() ? "" : " ") + k + "=" + v;
      std::vector<Cell> row = {r.key,
                               std::string(PlanRunStateName(
                                   it == status.end() ? PlanRunState::kPending : it->second.state)),
                               devices.empty() ? "-" : devices,
                               CollocationText(r),
                               FormatCommand(r.command),
                               env.empty() ? "-" : env};
      if (names) row.insert(row.begin() + 1, r.name);
      t.Add(row);
    }
    t.Print(std::cout, "  ");
  }
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

struct ExperimentArgs {
  std::string db, plan, write_status, python = "python3", executor = "local", run_key;
  std::string slurm_dir = "footprint-slurm", sbatch, poll = "2s", devices;
  bool dry_run = false, resume = false, no_git = false, require_profiler = false;
};

// The plan as this invocation runs it: loaded, checked against the options, its runs put on
// the CPU with --devices cpu, its notes said.
Result<ExperimentPlan> PreparePlan(const ExperimentArgs& args) {
  auto plan = LoadPlan(args.plan, {.python = args.python});
  if (!plan.ok()) {
    return plan.status().code() == StatusCode::kNotFound ? InvalidArgument(plan.status().message())
                                                         : plan.status();
  }
  if (!args.write_status.empty() && plan->format != "csv") {
    return InvalidArgument("--write-status needs a CSV plan; " + args.plan + " is " + plan->format);
  }
  if (args.devices == "cpu") {
    const size_t mapped = experiment::MapDevicesToCpu(*plan);
    if (mapped > 0) {
      plan->notes.push_back(std::to_string(mapped) +
                            " run(s) that name GPUs run on the CPU (--devices cpu)");
    }
  }
  for (const std::string& note : plan->notes) PrintLine(std::cerr, "footprint: note: " + note);
  return plan;
}

// What the database holds of the plan's runs; nothing when there is no database yet.
Result<std::map<std::string, PlanRunStatus>> StoredStatus(const std::string& db,
                                                          const ExperimentPlan& plan) {
  if (!Exists(db)) return std::map<std::string, PlanRunStatus>{};
  FP_ASSIGN_OR_RETURN(auto store, OpenExisting(db));
  return LoadPlanStatus(*store, plan, Env::Default());
}

// Each run beside sstat's last reading of its step, or sacct's account of it where the step
// stored none (docs/experiments.md, "On Slurm"; docs/cluster.md, "The sacct fallback").
void PrintSstatChecks(const std::vector<SstatCheck>& checks) {
  if (checks.empty()) return;
  std::cout << "sstat cross-check (footprint: the command's tree and footprint itself, the "
               "step's task as Slurm sees it)\n";
  Table t({"key", "step", "cpu", "sstat cpu", "rss peak", "sstat MaxRSS", "read"}, {2, 3, 4, 5, 6});
  bool from_sacct = false;
  for (const SstatCheck& c : checks) {
    const bool sacct = c.source == "sacct";
    from_sacct = from_sacct || sacct;
    t.Add({c.key, c.step, FormatValue("s", c.cpu_s), FormatValue("s", c.sstat_cpu_s),
           FormatValue("bytes", c.rss_bytes), FormatValue("bytes", c.sstat_max_rss_bytes),
           sacct ? "sacct, at the step's end"
                 : FormatValue("s", c.read_before_end_s) + " before the end"});
  }
  t.Print(std::cout, "  ");
  std::cout << "  sstat's CPU is jobacct_gather's last reading in whole seconds, of the processes "
               "alive then: lower than footprint's by what ran after it or in processes that "
               "ended before it\n";
  if (from_sacct) {
    std::cout << "  sacct (the step stored no sstat reading): TotalCPU, the CPU time of every "
                 "process of the step that was waited for, and jobacct_gather's MaxRSS\n";
  }
}

// Where the runs that ran are, for the last line: "stored in DB" only once a server holds all
// of them; otherwise where they wait (each run's buffer is recorded with it: show says which).
std::string WhereTheRunsAre(const std::vector<std::string>& run_ids, const std::string& db) {
  const std::string location = RedactedLocation(db);
  if (!IsServerLocation(db) || run_ids.empty()) return "stored in " + location;
  auto store = OpenExisting(db);
  if (!store.ok()) {
    return "waiting in the runs' buffers until " + location +
           " answers (footprint push sends them; it said: " + store.status().message() + ")";
  }
  std::set<std::string> hosts;
  int waiting = 0;
  for (const std::string& id : run_ids) {
    auto pending = (*store)->PendingBuffers(id);
    if (!pending.ok() || pending->empty()) continue;
    ++waiting;
    for (const PendingBuffer& b : *pending) hosts.insert(b.host);
  }
  if (waiting == 0) return "stored in " + location;
  std::string where;
  for (const std::string& h : hosts) where += (where.empty() ? "" : ", ") + h;
  return std::to_string(waiting) + " run(s) still waiting in buffers on " + where + " until " +
         location + " takes them (footprint push there; footprint show RUN says where)";
}

// The experiment's last line: how many runs ran and how they ended, where they are stored.
void PrintSummary(const ExperimentOutcome& outcome, const ExperimentArgs& args,
                  const std::vector<std::string>& run_ids) {
  std::ostringstream summary;
  summary << "footprint: " << outcome.runs_started << " run(s) ran, " << outcome.runs_failed
          << " not ok";
  if (outcome.runs_skipped > 0) summary << ", " << outcome.runs_skipped << " already ok";
  if (outcome.signal_received != 0) {
    summary << "; stopped by signal " << outcome.signal_received << " (footprint experiment "
            << args.plan << " --resume goes on)";
  }
  if (!outcome.queued_jobs.empty()) {
    summary << "; job(s) still queued:";
    for (int64_t id : outcome.queued_jobs) summary << " " << id;
  }
  summary << "; " << WhereTheRunsAre(run_ids, args.db);
  PrintLine(std::cerr, summary.str());
}

// The options --executor slurm gives every step and sbatch.
Result<SlurmExecutorOptions> SlurmOptionsFrom(const ExperimentArgs& args) {
  SlurmExecutorOptions s;
  std::error_code ec;
  s.footprint = std::filesystem::canonical("/proc/self/exe", ec).string();
  s.spool_dir = experiment::Absolute(args.slurm_dir);
  FP_ASSIGN_OR_RETURN(s.sbatch_args, SplitShellWords(args.sbatch));
  FP_ASSIGN_OR_RETURN(s.poll_ns, ParseDurationNs(args.poll));
  if (s.poll_ns < 100'000'000) return InvalidArgument("--poll must be at least 100ms");
  s.step_args = {"--python", args.python};
  if (args.no_git) s.step_args.push_back("--no-git");
  if (args.require_profiler) s.step_args.push_back("--require-profiler");
  if (!args.devices.empty()) s.step_args.insert(s.step_args.end(), {"--devices", args.devices});
  s.on_job = [](const PlannedWorkload& w, size_t runs, int64_t job, bool adopted) {
    PrintLine(std::cerr, "footprint: " + WorkloadText(w) + ": " +
                             (adopted ? "job " + std::to_string(job) + " found in the queue"
                                      : "submitted as job " + std::to_string(job)) +
                             ", " + std::to_string(runs) + " run(s) as steps of it");
  };
  return s;
}

// How many of the plan's runs this invocation starts (--resume skips the ok ones).
int RunsToStart(const ExperimentPlan& plan, const ExperimentArgs& args,
                const std::map<std::string, PlanRunStatus>& status) {
  int to_run = 0;
  for (const PlannedWorkload& w : plan.workloads) {
    for (const PlannedRun& r : w.runs) {
      if (!args.run_key.empty() && r.key != args.run_key) continue;
      to_run += !(args.resume && StoredOk(status, r.key));
    }
  }
  return to_run;
}

// The options of `footprint experiment` after -o/--db, into `args`.
void AddExperimentOptions(CLI::App& cmd, ExperimentArgs& args) {
  cmd.add_option("PLAN", args.plan, "the plan: FILE.csv (radT's columns) or FILE.yaml")->required();
  cmd.add_flag("--dry-run", args.dry_run,
               "print the resolved plan (commands, environment, devices, status) and run nothing");
  cmd.add_flag("--resume", args.resume,
               "skip runs of this plan already stored as ok; run the failed, killed, "
               "interrupted and missing ones");
  cmd.add_option("--write-status", args.write_status,
                 "write the CSV plan with Status and Run filled in to FILE after each run (a copy, "
                 "or the plan itself as radT does)")
      ->option_text("FILE");
  cmd.add_option("--python", args.python,
                 "interpreter for .py files (default python3; a YAML plan's 'python:' wins)");
  cmd.add_flag("--no-git", args.no_git, "do not record git commits");
  cmd.add_flag("--require-profiler", args.require_profiler,
               "refuse the plan when a run's profiler listener (nsys, ncu, ...) finds its tool "
               "absent (default: one line, and the run goes on unprofiled)");
  cmd.add_option("--devices", args.devices,
                 "run every run on the CPU, whatever its Devices and collocation name "
                 "(a radT plan written for GPUs, Devices 0, on a machine without one); the "
                 "commands see no GPU (CUDA_VISIBLE_DEVICES empty)")
      ->check(CLI::IsMember({"cpu"}))
      ->option_text("cpu");
  cmd.add_option("--executor", args.executor,
                 "local (default): the runs start here; slurm: a job per workload, a step per "
                 "run (sbatch and srun --overlap), waited for here")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->option_text("local|slurm");
  cmd.add_option("--run-key", args.run_key,
                 "run only the run with this key, measured by this process (what each step "
                 "of --executor slurm runs)")
      ->option_text("KEY");
  cmd.add_option("--slurm-dir", args.slurm_dir,
                 "--executor slurm: folder for the job scripts and Slurm's output (default "
                 "footprint-slurm); the nodes must see it")
      ->option_text("DIR");
  cmd.add_option("--sbatch", args.sbatch,
                 "--executor slurm: options for every sbatch, one shell-quoted string "
                 "(--sbatch='-p gpu --time=60')")
      ->option_text("'OPTIONS'");
  cmd.add_option("--poll", args.poll,
                 "--executor slurm: how often to ask squeue (once for all the plan's jobs) and, "
                 "in each step, sstat of the step (default 2s)")
      ->option_text("DURATION");
}

// What the plan says as it goes: a line per workload started and per run ended. It keeps
// each run's status (written to --write-status after each) and the ids of the runs made.
class ExperimentProgress {
 public:
  ExperimentProgress(const ExperimentPlan& plan, const ExperimentArgs& args,
                     std::map<std::string, PlanRunStatus>& status, int to_run)
      : plan_(plan),
        args_(args),
        status_(status),
        to_run_(to_run),
        progress_(to_run, /*live=*/false) {}  // the commands' output shares the terminal

  void OnWorkload(const PlannedWorkload& w, const std::vector<const PlannedRun*>& runs) {
    std::string line = "footprint: " + WorkloadText(w) + ": starting " +
                       std::to_string(runs.size()) + " run(s) together";
    if (std::string eta = progress_.Eta(); !eta.empty()) {
      line += " (" + std::to_string(progress_.done()) + " of " + std::to_string(to_run_) +
              " runs done, " + eta + ")";
    }
    PrintLine(std::cerr, line);
  }

  void OnRun(const PlannedRun& r, const PlanRunStatus& st, int exit_status) {
    progress_.Done();
    std::string line = "footprint: " + r.key + " " + std::string(PlanRunStateName(st.state));
    if (exit_status != 0) line += " (exit " + std::to_string(exit_status) + ")";
    if (!st.run_id.empty()) line += ", run " + st.run_id.substr(0, 8);
    PrintLine(std::cerr, line);
    status_[r.key] = st;
    if (!st.run_id.empty()) ran_.push_back(st.run_id);
    if (!args_.write_status.empty() && write_error_.ok()) {
      write_error_ = WriteCsvStatus(plan_, status_, args_.write_status);
    }
  }

  // The runs of this invocation, for where they are.
  const std::vector<std::string>& ran() const { return ran_; }
  const Status& write_error() const { return write_error_; }

 private:
  const ExperimentPlan& plan_;
  const ExperimentArgs& args_;
  std::map<std::string, PlanRunStatus>& status_;
  const int to_run_;
  Progress progress_;
  std::vector<std::string> ran_;
  Status write_error_;
};

// The options of the run of the plan, from the command line.
ExperimentOptions ExperimentOptionsFrom(const ExperimentArgs& args) {
  ExperimentOptions o;
  // The steps of --executor slurm start in the job's folder: a database file is named by
  // its absolute path.
  o.db = args.executor == "slurm" && !IsServerLocation(args.db) ? experiment::Absolute(args.db)
                                                                : args.db;
  o.only_key = args.run_key;
  o.resume = args.resume;
  o.record_git = !args.no_git;
  o.require_profiler = args.require_profiler;
  return o;
}

// Runs the plan by its executor: Slurm jobs, the one run of --run-key, or here.
Result<ExperimentOutcome> RunPlanBy(const ExperimentPlan& plan, const ExperimentArgs& args,
                                    const ExperimentOptions& o) {
  if (args.executor == "slurm") {
    FP_ASSIGN_OR_RETURN(SlurmExecutorOptions slurm, SlurmOptionsFrom(args));
    return RunExperimentOnSlurm(plan, o, slurm);
  }
  if (!args.run_key.empty()) {
    FP_ASSIGN_OR_RETURN(int64_t poll_ns, ParseDurationNs(args.poll));
    return RunStepWithSstat(plan, o, poll_ns);
  }
  return RunExperiment(plan, o);
}

// footprint experiment once its options are parsed; its exit status.
int RunExperimentCommand(const ExperimentArgs& args) {
  auto plan = PreparePlan(args);
  if (!plan.ok()) return Fail(plan.status());
  auto stored = StoredStatus(args.db, *plan);
  if (!stored.ok()) return Fail(stored.status());
  std::map<std::string, PlanRunStatus> status = std::move(stored).value();
  if (args.dry_run) {
    PrintPlan(*plan, status);
    return kExitOk;
  }
  if (!args.run_key.empty() && args.executor == "slurm") {
    return Fail(
        InvalidArgument("--run-key runs one run here; it cannot go with --executor "
                        "slurm (whose steps use it)"));
  }
  ExperimentOptions o = ExperimentOptionsFrom(args);
  ExperimentProgress progress(*plan, args, status, RunsToStart(*plan, args, status));
  o.on_workload = [&](const PlannedWorkload& w, const std::vector<const PlannedRun*>& runs) {
    progress.OnWorkload(w, runs);
  };
  o.on_run = [&](const PlannedRun& r, const PlanRunStatus& st, int exit_status) {
    progress.OnRun(r, st, exit_status);
  };
  Result<ExperimentOutcome> outcome = RunPlanBy(*plan, args, o);
  if (!outcome.ok()) return Fail(outcome.status());
  const Status& write_error = progress.write_error();
  if (!write_error.ok()) Fail(write_error);
  PrintSstatChecks(outcome->sstat);
  PrintSummary(*outcome, args, progress.ran());
  if (outcome->signal_received != 0) return 128 + outcome->signal_received;
  return outcome->runs_failed > 0 || !write_error.ok() ? kExitError : kExitOk;
}

}  // namespace

Action AddExperiment(CLI::App& app) {
  auto args = std::make_shared<ExperimentArgs>();
  CLI::App* cmd =
      AddDbSubcommand(app, "experiment",
                      "Run an experiment plan (radT's CSV or YAML sweep, or footprint's "
                      "YAML plan): workloads one after another, the runs of a workload "
                      "started together, each measured as a run of its own.",
                      args->db);
  AddExperimentOptions(*cmd, *args);
  cmd->footer(
      "Exits 0 when every run was ok, 1 when a run failed or could not start (or Slurm "
      "refused a job), 128+N when signal N stopped the plan (after storing the workload it "
      "interrupted; with --executor slurm the jobs go on, and --resume waits for them), 2 for "
      "a bad plan or options, 3 for a database problem. See docs/experiments.md.\n\n"
      "Examples:\n"
      "  footprint experiment plan.csv --dry-run\n"
      "  footprint experiment plan.csv --write-status plan-status.csv\n"
      "  footprint experiment sweep.yaml --resume\n"
      "  footprint experiment plan.csv --devices cpu\n"
      "  footprint experiment plan.csv --executor slurm -o postgresql://db/lab "
      "--sbatch='-p gpu'");
  return [args]() -> int { return RunExperimentCommand(*args); };
}

}  // namespace footprint::cli
