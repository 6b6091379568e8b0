// The pure parts of footprint load: scenario names, percentiles, early stopping, the summary of
// a set of query records and the energy over a load's window (the driving itself is tested end
// to end against a real SUT in tests/integration/test_load_scenarios.py).
#include "footprint/load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "footprint/report.h"
#include "footprint/store.h"
#include "load/load_samples.h"
#include "load/mlperf_log.h"
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
}

// LoadGen's published minimums: 64 queries for single stream's p90 and 662 for p99 (one over
// the bound); with none over, 0.99^459 < 1 % <= 0.99^458.
TEST(EarlyStopping, PassingQueriesFollowTheBinomialRule) {
  EXPECT_EQ(1 + PassingQueriesNeeded(1, 0.90), 64);
  EXPECT_EQ(1 + PassingQueriesNeeded(1, 0.99), 662);
  EXPECT_EQ(PassingQueriesNeeded(0, 0.99), 459);
  EXPECT_EQ(PassingQueriesNeeded(0, 0.90), 44);
  // More over the bound needs more under it, about 99 per query over for p99.
  const int64_t with_100_over = PassingQueriesNeeded(100, 0.99);
  EXPECT_GT(with_100_over, 100 * 99);
  EXPECT_LT(with_100_over, 100 * 99 * 2);
}

std::vector<double> Ascending(int64_t n, double step_s) {
  std::vector<double> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(static_cast<double>(i) * step_s);
  return v;
}

// The issue's case: a server run with over 10 % of its queries over the bound is no p99 claim,
// whatever its count (a fixed count said "enough").
TEST(EarlyStopping, ServerCountsTheQueriesOverTheBound) {
  const std::vector<double> latencies = Ascending(1000, 0.001);  // 1..1000 ms
  EarlyStopping e = JudgeEarlyStopping(Scenario::kServer, 0.99, latencies, 1000, 0.5);
  EXPECT_EQ(e.over_bound, 500);
  EXPECT_FALSE(e.met);
  EXPECT_GT(e.needed, 500 * 99);
  EXPECT_NE(e.sentence.find("500 over the bound: too few for a p99 claim"), std::string::npos)
      << e.sentence;
  e = JudgeEarlyStopping(Scenario::kServer, 0.99, latencies, 1000, 2.0);  // none over
  EXPECT_TRUE(e.met) << e.sentence;
  EXPECT_EQ(e.needed, 459);
  // An unanswered query counts as over the bound.
  EXPECT_EQ(JudgeEarlyStopping(Scenario::kServer, 0.99, latencies, 1003, 2.0).over_bound, 3);
  // Offline has no percentile claim, and so no sentence.
  e = JudgeEarlyStopping(Scenario::kOffline, 0.99, latencies, 1000, 0.5);
  EXPECT_TRUE(e.sentence.empty());
  EXPECT_FALSE(e.estimate_s);
}

// Single stream: LoadGen's estimate sets aside as many of the highest latencies as the count
// allows; with 64 queries, none (the 64th value is the estimate), with 63 no claim.
TEST(EarlyStopping, SingleStreamEstimateSetsAsideTheHighest) {
  EarlyStopping e = JudgeEarlyStopping(Scenario::kSingleStream, 0.90, Ascending(64, 1), 64, {});
  EXPECT_TRUE(e.met);
  EXPECT_EQ(e.needed, 64);
  ASSERT_TRUE(e.estimate_s);
  EXPECT_EQ(*e.estimate_s, 64);
  e = JudgeEarlyStopping(Scenario::kSingleStream, 0.90, Ascending(63, 1), 63, {});
  EXPECT_FALSE(e.met);
  EXPECT_FALSE(e.estimate_s);
  EXPECT_NE(e.sentence.find("too few for a p90 claim"), std::string::npos) << e.sentence;
  // 10000 queries: t is the largest with t + PassingQueriesNeeded(t) <= 10000; the estimate
  // is the value below the t - 1 highest, above the plain p90 (the 9000th value).
  e = JudgeEarlyStopping(Scenario::kSingleStream, 0.90, Ascending(10000, 1), 10000, {});
  ASSERT_TRUE(e.estimate_s);
  const auto t = static_cast<int64_t>(10001 - *e.estimate_s);
  EXPECT_LE(t + PassingQueriesNeeded(t, 0.90), 10000);
  EXPECT_GT(t + 1 + PassingQueriesNeeded(t + 1, 0.90), 10000);
  EXPECT_GT(*e.estimate_s, 9000);
  EXPECT_LT(*e.estimate_s, 9100);
}

