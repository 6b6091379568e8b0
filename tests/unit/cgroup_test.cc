// Cgroup detection over a fake /proc root, and a real per-run cgroup where the machine
// allows one (root with writable cgroups, as in CI); elsewhere the test says why it skipped.
#include "probe/cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "probe/process_tree_probe.h"
#include "test_util.h"
#include "util/clock.h"

extern char** environ;

namespace footprint {
namespace {

using testing::TempDir;

// Writes a fake proc root whose mountinfo mounts the hierarchies under `dir`.
void FakeProc(const TempDir& dir, const std::string& mountinfo, const std::string& cgroup) {
  std::filesystem::create_directories(dir.File("proc/self"));
  std::ofstream(dir.File("proc/self/mountinfo")) << mountinfo;
  std::ofstream(dir.File("proc/self/cgroup")) << cgroup;
}

TEST(DetectCgroups, PureV2WithMemoryDelegated) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("cg/user.slice/me"));
  std::ofstream(dir.File("cg/user.slice/me/cgroup.subtree_control")) << "cpu memory pids\n";
  FakeProc(dir, "30 23 0:26 / " + dir.File("cg") + " rw,nosuid - cgroup2 cgroup2 rw\n",
           "0::/user.slice/me\n");
  CgroupSupport s = DetectCgroups(dir.File("proc"));
  EXPECT_EQ(s.v2_dir, dir.File("cg/user.slice/me"));
  EXPECT_TRUE(s.v2_memory);
  EXPECT_TRUE(s.why_no_cpu.empty());
  EXPECT_TRUE(s.why_no_memory.empty());
}

TEST(DetectCgroups, HybridV1MemoryAndMountRoot) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("v2"));
  std::filesystem::create_directories(dir.File("mem/job/7"));
  // The memory hierarchy is mounted from /job, so /proc/self/cgroup's /job/7 maps to mem/7.
  std::filesystem::create_directories(dir.File("mem/7"));
  FakeProc(dir,
           "31 23 0:27 / " + dir.File("v2") + " rw - cgroup2 cgroup2 rw\n" + "32 23 0:28 /job " +
               dir.File("mem") + " rw - cgroup cgroup rw,memory\n",
           "4:memory:/job/7\n0::/\n");
  CgroupSupport s = DetectCgroups(dir.File("proc"));
  EXPECT_EQ(s.v2_dir, dir.File("v2"));
  EXPECT_FALSE(s.v2_memory);
  EXPECT_EQ(s.v1_memory_dir, dir.File("mem/7"));
  EXPECT_TRUE(s.why_no_memory.empty());
}

TEST(DetectCgroups, NothingMountedSaysWhy) {
  TempDir dir;
  FakeProc(dir, "22 1 0:21 / /proc rw - proc proc rw\n", "");
  CgroupSupport s = DetectCgroups(dir.File("proc"));
  EXPECT_TRUE(s.v2_dir.empty());
  EXPECT_NE(s.why_no_cpu.find("neither a cgroup v2 hierarchy nor a v1 cpuacct"), std::string::npos);
  EXPECT_FALSE(s.why_no_memory.empty());
}

// Starts `program arguments` through a shell that first waits for a line on its stdin: the
// caller moves it into a cgroup, then writes to `gate` (the pipe's end, the caller's to close).
// Returns the shell's pid, or -1.
pid_t StartBehindAGate(std::string program, const std::string& arguments, int& gate) {
  int ends[2];
  if (pipe(ends) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, ends[1]);
  std::string script = "read go && exec \"$0\" " + arguments;
  char* argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"), script.data(),
                  program.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(ends[0]);
  gate = ends[1];
  return pid;
}

