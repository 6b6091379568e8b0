#include "footprint/metrics.h"

#include <string>

#include "util/strings.h"

namespace footprint {

const std::array<MetricInfo, kMetricCount>& MetricCatalogue() {
  static const std::array<MetricInfo, kMetricCount> kCatalogue = {{
      {MetricId::kCpu, "cpu", "%", "tree",
       "CPU use of the whole process tree over the last interval; 100 = one core"},
      {MetricId::kMemory, "memory", "bytes", "tree", "resident set of the tree (sum of RSS)"},
      {MetricId::kThreads, "threads", "count", "tree", "live threads in the tree"},
      {MetricId::kProcesses, "processes", "count", "tree", "live processes in the tree"},
      {MetricId::kIoRead, "io.read", "bytes/s", "tree", "storage reads of the tree"},
      {MetricId::kIoWrite, "io.write", "bytes/s", "tree", "storage writes of the tree"},
      {MetricId::kSysCpu, "sys.cpu", "%", "system", "CPU use of the machine; 100 = one core"},
      {MetricId::kSysMemory, "sys.memory", "bytes", "system",
       "memory in use on the machine (MemTotal - MemAvailable)"},
      {MetricId::kSampleCost, "monitor.sample_cost", "us", "monitor",
       "CPU time footprint spent taking one sample"},
      {MetricId::kSampleDelay, "monitor.sample_delay", "us", "monitor",
       "how late a sample was taken after its deadline"},
  }};
  return kCatalogue;
}

Result<MetricId> MetricByName(std::string_view name) {
  std::string known;
  for (const MetricInfo& m : MetricCatalogue()) {
    if (m.name == name) return m.id;
    known += (known.empty() ? "" : ", ") + std::string(m.name);
  }
  return NotFound("unknown metric '" + std::string(name) + "'; known metrics: " + known);
}

Result<MetricSet> ParseMetricList(std::string_view list) {
  MetricSet set;
  for (std::string_view item : Split(list, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    if (item == "all") {
      set |= DefaultMetrics();
      continue;
    }
    Result<MetricId> id = MetricByName(item);
    if (!id.ok()) return InvalidArgument(id.status().message());
    set.set(static_cast<size_t>(*id));
  }
  if (set.none()) return InvalidArgument("no metric named in '" + std::string(list) + "'");
  return set;
}

MetricSet DefaultMetrics() { return MetricSet().set(); }

}  // namespace footprint
