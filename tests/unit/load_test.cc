// The pure parts of footprint load: scenario names, percentiles, early stopping, the summary of
// a set of query records and the energy over a load's window (the driving itself is tested end
// to end against a real SUT in tests/integration/test_load_scenarios.py).
#include "footprint/load.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "footprint/report.h"
#include "footprint/store.h"
#include "test_util.h"

namespace footprint {
namespace {

TEST(ParseScenario, LoadGenNamesAndOurs) {
  EXPECT_EQ(*ParseScenario("single"), Scenario::kSingleStream);
  EXPECT_EQ(*ParseScenario("SingleStream"), Scenario::kSingleStream);
  EXPECT_EQ(*ParseScenario("MultiStream"), Scenario::kMultiStream);
  EXPECT_EQ(*ParseScenario("server"), Scenario::kServer);
  EXPECT_EQ(*ParseScenario("Offline"), Scenario::kOffline);
  auto bad = ParseScenario("batch");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("single, multi, server or offline"), std::string::npos);
  EXPECT_EQ(ScenarioPercentile(Scenario::kSingleStream), 0.90);
  EXPECT_EQ(ScenarioPercentile(Scenario::kServer), 0.99);
}

TEST(NearestRankPercentile, SmallestValueWithAtLeastPBelow) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(NearestRankPercentile(v, 0.50), 50);
  EXPECT_EQ(NearestRankPercentile(v, 0.90), 90);
  EXPECT_EQ(NearestRankPercentile(v, 0.99), 99);
  EXPECT_EQ(NearestRankPercentile(v, 0.999), 100);
  EXPECT_EQ(NearestRankPercentile({7}, 0.5), 7);
  EXPECT_EQ(NearestRankPercentile({1, 2, 3}, 0.5), 2);  // ceil(1.5) = 2nd
  EXPECT_EQ(EarlyStoppingMinimum(0.90), 64);
  EXPECT_EQ(EarlyStoppingMinimum(0.99), 662);
}

TEST(ValidateLoadOptions, SaysWhatIsMissing) {
  LoadOptions o;
  EXPECT_TRUE(ValidateLoadOptions(o).ok());
  o.scenario = Scenario::kServer;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--qps"), std::string::npos);
  o.qps = 10;
  o.latency_bound_s = 0;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--latency-bound"), std::string::npos);
}

TEST(SummarizeLoad, PercentilesRateValidityAndUnanswered) {
  LoadOptions o;
  o.scenario = Scenario::kServer;
  o.qps = 100;
  o.latency_bound_s = 0.050;
  std::vector<QueryRecord> queries;
  for (int i = 0; i < 10; ++i) {  // scheduled every 10 ms, latencies 1..10 ms
    QueryRecord q;
    q.id = i;
    q.scheduled_ns = i * 10'000'000;
    q.issued_ns = q.scheduled_ns + 1000;
    q.completed_ns = q.scheduled_ns + (i + 1) * 1'000'000;
    queries.push_back(q);
  }
  LoadSummary s = SummarizeLoad(o, queries, {.ended_because = "done"});
  EXPECT_EQ(s.completed, 10);
  EXPECT_DOUBLE_EQ(s.latency_s.at("p50"), 0.005);
  EXPECT_DOUBLE_EQ(s.latency_s.at("p99"), 0.010);
  EXPECT_DOUBLE_EQ(s.latency_s.at("max"), 0.010);
  EXPECT_DOUBLE_EQ(s.latency_s.at("mean"), 0.0055);
  EXPECT_DOUBLE_EQ(s.duration_s, 0.100);  // first scheduled (0) to last answer (100 ms)
  EXPECT_DOUBLE_EQ(s.qps, 100);
  EXPECT_EQ(s.validity, "valid");
  EXPECT_NE(s.early_stopping.find("too few for a p99 claim"), std::string::npos);
  // An unanswered query makes the run invalid, whatever the percentiles.
  queries.push_back({.id = 10,
                     .samples = 1,
                     .scheduled_ns = 100'000'000,
                     .issued_ns = 100'000'000,
                     .completed_ns = std::nullopt});
  s = SummarizeLoad(o, queries,
                    {.unknown_answers = 2,
                     .first_unknown = "garbage",
                     .ended_because = "query 10 got no answer"});
  EXPECT_EQ(s.issued, 11);
  EXPECT_EQ(s.completed, 10);
  EXPECT_EQ(s.validity, "invalid");
  auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_EQ(json["unknown_answers"], 2);
  EXPECT_EQ(json["first_unknown_answer"], "garbage");
  EXPECT_EQ(json["options"]["qps"], 100.0);
  EXPECT_EQ(json["latency_bound_s"], 0.05);
}

