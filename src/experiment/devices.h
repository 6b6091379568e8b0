// GPUs of an experiment's workload: plan devices resolved to UUIDs through NVML, and the
// collocation set up around the workload's runs and torn down after them.
//
// - none: CUDA_VISIBLE_DEVICES = the devices' UUIDs.
// - mps: one MPS control daemon per workload (`nvidia-cuda-mps-control -d`) for the union of
//   its runs' devices, with CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY in a private
//   temporary folder (never the user's); each run gets those and, when the plan asks,
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. Stopped with `echo quit | nvidia-cuda-mps-control`.
// - MIG profile: per run, `nvidia-smi mig -i GPU -cgi PROFILE -C` creates a GPU instance and
//   its compute instance on the run's first device; the run gets the new MIG device's UUID
//   (found through NVML by its GPU-instance id). Destroyed with -dci then -dgi.
//
// DeviceSession undoes everything it did, in reverse order, when it is destroyed — after the
// runs succeeded, failed, or were stopped by Ctrl-C — and when its own set-up fails half-way.
// Nothing survives a SIGKILL of footprint; docs/experiments.md says how to clean up by hand.
//
// Thread-safety: not thread-safe; used by RunExperiment's main thread.
#ifndef FOOTPRINT_EXPERIMENT_DEVICES_H_
#define FOOTPRINT_EXPERIMENT_DEVICES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "footprint/experiment.h"
#include "footprint/status.h"

namespace footprint::experiment {

// Whether a run needs a GPU (devices or a collocation).
bool UsesGpu(const PlannedRun& run);

// Checks, before anything starts, that every GPU run of the plan can run here: NVML loads,
// each device exists, the MPS / MIG tools are on PATH. Unsupported with one line saying what
// is missing and what to do (run on a GPU machine, or --dry-run to see the plan).
Status CheckPlanDevices(const ExperimentPlan& plan);

class DeviceSession {
 public:
  // Sets up the devices of `runs` (one workload). On failure, what was set up is undone.
  static Result<std::unique_ptr<DeviceSession>> Start(const std::vector<const PlannedRun*>& runs);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  // The variables run i of Start's `runs` gets on top of the plan's.
  const std::map<std::string, std::string>& EnvFor(size_t i) const { return env_[i]; }

 private:
  DeviceSession() = default;
  std::vector<std::map<std::string, std::string>> env_;
  std::vector<std::function<void()>> undo_;  // run last to first
};

}  // namespace footprint::experiment

#endif  // FOOTPRINT_EXPERIMENT_DEVICES_H_
