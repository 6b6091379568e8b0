// The Slurm job and step a run is part of, from the variables slurmd sets for each task of a
// step (srun, and sbatch's batch step). Recorded as the run's meta "slurm" (docs/cluster.md),
// shown by `footprint show`.
#ifndef FOOTPRINT_RUN_SLURM_H_
#define FOOTPRINT_RUN_SLURM_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "footprint/env.h"

namespace footprint {

// {"job_id", "step_id", "cluster", "partition", "nodes", "num_nodes", "node", "node_id",
//  "tasks", "tasks_per_node", "task", "local_task", "cpus_on_node", "gpus"}: those Slurm set
// (numbers as numbers; step_id "batch" in a batch script); null outside a Slurm job.
nlohmann::json SlurmJob(Env& env);
// The same from another process's variables (`var` answers "" for one that is not set): what
// slurmd told a task of a step the agent measures.
nlohmann::json SlurmJob(const std::function<std::string(std::string_view)>& var);

// One line for people: "job 42 step 0, task 1 of 4 on node03 (node 0 of 2)".
std::string SlurmJobText(const nlohmann::json& slurm);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_SLURM_H_
