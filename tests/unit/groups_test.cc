// Groups of repetitions: naming them, their statistics, and comparisons between them.
#include "footprint/groups.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "footprint/compare.h"
#include "test_util.h"

namespace footprint {
namespace {

using testing::TempDir;

RunRecord MakeRun(std::string id, std::string name, std::string group, int repetition) {
  RunRecord r;
  r.id = std::move(id);
  r.name = std::move(name);
  r.group_id = std::move(group);
  r.repetition = repetition;
  r.command = {"true"};
  r.status = RunStatus::kOk;
  return r;
}

const std::string kG1 = "11111111-0000-4000-8000-000000000000";
const std::string kG2 = "11112222-0000-4000-8000-000000000000";

std::vector<RunRecord> GroupedRuns() {
  return {MakeRun("aaaa0001-0000-4000-8000-000000000000", "bench", kG1, -1),
          MakeRun("aaaa0002-0000-4000-8000-000000000000", "bench", kG1, 1),
          MakeRun("aaaa0003-0000-4000-8000-000000000000", "bench", kG1, 2),
          MakeRun("bbbb0001-0000-4000-8000-000000000000", "alone", "", 0),
          MakeRun("cccc0001-0000-4000-8000-000000000000", "bench", kG2, 2),
          MakeRun("cccc0002-0000-4000-8000-000000000000", "bench", kG2, 1)};
}

TEST(ResolveRunSet, GroupsByIdPrefixLastAndRun) {
  auto runs = GroupedRuns();
  auto g1 = ResolveRunSet(runs, "group:" + kG1);
  ASSERT_TRUE(g1.ok());
  EXPECT_EQ(g1->group_id, kG1);
  ASSERT_EQ(g1->runs.size(), 2u);
  ASSERT_EQ(g1->warmups.size(), 1u);
  EXPECT_EQ(g1->warmups[0].repetition, -1);
  EXPECT_EQ(ResolveRunSet(runs, "group:11112")->group_id, kG2);
  auto last = ResolveRunSet(runs, "group:last");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->group_id, kG2);
  // Repetitions in repetition order, whatever the order they were stored in.
  EXPECT_EQ(last->runs[0].repetition, 1);
  EXPECT_EQ(last->runs[1].repetition, 2);
  // group:RUN is the group of that run.
  EXPECT_EQ(ResolveRunSet(runs, "group:aaaa0003")->group_id, kG1);
  EXPECT_EQ(ResolveRunSet(runs, "group:bench")->group_id, kG2);  // a name: its latest run
  // A name whose latest run is a repetition means that group, and says so.
  auto by_name = ResolveRunSet(runs, "bench");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->group_id, kG2);
  EXPECT_EQ(by_name->runs.size(), 2u);
  EXPECT_NE(by_name->chosen.find("'bench' means group 11112222 (bench), the 2 repetition(s)"),
            std::string::npos)
      << by_name->chosen;
  EXPECT_TRUE(ResolveRunSet(runs, "group:" + kG2)->chosen.empty());
  EXPECT_TRUE(ResolveRunSet(runs, "bench", true)->chosen.empty());  // asked for: nothing to say
  auto alone_by_name = ResolveRunSet(runs, "alone");                // no group: the run
  ASSERT_TRUE(alone_by_name.ok());
  EXPECT_FALSE(alone_by_name->is_group());
  EXPECT_TRUE(alone_by_name->chosen.empty());
  // A run alone, or its group with as_group.
  auto alone = ResolveRunSet(runs, "aaaa0002");
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->is_group());
  EXPECT_EQ(alone->runs.size(), 1u);
  EXPECT_EQ(ResolveRunSet(runs, "aaaa0002", true)->group_id, kG1);
  EXPECT_FALSE(ResolveRunSet(runs, "bbbb", true)->is_group());  // no group: stays alone
}

TEST(ResolveRunSet, RunsJoinedByPlusAreOneSet) {
  auto runs = GroupedRuns();
  runs.push_back(MakeRun("eeee0001-0000-4000-8000-000000000000", "c++", "", 0));
  auto picked = ResolveRunSet(runs, "aaaa0002+cccc0002 + aaaa0002");
  ASSERT_TRUE(picked.ok()) << picked.status().message();
  EXPECT_FALSE(picked->is_group());
  ASSERT_EQ(picked->runs.size(), 2u);  // the repeated run once
  EXPECT_EQ(picked->runs[0].id.substr(0, 8), "aaaa0002");
  EXPECT_EQ(picked->runs[1].id.substr(0, 8), "cccc0002");
  EXPECT_EQ(picked->Label(), "2 runs (bench)");
  // A name with a '+' is still that run; a part that names nothing is the error.
  auto named = ResolveRunSet(runs, "c++");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->runs.size(), 1u);
  EXPECT_EQ(named->runs[0].name, "c++");
  auto missing = ResolveRunSet(runs, "aaaa0002+zzzz");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("zzzz"), std::string::npos);
}

