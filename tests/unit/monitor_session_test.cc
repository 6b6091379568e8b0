// The measuring pipeline of one run (MonitorSession) on a clock the test drives: what reaches
// the store, what the run's meta says of the rates, and what it says when the database fails;
// and the run's life the session owns: its t0 and times from the Env's clocks, a run abandoned
// before its start stored as failed with the reason, an end the store refuses said, not lost.
// Deterministic: the sampler's and the writer's deadlines come from FakeEnv.
#include "session/monitor_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fake_env.h"
#include "faulty_store.h"
#include "test_util.h"
#include "util/clock.h"

namespace footprint {
namespace {

using testing::TempDir;

// `cpu` and `memory`, each sample the pass's time in ms; each pass takes `pass_ns` of the
// driven clock (a slow probe).
class ClockProbe final : public Probe {
 public:
  ClockProbe(FakeEnv& env, int64_t pass_ns) : env_(env), pass_ns_(pass_ns) {}
  std::string_view name() const override { return "clock"; }
  std::vector<SeriesSpec> Series(const MetricSet&) override {
    return {{MetricId::kCpu, "tree"}, {MetricId::kMemory, "tree"}};
  }
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override {
    if (due.test(static_cast<size_t>(MetricId::kCpu))) out.Add(0, now_ns / 1e6);
    if (due.test(static_cast<size_t>(MetricId::kMemory))) out.Add(1, now_ns / 1e6);
    env_.Advance(pass_ns_);
  }
  void Finish(ProbeFindings& findings) override { findings.totals["clock_finished"] = 1; }

 private:
  FakeEnv& env_;
  int64_t pass_ns_;
};

class MonitorSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inner = OpenStore(dir_.File("fp.db"));
    ASSERT_TRUE(inner.ok()) << inner.status().message();
    store_ = std::make_unique<FaultyStore>(std::move(inner).value());
  }

  // A session of run-1 (run_), cpu every 100 ms and memory every 250 ms, with passes that take
  // `pass_ns`. The writer flushes at the end only: its deadline is beyond any horizon, so that
  // it never moves the clock the sampler's deadlines are on.
  std::unique_ptr<MonitorSession> NewSession(int64_t pass_ns = 0) {
    MetricIntervals intervals{};
    intervals[static_cast<size_t>(MetricId::kCpu)] = 100 * kNsPerMs;
    intervals[static_cast<size_t>(MetricId::kMemory)] = 250 * kNsPerMs;
    std::vector<std::unique_ptr<Probe>> probes;
    probes.push_back(std::make_unique<ClockProbe>(env_, pass_ns));
    run_.id = "run-1";
    run_.name = "session";
    return std::make_unique<MonitorSession>(
        *store_, "run-1", std::move(probes),
        MonitorSession::Options{.env = &env_,
                                .intervals = intervals,
                                .flush_interval_ns = 3600 * kNsPerSec,
                                .owns_process = false,
                                .on_data_loss = nullptr});
  }

  // Measures from `start_ns` to `end_ns` of the driven clock, with passes that take `pass_ns`;
  // the findings go to totals_, meta_ and warnings_. Returns the session, stopped.
  std::unique_ptr<MonitorSession> Measure(int64_t end_ns, int64_t pass_ns = 0,
                                          int64_t start_ns = 0) {
    auto session = NewSession(pass_ns);
    EXPECT_TRUE(session->CreateRun(run_, meta_).ok());
    env_.Advance(start_ns);
    env_.SetHorizon(end_ns);
    auto t0 = session->Start();
    EXPECT_TRUE(t0.ok()) << t0.status().message();
    if (t0.ok()) t0_ = *t0;
    env_.AwaitParked(2);  // the sampler past the horizon, the writer at its first flush
    session->Stop();
    FinishSession(*session);
    return session;
  }

  // Finishes a stopped session; the findings go to totals_, meta_ and warnings_.
  void FinishSession(MonitorSession& session) {
    ProbeFindings findings{totals_, meta_, warnings_};
    RunTotals totals;
    totals.totals["duration_s"] = static_cast<double>(session.duration_ns()) / 1e9;
    totals.sources["cpu"] = "the test";
    session.Finish(totals, findings);
  }

  // The run as the store holds it.
  RunRecord Stored() {
    auto run = store_->GetRun("run-1");
    EXPECT_TRUE(run.ok()) << run.status().message();
    return run.ok() ? *run : RunRecord{};
  }

  // The stored times (ms) of one metric's series.
  std::vector<int64_t> StoredMs(const std::string& metric) {
    auto series = store_->ListSeries("run-1");
    EXPECT_TRUE(series.ok());
    std::vector<int64_t> ms;
    for (const SeriesRecord& s : series.ok() ? *series : std::vector<SeriesRecord>{}) {
      if (s.metric != metric) continue;
      std::vector<int64_t> times;
      EXPECT_TRUE(store_->LoadValues(s.id, &times).ok());
      for (int64_t t : times) ms.push_back(t / kNsPerMs);
    }
    return ms;
  }

