// Experiments: plans of many runs (radT's CSV, or a YAML plan with grid sweeps), executed as
// workloads one after another, the runs of one workload started together.
//
// A plan is parsed into ExperimentPlan: workloads in file order, each a list of PlannedRun
// whose command is fully resolved (interpreter, script, arguments). Parsing is pure (no
// process is started, no device touched) and reports the first error as InvalidArgument with
// the file, line and what to do.
//
// RunExperiment() executes a plan into a store: for every workload it forks one monitor
// process per run; each monitor prepares its run (metadata, cgroup, probes) and waits at a
// barrier; when all are ready they are released together, so collocated runs start within a
// few hundred microseconds of each other. Each run is a footprint run of its own, with its own
// process tree and cgroup: collocated runs never see each other's CPU or memory. Runs carry
// the experiment, the workload and the plan key (meta.experiment) so that --resume finds them.
//
// Thread-safety: not thread-safe; RunExperiment forks and must be called from the main thread
// of a process that runs no other threads (the command line).
#ifndef FOOTPRINT_EXPERIMENT_H_
#define FOOTPRINT_EXPERIMENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/metrics.h"
#include "footprint/profiler.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// How the runs of one workload share a GPU.
struct Collocation {
  enum class Mode { kNone, kMps, kMig };
  Mode mode = Mode::kNone;
  std::string mig_profile;  // kMig: e.g. "3g.40gb"
};

struct PlannedRun {
  std::string key;  // unique in the plan and stable across invocations: "EXP/WORKLOAD/N"
  std::string experiment;
  std::string workload;
  std::string name;                           // the run's name in the database
  std::vector<std::string> command;           // resolved argv
  std::map<std::string, std::string> params;  // swept or given parameters (meta.params)
  std::map<std::string, std::string> env;     // set for the command on top of footprint's
  std::vector<std::string> devices;           // GPU indices or UUIDs as written in the plan
  Collocation collocation;
  std::optional<int> mps_thread_percentage;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  MetricSet metrics = DefaultMetrics();
  int64_t interval_ns = 100'000'000;
  std::map<MetricId, int64_t> metric_interval_ns;
  std::string script;               // the plan's File (resolved path), empty for a command
  std::string interpreter;          // "python3", "bash", empty when executed directly
  std::string working_dir;          // where the command starts (CSV: the script's folder, as
                                    // radT does); empty: where footprint was started
  std::vector<std::string> inputs;  // files named in the plan (sha256 in meta.repro.inputs)
  int csv_row = -1;                 // CSV: index of the data row (for --write-status)
  std::optional<ProfilerRequest> profiler;  // radT's nsys, ncu, ... listener of the row
};

struct PlannedWorkload {
  std::string experiment;
  std::string workload;
  std::vector<PlannedRun> runs;  // started together
};

struct ExperimentPlan {
  std::string path;                        // absolute path of the plan file
  std::string format;                      // "csv" or "yaml"
  std::string source;                      // the plan's text (WriteCsvStatus copies it)
  std::vector<PlannedWorkload> workloads;  // run in this order
  std::vector<std::string> notes;          // said once when the plan is run (e.g. radT
                                           // listeners footprint does not use)
  size_t run_count() const;
};

// Limits on what a plan multiplies, checked before anything is expanded or allocated: runs
// per plan (rows of a CSV plan; grid x repetitions x runs x copies of a YAML plan), copies of
// one run started together, and repetitions of a workload.
inline constexpr int64_t kMaxPlanRuns = 100'000;
inline constexpr int64_t kMaxCopies = 1'000;
// Limits on what is read before that: the plan file's size (LoadPlan), and the nodes of a YAML
// plan (each key, value, list and mapping; an alias counts as what it repeats), checked while
// the text is parsed and before its tree, about 500 bytes a node, is built.
inline constexpr size_t kMaxPlanBytes = size_t{16} << 20;
inline constexpr int64_t kMaxPlanYamlNodes = 500'000;

struct PlanOptions {
  std::string python = "python3";  // interpreter for .py files (the YAML plan may override)
};