// Energy per query over the load's window (LoadWindowEnergy): a GPU drawing 100 W from the
// run's start, sampled every 100 ms; the queries ran from 2 s to 8 s, so 600 J are theirs, not
// the run's 1000 J.
class LoadWindowEnergyTest : public ::testing::Test {
 protected:
  void Write(int64_t window_start_ms, int64_t window_end_ms, double update_period_ms) {
    auto opened = OpenStore(dir_.File("fp.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    store_ = std::move(opened).value();
    run_.id = "00000000-0000-4000-8000-00000000000" + std::to_string(++runs_);
    run_.name = "load";
    run_.command = {"./sut"};
    run_.started_at_ns = 1'700'000'000'000'000'000;
    run_.status = RunStatus::kRunning;
    const nlohmann::json meta = {
        {"load",
         {{"queries", 100},
          {"window_start_ns", window_start_ms * 1'000'000},
          {"window_end_ns", window_end_ms * 1'000'000}}},
        {"gpu", {{"devices", {{"gpu:0", {{"energy_update_period_ms", update_period_ms}}}}}}}};
    run_.meta_json = meta.dump();
    ASSERT_TRUE(store_->CreateRun(run_).ok());
    auto series = store_->EnsureSeries({0, run_.id, "gpu.energy", "J", "gpu:0", std::nullopt});
    ASSERT_TRUE(series.ok());
    std::vector<SamplePoint> samples;
    for (int64_t ms = 0; ms <= 10'000; ms += 100) {
      samples.push_back({*series, ms * 1'000'000, 100.0 * static_cast<double>(ms) / 1000});
    }
    ASSERT_TRUE(store_->Append(run_.id, samples, run_.started_at_ns).ok());
    run_.status = RunStatus::kOk;
    totals_ = {{"gpu_energy_j", 1000}, {"duration_s", 10}};
    ASSERT_TRUE(store_->FinishRun(run_, totals_).ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  RunRecord run_;
  std::map<std::string, double> totals_;
  int runs_ = 0;
};

TEST_F(LoadWindowEnergyTest, TheQueriesWindowNotTheRunsStartUp) {
  Write(2'000, 8'050, 100);  // the end falls between two samples: interpolated
  auto energy = LoadWindowEnergy(*store_, run_, totals_);
  ASSERT_TRUE(energy.ok()) << energy.status().message();
  ASSERT_EQ(energy->size(), 1u);
  const LoadEnergy& e = (*energy)[0];
  EXPECT_EQ(e.total, "gpu_energy_j");
  EXPECT_TRUE(e.over_window) << e.why_not;
  EXPECT_NEAR(e.joules, 605, 1e-9);
  EXPECT_NEAR(e.window_s, 6.05, 1e-12);
  // show --json carries it, per query.
  auto summary = SummarizeRun(*store_, run_);
  ASSERT_TRUE(summary.ok());
  const auto j = nlohmann::json::parse(SummaryJson(*summary, -1));
  EXPECT_NEAR(j["load"]["energy"]["gpu_energy_j"]["per_query_j"].get<double>(), 6.05, 1e-9);
  EXPECT_EQ(j["load"]["energy"]["gpu_energy_j"]["over"], "load window");
}

TEST_F(LoadWindowEnergyTest, AWindowShorterThanTheCounterTakesTheRunsTotalAndSaysWhy) {
  Write(2'000, 2'050, 100);  // 50 ms of queries, a counter that moves every 100 ms
  auto energy = LoadWindowEnergy(*store_, run_, totals_);
  ASSERT_TRUE(energy.ok());
  ASSERT_EQ(energy->size(), 1u);
  EXPECT_FALSE((*energy)[0].over_window);
  EXPECT_EQ((*energy)[0].joules, 1000);
  EXPECT_NE((*energy)[0].why_not.find("shorter than gpu:0's resolution (0.100 s)"),
            std::string::npos)
      << (*energy)[0].why_not;
}

}  // namespace
}  // namespace footprint
