// footprint experiment: run a plan (radT's CSV or YAML sweep, or footprint's YAML plan) of
// collocated workloads.
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <memory>

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

// The whole plan as it would run: one block per workload, one line per run.
void PrintPlan(const ExperimentPlan& plan, const std::map<std::string, PlanRunStatus>& status) {
  std::cout << plan.path << ": " << plan.workloads.size() << " workload(s), " << plan.run_count()
            << " run(s); the runs of a workload start together\n";
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const PlannedWorkload& w = plan.workloads[i];
    std::cout << "\nworkload " << i + 1 << ": experiment " << w.experiment << ", workload "
              << w.workload << "\n";
    Table t({"key", "status", "devices", "collocation", "command", "env"});
    for (const PlannedRun& r : w.runs) {
      auto it = status.find(r.key);
      std::string devices;
      for (const auto& d : r.devices) devices += (devices.empty() ? "" : "+") + d;
      std::string env;
      for (const auto& [k, v] : r.env) env += (env.empty() ? "" : " ") + k + "=" + v;
      t.Add({r.key,
             std::string(
                 PlanRunStateName(it == status.end() ? PlanRunState::kPending : it->second.state)),
             devices.empty() ? "-" : devices, CollocationText(r), FormatCommand(r.command),
             env.empty() ? "-" : env});
    }
    t.Print(std::cout, "  ");
  }
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

struct Args {
  std::string db, plan, write_status, python = "python3", executor = "local", run_key;
  std::string slurm_dir = "footprint-slurm", sbatch, poll = "2s";
  bool dry_run = false, resume = false, no_git = false;
};

// Each run beside sstat's last reading of its step (docs/experiments.md, "On Slurm").
void PrintSstatChecks(const std::vector<SstatCheck>& checks) {
  if (checks.empty()) return;
  std::cout << "sstat cross-check (footprint: the command's tree and footprint itself, the "
               "step's task as Slurm sees it)\n";
  Table t({"key", "step", "cpu", "sstat cpu", "rss peak", "sstat MaxRSS", "read"}, {2, 3, 4, 5, 6});
  for (const SstatCheck& c : checks) {
    t.Add({c.key, c.step, FormatValue("s", c.cpu_s), FormatValue("s", c.sstat_cpu_s),
           FormatValue("bytes", c.rss_bytes), FormatValue("bytes", c.sstat_max_rss_bytes),
           FormatValue("s", c.read_before_end_s) + " before the end"});
  }
  t.Print(std::cout, "  ");
  std::cout << "  sstat's CPU is jobacct_gather's last reading in whole seconds, of the processes "
               "alive then: lower than footprint's by what ran after it or in processes that "
               "ended before it\n";
}

// The options --executor slurm gives every step and sbatch.
Result<SlurmExecutorOptions> SlurmOptionsFrom(const Args& args) {
  SlurmExecutorOptions s;
  std::error_code ec;
  s.footprint = std::filesystem::canonical("/proc/self/exe", ec).string();
  s.spool_dir = experiment::Absolute(args.slurm_dir);
  FP_ASSIGN_OR_RETURN(s.sbatch_args, SplitShellWords(args.sbatch));
  FP_ASSIGN_OR_RETURN(s.poll_ns, ParseDurationNs(args.poll));
  if (s.poll_ns < 100'000'000) return InvalidArgument("--poll must be at least 100ms");
  s.step_args = {"--python", args.python};
  if (args.no_git) s.step_args.push_back("--no-git");
  s.on_job = [](const PlannedWorkload& w, size_t runs, int64_t job, bool adopted) {
    std::cerr << "footprint: experiment " << w.experiment << ", workload " << w.workload << ": "
              << (adopted ? "job " + std::to_string(job) + " found in the queue"
                          : "submitted as job " + std::to_string(job))
              << ", " << runs << " run(s) as steps of it\n";
  };
  return s;
}

}  // namespace

