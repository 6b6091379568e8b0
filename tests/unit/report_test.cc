// Statistics and run resolution.
#include "footprint/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fake_env.h"
#include "report/plot.h"
#include "test_util.h"
#include "util/clock.h"

namespace footprint {
namespace {

TEST(Summarize, MatchesNumpyLinearPercentiles) {
  // numpy.percentile([3, 1, 4, 1, 5, 9, 2, 6], [50, 95]) == [3.5, 7.95]
  std::vector<double> v = {3, 1, 4, 1, 5, 9, 2, 6};
  MetricSummary s = Summarize(v);
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.mean, 31.0 / 8);
  EXPECT_DOUBLE_EQ(s.p50, 3.5);
  EXPECT_NEAR(s.p95, 7.95, 1e-12);
}

TEST(CpuDisagreement, OnlyBeyondFivePercentAndTheEdges) {
  RunSummary s;
  s.duration_s = 10.0;
  s.totals = {{"cpu_user_s", 8.0}, {"cpu_system_s", 2.0}};
  s.series_cpu = RunSummary::SeriesCpu{.cpu_s = 9.7, .window_s = 9.9, .peak_cores = 1.0};
  EXPECT_FALSE(CpuDisagreement(s));  // 3 %: agree
  // 7 % less, but 0.5 s of the run lie outside the series, where 1 core could add 0.5 s.
  s.series_cpu->cpu_s = 9.3;
  s.series_cpu->window_s = 9.5;
  EXPECT_FALSE(CpuDisagreement(s));
  s.series_cpu = RunSummary::SeriesCpu{.cpu_s = 16.9, .window_s = 9.9, .peak_cores = 2.0};
  auto note = CpuDisagreement(s);  // a pool's workers missing from the total
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("16.900 s"), std::string::npos) << *note;
  EXPECT_NE(note->find("the total misses"), std::string::npos) << *note;
  s.series_cpu->cpu_s = 5.0;
  EXPECT_NE(CpuDisagreement(s)->find("the series missed"), std::string::npos);
  s.series_cpu.reset();  // too few samples to tell
  EXPECT_FALSE(CpuDisagreement(s));
}

TEST(Summarize, SingleAndEmpty) {
  std::vector<double> one = {42};
  MetricSummary s = Summarize(one);
  EXPECT_EQ(s.p50, 42);
  EXPECT_EQ(s.p95, 42);
  std::vector<double> none;
  EXPECT_EQ(Summarize(none).count, 0u);
}

std::vector<RunRecord> Runs() {
  std::vector<RunRecord> runs(3);
  runs[0].id = "aaaa1111-0000-4000-8000-000000000000";
  runs[0].name = "train";
  runs[1].id = "aaaa2222-0000-4000-8000-000000000000";
  runs[1].name = "eval";
  runs[2].id = "bbbb3333-0000-4000-8000-000000000000";
  runs[2].name = "train";
  return runs;
}

TEST(ResolveRun, IdPrefixNameLast) {
  auto runs = Runs();
  EXPECT_EQ(ResolveRun(runs, "last")->id, runs[2].id);
  EXPECT_EQ(ResolveRun(runs, runs[1].id)->id, runs[1].id);
  EXPECT_EQ(ResolveRun(runs, "aaaa2")->id, runs[1].id);
  EXPECT_EQ(ResolveRun(runs, "train")->id, runs[2].id);  // a name means its latest run
  EXPECT_EQ(ResolveRun(runs, "eval")->id, runs[1].id);
  auto ambiguous = ResolveRun(runs, "aaaa");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
  EXPECT_EQ(ResolveRun(runs, "zzzz").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveRun(runs, "a").status().code(), StatusCode::kNotFound);  // too short
  EXPECT_EQ(ResolveRun({}, "last").status().code(), StatusCode::kNotFound);
}

