// The process-tree probe on real workloads, in both ways of finding the tree without a
// cgroup: the children-file walk and the full /proc scan.
#include "probe/process_tree_probe.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "fake_env.h"
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
  std::map<MetricId, double> Sample(int64_t now_ns = MonotonicNs()) {
    Collect out;
    probe.Sample(now_ns, DefaultMetrics(), out);
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

// With the program itself in the tree (the in-process API), the CPU of footprint's own threads
// comes off the program's: read from the Env's CPU-time clocks, the calling thread's and those
// given to ExcludeThreadCpu. The program's ticks come from a /proc fixture.
TEST(ProcessTreeProbeOwnThreads, TheirCpuComesOffTheProgramsOnTheEnvsClocks) {
  testing::TempDir proc;
  std::filesystem::create_directories(proc.File("4242/task/4242"));
  std::ofstream(proc.File("4242/task/4242/children")) << "";
  auto ran_ticks = [&](int utime) {  // at 100 ticks a second
    std::ofstream(proc.File("4242/stat"))
        << "4242 (program) R 1 4242 4242 0 -1 0 0 0 0 0 " << utime << " 0 0 0 20 0 1 0 100 0 256\n";
  };
  ran_ticks(100);
  FakeEnv env;
  constexpr clockid_t kWriterClock = 1234;  // stands for footprint's writer thread
  ProcessTreeProbe probe(ProcessTreeProbe::Options{
      .monitor_pid = 4242, .proc_root = proc.path(), .include_monitor = true, .env = &env});
  probe.ExcludeThreadCpu({kWriterClock});
  MetricSet cpu;
  cpu.set(static_cast<size_t>(MetricId::kCpu));
  ASSERT_EQ(probe.Series(cpu).size(), 1u);
  Collect out;
  probe.Sample(kNsPerSec, cpu, out);
  ran_ticks(200);  // 1 s more, of which the sampler's thread 0.3 s and the writer 0.2 s
  env.AdvanceCpu(CLOCK_THREAD_CPUTIME_ID, 300 * kNsPerMs);
  env.AdvanceCpu(kWriterClock, 200 * kNsPerMs);
  probe.Sample(2 * kNsPerSec, cpu, out);
  EXPECT_EQ(out.values.at(0), 50);  // % of a core
}

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

// A command's counters are 0 when it starts. Once the probe is attached and begun at t0, the
// rate at its second pass runs from t0 and holds all the CPU time the command used before,
// however late the first pass came (here: after 0.2 s of work). Unattached, as in the
// in-process API, the first pass is the baseline and what came before it is not in a rate.
TEST_P(ProcessTreeProbeTest, AttachedTreeRatesRunFromTheStart) {
  Harness attached(GetParam()), unattached(GetParam());
  attached.probe.AttachToCommand(0);
  const int64_t t0 = MonotonicNs();
  attached.probe.Begin(t0);
  unattached.probe.Begin(t0);
  pid_t pid = Spawn({Workload("burn"), "1", "600"});  // killed at 0.3 s of CPU, however slow
  const double tick_s = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  auto cpu_s = [&] {
    auto st = ParseProcStat(*ReadWholeFile("/proc/" + std::to_string(pid) + "/stat"));
    return static_cast<double>(st->utime + st->stime) * tick_s;
  };
  auto burn_until = [&](double s) {
    while (cpu_s() < s) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  burn_until(0.2);
  const int64_t first_pass = MonotonicNs();
  EXPECT_EQ(attached.Sample(first_pass).count(MetricId::kCpu), 0u);    // held for the next pass
  EXPECT_EQ(unattached.Sample(first_pass).count(MetricId::kCpu), 0u);  // the baseline
  burn_until(0.3);
  const double before_s = cpu_s();
  const int64_t t1 = MonotonicNs();
  auto from_start = attached.Sample(t1);
  auto from_first_pass = unattached.Sample(t1);
  const double after_s = cpu_s();
  KillTree(pid);
  ASSERT_EQ(from_start.count(MetricId::kCpu), 1u);
  auto seconds_since = [&](int64_t ns) { return static_cast<double>(t1 - ns) / 1e9; };
  const double counted_s = from_start[MetricId::kCpu] / 100.0 * seconds_since(t0);
  // The kernel's own account brackets the rate's, give or take a tick.
  EXPECT_GE(counted_s, before_s - tick_s) << "after " << after_s;
  EXPECT_LE(counted_s, after_s + tick_s) << "before " << before_s;
  // From the first pass, the first 0.2 s are missing.
  EXPECT_LE(from_first_pass[MetricId::kCpu] / 100.0 * seconds_since(first_pass),
            after_s - 0.2 + 2 * tick_s);
}

TEST(CounterRate, FirstCallIsTheBaseline) {
  CounterRate r;
  EXPECT_FALSE(r.Next(1'000, 5, 1e9));
  EXPECT_DOUBLE_EQ(*r.Next(3'000, 9, 1e9), 4 * 1e9 / 2'000);
  EXPECT_FALSE(r.Next(3'000, 12, 1e9));  // no time passed
  EXPECT_FALSE(r.Next(4'000, 2, 1e9));   // stepped back: the baseline moves there
  EXPECT_DOUBLE_EQ(*r.Next(5'000, 3, 1.0), 1.0 / 1'000);
}

TEST(CounterRate, StartedAtZeroHoldsTheFirstPassAndCountsFromTheStart) {
  CounterRate r;
  r.StartAtZero(1'000);
  EXPECT_FALSE(r.Next(1'010, 7, 1.0));  // ten nanoseconds after the start: held
  EXPECT_DOUBLE_EQ(*r.Next(2'000, 10, 1.0), 10.0 / 1'000);
  EXPECT_DOUBLE_EQ(*r.Next(3'000, 12, 1.0), 2.0 / 1'000);
}

INSTANTIATE_TEST_SUITE_P(WalkAndScan, ProcessTreeProbeTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "ProcScan" : "ChildrenWalk"; });

}  // namespace
}  // namespace footprint