// Parses radT's CSV (columns Experiment, Workload, Name, Status, Run, Devices, Collocation,
// File, Listeners, Params in any order, Name, Status, Run optional, names case-insensitive;
// whitespace around fields ignored; fields may be double-quoted). `text` is the file's
// content, `path` its location (relative scripts are looked up next to it, then in the current
// folder). A script runs in its own folder, as radT runs it; Name is the run's name.
Result<ExperimentPlan> ParseCsvPlan(const std::string& text, const std::string& path,
                                    const PlanOptions& options = {});
// Parses a YAML plan (docs/experiments.md), expanding grids and repetitions; or radT's YAML
// sweep (top-level `method: grid|random` and `parameters`), one workload per combination.
Result<ExperimentPlan> ParseYamlPlan(const std::string& text, const std::string& path,
                                     const PlanOptions& options = {});
// Reads `path` and parses it by its extension (.csv, .yaml/.yml). NotFound if it cannot be
// read; InvalidArgument for anything else wrong with it, a FIFO, device or folder (refused
// without being opened) and a file over kMaxPlanBytes included.
Result<ExperimentPlan> LoadPlan(const std::string& path, const PlanOptions& options = {});

// Maps radT listeners ("smi+top+dcgmi+iostat+free", "ps", "none") or metric names joined by
// '+' onto footprint's metrics. Empty or "-" selects the default metrics. radT's listeners that
// footprint does not use (macmon, nsys*, ncu*) are skipped and added to `ignored`.
Result<MetricSet> MetricsForListeners(std::string_view listeners,
                                      std::set<std::string>* ignored = nullptr);

// What happened to a run of the plan, as the store knows it.
enum class PlanRunState { kPending, kRunning, kOk, kFailed, kKilled, kInterrupted };
std::string_view PlanRunStateName(PlanRunState state);  // "pending", "ok", ...

struct PlanRunStatus {
  PlanRunState state = PlanRunState::kPending;
  std::string run_id;  // the latest run of this key, empty when none
};

// The latest stored run of every key of `plan` (interrupted runs recognised on `env`'s clock),
// keyed by PlannedRun::key. Keys without a run are absent.
Result<std::map<std::string, PlanRunStatus>> LoadPlanStatus(Store& store,
                                                            const ExperimentPlan& plan, Env& env);

struct ExperimentOptions {
  std::string db;       // store location; every monitor process opens it itself
  bool resume = false;  // skip keys whose latest run is ok
  bool record_git = true;
  bool require_profiler = false;  // refuse runs whose profiler's tool is not on PATH
  // When set: only the run with this key, measured by the calling process itself (no monitor
  // process is forked), as each step of --executor slurm runs it. InvalidArgument when the
  // plan has no such key.
  std::string only_key;
  // Called in the main process: before a workload starts (with the runs that will run),
  // and after each run ended (with its key and stored status). Either may be empty.
  std::function<void(const PlannedWorkload&, const std::vector<const PlannedRun*>&)> on_workload;
  std::function<void(const PlannedRun&, const PlanRunStatus&, int exit_status)> on_run;
};

// A run of --executor slurm beside what Slurm says of its step: sstat's last reading, taken
// by the step itself, or, where the step has none and Slurm has an accounting database,
// sacct's TotalCPU and MaxRSS at the step's end. footprint's side is the step's task as Slurm
// sees it: the command's tree plus footprint's own process.
struct SstatCheck {
  std::string key;
  std::string run_id;
  std::string source = "sstat";  // or "sacct"
  std::string step;              // "JOB.STEP"
  double cpu_s = 0;              // cpu_user_s + cpu_system_s + monitor_cpu_s
  double sstat_cpu_s = 0;        // Slurm's: sstat's TRESUsageInTot cpu, or sacct's TotalCPU
  // rss_bytes: rss_sum_peak_bytes + monitor_peak_rss_bytes, and, beside sstat, the peaks of
  // sstat and of the helper that runs it (both processes of the step)
  double rss_bytes = 0;
  double sstat_max_rss_bytes = 0;  // Slurm's MaxRSS
  double read_before_end_s = 0;    // how long before the run's end sstat was last asked (sacct: 0)
};

// Whether `key`'s latest stored run (in LoadPlanStatus's answer) is ok: what --resume skips.
bool StoredOk(const std::map<std::string, PlanRunStatus>& status, const std::string& key);