TEST(ResolveRunSet, Errors) {
  auto runs = GroupedRuns();
  auto ambiguous = ResolveRunSet(runs, "group:1111");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find(kG1), std::string::npos);
  EXPECT_EQ(ResolveRunSet(runs, "group:zzzz").status().code(), StatusCode::kNotFound);
  auto no_group = ResolveRunSet(runs, "group:alone");
  ASSERT_FALSE(no_group.ok());
  EXPECT_EQ(no_group.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_group.status().message().find("belongs to no group"), std::string::npos);
  std::vector<RunRecord> plain = {MakeRun("dddd0001-0000-4000-8000-000000000000", "x", "", 0)};
  EXPECT_EQ(ResolveRunSet(plain, "group:last").status().code(), StatusCode::kNotFound);
}

TEST(TotalUnit, FromTheNameSuffix) {
  EXPECT_EQ(TotalUnit("duration_s"), "s");
  EXPECT_EQ(TotalUnit("peak_memory_bytes"), "bytes");
  EXPECT_EQ(TotalUnit("gpu_energy_tree_j"), "J");
  EXPECT_EQ(TotalUnit("perf_instructions"), "count");
}

// Writes a group of runs whose totals are given, one map per repetition; `failed` marks
// repetitions (1-based) stored as failed.
std::string WriteGroup(Store& store, const std::string& group,
                       const std::vector<std::map<std::string, double>>& totals,
                       std::set<int> failed = {}) {
  for (size_t i = 0; i < totals.size(); ++i) {
    RunRecord r =
        MakeRun(group.substr(0, 8) + "-" + std::to_string(i) + "000-4000-8000-000000000000",
                "bench", group, static_cast<int>(i + 1));
    r.status = RunStatus::kRunning;
    r.started_at_ns = static_cast<int64_t>(i);
    EXPECT_TRUE(store.CreateRun(r).ok());
    r.status = failed.count(static_cast<int>(i + 1)) ? RunStatus::kFailed : RunStatus::kOk;
    EXPECT_TRUE(store.FinishRun(r, totals[i]).ok());
  }
  return group;
}

TEST(SummarizeSet, EveryTotalWithHeadlineFirstAndFailuresLeftOut) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  WriteGroup(**store, kG1,
             {{{"duration_s", 1.0},
               {"cpu_user_s", 0.5},
               {"cpu_system_s", 0.25},
               {"zz_new_probe_count", 7},
               {"gpu_energy_j", 10},
               {"io_read_bytes", 0}},
              {{"duration_s", 2.0},
               {"cpu_user_s", 0.5},
               {"cpu_system_s", 0.5},
               {"zz_new_probe_count", 9},
               {"gpu_energy_j", 12},
               {"io_read_bytes", 0}},
              {{"duration_s", 100.0}}},
             {3});
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  auto set = ResolveRunSet(*runs, "group:last");
  ASSERT_TRUE(set.ok());
  auto s = SummarizeSet(**store, *set);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->counted.size(), 2u);  // the failed repetition is not counted
  std::vector<std::string> order;
  for (const FigureStats& f : s->figures) order.push_back(f.name);
  EXPECT_EQ(order,
            (std::vector<std::string>{"duration_s", "cpu_s", "gpu_energy_j", "cpu_user_s",
                                      "cpu_system_s", "io_read_bytes", "zz_new_probe_count"}));
  const FigureStats* cpu = s->Find("cpu_s");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->values, (std::vector<double>{0.75, 1.0}));
  EXPECT_TRUE(cpu->headline);
  EXPECT_TRUE(s->Find("gpu_energy_j")->headline);
  EXPECT_FALSE(s->Find("zz_new_probe_count")->headline);
  EXPECT_EQ(s->Find("duration_s")->stats.mean, 1.5);
  EXPECT_EQ(s->durations.size(), 3u);  // failed runs are listed with their duration

  auto json = nlohmann::json::parse(SetSummaryJson(*s));
  EXPECT_EQ(json["group"]["id"], kG1);
  EXPECT_EQ(json["group"]["counted"], 2);
  EXPECT_EQ(json["runs"][2]["counted"], false);
  EXPECT_EQ(json["figures"]["duration_s"]["mean"], 1.5);
  // 1 s and 2 s: the t-interval (1.5 ± 6.4 s) is cut at 0, as no duration is negative.
  EXPECT_EQ(json["figures"]["duration_s"]["ci95_low"], 0.0);
  EXPECT_NEAR(json["figures"]["duration_s"]["ci95_high"].get<double>(), 1.5 + 12.706 * 0.5, 1e-3);
  EXPECT_EQ(json["figures"]["duration_s"]["unit"], "s");
  EXPECT_EQ(json["order"][0], "duration_s");

  // Picked by hand (RUN+RUN), the same runs count as the group's: the ok ones; the failed
  // run named alone counts.
  auto picked = ResolveRunSet(*runs, (*runs)[0].id + "+" + (*runs)[1].id + "+" + (*runs)[2].id);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(SummarizeSet(**store, *picked)->counted.size(), 2u);
  auto failed = ResolveRunSet(*runs, (*runs)[2].id);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(SummarizeSet(**store, *failed)->counted.size(), 1u);
}

