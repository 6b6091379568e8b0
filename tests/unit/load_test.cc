// The pure parts of footprint load: scenario names, percentiles, early stopping and the
// summary of a set of query records (the driving itself is tested end to end against a real
// SUT in tests/integration/test_load_scenarios.py).
#include "footprint/load.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  LoadSummary s = SummarizeLoad(o, queries, 0, "", "done");
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
  s = SummarizeLoad(o, queries, 2, "garbage", "query 10 got no answer");
  EXPECT_EQ(s.issued, 11);
  EXPECT_EQ(s.completed, 10);
  EXPECT_EQ(s.validity, "invalid");
  auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_EQ(json["unknown_answers"], 2);
  EXPECT_EQ(json["first_unknown_answer"], "garbage");
  EXPECT_EQ(json["options"]["qps"], 100.0);
  EXPECT_EQ(json["latency_bound_s"], 0.05);
}

}  // namespace
}  // namespace footprint