TEST(ValidateLoadOptions, SaysWhatIsMissing) {
  LoadOptions o;
  EXPECT_TRUE(ValidateLoadOptions(o).ok());
  o.scenario = Scenario::kServer;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--qps"), std::string::npos);
  o.qps = 10;
  o.latency_bound_s = 0;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--latency-bound"), std::string::npos);
  o.latency_bound_s.reset();
  o.ready_timeout_ns = 0;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--ready-timeout must be positive"),
            std::string::npos);
  o.ready_timeout_ns = 1;
  o.percentile = 1.0;
  EXPECT_NE(ValidateLoadOptions(o).message().find("--percentile must lie between 0 and 100"),
            std::string::npos);
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
  // Within the bound, but 10 queries are too few for LoadGen's early stopping: no claim.
  EXPECT_EQ(s.validity, "invalid");
  EXPECT_NE(s.early_stopping.sentence.find("0 over the bound: too few for a p99 claim"),
            std::string::npos)
      << s.early_stopping.sentence;
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
  EXPECT_EQ(json["options"]["ready_timeout_s"], 600.0);
  EXPECT_EQ(json["latency_bound_s"], 0.05);
  EXPECT_FALSE(s.ready_timed_out);
  EXPECT_TRUE(SummarizeLoad(o, {}, {.ready_timed_out = true}).ready_timed_out);
}

