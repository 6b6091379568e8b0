// What `experiment --executor slurm` asks Slurm, and how it reads the answers: sbatch to
// submit a workload's job, squeue for the plan's jobs still queued, sstat for what the
// accounting gatherer last saw of each step, sacct (where Slurm has an accounting database)
// for what a job and its steps came to (executor.cc uses them).
//
// The commands are Slurm's own (looked up in PATH, SLURM_CONF honoured), so that footprint
// works with any cluster its user can submit to, needs no Slurm library at build time, and
// polls slurmctld and slurmd, never slurmdbd: sacct is asked once per job, after it ended.
#ifndef FOOTPRINT_SLURM_JOBS_H_
#define FOOTPRINT_SLURM_JOBS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"

namespace footprint::experiment {

// A job of the user's in the queue (pending, running, completing, ...).
struct QueuedJob {
  int64_t id = 0;
  std::string state;    // squeue's %T: PENDING, RUNNING, ...
  std::string comment;  // what footprint set with --comment (which plan, which workload)
};

// What sstat last said of one step: CPU time of all its tasks, and the largest RSS of a task
// (the sum over that task's processes), as jobacct_gather last gathered them.
struct StepUsage {
  int64_t job_id = 0;
  int64_t step_id = 0;
  double cpu_s = 0;
  double max_rss_bytes = 0;
};

// Slurm's durations: [D-]HH:MM:SS, MM:SS, MM:SS.mmm, SS.mmm. nullopt for anything else.
std::optional<double> ParseSlurmSeconds(std::string_view text);
// Slurm's sizes: a number with an optional K, M, G, T or P suffix (powers of 1024), bytes
// without one. nullopt for anything else.
std::optional<double> ParseSlurmBytes(std::string_view text);

// `squeue -h -o %i|%T|%k` lines. Lines that do not parse are skipped.
std::vector<QueuedJob> ParseSqueue(std::string_view text);
// `sstat -n -P -o JobID,TRESUsageInTot,MaxRSS` lines: the numbered steps (not batch or
// extern) whose CPU and memory parse.
std::vector<StepUsage> ParseSstat(std::string_view text);

// What sacct holds of one job: its own final state and what each numbered step came to,
// TotalCPU (its tasks' CPU time as the kernel accounted it when slurmstepd reaped them) as
// cpu_s and MaxRSS (jobacct_gather's largest reading) as max_rss_bytes.
struct JobAccount {
  std::string state;   // COMPLETED, FAILED, CANCELLED by UID, TIMEOUT, ...
  bool ended = false;  // the job's record has its end: slurmctld sends it after the job left
                       // the queue, so sacct may say PENDING or RUNNING for a moment longer
  std::vector<StepUsage> steps;  // the steps that ended, whose figures parse
};

// `sacct -n -P -o JobID,State,End,TotalCPU,MaxRSS -j JOB` lines: the job's own line (JobID
// JOB) and its numbered steps (not batch or extern).
JobAccount ParseSacct(std::string_view text, int64_t job_id);

// The comment that marks a workload's job: "footprint experiment PLAN workload N".
std::string JobComment(const std::string& plan_path, size_t workload_index);
// The workload index a comment marks for `plan_path`, or nullopt (another plan's, or none).
std::optional<size_t> WorkloadOfComment(std::string_view comment, const std::string& plan_path);

// Submits `script` with sbatch and `args` before it, `variables` added to the environment
// sbatch passes on to the job. The job id, or IoError with sbatch's last line of error (what it
// printed goes to `log`, appended, and is read back through `env`; IoError saying so when it
// cannot be).
Result<int64_t> Submit(const std::vector<std::string>& args, const std::string& script,
                       const std::string& log, const std::map<std::string, std::string>& variables,
                       Env& env);
// The user's jobs in the queue. IoError when squeue fails (slurmctld down or not reached).
Result<std::vector<QueuedJob>> ListQueue();
// sstat of every step of `job_id` still running; empty when none is (or sstat failed: the
// cross-check is then missing, never wrong). `sstat_rss_bytes` (when given) receives sstat's
// own peak resident memory: run from inside a step, sstat is one of its processes.
std::vector<StepUsage> StepsUsage(int64_t job_id, int64_t* sstat_rss_bytes = nullptr);
// Whether sacct answers: false when Slurm's accounting storage is disabled (no slurmdbd) or
// slurmdbd is not reached.
bool AccountingAnswers();
// sacct of `job_id`; nullopt when sacct fails.
std::optional<JobAccount> AccountOf(int64_t job_id);

}  // namespace footprint::experiment

#endif  // FOOTPRINT_SLURM_JOBS_H_