  FakeEnv env_;
  TempDir dir_;
  std::unique_ptr<FaultyStore> store_;
  RunRecord run_;
  int64_t t0_ = -1;
  std::map<std::string, double> totals_;
  nlohmann::json meta_ = nlohmann::json::object();
  std::vector<std::string> warnings_;
};

TEST_F(MonitorSessionTest, EveryDeadlineReachesTheStoreAndTheRatesAreKept) {
  Measure(1000 * kNsPerMs);
  EXPECT_EQ(StoredMs("cpu"),
            (std::vector<int64_t>{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}));
  EXPECT_EQ(StoredMs("memory"), (std::vector<int64_t>{0, 250, 500, 750, 1000}));
  EXPECT_EQ(totals_["clock_finished"], 1);  // each probe's findings
  EXPECT_EQ(meta_["achieved_intervals_ns"]["cpu"], 100 * kNsPerMs);
  EXPECT_EQ(meta_["achieved_intervals_ns"]["memory"], 250 * kNsPerMs);
  EXPECT_FALSE(meta_.contains("below_asked_rate")) << meta_.dump();
  EXPECT_FALSE(meta_.contains("incomplete")) << meta_.dump();
  EXPECT_EQ(meta_["monitor"]["sampler"]["missed_deadlines"], 0);
  EXPECT_EQ(meta_["monitor"]["writer"]["samples_written"], 16);
  EXPECT_TRUE(warnings_.empty());
}

// StartDeferred: the first tick is t0's pass on the calling thread; a run that ends before the
// next costs no thread, and its last pass and flush are the caller's.
TEST_F(MonitorSessionTest, ARunEndedBeforeItsSecondTickStartsNoThread) {
  auto session = NewSession();
  ASSERT_TRUE(session->CreateRun(run_, meta_).ok());
  const int64_t t0 = session->StartDeferred();
  EXPECT_EQ(session->next_tick_ns(), t0);
  session->Tick();
  EXPECT_EQ(session->next_tick_ns(), t0 + 100 * kNsPerMs);  // cpu's next deadline
  env_.Advance(60 * kNsPerMs);
  session->Stop();
  FinishSession(*session);
  EXPECT_EQ(StoredMs("cpu"), (std::vector<int64_t>{0, 60}));
  EXPECT_EQ(StoredMs("memory"), (std::vector<int64_t>{0, 60}));
  EXPECT_EQ(meta_["monitor"]["sampler"]["cpu_s"], 0.0);  // no sampler thread ran
  EXPECT_EQ(meta_["monitor"]["writer"]["flushes"], 1);
  EXPECT_EQ(meta_["monitor"]["writer"]["samples_written"], 4);
  EXPECT_TRUE(warnings_.empty());
}

// After its second tick a deferred session samples every deadline, as one started at once.
TEST_F(MonitorSessionTest, ADeferredSessionSamplesEveryDeadlineOnceItsThreadsRun) {
  auto session = NewSession();
  ASSERT_TRUE(session->CreateRun(run_, meta_).ok());
  env_.SetHorizon(1000 * kNsPerMs);
  session->StartDeferred();
  session->Tick();
  session->Tick();
  EXPECT_EQ(session->next_tick_ns(), INT64_MAX);
  env_.AwaitParked(2);
  session->Stop();
  EXPECT_EQ(StoredMs("cpu"),
            (std::vector<int64_t>{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}));
  EXPECT_EQ(StoredMs("memory"), (std::vector<int64_t>{0, 250, 500, 750, 1000}));
}

// Passes that take 250 ms at a 100 ms interval miss deadlines: counted, and the run says why
// cpu is below its rate (memory, at 250 ms, keeps up within a quarter).
TEST_F(MonitorSessionTest, ASlowProbeMissesDeadlinesAndTheRunSaysWhy) {
  Measure(2000 * kNsPerMs, 250 * kNsPerMs);
  EXPECT_GT(meta_["monitor"]["sampler"]["missed_deadlines"].get<int>(), 0);
  const std::string why = meta_["below_asked_rate"].value("cpu", "");
  EXPECT_NE(why.find("deadlines missed"), std::string::npos) << meta_.dump();
  EXPECT_GE(meta_["achieved_intervals_ns"]["cpu"].get<int64_t>(), 250 * kNsPerMs);
  EXPECT_FALSE(meta_.contains("incomplete")) << meta_.dump();
}