// --find-peak's search against a SUT valid up to 437 queries/s: within 5 % in few trials,
// from below and from above, and it gives up when nothing is valid.
TEST(SampleDraw, PerformanceModeIsUniformOverTheSetAndSeeded) {
  LoadOptions options;
  options.performance_sample_count = 5;
  options.sample_seed = 11;
  SampleDraw draw(options), same(options);
  std::vector<int> counts(5);
  std::vector<int64_t> first;
  for (int i = 0; i < 5000; ++i) {
    const int64_t index = draw.Next();
    ASSERT_TRUE(index >= 0 && index < 5) << index;
    ++counts[static_cast<size_t>(index)];
    EXPECT_EQ(same.Next(), index);
    if (i < 20) first.push_back(index);
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
  EXPECT_FALSE(draw.exhausted());
  options.sample_seed = 12;
  SampleDraw other(options);
  std::vector<int64_t> other_first;
  for (int i = 0; i < 20; ++i) other_first.push_back(other.Next());
  EXPECT_NE(other_first, first);
}

TEST(SampleDraw, AccuracyModeDrawsEverySampleOnce) {
  LoadOptions options;
  options.accuracy = true;
  options.expected_answers = std::vector<std::string>(7, "x");
  SampleDraw draw(options);
  std::vector<int64_t> drawn;
  while (!draw.exhausted()) drawn.push_back(draw.Next());
  EXPECT_EQ(draw.Next(), -1);
  std::sort(drawn.begin(), drawn.end());
  EXPECT_EQ(drawn, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(ScoreAccuracy, EachSampleAgainstItsAnswerAndTheUnansweredWrong) {
  auto query = [](std::vector<int64_t> indices, std::string result, bool answered) {
    QueryRecord q;
    q.sample_indices = std::move(indices);
    q.result = std::move(result);
    if (answered) q.completed_ns = 1;
    return q;
  };
  const std::vector<std::string> expected = {"a", "b", "c", "d", "e"};
  const std::vector<QueryRecord> queries = {query({0}, " a ", true), query({1, 2}, "b, x", true),
                                            query({3}, "d", false), query({4}, "e,", true)};
  const LoadAccuracy score = ScoreAccuracy(queries, expected);
  EXPECT_EQ(score.samples, 5);
  EXPECT_EQ(score.correct, 2);  // a, b; not x for c, nor the unanswered d, nor "e,"
  EXPECT_DOUBLE_EQ(score.fraction, 0.4);
  const auto log = nlohmann::json::parse(MlperfAccuracyLog(queries));
  ASSERT_EQ(log.size(), 4u);  // the answered samples
  EXPECT_EQ(log[1], (nlohmann::json{{"seq_id", 1}, {"qsl_idx", 1}, {"data", "62"}}));
  EXPECT_EQ(log[3]["seq_id"], 4);  // the unanswered sample keeps its place in the sequence
  EXPECT_EQ(log[3]["data"], "652C");
}

TEST(MlperfLog, ValidAsLoadGenWouldSayIt) {
  LoadSummary s;
  s.ended_because = "done";
  s.issued = s.completed = 100;
  s.early_stopping.met = true;
  EXPECT_TRUE(MlperfValid(s));
  s.early_stopping.met = false;
  EXPECT_FALSE(MlperfValid(s));
  s.options.scenario = Scenario::kOffline;  // no percentile claim
  EXPECT_TRUE(MlperfValid(s));
  s.completed = 99;
  EXPECT_FALSE(MlperfValid(s));
  s.validity = "valid";  // against a bound, the bound's verdict
  EXPECT_TRUE(MlperfValid(s));
  s.ended_because = "the command closed its output";
  s.validity = "invalid";
  EXPECT_FALSE(MlperfValid(s));
  EXPECT_NE(MlperfDetailLog(s).find(R"("is_error":true)"), std::string::npos);
  EXPECT_NE(MlperfSummaryLog(s).find("Result is : INVALID\n"), std::string::npos);
}

TEST(NextPeakRate, BracketsThenBisectsToWithinTolerance) {
  for (double start : {10.0, 5000.0}) {
    std::vector<PeakTrial> trials;
    while (std::optional<double> qps = NextPeakRate(start, trials)) {
      trials.push_back({*qps, *qps <= 437});
    }
    double peak = 0;
    for (const PeakTrial& t : trials) peak = t.valid ? std::max(peak, t.qps) : peak;
    EXPECT_LE(peak, 437);
    EXPECT_GE(peak, 437 / 1.05) << start;
    EXPECT_LE(trials.size(), 12u) << start;
  }
  std::vector<PeakTrial> never;
  while (std::optional<double> qps = NextPeakRate(100, never)) never.push_back({*qps, false});
  EXPECT_EQ(never.size(), 7u);  // 100 down to 100 / 64
}

// A server load of `n` queries every 10 ms, each answered in `latency_ms`, issued `lag_ms[i]`
// late (the last lag for the rest).
std::vector<QueryRecord> ServerQueries(int n, int64_t latency_ms, std::vector<int64_t> lag_ms) {
  std::vector<QueryRecord> queries;
  for (int i = 0; i < n; ++i) {
    QueryRecord q;
    q.id = i;
    q.scheduled_ns = i * 10'000'000LL;
    q.issued_ns = q.scheduled_ns + lag_ms[std::min<size_t>(i, lag_ms.size() - 1)] * 1'000'000;
    q.completed_ns = q.scheduled_ns + latency_ms * 1'000'000;
    queries.push_back(q);
  }
  return queries;
}

// --percentile: the validity, the reported percentile and early stopping follow it. 30 of 600
// queries (5 %) take 100 ms against a bound of 50 ms: no p99 claim, a p90 one (30 over needs
// 417 under, 570 were).
TEST(SummarizeLoad, TheTargetPercentileIsConfigurable) {
  LoadOptions o;
  o.scenario = Scenario::kServer;
  o.qps = 100;
  o.latency_bound_s = 0.050;
  std::vector<QueryRecord> queries = ServerQueries(600, 10, {0});
  for (size_t i = 0; i < 600; i += 20)
    queries[i].completed_ns = queries[i].scheduled_ns + 100'000'000;
  LoadSummary s = SummarizeLoad(o, queries, {.ended_because = "done"});
  EXPECT_EQ(s.validity, "invalid");
  EXPECT_DOUBLE_EQ(s.latency_s.at("p99"), 0.1);
  o.percentile = 0.90;
  s = SummarizeLoad(o, queries, {.ended_because = "done"});
  EXPECT_EQ(s.validity, "valid") << s.early_stopping.sentence;
  EXPECT_DOUBLE_EQ(s.latency_s.at("p90"), 0.01);
  const auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_EQ(json["percentile"], 0.90);
  EXPECT_EQ(json["options"]["percentile"], 0.90);
  EXPECT_EQ(json["over_bound"], 30);
  EXPECT_EQ(json["early_stopping_needed"], 447);
  EXPECT_TRUE(json["early_stopping_met"]);
  // An odd percentile is reported by its name.
  o.percentile = 0.8;
  EXPECT_DOUBLE_EQ(SummarizeLoad(o, queries, {}).latency_s.at("p80"), 0.01);
}

// The issue lag (issued - scheduled) is summarised, and a lag large against the bound is said:
// the machine did not run the issuer on time.
TEST(SummarizeLoad, IssueLagIsSummarisedAndALargeOneWarned) {
  LoadOptions o;
  o.scenario = Scenario::kServer;
  o.qps = 100;
  o.latency_bound_s = 0.050;
  LoadSummary s = SummarizeLoad(o, ServerQueries(500, 5, {0}), {.ended_because = "done"});
  EXPECT_EQ(s.issue_lag_s.at("max"), 0);
  EXPECT_TRUE(s.issue_lag_warning.empty());
  s = SummarizeLoad(o, ServerQueries(500, 5, {245, 0}), {.ended_because = "done"});
  EXPECT_DOUBLE_EQ(s.issue_lag_s.at("max"), 0.245);
  EXPECT_EQ(s.issue_lag_s.at("p50"), 0);
  EXPECT_NE(s.issue_lag_warning.find("max 245.00 ms, 490 % of the latency bound"),
            std::string::npos)
      << s.issue_lag_warning;
  const auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_DOUBLE_EQ(json["issue_lag_s"]["max"].get<double>(), 0.245);
  EXPECT_EQ(json["issue_lag_warning"], s.issue_lag_warning);
}

// CPU over the load's window, as the driver read it, in the summary and its JSON.
TEST(SummarizeLoad, CpuOverTheWindow) {
  LoadOptions o;
  LoadSummary s = SummarizeLoad(o, ServerQueries(10, 5, {0}),
                                {.ended_because = "done", .cpu_s = 0.57, .cpu_source = "cgroup"});
  const auto json = nlohmann::json::parse(LoadSummaryJson(s));
  EXPECT_EQ(json["cpu_s"], 0.57);
  EXPECT_EQ(json["cpu_source"], "cgroup");
  EXPECT_TRUE(nlohmann::json::parse(LoadSummaryJson(SummarizeLoad(o, {}, {})))["cpu_s"].is_null());
}

// Energy per query over the load's window (LoadWindowEnergy): a GPU drawing 100 W from the
// run's start, sampled every 100 ms; the queries ran from 2 s to 8 s, so 600 J are theirs, not
// the run's 1000 J.
class LoadWindowEnergyTest : public ::testing::Test {
 protected:
  // `meta` is merged into the run's meta.
  void Write(int64_t window_start_ms, int64_t window_end_ms, double update_period_ms,
             const nlohmann::json& meta_too = nlohmann::json::object()) {
    auto opened = OpenStore(dir_.File("fp.db"));
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    store_ = std::move(opened).value();
    run_.id = "00000000-0000-4000-8000-00000000000" + std::to_string(++runs_);
    run_.name = "load";
    run_.command = {"./sut"};
    run_.started_at_ns = 1'700'000'000'000'000'000;
    run_.status = RunStatus::kRunning;
    nlohmann::json meta = {
        {"load",
         {{"queries", 100},
          {"window_start_ns", window_start_ms * 1'000'000},
          {"window_end_ns", window_end_ms * 1'000'000}}},
        {"gpu", {{"devices", {{"gpu:0", {{"energy_update_period_ms", update_period_ms}}}}}}}};
    meta.update(meta_too);
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
  ASSERT_EQ(energy->size(), 2u);  // and the CPU's, not measured (NoCounterSaysWhy)
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
  ASSERT_EQ(energy->size(), 2u);
  EXPECT_FALSE((*energy)[0].over_window);
  EXPECT_EQ((*energy)[0].joules, 1000);
  EXPECT_NE((*energy)[0].why_not.find("shorter than gpu:0's resolution (0.100 s)"),
            std::string::npos)
      << (*energy)[0].why_not;
}

// A run without an energy counter (a VM without RAPL) says why, as show does for its totals:
// load.energy was {} before.
TEST_F(LoadWindowEnergyTest, NoCounterSaysWhy) {
  Write(2'000, 8'000, 100,
        {{"rapl", {{"unavailable", {{"energy.cpu", "no RAPL domains under /sys/class/powercap"}}}}},
         {"gpu", {{"unavailable", "no NVIDIA driver"}}}});
  totals_.erase("gpu_energy_j");
  auto energy = LoadWindowEnergy(*store_, run_, totals_);
  ASSERT_TRUE(energy.ok());
  ASSERT_EQ(energy->size(), 2u);
  for (const LoadEnergy& e : *energy) {
    EXPECT_TRUE(std::isnan(e.joules)) << e.total;
    EXPECT_FALSE(e.over_window);
  }
  EXPECT_EQ((*energy)[0].why_not, "not measured: no NVIDIA driver");
  EXPECT_EQ((*energy)[1].why_not, "not measured: no RAPL domains under /sys/class/powercap");
  auto summary = SummarizeRun(*store_, run_);
  ASSERT_TRUE(summary.ok());
  const auto j = nlohmann::json::parse(SummaryJson(*summary, -1));
  EXPECT_TRUE(j["load"]["energy"]["cpu_energy_j"]["per_query_j"].is_null());
  EXPECT_EQ(j["load"]["energy"]["cpu_energy_j"]["why"],
            "not measured: no RAPL domains under /sys/class/powercap");
}

}  // namespace
}  // namespace footprint