struct ExperimentOutcome {
  int runs_started = 0;
  int runs_skipped = 0;           // already ok (resume)
  int runs_failed = 0;            // not ok (failed, killed, could not start)
  int signal_received = 0;        // SIGINT/SIGTERM/SIGHUP/SIGQUIT that stopped the plan, 0 if none
  bool complete = false;          // every workload ran
  std::vector<SstatCheck> sstat;  // --executor slurm: the runs Slurm saw, in the order ended
  std::vector<int64_t> queued_jobs;  // --executor slurm, when stopped: the plan's jobs left

  // Counts a run that ran, ok or not.
  void Count(const PlanRunStatus& st) {
    ++runs_started;
    if (st.state != PlanRunState::kOk) ++runs_failed;
  }
};

// Checks every run's options (intervals, metrics, command) without running anything.
// InvalidArgument naming the run's key.
Status CheckPlanRuns(const ExperimentPlan& plan, const ExperimentOptions& options);

// Executes the plan (see the file comment). Stops after the workload during which footprint
// received SIGINT, SIGTERM, SIGHUP or SIGQUIT (forwarded to the monitors, which forward it to
// their commands); if footprint itself is killed, the monitors stop their commands (SIGTERM)
// and store them as killed, so --resume reruns them. A non-OK result means footprint failed
// before or between runs; what ran stays stored.
Result<ExperimentOutcome> RunExperiment(const ExperimentPlan& plan,
                                        const ExperimentOptions& options);

// How --executor slurm submits (docs/experiments.md, "On Slurm").
struct SlurmExecutorOptions {
  std::string footprint;                 // the footprint binary the steps run (absolute path)
  std::string spool_dir;                 // job scripts and Slurm's output (made when missing)
  std::vector<std::string> sbatch_args;  // given to every sbatch (partition, time, account, ...)
  std::vector<std::string> step_args;    // options of `footprint experiment` the steps repeat
  int64_t poll_ns = 2'000'000'000;       // squeue and sstat, while the plan's jobs are queued
  // Called when a workload's job is submitted, or found in the queue (`adopted`, --resume).
  std::function<void(const PlannedWorkload&, size_t runs, int64_t job_id, bool adopted)> on_job;
};

// Executes the plan through Slurm: one job per workload (sbatch, one task per run), each run
// a step of its own (`srun --overlap`, which runs `footprint experiment PLAN --run-key KEY`),
// the jobs chained with --dependency=afterany so that workloads still run one after another.
// Waits for the jobs, polling squeue (slurmctld) once every poll_ns for all of them, and reports
// each run as its job leaves the queue, with the cross-check its step stored (RunStepWithSstat).
// The plan's jobs found in the queue are
// waited for, not submitted again, with options.resume; InvalidArgument without it. A stop
// signal ends the waiting, not the jobs: outcome.queued_jobs lists them. MPS and MIG
// collocations are refused (InvalidArgument): Slurm's own gres sets those up.
Result<ExperimentOutcome> RunExperimentOnSlurm(const ExperimentPlan& plan,
                                               const ExperimentOptions& options,
                                               const SlurmExecutorOptions& slurm);

// What a step of --executor slurm runs (`--run-key KEY`, options.only_key): RunExperiment,
// while a thread reads sstat of the process's own step (SLURM_JOB_ID.SLURM_STEP_ID) every
// `poll_ns`; then the last reading is stored beside the run (values sstat.cpu_s and
// sstat.max_rss_bytes, footprint's figures in their data) and put in outcome.sstat. The
// cross-check is the step's own: it survives --resume and a lost login node. Outside a step,
// RunExperiment alone.
Result<ExperimentOutcome> RunStepWithSstat(const ExperimentPlan& plan,
                                           const ExperimentOptions& options, int64_t poll_ns);

// Writes a copy of a CSV plan with its Status and Run columns filled from `status` (columns
// appended when the plan has none). Only for plans parsed from CSV.
Status WriteCsvStatus(const ExperimentPlan& plan,
                      const std::map<std::string, PlanRunStatus>& status,
                      const std::string& out_path);

}  // namespace footprint

#endif  // FOOTPRINT_EXPERIMENT_H_
