// What a queued job runs (docs/evaluation.md, "The queue"): a job names a file inside one of the
// folders given to `footprint serve` (--manifests, --plans) and a few overrides, never a command
// line. JobCatalog checks a request before it is queued (the file is a regular file inside its
// folder, the manifest or plan parses, each override is one the form offers and well formed) and
// turns it into the footprint command line that runs it when its turn comes.
//
// Overrides of an evaluation manifest (each replaces what the manifest says):
//   model        a torchvision builder (letters, digits, '_'), instead of the manifest's model
//   device       cpu, cuda or cuda:N (the job's target follows: cpu, or gpu:N)
//   batch_sizes  comma-separated batch sizes
//   scenario     one of the manifest's scenarios (single, multi, server, offline): only it runs
//   qps          comma-separated rates of the server scenario
// A load names a system under test in the plans folder (a script: .py under the interpreter,
// .sh under bash, anything else executed) and footprint load's settings as overrides:
// scenario (required), qps, duration, min_queries, latency_bound; its target is cpu or gpu:N.
// Plans take no overrides; their target is cpu (the default: the runs see no GPU), gpu:N (the
// plan's runs may name GPU N only: a job holds one GPU) or slurm:PARTITION (through
// `experiment --executor slurm`).
//
// Thread-safety: const methods may be called from any thread.
#ifndef FOOTPRINT_SERVE_JOB_SPEC_H_
#define FOOTPRINT_SERVE_JOB_SPEC_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "footprint/status.h"
#include "serve/job_queue.h"

namespace footprint::serve {

struct JobFolders {
  std::string manifests;  // evaluation manifests (*.yaml); empty: none offered
  std::string plans;      // radT plans and footprint's (*.csv, *.yaml); empty: none offered
};

// A job made ready to start: its command, the folder it starts in, and the manifest that
// must be written where the command names it (evaluate, with the overrides applied).
struct JobLaunch {
  std::vector<std::string> command;
  std::string cwd;
  std::string manifest_path, manifest_text;  // empty for plans
};

class JobCatalog {
 public:
  // `footprint` is the binary the jobs run, `db` their database, `python` the agent's
  // interpreter for evaluations (empty: evaluate's default).
  JobCatalog(JobFolders folders, std::string footprint, std::string db, std::string python);

  // The request with its target filled in, or InvalidArgument (one line: what is wrong, what
  // is allowed) / NotFound (no such file in the folder).
  Result<JobRequest> Check(JobRequest request) const;
  // The command of a checked request; `workdir` is an empty private folder for its files.
  Result<JobLaunch> Prepare(const JobRequest& request, int64_t job_id,
                            const std::string& workdir) const;
  // What the launch form offers: {manifests: [{file, name, model, device, batch_sizes,
  // scenarios}], plans: [{file}], loads: [{file}] (*.py, *.sh of the plans folder),
  // overrides: [names], load_settings: [names]}; a manifest that does not parse is listed
  // with its error.
  nlohmann::json Offered() const;

  const JobFolders& folders() const { return folders_; }

 private:
  JobLaunch PrepareLoad(const JobRequest& request, const std::string& path, JobLaunch launch) const;

  JobFolders folders_;
  std::string footprint_, db_, python_;
};

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_JOB_SPEC_H_
