// footprint experiment: run a plan (radT's CSV or YAML sweep, or footprint's YAML plan) of
// collocated workloads.
#include <sys/stat.h>

#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"
#include "footprint/experiment.h"

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

}  // namespace

Action AddExperiment(CLI::App& app) {
  struct Args {
    std::string db, plan, write_status, python = "python3";
    bool dry_run = false, resume = false, no_git = false;
  };
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
  cmd->footer(
      "Exits 0 when every run was ok, 1 when a run failed or could not start, 128+N when "
      "signal N stopped the plan (after storing the workload it interrupted), 2 for a bad "
      "plan, 3 for a database problem. See docs/experiments.md.\n\n"
      "Examples:\n"
      "  footprint experiment plan.csv --dry-run\n"
      "  footprint experiment plan.csv --write-status plan-status.csv\n"
      "  footprint experiment sweep.yaml --resume");
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
    ExperimentOptions o;
    o.db = args->db;
    o.resume = args->resume;
    o.record_git = !args->no_git;
    Status write_error;
    int to_run = 0;  // the plan's runs this invocation starts (--resume skips the ok ones)
    for (const PlannedWorkload& w : plan->workloads) {
      for (const PlannedRun& r : w.runs) {
        auto it = status.find(r.key);
        to_run += !(args->resume && it != status.end() && it->second.state == PlanRunState::kOk);
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
    auto outcome = RunExperiment(*plan, o);
    if (!outcome.ok()) return Fail(outcome.status());
    if (!write_error.ok()) Fail(write_error);
    std::cerr << "footprint: " << outcome->runs_started << " run(s) ran, " << outcome->runs_failed
              << " not ok";
    if (outcome->runs_skipped > 0) std::cerr << ", " << outcome->runs_skipped << " already ok";
    if (outcome->signal_received != 0) {
      std::cerr << "; stopped by signal " << outcome->signal_received << " (footprint experiment "
                << args->plan << " --resume goes on)";
    }
    std::cerr << "; stored in " << args->db << "\n";
    if (outcome->signal_received != 0) return 128 + outcome->signal_received;
    return outcome->runs_failed > 0 || !write_error.ok() ? kExitError : kExitOk;
  };
}

}  // namespace footprint::cli
