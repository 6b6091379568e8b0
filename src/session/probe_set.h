// The probes of one run, chosen in one place: the MonitorSession picks them from a run's
// ProbeChoice. `run` (and the resident load), the Slurm step agent and the in-process API each
// describe their run — how its process tree is found, what else it measures — and get the same
// probes in the same order: a kernel ring for the tree's cpu where one serves it, the tree, the
// machine's CPU and memory, then RAPL, hardware counters, GPUs and a container's cgroup as
// asked. The tree comes before the probes that ask it for its members. An attached container
// (no command, no tree) gets its cgroup's probe where the tree would be.
#ifndef FOOTPRINT_SESSION_PROBE_SET_H_
#define FOOTPRINT_SESSION_PROBE_SET_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "probe/container_probe.h"
#include "probe/perf_probe.h"
#include "probe/probe.h"
#include "probe/process_tree_probe.h"

namespace footprint {

struct ProbeChoice {
  ProcessTreeProbe::Options tree;
  // Metrics given an interval of their own: read at each of their deadlines by the tree and
  // system probes, never spaced out by their cost.
  MetricSet exact_intervals;
  // The kernel's ring for the tree's cpu (probe/cpu_ring_probe.h); the tree then leaves cpu out.
  std::unique_ptr<Probe> cpu_ring;
  bool energy = false;                     // RAPL's machine-wide counters
  std::optional<PerfProbe::Options> perf;  // hardware counters the command inherits
  struct Gpu {
    MetricSet wanted;
    std::optional<std::string> devices;         // overrides CUDA_VISIBLE_DEVICES-style selection
    UnavailableMetrics* unavailable = nullptr;  // told why metrics asked for cannot be had
  };
  std::optional<Gpu> gpu;
  // A container the command starts, measured in this cgroup of its own (docs/containers.md):
  // its probe comes last, and the GPU's .tree metrics count its processes with the tree's.
  const RunCgroup* container = nullptr;
  // The container is a running one footprint attached to (`footprint run --container`), not
  // the command's: no command, so no tree (`tree` and `cpu_ring` are unused); its cgroup is
  // what is measured, its probe first, and the GPU's .tree metrics count its processes alone.
  bool attached = false;
};

struct ChosenProbes {
  std::vector<std::unique_ptr<Probe>> probes;
  ProcessTreeProbe* tree = nullptr;           // owned by `probes`; the totals read its peaks
  ContainerProbe* container = nullptr;        // owned by `probes`, with a container
  std::unique_ptr<ContainerMembers> members;  // the GPU's processes with a container
  MetricSet exact_intervals;                  // the choice's, for the sampler
};

// The probes `choice` describes, on `env`'s /proc and /sys; the GPU probe writes meta.gpu. The
// MonitorSession's to call; whoever holds them keeps the members (with a container) alive as
// long as the probes.
ChosenProbes ChooseProbes(Env& env, ProbeChoice choice, nlohmann::json& meta);

// The GPUs of a run measuring `metrics` (NVML is loaded only when a GPU metric is among them).
// Without a GPU meta.gpu says why, and `unavailable` is told too when `metrics` chose GPU
// metrics (a selection that narrows the defaults); the default set, alone or extended, quietly
// has none then.
ProbeChoice::Gpu GpuChoice(const MetricSet& metrics, const std::optional<std::string>& devices,
                           UnavailableMetrics& unavailable);

}  // namespace footprint

#endif  // FOOTPRINT_SESSION_PROBE_SET_H_