// A disk that fills from the first write: nothing reaches the store, every sample is counted
// as lost, and the run and the user are told why.
TEST_F(MonitorSessionTest, ADatabaseThatFailsIsCountedAndSaid) {
  store_->first_failing = 0;
  store_->failing = -1;
  Measure(1000 * kNsPerMs);
  EXPECT_TRUE(StoredMs("cpu").empty());
  EXPECT_EQ(meta_["monitor"]["writer"]["samples_written"], 0);
  EXPECT_EQ(meta_["monitor"]["samples_dropped"], 16);
  EXPECT_EQ(meta_["incomplete"],
            "16 of 16 samples were lost "
            "(database or disk is full (injected, append 0))");
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_EQ(warnings_[0], "16 samples were lost because the database kept failing");
  EXPECT_NE(warnings_[1].find("writes to the database failed; first error: database or disk"),
            std::string::npos)
      << warnings_[1];
}

// The run's clock is the session's Env's: t0 is the driven clock when Start is called (the first
// sample is there), and the run's start and end are its wall clock at t0 and t0 + the run.
TEST_F(MonitorSessionTest, TheRunsT0AndTimesComeFromTheEnvsClock) {
  auto session = Measure(/*end_ns=*/1700 * kNsPerMs, 0, /*start_ns=*/700 * kNsPerMs);
  EXPECT_EQ(t0_, 700 * kNsPerMs);
  // Samples are stored at their time since t0; the first pass was at the clock's 700 ms.
  EXPECT_EQ(StoredMs("cpu"),
            (std::vector<int64_t>{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}));
  auto series = store_->ListSeries("run-1");
  ASSERT_TRUE(series.ok());
  auto values = store_->LoadValues(series->at(0).id, nullptr);
  ASSERT_TRUE(values.ok() && !values->empty());
  EXPECT_EQ(values->front(), 700.0);
  EXPECT_EQ(session->duration_ns(), 1000 * kNsPerMs);
  const int64_t wall_t0 = env_.RealtimeNs() - env_.MonotonicNs() + 700 * kNsPerMs;
  EXPECT_EQ(run_.started_at_ns, wall_t0);
  EXPECT_EQ(run_.ended_at_ns, wall_t0 + 1000 * kNsPerMs);
  run_.status = RunStatus::kOk;
  ASSERT_TRUE(session->StoreEnd(totals_, warnings_).ok());
  const RunRecord stored = Stored();
  EXPECT_EQ(stored.status, RunStatus::kOk);
  EXPECT_EQ(stored.started_at_ns, wall_t0);
  EXPECT_EQ(stored.ended_at_ns, wall_t0 + 1000 * kNsPerMs);
  // The meta as it was at the end, with the totals' sources and the session's findings.
  const auto meta = nlohmann::json::parse(stored.meta_json);
  EXPECT_EQ(meta["sources"]["cpu"], "the test") << stored.meta_json;
  EXPECT_EQ(meta["monitor"]["writer"]["samples_written"], 16) << stored.meta_json;
  EXPECT_EQ(store_->LoadTotals("run-1")->at("duration_s"), 1.0);
  EXPECT_TRUE(warnings_.empty());
}

// Something fails after the run was created and before its command started: the run is stored
// as failed, ended, with the reason in meta.launch_error, not left running (which would show
// as interrupted), and the reason is what the caller gets back.
TEST_F(MonitorSessionTest, AnAbandonedRunIsStoredAsFailedWithTheReason) {
  auto session = NewSession();
  meta_["kept"] = "what the caller knew";
  ASSERT_TRUE(session->CreateRun(run_, meta_).ok());
  EXPECT_EQ(Stored().status, RunStatus::kRunning);
  env_.Advance(5 * kNsPerMs);
  const Status st = session->Abandon(InvalidArgument("cannot open the gate"));
  EXPECT_EQ(st.message(), "cannot open the gate");
  const RunRecord stored = Stored();
  EXPECT_EQ(stored.status, RunStatus::kFailed);
  EXPECT_EQ(stored.ended_at_ns, env_.RealtimeNs());
  const auto meta = nlohmann::json::parse(stored.meta_json);
  EXPECT_EQ(meta["launch_error"], "cannot open the gate") << stored.meta_json;
  EXPECT_EQ(meta["kept"], "what the caller knew");
  EXPECT_TRUE(StoredMs("cpu").empty());  // nothing was measured
}

// The end of the run cannot be stored (a disk full at the end): the caller gets the store's
// error and a warning that the run will show as interrupted; what was measured stays its.
TEST_F(MonitorSessionTest, AnEndTheStoreRefusesIsReportedNotLost) {
  auto session = Measure(1000 * kNsPerMs);
  store_->fail_finish = true;
  run_.status = RunStatus::kOk;
  const Status st = session->StoreEnd(totals_, warnings_);
  EXPECT_EQ(st.message(), "database or disk is full (injected, finish)");
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(warnings_[0],
            "the end of the run could not be stored (database or disk is full (injected, "
            "finish)); it will show as interrupted");
  EXPECT_EQ(Stored().status, RunStatus::kRunning);
  EXPECT_EQ(totals_["clock_finished"], 1);
  EXPECT_EQ(StoredMs("cpu").size(), 11u);  // the samples were stored before the end
}