// A run still running, with no heartbeat yet, lasts until "now", which is the Env's: at two
// driven times the summary, the live series, the plot and a page of runs sorted by duration
// (the store's SQL) all say how long it has run, and sort it against a finished run of 3 s.
TEST(RunDuration, ARunningRunLastsUntilTheEnvsNow) {
  FakeEnv env;
  testing::TempDir dir;
  auto store = OpenStore(dir.File("fp.db"), {.env = &env});
  ASSERT_TRUE(store.ok()) << store.status().message();
  RunRecord finished;
  finished.id = "finished";
  finished.command = {"true"};
  finished.started_at_ns = env.RealtimeNs() - 10 * kNsPerSec;
  ASSERT_TRUE((*store)->CreateRun(finished).ok());
  finished.status = RunStatus::kOk;
  finished.ended_at_ns = finished.started_at_ns + 3 * kNsPerSec;
  ASSERT_TRUE((*store)->FinishRun(finished, {}).ok());
  RunRecord running;
  running.id = "running";
  running.command = {"sleep", "60"};
  running.started_at_ns = env.RealtimeNs();
  ASSERT_TRUE((*store)->CreateRun(running).ok());
  RunQuery by_duration;
  by_duration.sort = RunQuery::Sort::kDuration;
  PlotOptions plot;
  plot.env = &env;
  for (const auto& [elapsed_s, longest] : {std::pair{2, "finished"}, std::pair{4, "running"}}) {
    SCOPED_TRACE(elapsed_s);
    env.Advance(running.started_at_ns + elapsed_s * kNsPerSec - env.RealtimeNs());
    EXPECT_EQ(RunDuration(running, {}, env.RealtimeNs()), elapsed_s);
    auto summary = SummarizeRun(**store, running, 0, env);
    ASSERT_TRUE(summary.ok()) << summary.status().message();
    EXPECT_EQ(summary->duration_s, elapsed_s);
    auto live = LiveSeriesJson(**store, running, {}, 100, INT64_MIN, env);
    ASSERT_TRUE(live.ok()) << live.status().message();
    EXPECT_EQ(nlohmann::json::parse(*live)["duration_s"], elapsed_s);
    auto page = (*store)->ListRunsPage(by_duration);
    ASSERT_TRUE(page.ok()) << page.status().message();
    ASSERT_EQ(page->runs.size(), 2u);
    EXPECT_EQ(page->runs.front().id, longest);
    if (!PlotAvailable()) continue;  // built without the charting library
    auto data = PlotDataJson(**store, {running}, plot);
    ASSERT_TRUE(data.ok()) << data.status().message();
    const auto doc = nlohmann::json::parse(*data);
    EXPECT_EQ(doc["generated_ms"], env.RealtimeNs() / kNsPerMs);
    EXPECT_EQ(doc["runs"][0]["duration_s"], elapsed_s);
  }
}

TEST(SummaryJson, CarriesTheDesignFieldsAndNullsForUnknownTotals) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  RunRecord r;
  r.id = "run-1";
  r.name = "n";
  r.command = {"true"};
  r.started_at_ns = 0;
  ASSERT_TRUE((*store)->CreateRun(r).ok());
  auto series = (*store)->EnsureSeries({0, r.id, "cpu", "%", "tree", std::nullopt});
  std::vector<SamplePoint> pts;
  for (int i = 1; i <= 100; ++i) pts.push_back({*series, i, static_cast<double>(i)});
  ASSERT_TRUE((*store)->Append(r.id, pts, 1).ok());
  r.status = RunStatus::kOk;
  r.exit_code = 0;
  r.ended_at_ns = 2'000'000'000;
  ASSERT_TRUE((*store)->FinishRun(r, {{"duration_s", 2.0}, {"cpu_user_s", 1.0}}).ok());
  auto summary = SummarizeRun(**store, *(*store)->GetRun(r.id));
  ASSERT_TRUE(summary.ok());
  auto j = nlohmann::json::parse(SummaryJson(*summary));
  for (const char* key : {"id", "name", "status", "exit_code", "duration_s", "command"}) {
    EXPECT_TRUE(j["run"].contains(key)) << key;
  }
  EXPECT_EQ(j["run"]["status"], "ok");
  EXPECT_EQ(j["totals"]["cpu_user_s"], 1.0);
  EXPECT_TRUE(j["totals"]["gpu_energy_j"].is_null());  // unknown, never 0
  ASSERT_EQ(j["metrics"].size(), 1u);
  EXPECT_EQ(j["metrics"][0]["count"], 100);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["p50"].get<double>(), 50.5);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["p95"].get<double>(), 95.05);
  EXPECT_TRUE(j["scopes"].is_array());
  EXPECT_TRUE(j["values"].is_array());
}

