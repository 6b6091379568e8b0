// RunMonitored through the library (no CLI): the threads, the store and the totals together.
#include "footprint/monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_env.h"
#include "faulty_store.h"
#include "footprint/profiler.h"
#include "footprint/report.h"
#include "run/monitor_internal.h"
#include "test_util.h"
#include "util/clock.h"
#include "util/file.h"

namespace footprint {
namespace {

using testing::TempDir;
using testing::Workload;

// A store that fails every sample write (a full disk) never harms the command: it runs to
// its own end with its own status, the run is finished, and the loss is said once.
TEST(RunMonitored, AFailingStoreNeverHarmsTheCommand) {
  TempDir dir;
  auto inner = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(inner.ok());
  FaultyStore store(std::move(inner).value());
  store.failing = -1;
  MonitorOptions o;
  o.command = {Workload("exit_with"), "3"};
  o.interval_ns = 2'000'000;
  o.flush_interval_ns = 5'000'000;
  auto out = RunMonitored(store, o);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->exit_status, 3);
  EXPECT_EQ(out->run.status, RunStatus::kFailed);
  int failure_lines = 0;
  for (const std::string& w : out->warnings) {
    failure_lines += w.find("writes to the database failed") != std::string::npos;
  }
  EXPECT_EQ(failure_lines, 1);
  auto run = store.GetRun(out->run.id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, RunStatus::kFailed);  // finished, not left running
  auto meta = nlohmann::json::parse(run->meta_json);
  EXPECT_GT(meta["monitor"]["writer"]["failed_flushes"].get<int>(), 0);
  EXPECT_EQ(meta["monitor"]["writer"]["samples_written"], 0);
  EXPECT_GT(meta["monitor"]["samples_dropped"].get<int>(), 0);  // every sample, counted
}

// Faults of the database at different moments of a real run (burn, 0.4 s, sampled every
// 2 ms): the command is unharmed — its exit status, and as much CPU time as it measured of
// itself — and every sample the sampler produced is either in the store, exactly as many as
// reported written, or counted as lost, with the run marked incomplete.
struct DatabaseFault {
  const char* name;
  int first_failing, failing, delay_ms;
  bool fail_finish;
  bool loses_samples;
};

class RunMonitoredFaults : public ::testing::TestWithParam<DatabaseFault> {};

TEST_P(RunMonitoredFaults, CommandUnharmedAndEverySampleAccountedFor) {
  const DatabaseFault& fault = GetParam();
  TempDir dir;
  auto inner = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(inner.ok());
  FaultyStore store(std::move(inner).value());
  store.first_failing = fault.first_failing;
  store.failing = fault.failing;
  store.delay_ms = fault.delay_ms;
  store.fail_finish = fault.fail_finish;
  ::setenv("FP_WORKLOAD_REPORT", dir.path().c_str(), 1);
  MonitorOptions o;
  o.command = {Workload("burn"), "1", "0.4"};
  o.interval_ns = 2'000'000;
  o.flush_interval_ns = 20'000'000;
  auto out = RunMonitored(store, o);
  ::unsetenv("FP_WORKLOAD_REPORT");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->exit_status, 0);
  EXPECT_EQ(out->run.status, RunStatus::kOk);
  // The command's own account of itself (self_report.h): it burned its 0.4 s of wall time.
  int reports = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    if (f.path().filename().string().find("fp.db") == 0) continue;
    auto own = nlohmann::json::parse(std::ifstream(f.path()));
    EXPECT_EQ(own["args"], "1 0.4");
    ++reports;
  }
  EXPECT_EQ(reports, 1);
  const auto meta = nlohmann::json::parse(out->run.meta_json)["monitor"];
  const uint64_t produced = meta["sampler"]["samples"], written = meta["writer"]["samples_written"],
                 lost = meta["samples_dropped"];
  EXPECT_GT(produced, 100u);
  EXPECT_EQ(written + lost, produced);
  uint64_t stored = 0;
  auto series = store.ListSeries(out->run.id);
  ASSERT_TRUE(series.ok());
  for (const SeriesRecord& s : *series) stored += store.LoadValues(s.id, nullptr)->size();
  EXPECT_EQ(stored, written);
  EXPECT_EQ(lost > 0, fault.loses_samples) << lost;
  EXPECT_EQ(IncompleteReason(out->run).has_value(), fault.loses_samples);
  auto stored_run = store.GetRun(out->run.id);
  ASSERT_TRUE(stored_run.ok());
  // The end of the run reaches the store unless the disk is full right then.
  EXPECT_EQ(stored_run->status, fault.fail_finish ? RunStatus::kRunning : RunStatus::kOk);
  if (fault.loses_samples && !fault.fail_finish) {
    EXPECT_EQ(IncompleteReason(*stored_run), IncompleteReason(out->run));
    EXPECT_NE(IncompleteReason(out->run)->find("database or disk is full (injected"),
              std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, RunMonitoredFaults,
    ::testing::Values(DatabaseFault{"DiskFullFromTheStart", 0, -1, 0, false, true},
                      DatabaseFault{"DiskFullMidRun", 4, -1, 0, false, true},
                      DatabaseFault{"DiskFullAtTheEnd", 1 << 30, 0, 0, true, false},
                      DatabaseFault{"LockedForAWhile", 2, 3, 0, false, false},
                      DatabaseFault{"SlowDisk", 0, 0, 150, false, false}),
    [](const auto& p) { return std::string(p.param.name); });

// /bin/sleep 0.2 measured on `env`'s clock: cpu and memory every 100 ms, flushed every 1 s.
MonitorOptions SleepOnTheClockOf(FakeEnv& env) {
  MonitorOptions o;
  o.env = &env;
  o.command = {"/bin/sleep", "0.2"};
  o.record_git = false;
  o.metrics = MetricSet()
                  .set(static_cast<size_t>(MetricId::kCpu))
                  .set(static_cast<size_t>(MetricId::kMemory));
  o.interval_ns = 100 * kNsPerMs;
  o.flush_interval_ns = kNsPerSec;
  return o;
}

// On a driven clock (FakeEnv) the run's schedule is exact whatever the machine's load: the
// sampler meets every deadline up to the horizon while the real command runs, each series has
// a sample at each, and the run lasts what the clock says.
TEST(RunMonitored, OnTheDrivenClockEveryDeadlineIsASample) {
  FakeEnv env;
  env.SetHorizon(900 * kNsPerMs);  // the writer's first flush (1 s) is beyond it: it waits
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  auto out = RunMonitored(**store, SleepOnTheClockOf(env));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->exit_status, 0);
  EXPECT_EQ(out->totals.at("duration_s"), 0.9);
  const auto meta = nlohmann::json::parse(out->run.meta_json);
  EXPECT_EQ(meta["monitor"]["sampler"]["missed_deadlines"], 0);
  auto series = (*store)->ListSeries(out->run.id);
  ASSERT_TRUE(series.ok());
  std::vector<int64_t> expected;
  for (int64_t ms = 0; ms <= 900; ms += 100) expected.push_back(ms * kNsPerMs);
  for (const SeriesRecord& s : *series) {
    std::vector<int64_t> times;
    ASSERT_TRUE((*store)->LoadValues(s.id, &times).ok());
    if (s.metric == "memory") {
      EXPECT_EQ(times, expected);
    } else {  // a rate: from the second reading of the command's counters on, on the deadlines
      ASSERT_GE(times.size(), 7u) << s.metric;
      EXPECT_TRUE(std::equal(times.begin(), times.end(), expected.end() - times.size()))
          << s.metric;
    }
  }
}

