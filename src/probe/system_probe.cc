#include "probe/system_probe.h"

#include <unistd.h>

namespace footprint {

SystemProbe::SystemProbe(Env& env, MetricSet exact_intervals)
    : env_(env),
      stat_(env.ProcRoot() + "/stat"),
      meminfo_(env.ProcRoot() + "/meminfo"),
      online_cpus_(static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))),
      exact_intervals_(exact_intervals) {}

std::vector<SeriesSpec> SystemProbe::Series(const MetricSet& wanted) {
  std::vector<SeriesSpec> specs;
  if (wanted.test(static_cast<size_t>(MetricId::kSysCpu)) && stat_.is_open()) {
    cpu_series_ = static_cast<int>(specs.size());
    specs.push_back({MetricId::kSysCpu, "system"});
    char buf[256];  // the aggregate line comes first; the rest is not needed
    last_cpu_ = ParseProcStatCpu(stat_.Read(buf, sizeof buf));
  }
  if (wanted.test(static_cast<size_t>(MetricId::kSysMemory)) && meminfo_.is_open()) {
    memory_series_ = static_cast<int>(specs.size());
    specs.push_back({MetricId::kSysMemory, "system"});
  }
  return specs;
}

void SystemProbe::Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) {
  auto read_now = [&](MetricId m, int series, const CallBudget& budget) {
    const auto i = static_cast<size_t>(m);
    return series >= 0 && due.test(i) && (exact_intervals_.test(i) || budget.Due(now_ns));
  };
  if (read_now(MetricId::kSysCpu, cpu_series_, stat_budget_)) {
    char buf[256];  // the aggregate line comes first; the rest is not needed
    std::optional<SysCpuTimes> now = stat_budget_.Make(
        env_, now_ns, [&] { return ParseProcStatCpu(stat_.Read(buf, sizeof buf)); });
    if (now && last_cpu_ && now->total > last_cpu_->total) {
      double busy = static_cast<double>(now->busy - last_cpu_->busy);
      double total = static_cast<double>(now->total - last_cpu_->total);
      out.Add(cpu_series_, 100.0 * online_cpus_ * busy / total);
      last_cpu_ = now;
    } else if (now && !last_cpu_) {
      last_cpu_ = now;
    }
  }
  if (read_now(MetricId::kSysMemory, memory_series_, meminfo_budget_)) {
    char buf[2048];  // MemTotal and MemAvailable are in the first lines
    if (auto mem = meminfo_budget_.Make(
            env_, now_ns, [&] { return ParseMemInfo(meminfo_.Read(buf, sizeof buf)); })) {
      out.Add(memory_series_, static_cast<double>(mem->total_bytes - mem->available_bytes));
    }
  }
}

void SystemProbe::Finish(ProbeFindings& findings) {
  NoteSpacedReads("sys.cpu", stat_budget_, findings.meta);
  NoteSpacedReads("sys.memory", meminfo_budget_, findings.meta);
}

}  // namespace footprint
