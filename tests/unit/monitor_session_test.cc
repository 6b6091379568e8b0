// The measuring pipeline of one run (MonitorSession) on a clock the test drives: what reaches
// the store, what the run's meta says of the rates, and what it says when the database fails.
// Deterministic: the sampler's and the writer's deadlines come from FakeEnv.
#include "session/monitor_session.h"

#include <gtest/gtest.h>

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

  // Measures `horizon_ns` of the driven clock, cpu every 100 ms and memory every 250 ms, with
  // passes that take `pass_ns`; returns the findings.
  void Measure(int64_t horizon_ns, int64_t pass_ns = 0) {
    MetricIntervals intervals{};
    intervals[static_cast<size_t>(MetricId::kCpu)] = 100 * kNsPerMs;
    intervals[static_cast<size_t>(MetricId::kMemory)] = 250 * kNsPerMs;
    std::vector<std::unique_ptr<Probe>> probes;
    probes.push_back(std::make_unique<ClockProbe>(env_, pass_ns));
    // The writer flushes at the end only: its deadline is beyond the horizon, so that it never
    // moves the clock the sampler's deadlines are on.
    MonitorSession session(*store_, "run-1", std::move(probes),
                           {.env = &env_,
                            .intervals = intervals,
                            .flush_interval_ns = 3600 * kNsPerSec,
                            .owns_process = false,
                            .on_data_loss = nullptr});
    RunRecord run;
    run.id = "run-1";
    run.name = "session";
    ASSERT_TRUE(session.CreateRun(run).ok());
    env_.SetHorizon(horizon_ns);
    ASSERT_TRUE(session.Start(0).ok());
    env_.AwaitParked(2);  // the sampler past the horizon, the writer at its first flush
    session.Stop();
    ProbeFindings findings{totals_, meta_, warnings_};
    session.Finish(findings);
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

}  // namespace
}  // namespace footprint