TEST(RunMonitored, BusyChildWithTotalsAndSeries) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {Workload("burn"), "1", "0.5"};
  o.name = "burn";
  o.tags = {{"k", "v"}};
  o.interval_ns = 20'000'000;
  o.metric_interval_ns[MetricId::kMemory] = 5'000'000;
  const int64_t called_ns = MonotonicNs();
  auto out = RunMonitored(**store, o);
  const double returned_after_s = (MonotonicNs() - called_ns) / 1e9;
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->exit_status, 0);
  EXPECT_EQ(out->run.status, RunStatus::kOk);
  EXPECT_TRUE(out->launch_error.empty());
  const auto& t = out->totals;
  EXPECT_GE(t.at("duration_s"), 0.5);
  EXPECT_LT(t.at("duration_s"), returned_after_s);
  // One busy thread: never more CPU than wall time, and the exact sources agree.
  const double cpu = t.at("cpu_user_s") + t.at("cpu_system_s");
  EXPECT_GT(cpu, 0.05);
  EXPECT_LE(cpu, t.at("duration_s") * 1.02);
  auto acct = nlohmann::json::parse(out->run.meta_json)["accounting"];
  if (acct.contains("cgroup_user_s")) {
    double rusage = acct["rusage_user_s"].get<double>() + acct["rusage_system_s"].get<double>();
    EXPECT_NEAR(cpu, rusage, 0.02 * rusage + 0.01);
  }
  EXPECT_GT(t.at("monitor_cpu_s"), 0);
  EXPECT_GT(t.at("monitor_peak_rss_bytes"), 0);
  EXPECT_GE(t.at("peak_memory_bytes"), t.at("max_process_peak_bytes"));

  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  auto summary = SummarizeRun(**store, (*runs)[0]);
  ASSERT_TRUE(summary.ok());
  std::map<std::string, size_t> counts;
  for (const MetricSummary& m : summary->metrics) counts[m.metric] = m.count;
  auto meta = nlohmann::json::parse((*runs)[0].meta_json);
  // 25 passes are due for cpu and 100 for memory. Beside busy loops the sampler wakes late (6
  // cpu samples in one run): then the run must say which series fell below the asked rate.
  const nlohmann::json below = meta.value("below_asked_rate", nlohmann::json::object());
  EXPECT_TRUE(counts["cpu"] >= 15u || below.contains("cpu")) << meta.dump();
  EXPECT_GE(counts["memory"], counts["cpu"]);  // every pass that reads cpu reads memory
  if (!below.contains("memory")) {
    EXPECT_GE(counts["memory"], 3 * counts["cpu"]) << meta.dump();  // 5 ms against 20 ms
  }
  EXPECT_EQ(meta["tags"]["k"], "v");
  EXPECT_EQ(meta["monitor"]["samples_dropped"], 0);
}

