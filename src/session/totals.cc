#include "session/totals.h"

#include <algorithm>

namespace footprint {

RunTotals ComputeRunTotals(const TotalsInputs& in) {
  RunTotals out;
  auto& t = out.totals;
  const ReapedUsage& ru = in.reaped;
  t["duration_s"] = static_cast<double>(in.duration_ns) / 1e9;
  out.sources["cpu"] = "rusage (wait4 of the command and of re-parented orphans)";
  t["cpu_user_s"] = ru.user_s;
  t["cpu_system_s"] = ru.system_s;
  out.accounting = {{"rusage_user_s", ru.user_s},
                    {"rusage_system_s", ru.system_s},
                    {"processes_reaped", ru.reaped}};
  if (in.tree_cpu_ns) {
    // The cgroup's total is exact; its user/system split is approximate (the kernel
    // attributes whole scheduler ticks), while rusage's is per process: keep rusage's
    // proportions, scaled to the total. Both scaled (not system = total - user), so that a
    // part rusage saw as 0 stays 0 instead of a rounding residue such as 3e-17.
    const double cg_user = static_cast<double>(in.tree_cpu_ns->first) / 1e9;
    const double cg_system = static_cast<double>(in.tree_cpu_ns->second) / 1e9;
    const double total = cg_user + cg_system;
    const double ru_total = ru.user_s + ru.system_s;
    t["cpu_user_s"] = ru_total > 0 ? total * ru.user_s / ru_total : cg_user;
    t["cpu_system_s"] = ru_total > 0 ? total * ru.system_s / ru_total : cg_system;
    out.accounting[in.tree_cpu_key + "_user_s"] = cg_user;
    out.accounting[in.tree_cpu_key + "_system_s"] = cg_system;
    out.sources["cpu"] =
        ru_total > 0 ? in.tree_cpu_source + " total, split as rusage" : in.tree_cpu_source;
  }
  const int64_t max_process = std::max(ru.max_rss_bytes, in.sampled_max_process_bytes);
  const int64_t peak = std::max(max_process, in.sampled_memory_peak_bytes);
  out.memory_peaks = {{"max_process_hwm_bytes", ru.max_rss_bytes},
                      {"sampled_memory_bytes", in.sampled_memory_peak_bytes},
                      {"sampled_tree_rss_bytes", in.sampled_rss_sum_peak_bytes}};
  out.sources["peak_memory"] =
      in.memory_from_cgroup
          ? "cgroup memory.stat anon + mapped files, each page once, followed at every pass by "
            "the charge (memory.current or usage_in_bytes) and between passes by its high-water "
            "mark, less the page cache and kernel memory of the last memory.stat; raised to the "
            "largest process high-water mark"
          : "approximate: sampled sum of RSS (no memory cgroup, so pages shared between "
            "processes count once per process), raised to the largest process high-water mark";
  t["rss_sum_peak_bytes"] = static_cast<double>(in.sampled_rss_sum_peak_bytes);
  if (in.memory_from_cgroup) {
    t["page_cache_peak_bytes"] = static_cast<double>(in.sampled_page_cache_peak_bytes);
  }
  if (in.cgroup_memory_peak_bytes) {
    // What the kernel charged the cgroup at most: page cache included, so not the peak.
    out.memory_peaks["cgroup_charged_peak_bytes"] = *in.cgroup_memory_peak_bytes;
    out.memory_peaks["cgroup_charged_source"] = in.cgroup_memory_source;
  }
  t["peak_memory_bytes"] = static_cast<double>(peak);
  t["max_process_peak_bytes"] = static_cast<double>(max_process);
  t["io_read_bytes"] = static_cast<double>(ru.read_bytes);
  t["io_write_bytes"] = static_cast<double>(ru.write_bytes);
  out.sources["io"] = "rusage block I/O of reaped processes";
  return out;
}

}  // namespace footprint