// Two hosts' parts of one run (meta.span) and a run of its own: any part shows them all.
TEST(SummarizeRun, APartOfAMultiHostRunShowsEveryHostAndTheirSums) {
  testing::TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  auto part = [&](const std::string& id, const std::string& host, const std::string& key,
                  std::map<std::string, double> totals) {
    RunRecord r;
    r.id = id;
    r.name = "train";
    r.meta_json = nlohmann::json{{"span", {{"key", key}, {"host", host}, {"hosts", 2}}}}.dump();
    ASSERT_TRUE((*store)->CreateRun(r).ok());
    ASSERT_TRUE((*store)->EnsureSeries({0, r.id, "cpu", "%", host, std::nullopt}).ok());
    ASSERT_TRUE((*store)->EnsureSeries({0, r.id, "sys.cpu", "%", "system", std::nullopt}).ok());
    r.status = RunStatus::kOk;
    r.ended_at_ns = 1;
    ASSERT_TRUE((*store)->FinishRun(r, totals).ok());
  };
  part("b", "n02", "fp:7.1",
       {{"cpu_user_s", 2.0},
        {"duration_s", 3.0},
        {"peak_memory_bytes", 100},
        {"max_process_peak_bytes", 60}});
  part("a", "n01", "fp:7.1",
       {{"cpu_user_s", 1.5},
        {"duration_s", 2.5},
        {"peak_memory_bytes", 50},
        {"max_process_peak_bytes", 70}});
  // Another job's step (every finished run stores its duration; a part without one died and is
  // counted from its samples).
  part("c", "n01", "fp:8.1", {{"cpu_user_s", 9.0}, {"duration_s", 5.0}});
  auto summary = SummarizeRun(**store, *(*store)->GetRun("b"));
  ASSERT_TRUE(summary.ok());
  ASSERT_EQ(summary->hosts.size(), 2u);
  EXPECT_EQ(summary->hosts[0].host, "n01");  // by host
  EXPECT_EQ(summary->hosts_expected, 2);
  EXPECT_DOUBLE_EQ(summary->totals["cpu_user_s"], 3.5);         // summed
  EXPECT_DOUBLE_EQ(summary->totals["peak_memory_bytes"], 150);  // each host at its peak
  EXPECT_DOUBLE_EQ(summary->totals["duration_s"], 3.0);         // the longest
  EXPECT_DOUBLE_EQ(summary->totals["max_process_peak_bytes"], 70);
  std::set<std::string> entities;  // each host's series, each saying its host
  for (const MetricSummary& m : summary->metrics) entities.insert(m.metric + " " + m.entity);
  EXPECT_EQ(entities, (std::set<std::string>{"cpu n01", "cpu n02", "sys.cpu system@n01",
                                             "sys.cpu system@n02"}));
  auto j = nlohmann::json::parse(SummaryJson(*summary));
  EXPECT_EQ(j["hosts"][1]["totals"]["cpu_user_s"], 2.0);
  auto alone = SummarizeRun(**store, *(*store)->GetRun("c"));
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->hosts.size(), 1u);
  EXPECT_DOUBLE_EQ(alone->totals["cpu_user_s"], 9.0);
}

}  // namespace
}  // namespace footprint