// footprint fails after the run exists and before the command may start (here, the
// before_start hook that an experiment's barrier is): the command never runs, RunMonitored
// returns the reason, and the run is stored as failed, ended, with it — not left running.
TEST(RunMonitored, AFailureBeforeTheCommandStartsAbandonsTheRun) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  const std::string marker = dir.File("ran");
  MonitorOptions o;
  o.command = {"/bin/sh", "-c", "touch " + marker};
  o.before_start = [] { return InternalError("the barrier was broken"); };
  auto out = RunMonitored(**store, o);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "the barrier was broken");
  EXPECT_FALSE(std::filesystem::exists(marker));
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].status, RunStatus::kFailed);
  EXPECT_TRUE((*runs)[0].ended_at_ns.has_value());
  EXPECT_EQ(nlohmann::json::parse((*runs)[0].meta_json)["launch_error"], "the barrier was broken");
}

TEST(RunMonitored, CommandNotFoundIs127WithAReason) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {"/no/such/program"};
  auto out = RunMonitored(**store, o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_status, 127);
  EXPECT_EQ(out->run.status, RunStatus::kFailed);
  EXPECT_NE(out->launch_error.find("command not found"), std::string::npos) << out->launch_error;
}

TEST(RunMonitored, SignalDeathIs128PlusN) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {Workload("exit_with"), "signal", "9"};
  auto out = RunMonitored(**store, o);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_status, 137);
  EXPECT_EQ(out->run.status, RunStatus::kKilled);
}

TEST(RunRepeated, WarmupsThenRepetitionsAsOneGroup) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {Workload("exit_with"), "0"};
  o.record_git = false;
  int calls = 0;
  auto group = RunRepeated(**store, o, {.repetitions = 2, .warmups = 1},
                           [&](const MonitorOutcome&) { ++calls; });
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_TRUE(group->complete);
  EXPECT_EQ(group->exit_status, 0);
  EXPECT_EQ(calls, 3);
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 3u);
  for (size_t i = 0; i < runs->size(); ++i) {
    EXPECT_EQ((*runs)[i].group_id, group->group_id);
    EXPECT_EQ((*runs)[i].repetition, std::vector<int>({-1, 1, 2})[i]);
    EXPECT_EQ((*runs)[i].status, RunStatus::kOk);
  }
  EXPECT_NE((*runs)[0].meta_json.find(R"("group":{"repetitions":2,"warmups":1})"),
            std::string::npos)
      << (*runs)[0].meta_json;
}

TEST(RunRepeated, StopsAtTheFirstFailureUnlessKeepGoing) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {Workload("exit_with"), "3"};
  o.record_git = false;
  auto stopped = RunRepeated(**store, o, {.repetitions = 3}, nullptr);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->runs.size(), 1u);
  EXPECT_EQ(stopped->exit_status, 3);
  EXPECT_FALSE(stopped->complete);
  auto all = RunRepeated(**store, o, {.repetitions = 3, .keep_going = true}, nullptr);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->runs.size(), 3u);
  EXPECT_EQ(all->exit_status, 3);
  EXPECT_TRUE(all->complete);
  EXPECT_NE(all->group_id, stopped->group_id);
  EXPECT_EQ(RunRepeated(**store, o, {.repetitions = 0}, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

// Runs whose command, like the hooks around them, appends to a log in their folder: the log
// is the ground truth of what ran, in which order.
class RunRepeatedHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = OpenStore(dir.File("fp.db"));
    ASSERT_TRUE(opened.ok());
    store = std::move(opened).value();
    logging.command = {"sh", "-c", "echo run >> log"};
    logging.record_git = false;
    logging.working_dir = dir.path();
  }
  std::string Log() const {
    auto log = ReadWholeFile(dir.File("log"));
    return log.ok() ? *log : "";
  }

  TempDir dir;
  std::unique_ptr<Store> store;
  MonitorOptions logging;
};

