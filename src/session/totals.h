// Run totals as a pure function of what the kernel accounted: the rusage of every reaped
// process, the run's cgroup counters, and the tree's sampled peaks. No I/O here, so every rule
// (which source wins, how CPU time is split) is unit-tested on its own.
#ifndef FOOTPRINT_SESSION_TOTALS_H_
#define FOOTPRINT_SESSION_TOTALS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace footprint {

// Sums of the kernel's rusage over every process footprint reaped. The command's own rusage
// includes all descendants it (transitively) waited for; orphans re-parented to footprint are
// reaped and added separately, so nothing is counted twice.
struct ReapedUsage {
  double user_s = 0;
  double system_s = 0;
  int64_t max_rss_bytes = 0;  // the largest ru_maxrss of a reaped process
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
  int reaped = 0;
};

struct TotalsInputs {
  int64_t duration_ns = 0;
  ReapedUsage reaped;
  // CPU time (user, system ns) counted over the whole tree, where something counts it: the
  // run's cgroup, or a Slurm step's processes on a node as the agent sampled them. `key`
  // names it in meta.accounting ("cgroup": cgroup_user_s, cgroup_system_s).
  std::optional<std::pair<int64_t, int64_t>> tree_cpu_ns;
  std::string tree_cpu_source;
  std::string tree_cpu_key = "cgroup";
  // The run's cgroup: peak memory, where it has it.
  std::optional<int64_t> cgroup_memory_peak_bytes;
  std::string cgroup_memory_source;
  // From the sampler: the largest RSS of a live process, the largest sum of RSS over the tree,
  // the largest `memory` (what the tree holds; the sum of RSS without a memory cgroup) and
  // the largest page cache of the run's memory cgroup.
  int64_t sampled_max_process_bytes = 0;
  int64_t sampled_rss_sum_peak_bytes = 0;
  int64_t sampled_memory_peak_bytes = 0;
  bool memory_from_cgroup = false;
  int64_t sampled_page_cache_peak_bytes = 0;
};

struct RunTotals {
  std::map<std::string, double> totals;  // duration_s, cpu_*, peak memory, io_*
  nlohmann::json sources;                // meta.sources: where each figure came from
  nlohmann::json accounting;             // meta.accounting: the raw CPU figures
  nlohmann::json memory_peaks;           // meta.memory_peaks: every peak candidate
};

// CPU: the cgroup's total when there is one (it also holds processes nobody waited for and
// ones still running), split into user/system in rusage's proportions; otherwise rusage.
// Peak memory: the sampled `memory` (each page once with a memory cgroup), raised to the
// largest process high-water mark; the cgroup's charged peak, which counts page cache, and the
// sum of RSS are kept as their own figures.
RunTotals ComputeRunTotals(const TotalsInputs& in);

}  // namespace footprint

#endif  // FOOTPRINT_SESSION_TOTALS_H_