// Stands in for the kernel's ring (CpuRingProbe, which needs a cgroup): cpu under an entity of
// its own, so that the test sees whose series it is.
class RingStandIn final : public Probe {
 public:
  std::string_view name() const override { return "ring"; }
  std::vector<SeriesSpec> Series(const MetricSet&) override { return {{MetricId::kCpu, "ring"}}; }
  void Sample(int64_t, const MetricSet&, SampleOut&) override {}
};

// What a run describes is what its session measures with: a ring that serves cpu comes first
// and the tree leaves cpu to it, the tree's series carry the entity asked for, the machine's
// follow, and RAPL (a fake powercap zone) is there only when energy is asked for.
TEST_F(MonitorSessionTest, TheSessionPicksTheProbesItsChoiceDescribes) {
  const std::string zone = dir_.File("sys/class/powercap/intel-rapl:0");
  std::filesystem::create_directories(zone);
  std::ofstream(zone + "/name") << "package-0\n";
  std::ofstream(zone + "/energy_uj") << "10\n";
  std::ofstream(zone + "/max_energy_range_uj") << "1000000\n";
  env_.sys_root = dir_.File("sys");
  MetricIntervals intervals{};
  for (MetricId m :
       {MetricId::kCpu, MetricId::kMemory, MetricId::kSysMemory, MetricId::kEnergyCpu}) {
    intervals[static_cast<size_t>(m)] = 100 * kNsPerMs;
  }
  for (const bool energy : {false, true}) {
    ProbeChoice choice;
    choice.tree.monitor_pid = ::getpid();
    choice.tree.proc_root = "/proc";
    choice.tree.entity = "node-7";
    choice.cpu_ring = std::make_unique<RingStandIn>();
    choice.energy = energy;
    const std::string id = energy ? "with-energy" : "without-energy";
    nlohmann::json meta = nlohmann::json::object();
    MonitorSession session(*store_, id, std::move(choice), meta,
                           {.env = &env_, .intervals = intervals, .on_data_loss = nullptr});
    RunRecord run;
    run.id = id;
    run.name = "choice";
    ASSERT_TRUE(session.CreateRun(run, meta).ok());
    EXPECT_NE(session.tree(), nullptr);
    EXPECT_EQ(session.container(), nullptr);
    auto series = store_->ListSeries(id);
    ASSERT_TRUE(series.ok()) << series.status().message();
    std::vector<std::string> stored;
    for (const SeriesRecord& s : *series) stored.push_back(s.metric + "/" + s.entity);
    std::vector<std::string> expected = {"cpu/ring", "memory/node-7", "sys.memory/system"};
    if (energy) expected.push_back("energy.cpu/system");
    EXPECT_EQ(stored, expected) << id;
  }
}

// An attached container (`footprint run --container`) is described, not assembled: there is
// no tree, the container's cgroup (a folder laid out as one) is measured first, the machine's
// after it.
TEST_F(MonitorSessionTest, AnAttachedContainersChoiceMeasuresItsCgroupFirstWithoutATree) {
  std::filesystem::create_directories(dir_.File("libpod-1"));
  std::ofstream(dir_.File("libpod-1/cgroup.procs")) << ::getpid() << "\n";
  CgroupSupport dirs;
  dirs.v2_dir = dir_.File("libpod-1");
  auto cgroup = RunCgroup::Observe(dirs);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status().message();
  MetricIntervals intervals{};
  for (MetricId m : {MetricId::kCpu, MetricId::kMemory, MetricId::kSysMemory}) {
    intervals[static_cast<size_t>(m)] = 100 * kNsPerMs;
  }
  nlohmann::json meta = nlohmann::json::object();
  MonitorSession session(*store_, "attached",
                         ProbeChoice{.container = cgroup->get(), .attached = true}, meta,
                         {.env = &env_, .intervals = intervals, .on_data_loss = nullptr});
  RunRecord run;
  run.id = "attached";
  run.name = "container";
  ASSERT_TRUE(session.CreateRun(run, meta).ok());
  EXPECT_EQ(session.tree(), nullptr);
  EXPECT_NE(session.container(), nullptr);
  auto series = store_->ListSeries("attached");
  ASSERT_TRUE(series.ok()) << series.status().message();
  std::vector<std::string> stored;
  for (const SeriesRecord& s : *series) stored.push_back(s.metric + "/" + s.entity);
  const std::vector<std::string> expected = {"cpu/container", "memory/container",
                                             "sys.memory/system"};
  EXPECT_EQ(stored, expected);
}

}  // namespace
}  // namespace footprint
