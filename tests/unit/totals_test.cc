// Run totals from the kernel's accounts: which source wins, how CPU time is split.
#include "session/totals.h"

#include <gtest/gtest.h>

namespace footprint {
namespace {

constexpr int64_t kMiB = 1 << 20;

TotalsInputs Reaped() {
  TotalsInputs in;
  in.duration_ns = 2'500'000'000;
  in.reaped = {.user_s = 1.5,
               .system_s = 0.5,
               .max_rss_bytes = 40 * kMiB,
               .read_bytes = 4096,
               .write_bytes = 8192,
               .reaped = 3};
  in.sampled_max_process_bytes = 30 * kMiB;
  in.sampled_rss_sum_peak_bytes = 70 * kMiB;
  in.sampled_memory_peak_bytes = 70 * kMiB;  // no memory cgroup: the sum of RSS
  return in;
}

TEST(RunTotals, WithoutCgroupEverythingComesFromRusageAndSamples) {
  RunTotals r = ComputeRunTotals(Reaped());
  EXPECT_DOUBLE_EQ(r.totals["duration_s"], 2.5);
  EXPECT_DOUBLE_EQ(r.totals["cpu_user_s"], 1.5);
  EXPECT_DOUBLE_EQ(r.totals["cpu_system_s"], 0.5);
  EXPECT_DOUBLE_EQ(r.totals["max_process_peak_bytes"], 40.0 * kMiB);  // the reaped HWM
  EXPECT_DOUBLE_EQ(r.totals["peak_memory_bytes"], 70.0 * kMiB);       // the sampled sum
  EXPECT_DOUBLE_EQ(r.totals["rss_sum_peak_bytes"], 70.0 * kMiB);
  EXPECT_FALSE(r.totals.contains("page_cache_peak_bytes"));
  EXPECT_EQ(r.sources["peak_memory"].get<std::string>().rfind("approximate: ", 0), 0);
  EXPECT_DOUBLE_EQ(r.totals["io_read_bytes"], 4096);
  EXPECT_DOUBLE_EQ(r.totals["io_write_bytes"], 8192);
  EXPECT_EQ(r.accounting["processes_reaped"], 3);
  EXPECT_EQ(r.sources["cpu"], "rusage (wait4 of the command and of re-parented orphans)");
  EXPECT_FALSE(r.memory_peaks.contains("cgroup_charged_peak_bytes"));
}

TEST(RunTotals, PeakIsNeverBelowTheLargestProcess) {
  TotalsInputs in = Reaped();
  in.sampled_memory_peak_bytes = 10 * kMiB;  // a short process the sampler barely saw
  in.sampled_max_process_bytes = 50 * kMiB;
  RunTotals r = ComputeRunTotals(in);
  EXPECT_DOUBLE_EQ(r.totals["max_process_peak_bytes"], 50.0 * kMiB);
  EXPECT_DOUBLE_EQ(r.totals["peak_memory_bytes"], 50.0 * kMiB);
}

TEST(RunTotals, CgroupCpuTotalSplitAsRusage) {
  TotalsInputs in = Reaped();
  in.tree_cpu_ns = {{2'800'000'000, 1'200'000'000}};  // 4 s: an unreaped process ran too
  in.tree_cpu_source = "cgroup v2 cpu.stat";
  RunTotals r = ComputeRunTotals(in);
  EXPECT_DOUBLE_EQ(r.totals["cpu_user_s"], 3.0);  // 4 s x 1.5/2
  EXPECT_DOUBLE_EQ(r.totals["cpu_system_s"], 1.0);
  EXPECT_DOUBLE_EQ(r.accounting["cgroup_user_s"].get<double>(), 2.8);
  EXPECT_EQ(r.sources["cpu"], "cgroup v2 cpu.stat total, split as rusage");
}

TEST(RunTotals, CgroupSplitWhenRusageSawNothing) {
  TotalsInputs in = Reaped();
  in.reaped.user_s = in.reaped.system_s = 0;  // nothing reaped yet: the cgroup's own split
  in.tree_cpu_ns = {{600'000'000, 400'000'000}};
  RunTotals r = ComputeRunTotals(in);
  EXPECT_DOUBLE_EQ(r.totals["cpu_user_s"], 0.6);
  EXPECT_DOUBLE_EQ(r.totals["cpu_system_s"], 0.4);
}

TEST(RunTotals, AStepsCpuCountedByTheAgentKeepsItsOwnSplit) {
  TotalsInputs in;  // nothing reaped: the step's tasks are slurmstepd's children
  in.tree_cpu_ns = {{2'960'000'000, 10'000'000}};
  in.tree_cpu_source = "the step's processes on n01";
  in.tree_cpu_key = "step";
  RunTotals r = ComputeRunTotals(in);
  EXPECT_DOUBLE_EQ(r.totals["cpu_user_s"], 2.96);
  EXPECT_DOUBLE_EQ(r.totals["cpu_system_s"], 0.01);
  EXPECT_DOUBLE_EQ(r.accounting["step_user_s"].get<double>(), 2.96);
  EXPECT_FALSE(r.accounting.contains("cgroup_user_s"));
  EXPECT_EQ(r.sources["cpu"], "the step's processes on n01");
}

TEST(RunTotals, MemoryCgroupCountsSharedPagesOnceAndPageCacheApart) {
  // Five processes share 200 MiB (sum of RSS 1000 MiB) and wrote 400 MiB of files.
  TotalsInputs in = Reaped();
  in.memory_from_cgroup = true;
  in.sampled_memory_peak_bytes = 210 * kMiB;
  in.sampled_rss_sum_peak_bytes = 1000 * kMiB;
  in.sampled_page_cache_peak_bytes = 400 * kMiB;
  in.cgroup_memory_peak_bytes = 610 * kMiB;  // what the kernel charged: page cache too
  in.cgroup_memory_source = "cgroup v1 memory.max_usage_in_bytes";
  RunTotals r = ComputeRunTotals(in);
  EXPECT_DOUBLE_EQ(r.totals["peak_memory_bytes"], 210.0 * kMiB);
  EXPECT_DOUBLE_EQ(r.totals["rss_sum_peak_bytes"], 1000.0 * kMiB);
  EXPECT_DOUBLE_EQ(r.totals["page_cache_peak_bytes"], 400.0 * kMiB);
  EXPECT_EQ(r.memory_peaks["cgroup_charged_peak_bytes"], 610 * kMiB);
  EXPECT_EQ(r.sources["peak_memory"].get<std::string>().rfind("cgroup memory.stat", 0), 0);
  in.sampled_memory_peak_bytes = 20 * kMiB;  // the held memory was between samples
  EXPECT_DOUBLE_EQ(ComputeRunTotals(in).totals["peak_memory_bytes"], 40.0 * kMiB);  // the HWM
}

}  // namespace
}  // namespace footprint
