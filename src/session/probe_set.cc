#include "session/probe_set.h"

#include "probe/gpu_backends.h"
#include "probe/rapl_probe.h"
#include "probe/system_probe.h"

namespace footprint {

ChosenProbes ChooseProbes(Env& env, ProbeChoice choice, nlohmann::json& meta) {
  ChosenProbes out;
  out.exact_intervals = choice.exact_intervals;
  choice.tree.env = &env;
  choice.tree.exact_intervals = choice.exact_intervals;
  if (choice.cpu_ring) choice.tree.served_elsewhere.set(static_cast<size_t>(MetricId::kCpu));
  auto tree = std::make_unique<ProcessTreeProbe>(std::move(choice.tree));
  out.tree = tree.get();
  if (choice.cpu_ring) out.probes.push_back(std::move(choice.cpu_ring));
  out.probes.push_back(std::move(tree));
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
  if (choice.container) {
    auto container = std::make_unique<ContainerProbe>(choice.container);
    out.container = container.get();
    out.probes.push_back(std::move(container));
  }
  return out;
}

ProbeChoice::Gpu GpuChoice(const MetricSet& metrics, const std::optional<std::string>& devices,
                           UnavailableMetrics& unavailable) {
  const bool chose_gpu = (metrics & DefaultMetrics()) != DefaultMetrics();
  return {.wanted = metrics, .devices = devices, .unavailable = chose_gpu ? &unavailable : nullptr};
}

}  // namespace footprint
