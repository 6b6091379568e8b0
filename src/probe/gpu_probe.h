// The GPU probe: gpu, gpu.tree, gpu.memory, gpu.memory.tree, gpu.power, gpu.energy,
// gpu.energy.tree, gpu.sm_clock and gpu.temperature of every GPU ('gpu:N') and MIG device
// ('gpu:N/mig:M') the run may use, from NVML (probe/nvml.h), and their activity (gpu.sm_active,
// gpu.tensor_active, ...) from the first GpuActivitySource that has each (probe/gpu_activity.h);
// meta.gpu.devices[entity].activity names the source of each.
//
// What each device supports is probed once, at construction; a metric a device does not
// support gets no series, and the run's meta says why (meta.gpu.unsupported["metric@entity"]).
// The tree metrics filter NVML's per-process figures by the PIDs the process-tree probe lists
// in the same pass (ProcessTreeProbe::MembersAt). gpu.energy comes from the device's energy
// counter where it has one, else from power integrated over time (trapezoid); the run
// records which, and the counter's update period observed during the run. gpu.energy.tree
// multiplies each energy increment by the tree's share of the device over that interval (an
// estimate, docs/metrics.md). The calls that cost milliseconds (the energy counter, per-process
// utilisation: 4 and 1.6 ms on an H100) are timed and made no more often than keeps them under
// 1 % of the time; the counter is read once more at the end. A device that NVML reports lost
// stops being sampled; the run goes on, meta records when, and Finish() warns.
//
// Thread-safety: constructed and finished on the monitor's thread, sampled on the sampler
// thread, never concurrently (Probe's contract).
#ifndef FOOTPRINT_PROBE_GPU_PROBE_H_
#define FOOTPRINT_PROBE_GPU_PROBE_H_

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "probe/gpu_activity.h"
#include "probe/gpu_devices.h"
#include "probe/nvml.h"
#include "probe/probe.h"
#include "probe/process_members.h"

namespace footprint {

class GpuProbe final : public Probe {
 public:
  struct Options {
    std::shared_ptr<nvml::Library> nvml;  // required
    ProcessMembers* tree = nullptr;       // the run's PIDs; without them no .tree metrics
    std::optional<std::string> visible;   // CUDA_VISIBLE_DEVICES-style list; nullopt: all
    std::string visible_from;             // where the list came from, for meta
    GpuActivitySources activity;          // in order of preference; may be empty
    Env* env = &Env::Default();  // the clock costly calls and the last energy read are timed on
  };

  // The probe a run needs, or nullptr when no GPU metric is wanted (NVML is then not even
  // loaded) or when NVML or a GPU cannot be had; meta.gpu says why, and so does `unavailable`
  // (when given) for each wanted GPU metric, as the other probes report theirs. NVML and
  // CUDA_VISIBLE_DEVICES come from `env`.
  static std::unique_ptr<GpuProbe> Open(Env& env, const MetricSet& wanted, ProcessMembers* tree,
                                        const std::optional<std::string>& gpus,
                                        nlohmann::json& meta,
                                        UnavailableMetrics* unavailable = nullptr);

  // Lists and selects the GPUs and probes their capabilities. Check ok().
  explicit GpuProbe(Options options);
  ~GpuProbe() override;

  // Why the probe has nothing to sample (NVML cannot list the GPUs, none selected), or "".
  const std::string& problem() const { return problem_; }
  // meta.gpu as of now (selection, devices, unsupported fields, losses).
  nlohmann::json Meta() const;

  std::string_view name() const override { return "gpu"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override;
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override;
  void Finish(ProbeFindings& findings) override;

 private:
  struct Unit;
  using Slot = size_t;  // index in kGpuMetrics

  void SampleUnit(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out);
  // False when the device was lost (and is now marked so) or the call failed.
  bool Check(Unit& u, Slot slot, int rc, nvml::Library::Fn fn, int64_t now_ns);
  void MarkLost(Unit& u, const std::string& why, int64_t now_ns);
  // Watches the wanted activity metrics of `u` in each source that serves some.
  void WatchActivity(Unit& u, const MetricSet& wanted);
  void ReadActivity(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out);
  bool ReadProcesses(Unit& u, int64_t now_ns);
  bool ReadProcessUtilization(Unit& u, int64_t now_ns);
  // The tree's device memory from the process lists of ReadProcesses (an error on `u` when
  // NVML gives no figure for one of its processes), and its summed SM utilisation from the
  // samples of ReadProcessUtilization.
  void EmitTreeMemory(Unit& u, SampleOut& out);
  double TreeSm(const Unit& u) const;
  // The tree's share of the device over the last interval; none (with why) when it cannot be
  // told, `transient` when only a passing NVML error stood in the way.
  std::optional<double> TreeShare(Unit& u, int64_t now_ns, std::string* why, bool* transient);
  void UpdateEnergy(Unit& u, int64_t now_ns, const MetricSet& due, SampleOut& out);
  // A last reading of the energy counter at the end of the run.
  void ReadEnergyOnceMore(Unit& u);
  bool InTree(pid_t pid) const;

  Options options_;
  std::string problem_;
  std::string ignored_;  // part of the device list that named no device
  std::vector<GpuEntity> inventory_;
  std::vector<std::unique_ptr<Unit>> units_;
  MetricSet wanted_;  // as given to Series()
  bool series_declared_ = false;
  std::vector<pid_t> tree_pids_;  // sorted, refreshed on passes that need them
  uint64_t pass_ = 0;
  int64_t first_ns_ = 0;  // the first pass: the run's start, for meta times
  int64_t last_pass_ns_ = 0;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPU_PROBE_H_
