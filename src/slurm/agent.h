// The per-node agent of a Slurm step (`footprint agent`, docs/cluster.md). Started once per
// node beside the step (`srun --overlap --ntasks-per-node=1 footprint agent ...`), it measures
// the step's processes on its node, the descendants of that step's slurmstepd, each once
// however many tasks the node runs, from when the step starts there until it ends there. Each
// node's agent stores one part of the step's run: the parts share meta.span (the step's key),
// their series carry the node's name as entity, and `show`/`plot` put them together.
#ifndef FOOTPRINT_SLURM_AGENT_H_
#define FOOTPRINT_SLURM_AGENT_H_

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/monitor.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

struct StepAgentOptions {
  // What to record and how to sample: name (default: the task's program), description,
  // tags, params, metrics, intervals, gpus, env. The command is the task's, read from /proc.
  MonitorOptions measure;
  // The step to measure: "STEP" of the agent's own job or "JOB.STEP". Empty: the first step
  // of the agent's job other than its own (and than batch and extern) to start on this node.
  std::string step;
  // How long the step may take to start on this node.
  int64_t wait_ns = int64_t{600} * 1'000'000'000;
};

// A step's slurmstepd, found by its process title "slurmstepd: [JOB.STEP]".
struct StepDaemon {
  pid_t pid = 0;
  std::string job, step;
};
// The slurmstepds under `proc_root` of `job`.`step`; with `step` empty, of every numbered step
// of `job` but `except`. Several for one step when the host runs several slurmd (nodes).
std::vector<StepDaemon> FindStepDaemons(const std::string& proc_root, std::string_view job,
                                        std::string_view step, std::string_view except);

// Whether the agent whose own task is described by `own` (SlurmJob) measures its node: the
// first of its step's tasks there (SLURM_LOCALID 0) does; the others leave the node to it, so
// that a node is counted once however many agents were started on it.
bool IsNodeAgent(const nlohmann::json& own);

// Waits for the step to start on this node, measures it until its slurmstepd exits (or a stop
// signal reaches the agent: the part is then stored as interrupted) and stores the part.
// InvalidArgument outside a Slurm job or for a malformed step; NotFound when the step did not
// start here in time.
Result<MonitorOutcome> MonitorSlurmStep(Store& store, const StepAgentOptions& options);

}  // namespace footprint

#endif  // FOOTPRINT_SLURM_AGENT_H_
