// footprint agent: the per-node agent of a Slurm step (src/slurm/agent.h).
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/run_options.h"
#include "run/slurm.h"
#include "slurm/agent.h"

namespace footprint::cli {

Action AddAgent(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto step = std::make_shared<StepAgentOptions>();
  auto wait_s = std::make_shared<double>(600);
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Measure a Slurm step on this node: every process the step runs here, each once however "
      "many tasks the node has. Start one per node beside the step, with srun --overlap "
      "--ntasks-per-node=1; each node's agent stores the node's part of the step's run, and "
      "show and plot put the parts together (docs/cluster.md).");
  AddSamplingOptions(cmd, args.get());
  cmd->add_option("--step", step->step,
                  "the step to measure, STEP of this job or JOB.STEP (default: the first step "
                  "of this job, other than the agent's own, to start on this node)")
      ->option_text("STEP");
  cmd->add_option("--wait", *wait_s,
                  "seconds the step may take to start on this node (default 600)")
      ->check(CLI::Range(0.0, 86400.0))
      ->option_text("SECONDS");
  cmd->footer(
      "Exit status: 0 when the step's part was measured to its end, 128+N when signal N "
      "stopped the agent first (the part is stored as interrupted), 4 when the step did not "
      "start on this node in time (or a signal came first), 2 for bad options or outside a "
      "Slurm job, 3 when the database fails.\n"
      "Example, in a batch script:\n"
      "  srun --overlap -N \"$SLURM_JOB_NUM_NODES\" --ntasks-per-node=1 \\\n"
      "      footprint agent -o postgresql://db/fp -n train &\n"
      "  srun --ntasks-per-node=4 python3 train.py\n"
      "  wait");
  return [args, step, wait_s, cmd]() -> int {
    return ExitCodeOf([&]() -> Result<int> {
      FP_RETURN_IF_ERROR(ApplySamplingOptions(*args, *cmd, step->measure));
      step->wait_ns = static_cast<int64_t>(*wait_s * 1e9);
      const nlohmann::json own = SlurmJob(*step->measure.env);
      if (!own.is_null() && !IsNodeAgent(own)) {
        std::cerr
            << "footprint: agent " << own.value("local_task", nlohmann::json()).dump() << " on "
            << own.value("node", std::string("this node"))
            << " leaves the node to its first agent (one per node: srun --ntasks-per-node=1)\n";
        return kExitOk;
      }
      FP_ASSIGN_OR_RETURN(auto store, OpenStore(args->db));
      FP_ASSIGN_OR_RETURN(MonitorOutcome out, MonitorSlurmStep(*store, *step));
      for (const std::string& w : out.warnings) PrintLine(std::cerr, "footprint: warning: " + w);
      if (!args->quiet) PrintOutcome(out, *store, "", std::cerr);
      return out.exit_status;
    });
  };
}

}  // namespace footprint::cli