TEST(Compare, SignificantChangeAndPlainRatio) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok());
  WriteGroup(**store, kG1,
             {{{"duration_s", 1.00}}, {{"duration_s", 1.02}}, {{"duration_s", 0.98}}});
  WriteGroup(**store, kG2,
             {{{"duration_s", 2.00}}, {{"duration_s", 2.04}}, {{"duration_s", 1.96}}});
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  auto summary = [&](const std::string& spec) {
    return SummarizeSet(**store, *ResolveRunSet(*runs, spec)).value();
  };
  auto c = Compare({summary("group:" + kG1), summary("group:" + kG2)});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->figures.size(), 1u);
  const FigureComparison& d = c->figures[0];
  EXPECT_FALSE(d.changes[0]);
  ASSERT_TRUE(d.changes[1]);
  EXPECT_NEAR(*d.changes[1]->relative, 1.0, 1e-12);
  EXPECT_EQ(d.changes[1]->method, "welch");
  EXPECT_TRUE(*d.changes[1]->significant);
  // sd 0.02 over mean 1 and sd 0.04 over mean 2: ratio 2 ± 2 * hypot(0.02, 0.02).
  EXPECT_NEAR(*d.changes[1]->ratio_sd, 2 * std::hypot(0.02, 0.02), 1e-12);
  EXPECT_EQ(Verdict(*c, d, 1),
            "'group:" + kG2 + "' ran 2.00 ± 0.06 times slower than 'group:" + kG1 + "'");
  auto reversed = Compare({summary("group:" + kG2), summary("group:" + kG1)});
  EXPECT_EQ(Verdict(*reversed, reversed->figures[0], 1),
            "'group:" + kG1 + "' ran 2.00 ± 0.06 times faster than 'group:" + kG2 + "'");
  auto c_json = nlohmann::json::parse(ComparisonJson(*c));
  EXPECT_EQ(c_json["figures"][0]["verdicts"][1], Verdict(*c, d, 1));
  EXPECT_TRUE(c_json["figures"][0]["verdicts"][0].is_null());

  // Against itself: no change at all.
  auto same = Compare({summary("group:" + kG1), summary("group:" + kG1)},
                      {.test = CompareTest::kMannWhitney});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->figures[0].changes[1]->test->p_value, 1);
  EXPECT_FALSE(*same->figures[0].changes[1]->significant);
  EXPECT_EQ(Verdict(*same, same->figures[0], 1),
            "duration: no significant difference between 'group:" + kG1 + "' and 'group:" + kG1 +
                "' (p=1.000)");

  // A single run: the plain ratio, no test.
  auto single = Compare({summary("group:" + kG1), summary(runs->back().id)});
  ASSERT_TRUE(single.ok());
  const FigureChange& r = *single->figures[0].changes[1];
  EXPECT_EQ(r.method, "ratio");
  EXPECT_FALSE(r.test);
  EXPECT_FALSE(r.significant);
  EXPECT_EQ(Verdict(*single, single->figures[0], 1), "");  // no test, no verdict
  auto json = nlohmann::json::parse(ComparisonJson(*single));
  EXPECT_EQ(json["figures"][0]["changes"][1]["method"], "ratio");
  EXPECT_TRUE(json["figures"][0]["changes"][1]["significant"].is_null());
  EXPECT_EQ(json["sets"][1]["kind"], "run");

  EXPECT_EQ(Compare({summary("group:" + kG1)}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace footprint