TEST(RunCgroup, MeasuresAProcessMovedIntoIt) {
  auto cg = RunCgroup::Create(DetectCgroups(), "footprint-unit-" + std::to_string(getpid()));
  if (!cg.ok()) GTEST_SKIP() << "no cgroup here: " << cg.status().message();
  RunCgroup& run = **cg;
  // The workload waits on its stdin until it is in the cgroup: pages it touched before would
  // stay charged to the cgroup it came from (v1 does not move charges), and the cgroup's own
  // peak would read 0 (one run in ten did).
  int gate = -1;
  const pid_t pid = StartBehindAGate(testing::Workload("touch_memory"), "48 1", gate);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(run.Join(pid).ok());
  ASSERT_EQ(write(gate, "go\n", 3), 3);
  close(gate);
  ProcessTreeProbe probe({getpid(), &run, nullptr, "/proc", false});
  std::vector<SeriesSpec> specs = probe.Series(DefaultMetrics());
  struct Out final : SampleOut {
    std::map<int, double> v;
    void Add(int s, double value) override { v[s] = value; }
  } out;
  probe.Sample(MonotonicNs(), DefaultMetrics(), out);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::map<MetricId, double> v;
  for (int tries = 0; tries < 100 && v[MetricId::kMemory] < 48.0 * (1 << 20); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out.v.clear();
    probe.Sample(MonotonicNs(), DefaultMetrics(), out);
    for (size_t i = 0; i < specs.size(); ++i) v[specs[i].metric] = out.v[static_cast<int>(i)];
  }
  EXPECT_EQ(v[MetricId::kProcesses], 1);
  EXPECT_EQ(v[MetricId::kThreads], 1);
  EXPECT_GE(v[MetricId::kMemory], 48.0 * (1 << 20));
  waitpid(pid, nullptr, 0);
  if (run.has_cpu()) {
    EXPECT_GT(*run.CpuUsageNs(), 0);  // touching 48 MiB of pages costs CPU time
  }
  if (run.has_memory()) {
    EXPECT_GT(*run.MemoryPeakBytes(), 0);
  }
  std::string dir = run.procs_path().substr(0, run.procs_path().rfind('/'));
  (*cg).reset();  // the destructor removes the directories
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0) << dir << " was not removed";
}

}  // namespace
}  // namespace footprint

namespace footprint {
namespace {

// Where only v1's cpuacct can be made (a privileged container on a hybrid host), the total is
// the kernel's exact runtime: its tick counts (usage_user, usage_sys) missed most of a burn on
// a busy machine, and a test in a container read 0.368 s for 0.300.
TEST(RunCgroup, AV1CpuacctTotalIsTheExactRuntimeOfWhatRanInIt) {
  CgroupSupport support = DetectCgroups();
  if (support.v1_cpuacct_dir.empty()) GTEST_SKIP() << "no v1 cpuacct here";
  support.v2_dir.clear();
  support.v2_memory = false;
  auto cg = RunCgroup::Create(support, "footprint-unit-v1-" + std::to_string(getpid()));
  if (!cg.ok()) GTEST_SKIP() << "no cgroup here: " << cg.status().message();
  int gate = -1;
  const pid_t pid = StartBehindAGate(testing::Workload("burn"), "1 0.3 >/dev/null", gate);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE((*cg)->Join(pid).ok());
  ASSERT_EQ(write(gate, "go\n", 3), 3);
  close(gate);
  int status = 0;
  rusage ru{};
  ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
  const double truth =
      ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  auto split = (*cg)->CpuUserSystemNs();
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->first + split->second, *(*cg)->CpuUsageNs());
  // The shell's few instructions before it joined are in rusage only.
  EXPECT_NEAR((split->first + split->second) / 1e9, truth, truth * 0.02 + 0.005);
}

TEST(RunCgroup, RemovesCgroupsLeftBehindByAKilledFootprint) {
  CgroupSupport support = DetectCgroups();
  std::string parent = !support.v2_dir.empty() ? support.v2_dir : support.v1_cpuacct_dir;
  if (parent.empty()) GTEST_SKIP() << "no cgroup here: " << support.why_no_cpu;
  const std::string pid = std::to_string(getpid());
  std::string stale = parent + "/footprint-stale-" + pid;
  std::string fresh = parent + "/footprint-fresh-" + pid;
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0);
  ASSERT_EQ(mkdir(fresh.c_str(), 0755), 0);
  timespec old_times[2] = {{time(nullptr) - 120, 0}, {time(nullptr) - 120, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, stale.c_str(), old_times, 0), 0);
  auto cg = RunCgroup::Create(support, "footprint-unit-sweep-" + pid);
  ASSERT_TRUE(cg.ok()) << cg.status().message();
  struct stat st;
  EXPECT_NE(stat(stale.c_str(), &st), 0) << "a stale empty run cgroup must be removed";
  EXPECT_EQ(stat(fresh.c_str(), &st), 0) << "a fresh one may belong to a starting run";
  rmdir(fresh.c_str());
}

}  // namespace
}  // namespace footprint
