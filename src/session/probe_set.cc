#include "session/probe_set.h"

#include "probe/gpu_backends.h"
#include "probe/rapl_probe.h"
#include "probe/system_probe.h"

namespace footprint {

namespace {

// The command's process tree, after the kernel's ring for its cpu when one serves it.
void ChooseTree(Env& env, ProbeChoice& choice, ChosenProbes& out) {
  choice.tree.env = &env;
  choice.tree.exact_intervals = choice.exact_intervals;
  if (choice.cpu_ring) choice.tree.served_elsewhere.set(static_cast<size_t>(MetricId::kCpu));
  auto tree = std::make_unique<ProcessTreeProbe>(std::move(choice.tree));
  out.tree = tree.get();
  if (choice.cpu_ring) out.probes.push_back(std::move(choice.cpu_ring));
  out.probes.push_back(std::move(tree));
}

void ChooseContainer(const RunCgroup* cgroup, ChosenProbes& out) {
  auto container = std::make_unique<ContainerProbe>(cgroup);
  out.container = container.get();
  out.probes.push_back(std::move(container));
}

}  // namespace

ChosenProbes ChooseProbes(Env& env, ProbeChoice choice, nlohmann::json& meta) {
  ChosenProbes out;
  out.exact_intervals = choice.exact_intervals;
  if (choice.attached) {
    ChooseContainer(choice.container, out);
  } else {
    ChooseTree(env, choice, out);
  }
  out.probes.push_back(std::make_unique<SystemProbe>(env, choice.exact_intervals));
  if (choice.energy) out.probes.push_back(std::make_unique<RaplProbe>(env.SysRoot()));
  if (choice.perf) out.probes.push_back(std::make_unique<PerfProbe>(std::move(*choice.perf)));
  if (choice.container) {
    out.members = std::make_unique<ContainerMembers>(choice.container);
    out.members->set_tree(out.tree);
  }
  if (choice.gpu) {
    ProcessMembers* members = out.tree;
    if (out.members) members = out.members.get();
    if (auto gpu = OpenGpuProbe(env, choice.gpu->wanted, members, choice.gpu->devices, meta,
                                choice.gpu->unavailable)) {
      out.probes.push_back(std::move(gpu));
    }
  }
  if (choice.container && !choice.attached) ChooseContainer(choice.container, out);
  return out;
}

ProbeChoice::Gpu GpuChoice(const MetricSet& metrics, const std::optional<std::string>& devices,
                           UnavailableMetrics& unavailable) {
  const bool chose_gpu = (metrics & DefaultMetrics()) != DefaultMetrics();
  return {.wanted = metrics, .devices = devices, .unavailable = chose_gpu ? &unavailable : nullptr};
}

}  // namespace footprint