Action AddExperiment(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("experiment",
                         "Run an experiment plan (radT's CSV or YAML sweep, or footprint's YAML "
                         "plan): workloads one after another, the runs of a workload started "
                         "together, each measured as a run of its own.");
  AddDbOption(*cmd, args->db);
  cmd->add_option("PLAN", args->plan, "the plan: FILE.csv (radT's columns) or FILE.yaml")
      ->required();
  cmd->add_flag("--dry-run", args->dry_run,
                "print the resolved plan (commands, environment, devices, status) and run nothing");
  cmd->add_flag("--resume", args->resume,
                "skip runs of this plan already stored as ok; run the failed, killed, "
                "interrupted and missing ones");
  cmd->add_option("--write-status", args->write_status,
                  "write a copy of the CSV plan with Status and Run filled in (after each run)");
  cmd->add_option("--python", args->python,
                  "interpreter for .py files (default python3; a YAML plan's 'python:' wins)");
  cmd->add_flag("--no-git", args->no_git, "do not record git commits");
  cmd->add_option("--executor", args->executor,
                  "local (default): the runs start here; slurm: a job per workload, a step per "
                  "run (sbatch and srun --overlap), waited for here")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->option_text("local|slurm");
  cmd->add_option("--run-key", args->run_key,
                  "run only the run with this key, measured by this process (what each step "
                  "of --executor slurm runs)")
      ->option_text("KEY");
  cmd->add_option("--slurm-dir", args->slurm_dir,
                  "--executor slurm: folder for the job scripts and Slurm's output (default "
                  "footprint-slurm); the nodes must see it")
      ->option_text("DIR");
  cmd->add_option("--sbatch", args->sbatch,
                  "--executor slurm: options for every sbatch, one shell-quoted string "
                  "(--sbatch='-p gpu --time=60')")
      ->option_text("'OPTIONS'");
  cmd->add_option("--poll", args->poll,
                  "--executor slurm: how often to ask squeue and sstat (default 2s)")
      ->option_text("DURATION");
  cmd->footer(
      "Exits 0 when every run was ok, 1 when a run failed or could not start (or Slurm "
      "refused a job), 128+N when signal N stopped the plan (after storing the workload it "
      "interrupted; with --executor slurm the jobs go on, and --resume waits for them), 2 for "
      "a bad plan or options, 3 for a database problem. See docs/experiments.md.\n\n"
      "Examples:\n"
      "  footprint experiment plan.csv --dry-run\n"
      "  footprint experiment plan.csv --write-status plan-status.csv\n"
      "  footprint experiment sweep.yaml --resume\n"
      "  footprint experiment plan.csv --executor slurm -o postgresql://db/lab "
      "--sbatch='-p gpu'");
  return [args]() -> int {
    auto plan = LoadPlan(args->plan, {.python = args->python});
    if (!plan.ok()) {
      return Fail(plan.status().code() == StatusCode::kNotFound
                      ? InvalidArgument(plan.status().message())
                      : plan.status());
    }
    if (!args->write_status.empty() && plan->format != "csv") {
      return Fail(InvalidArgument("--write-status needs a CSV plan; " + args->plan + " is " +
                                  plan->format));
    }
    for (const std::string& note : plan->notes) std::cerr << "footprint: note: " << note << "\n";
    std::map<std::string, PlanRunStatus> status;
    if (Exists(args->db)) {
      auto store = OpenExisting(args->db);
      if (!store.ok()) return Fail(store.status());
      auto loaded = LoadPlanStatus(**store, *plan);
      if (!loaded.ok()) return Fail(loaded.status());
      status = std::move(loaded).value();
    }
    if (args->dry_run) {
      PrintPlan(*plan, status);
      return kExitOk;
    }
    if (!args->run_key.empty() && args->executor == "slurm") {
      return Fail(
          InvalidArgument("--run-key runs one run here; it cannot go with --executor "
                          "slurm (whose steps use it)"));
    }
    ExperimentOptions o;
    // The steps of --executor slurm start in the job's folder: a database file is named by
    // its absolute path.
    o.db = args->executor == "slurm" && !IsServerLocation(args->db) ? experiment::Absolute(args->db)
                                                                    : args->db;
    o.only_key = args->run_key;
    o.resume = args->resume;
    o.record_git = !args->no_git;
    Status write_error;
    int to_run = 0;  // the plan's runs this invocation starts (--resume skips the ok ones)
    for (const PlannedWorkload& w : plan->workloads) {
      for (const PlannedRun& r : w.runs) {
        if (!args->run_key.empty() && r.key != args->run_key) continue;
        to_run += !(args->resume && StoredOk(status, r.key));
      }
    }
    Progress progress(to_run, /*live=*/false);  // the commands' output shares the terminal
    o.on_workload = [&](const PlannedWorkload& w, const std::vector<const PlannedRun*>& runs) {
      std::cerr << "footprint: experiment " << w.experiment << ", workload " << w.workload
                << ": starting " << runs.size() << " run(s) together";
      if (std::string eta = progress.Eta(); !eta.empty()) {
        std::cerr << " (" << progress.done() << " of " << to_run << " runs done, " << eta << ")";
      }
      std::cerr << "\n";
    };
    o.on_run = [&](const PlannedRun& r, const PlanRunStatus& st, int exit_status) {
      progress.Done();
      std::cerr << "footprint: " << r.key << " " << PlanRunStateName(st.state);
      if (exit_status != 0) std::cerr << " (exit " << exit_status << ")";
      if (!st.run_id.empty()) std::cerr << ", run " << st.run_id.substr(0, 8);
      std::cerr << "\n";
      status[r.key] = st;
      if (!args->write_status.empty() && write_error.ok()) {
        write_error = WriteCsvStatus(*plan, status, args->write_status);
      }
    };
    Result<ExperimentOutcome> outcome = ExperimentOutcome{};
    if (args->executor == "slurm") {
      auto slurm = SlurmOptionsFrom(*args);
      if (!slurm.ok()) return Fail(slurm.status());
      outcome = RunExperimentOnSlurm(*plan, o, *slurm);
    } else {
      outcome = RunExperiment(*plan, o);
    }
    if (!outcome.ok()) return Fail(outcome.status());
    if (!write_error.ok()) Fail(write_error);
    PrintSstatChecks(outcome->sstat);
    std::cerr << "footprint: " << outcome->runs_started << " run(s) ran, " << outcome->runs_failed
              << " not ok";
    if (outcome->runs_skipped > 0) std::cerr << ", " << outcome->runs_skipped << " already ok";
    if (outcome->signal_received != 0) {
      std::cerr << "; stopped by signal " << outcome->signal_received << " (footprint experiment "
                << args->plan << " --resume goes on)";
    }
    if (!outcome->queued_jobs.empty()) {
      std::cerr << "; job(s) still queued:";
      for (int64_t id : outcome->queued_jobs) std::cerr << " " << id;
    }
    std::cerr << "; stored in " << RedactedLocation(args->db) << "\n";
    if (outcome->signal_received != 0) return 128 + outcome->signal_received;
    return outcome->runs_failed > 0 || !write_error.ok() ? kExitError : kExitOk;
  };
}

}  // namespace footprint::cli