// The hooks in hyperfine's order, with the runs' environment and folder.
TEST_F(RunRepeatedHooks, RunAroundTheRunsInOrder) {
  MonitorOptions o = logging;
  o.environment["WHO"] = "hook";
  RepeatOptions r{.repetitions = 2, .warmups = 1};
  r.hooks = {.setup = "echo setup $WHO >> log",
             .prepare = "echo prepare >> log",
             .conclude = "echo conclude >> log",
             .cleanup = "echo cleanup >> log"};
  auto group = RunRepeated(*store, o, r, nullptr);
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_TRUE(group->complete);
  EXPECT_EQ(group->exit_status, 0);
  EXPECT_EQ(group->hook_failure, "");
  std::string round = "prepare\nrun\nconclude\n";
  EXPECT_EQ(Log(), "setup hook\n" + round + round + round + "cleanup\n");
}

// Without a shell (-N), a hook's line is split into words and run as it is: '>>' is a word.
TEST_F(RunRepeatedHooks, WithoutAShellAreSplitIntoWords) {
  RepeatOptions r;
  r.hooks = {.setup = "touch 'a b' c", .shell = ""};
  auto group = RunRepeated(*store, logging, r, nullptr);
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_TRUE(std::filesystem::exists(dir.File("a b")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("c")));
  r.hooks.setup = "touch 'unterminated";
  EXPECT_NE(
      RunRepeated(*store, logging, r, nullptr).status().message().find("--setup: unterminated"),
      std::string::npos);
}

// A failing --prepare stops the runs (--keep-going is for the command's failures), the
// cleanup still runs, and the group exits with the hook's status, saying which and when.
TEST_F(RunRepeatedHooks, AFailingOneStopsTheRunsAndTheCleanupStillRuns) {
  RepeatOptions r{.repetitions = 3, .keep_going = true};
  r.hooks = {.prepare = "test $(cat log 2>/dev/null | wc -l) -lt 2 || exit 7",  // 2 runs
             .cleanup = "echo cleanup >> log"};
  auto group = RunRepeated(*store, logging, r, nullptr);
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_EQ(group->runs.size(), 2u);
  EXPECT_FALSE(group->complete);
  EXPECT_EQ(group->exit_status, 7);
  EXPECT_EQ(group->hook_failure, "--prepare exited with status 7 before run 3 of 3");
  EXPECT_EQ(Log(), "run\nrun\ncleanup\n");
  // A failed setup: no run, and no cleanup of what was never set up.
  r.hooks = {.setup = "exit 3", .cleanup = "echo cleanup >> log"};
  auto no_setup = RunRepeated(*store, logging, r, nullptr);
  ASSERT_TRUE(no_setup.ok());
  EXPECT_TRUE(no_setup->runs.empty());
  EXPECT_EQ(no_setup->exit_status, 3);
  EXPECT_EQ(Log(), "run\nrun\ncleanup\n");
}

// One run (no repetitions, no warm-up) is a run on its own.
TEST_F(RunRepeatedHooks, OneRunIsNoGroup) {
  auto one = RunRepeated(*store, logging, {}, nullptr);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->group_id, "");
  ASSERT_EQ(one->runs.size(), 1u);
  EXPECT_EQ(one->runs[0].run.group_id, "");
  EXPECT_EQ(one->runs[0].run.repetition, 0);
  EXPECT_TRUE(one->complete);
}

// The command's stdout and stderr go to the output file, appended, footprint's stay its own.
TEST(RunMonitored, OutputGoesToTheFileAskedFor) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  MonitorOptions o;
  o.command = {"sh", "-c", "echo out; echo err >&2"};
  o.record_git = false;
  o.output = dir.File("output.txt");
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(RunMonitored(**store, o).ok());
  EXPECT_EQ(*ReadWholeFile(o.output), "out\nerr\nout\nerr\n");
  o.output = dir.File("no/such/folder/output.txt");
  auto refused = RunMonitored(**store, o);
  EXPECT_NE(refused.status().message().find("cannot open the command's output file"),
            std::string::npos);
  EXPECT_EQ((*store)->ListRuns()->size(), 2u);  // refused before the run was created
}

