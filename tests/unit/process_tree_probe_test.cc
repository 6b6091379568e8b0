// The process-tree probe on real workloads, in both ways of finding the tree without a
// cgroup: the children-file walk and the full /proc scan.
#include "probe/process_tree_probe.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <map>
#include <thread>

#include "test_util.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"

extern char** environ;

namespace footprint {
namespace {

using testing::Workload;

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Its own process group, so that KillTree() can end every descendant.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), environ), 0) << args[0];
  posix_spawnattr_destroy(&attr);
  return pid;
}

void Reap(pid_t pid) { waitpid(pid, nullptr, 0); }

void KillTree(pid_t pid) {
  kill(-pid, SIGKILL);
  Reap(pid);
}

class Collect final : public SampleOut {
 public:
  void Add(int series, double value) override { values[series] = value; }
  std::map<int, double> values;
};

struct Harness {
  explicit Harness(bool scan)
      : probe(ProcessTreeProbe::Options{getpid(), nullptr, &reaped, "/proc", scan}) {
    std::vector<SeriesSpec> specs = probe.Series(DefaultMetrics());
    for (size_t i = 0; i < specs.size(); ++i) index[specs[i].metric] = static_cast<int>(i);
  }
  std::map<MetricId, double> Sample() {
    Collect out;
    probe.Sample(MonotonicNs(), DefaultMetrics(), out);
    std::map<MetricId, double> v;
    for (auto [m, i] : index) {
      if (out.values.count(i)) v[m] = out.values[i];
    }
    return v;
  }
  // Samples every 50 ms until `done` holds for a sample or `timeout_s` passes; returns the
  // last sample. Workloads start slowly on a loaded machine: poll, never sleep a fixed time.
  template <typename Pred>
  std::map<MetricId, double> SampleUntil(Pred done, double timeout_s = 10) {
    const int64_t end = MonotonicNs() + static_cast<int64_t>(timeout_s * 1e9);
    std::map<MetricId, double> v;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      v = Sample();
    } while (!done(v) && MonotonicNs() < end);
    return v;
  }
  ReapedTotals reaped;
  ProcessTreeProbe probe;
  std::map<MetricId, int> index;
};

class ProcessTreeProbeTest : public ::testing::TestWithParam<bool> {};

TEST_P(ProcessTreeProbeTest, CountsEveryProcessOfAThreeLevelTree) {
  Harness h(GetParam());
  pid_t root = Spawn({Workload("spawn_tree"), "2", "2", "3"});  // 1 + 2 + 4 processes
  h.Sample();
  auto v =
      h.SampleUntil([](auto& s) { return s[MetricId::kProcesses] >= 7 && s[MetricId::kCpu] > 0; });
  KillTree(root);
  EXPECT_EQ(v[MetricId::kProcesses], 7);
  EXPECT_GE(v[MetricId::kThreads], 7);
  EXPECT_GT(v[MetricId::kCpu], 0);
  EXPECT_GT(v[MetricId::kMemory], 0);
}

TEST_P(ProcessTreeProbeTest, SeesTouchedMemory) {
  Harness h(GetParam());
  pid_t pid = Spawn({Workload("touch_memory"), "64", "3"});
  auto v = h.SampleUntil([](auto& s) { return s[MetricId::kMemory] >= 64.0 * (1 << 20); });
  KillTree(pid);
  EXPECT_GE(v[MetricId::kMemory], 64.0 * (1 << 20));
  EXPECT_GE(h.probe.peak_process_rss_bytes(), 64 << 20);
  EXPECT_GE(h.probe.peak_rss_sum_bytes(), 64 << 20);
  EXPECT_GE(h.probe.peak_memory_bytes(), 64 << 20);
}

// The CPU rate must match what the kernel accounted to the process over the same window,
// however busy the machine is (the absolute N x 100 % check is in the serial integration suite).
TEST_P(ProcessTreeProbeTest, CpuRateMatchesKernelAccounting) {
  Harness h(GetParam());
  pid_t pid = Spawn({Workload("burn"), "2", "1.5"});
  auto ticks = [&] {
    auto st = ParseProcStat(*ReadWholeFile("/proc/" + std::to_string(pid) + "/stat"));
    return static_cast<double>(st->utime + st->stime);
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  h.Sample();
  double t0 = static_cast<double>(MonotonicNs()), ticks0 = ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  double ticks1 = ticks(), t1 = static_cast<double>(MonotonicNs());
  auto v = h.Sample();
  Reap(pid);
  double kernel_percent = 100.0 * (ticks1 - ticks0) / sysconf(_SC_CLK_TCK) / ((t1 - t0) / 1e9);
  // Tick resolution (10 ms per thread on each side of a 1 s window) and the few microseconds
  // between reading the counters and sampling bound the difference.
  EXPECT_NEAR(v[MetricId::kCpu], kernel_percent, 6.0) << "kernel says " << kernel_percent;
  EXPECT_GT(v[MetricId::kCpu], 5.0);
}

TEST_P(ProcessTreeProbeTest, KeepsDoubleForkedEscapeeAsSubreaper) {
  int old = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &old);
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  Harness h(GetParam());
  pid_t pid = Spawn({Workload("escapee"), "3", "0.05"});
  Reap(pid);  // the parent is gone; its grandchild was re-parented to this process
  h.Sample();
  auto v = h.SampleUntil([](auto& s) { return s[MetricId::kCpu] > 0; });
  EXPECT_EQ(v[MetricId::kProcesses], 1);
  EXPECT_GT(v[MetricId::kCpu], 0);
  // It was re-parented to this process: it is listed among this process's children.
  auto children = ReadWholeFile("/proc/self/task/" + std::to_string(getpid()) + "/children");
  ASSERT_TRUE(children.ok());
  int found = 0;
  ForEachPid(*children, [&](pid_t child) {
    ++found;
    kill(child, SIGKILL);
  });
  EXPECT_EQ(found, 1);
  while (wait(nullptr) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, old);
}

TEST_P(ProcessTreeProbeTest, EmptyTreeIsZeroNotAnError) {
  Harness h(GetParam());
  h.Sample();
  auto v = h.Sample();
  EXPECT_EQ(v[MetricId::kProcesses], 0);
  EXPECT_EQ(v[MetricId::kMemory], 0);
}

INSTANTIATE_TEST_SUITE_P(WalkAndScan, ProcessTreeProbeTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "ProcScan" : "ChildrenWalk"; });

}  // namespace
}  // namespace footprint