// A fake /proc in which this process has one child, kStubbornPid, in `state` ('S' alive, 'Z'
// dead). No process can have that pid (it is above the kernel's PID_MAX_LIMIT): the SIGKILLs
// KillTree sends it reach nobody.
constexpr pid_t kStubbornPid = 2'147'480'000;
void FakeChildInProc(const std::string& root, char state) {
  const std::string self = std::to_string(::getpid());
  std::filesystem::create_directories(root + "/" + self + "/task/" + self);
  std::ofstream(root + "/" + self + "/task/" + self + "/children") << kStubbornPid << " ";
  const std::string dir = root + "/" + std::to_string(kStubbornPid);
  std::filesystem::create_directories(dir);
  std::string stat = *ReadWholeFile("/proc/self/stat");
  stat = std::to_string(kStubbornPid) + " (stubborn) " + state + stat.substr(stat.rfind(')') + 3);
  std::ofstream(dir + "/stat.new") << stat;
  std::filesystem::rename(dir + "/stat.new", dir + "/stat");  // whole, for a reader meanwhile
}

// A tree that outlives every SIGKILL (a process stuck in the kernel) is given up exactly at
// kKillTreeGiveUpNs on the Env's clock, however long that took on the machine's.
TEST(KillTree, GivesUpAtItsDeadlineOnTheEnvsClock) {
  TempDir proc;
  FakeChildInProc(proc.path(), 'S');
  FakeEnv env;
  env.proc_root = proc.path();
  env.SetHorizon(10 * kKillTreeGiveUpNs);
  KillTree(env);
  EXPECT_EQ(env.MonotonicNs(), kKillTreeGiveUpNs);
}

// A tree that dies while KillTree waits between two passes ends it at the next pass: on the
// driven clock, the first pass after the horizon, at which the child was seen dead.
TEST(KillTree, EndsAtTheFirstPassThatFindsTheTreeGone) {
  TempDir proc;
  FakeChildInProc(proc.path(), 'S');
  FakeEnv env;
  env.proc_root = proc.path();
  env.SetHorizon(kNsPerSec);
  std::thread killer([&] { KillTree(env); });
  env.AwaitParked();  // at the pass after 1 s: time stands still there
  FakeChildInProc(proc.path(), 'Z');
  env.SetHorizon(10 * kKillTreeGiveUpNs);
  killer.join();
  EXPECT_EQ(env.MonotonicNs(), kNsPerSec + kKillTreePassNs);
}

// profile-cost's run with no tool is timed on its Env's clock: on a driven clock that stands
// still while /bin/sleep runs, it lasts 0 s; the run under footprint lasts what the clock
// reached meanwhile (its horizon).
TEST(MeasureProfileCost, TheRunWithNoToolIsTimedOnTheEnvsClock) {
  FakeEnv env;  // no PATH: neither nsys nor ncu is found
  env.SetHorizon(900 * kNsPerMs);
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  auto rows = MeasureProfileCost(**store, SleepOnTheClockOf(env), 1, dir.path());
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].tool, "none");
  EXPECT_EQ((*rows)[0].exit_status, 0);
  EXPECT_EQ((*rows)[0].duration_s, 0.0);
  EXPECT_GT((*rows)[0].peak_memory_bytes, 0);  // it did run: the kernel's account of it
  EXPECT_EQ((*rows)[1].tool, "footprint");
  EXPECT_EQ((*rows)[1].duration_s, 0.9);
}

TEST(ValidateMonitorOptions, RejectsWhatCannotRun) {
  MonitorOptions o;
  EXPECT_EQ(ValidateMonitorOptions(o).code(), StatusCode::kInvalidArgument);  // no command
  o.command = {"true"};
  EXPECT_TRUE(ValidateMonitorOptions(o).ok());
  o.interval_ns = 500'000;
  EXPECT_NE(ValidateMonitorOptions(o).message().find("between 1ms and 1h (got 0.0005 s)"),
            std::string::npos);
  o.interval_ns = kMaxIntervalNs + 1;  // beyond, deadlines could overflow
  EXPECT_NE(ValidateMonitorOptions(o).message().find("between 1ms and 1h"), std::string::npos);
  o.interval_ns = kMaxIntervalNs;
  EXPECT_TRUE(ValidateMonitorOptions(o).ok());
  o.interval_ns = 100'000'000;
  o.metric_interval_ns[MetricId::kCpu] = 10;
  EXPECT_NE(ValidateMonitorOptions(o).message().find("interval of cpu"), std::string::npos);
}

}  // namespace
}  // namespace footprint
