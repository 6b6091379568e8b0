// What `show group:ID` and `compare` print, as text and as JSON, for a synthetic database (fixed
// ids, times and totals written through the Store API), compared byte for byte with the golden
// files in tests/golden/. The figures are chosen so that each kind of line appears: a
// significant change in both directions, no significant difference, a failed repetition left
// out, a warm-up, outliers, a figure only one side has, and a single run against a group.
//
// To regenerate after an intended change (and review the diff):
//   FP_UPDATE_GOLDEN=1 build/tests/footprint_unit_tests --gtest_filter='StatsGolden*'
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/stats_view.h"
#include "footprint/compare.h"
#include "footprint/groups.h"
#include "test_util.h"

namespace footprint {
namespace {

using testing::ExpectGolden;
using testing::TempDir;

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;

using Totals = std::map<std::string, double>;

// A group named `name` with id `group` (8 hex digits, made a uuid), started `first_s` after
// kStart: one warm-up, then the repetitions whose totals are given, a second apart; `failed`
// (1-based) is stored as failed.
void WriteGroup(Store& store, const std::string& name, const std::string& group, int first_s,
                const std::vector<Totals>& repetitions, int failed = 0) {
  auto write = [&](int repetition, const Totals& totals, RunStatus status) {
    RunRecord r;
    const int k = repetition < 0 ? 0 : repetition;
    r.id = group.substr(0, 7) + std::to_string(k) + "-0000-4000-8000-000000000000";
    r.name = name;
    r.group_id = group + "-ffff-4000-8000-000000000000";
    r.repetition = repetition;
    r.command = {"python3", "train.py", "--variant", name};
    r.started_at_ns = kStart + (first_s + k) * kSecond;
    r.status = RunStatus::kRunning;
    ASSERT_TRUE(store.CreateRun(r).ok());
    r.status = status;
    r.exit_code = status == RunStatus::kOk ? 0 : 1;
    ASSERT_TRUE(store.FinishRun(r, totals).ok());
  };
  write(-1, {{"duration_s", 3.5}, {"cpu_user_s", 3.0}, {"cpu_system_s", 0.4}}, RunStatus::kOk);
  for (size_t i = 0; i < repetitions.size(); ++i) {
    const int repetition = static_cast<int>(i + 1);
    write(repetition, repetitions[i], repetition == failed ? RunStatus::kFailed : RunStatus::kOk);
  }
}

Totals Figures(double duration, double user, double peak_mib, double energy) {
  Totals t = {{"duration_s", duration},
              {"cpu_user_s", user},
              {"cpu_system_s", 0.25},
              {"peak_memory_bytes", peak_mib * 1048576},
              {"io_read_bytes", 0}};
  if (energy > 0) t["cpu_energy_j"] = energy;
  return t;
}

class StatsGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenStore(dir_.File("fp.db"));
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    // old: ~2.0 s; the 4th repetition failed (not counted), the 6th is an outlier.
    WriteGroup(*store_, "old", "0a1d0000", 0,
               {Figures(2.00, 1.80, 512, 40.0), Figures(2.02, 1.82, 514, 40.5),
                Figures(1.98, 1.78, 510, 39.5), Figures(9.00, 0.10, 100, 1.0),
                Figures(2.01, 1.81, 513, 40.2), Figures(2.60, 1.79, 511, 39.8)},
               4);
    // new: 1.5 s, the same memory, more energy per second but less in all.
    WriteGroup(*store_, "new", "0e110000", 100,
               {Figures(1.50, 1.30, 513, 31.0), Figures(1.52, 1.31, 509, 31.5),
                Figures(1.49, 1.29, 515, 30.8), Figures(1.51, 1.30, 511, 31.2)});
    // same: the old figures again without the outlier, and no energy probe.
    WriteGroup(
        *store_, "same", "05a10000", 200,
        {Figures(2.01, 1.80, 512, 0), Figures(1.99, 1.81, 511, 0), Figures(2.00, 1.79, 514, 0)});
    auto runs = store_->ListRuns();
    ASSERT_TRUE(runs.ok());
    runs_ = std::move(runs).value();
  }

  SetSummary Summary(const std::string& spec) {
    auto set = ResolveRunSet(runs_, spec);
    EXPECT_TRUE(set.ok()) << set.status().message();
    auto summary = SummarizeSet(*store_, std::move(set).value());
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    return std::move(summary).value();
  }

  Comparison Compared(const std::vector<std::string>& specs, CompareOptions options = {}) {
    std::vector<SetSummary> sets;
    for (const std::string& spec : specs) sets.push_back(Summary(spec));
    auto comparison = Compare(std::move(sets), options);
    EXPECT_TRUE(comparison.ok()) << comparison.status().message();
    return std::move(comparison).value();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::vector<RunRecord> runs_;
};

// The JSON goldens hold doubles computed through libm (p-values, intervals), whose last bits
// may differ on another CPU: the structure and every string must match exactly, numbers to
// 1e-12 relative.
void ExpectSameJson(const nlohmann::json& actual, const nlohmann::json& expected,
                    const std::string& where) {
  if (actual.is_number() && expected.is_number()) {
    const double a = actual.get<double>(), e = expected.get<double>();
    EXPECT_LE(std::abs(a - e), 1e-12 * std::max(1.0, std::abs(e))) << where;
    return;
  }
  ASSERT_EQ(actual.type(), expected.type()) << where;
  if (actual.is_object() || actual.is_array()) {
    ASSERT_EQ(actual.size(), expected.size()) << where;
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      const std::string key = actual.is_object() ? it.key() : std::to_string(it - expected.begin());
      ASSERT_TRUE(!actual.is_object() || actual.contains(it.key())) << where << "/" << key;
      ExpectSameJson(actual.is_object() ? actual[it.key()] : actual[it - expected.begin()], *it,
                     where + "/" + key);
    }
    return;
  }
  EXPECT_EQ(actual, expected) << where;
}

void ExpectJsonGolden(const std::string& actual, const std::string& name) {
  const std::string path = std::string(FP_GOLDEN) + "/" + name;
  if (const char* update = std::getenv("FP_UPDATE_GOLDEN"); update && *update == '1') {
    return ExpectGolden(actual, name);
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (FP_UPDATE_GOLDEN=1 writes it)";
  ExpectSameJson(nlohmann::json::parse(actual), nlohmann::json::parse(in), name);
}

std::string Text(const SetSummary& s, bool sparklines) {
  std::ostringstream out;
  cli::PrintSetSummary(s, {.color = false, .sparklines = sparklines}, out);
  return out.str();
}

std::string Text(const Comparison& c) {
  std::ostringstream out;
  cli::PrintComparison(c, {.color = false, .sparklines = false}, out);
  return out.str();
}

TEST_F(StatsGolden, ShowGroupText) {
  ExpectGolden(Text(Summary("group:0a1d"), true), "show_group.txt");
}

TEST_F(StatsGolden, ShowGroupJson) {
  ExpectJsonGolden(SetSummaryJson(Summary("group:0a1d")) + "\n", "show_group.json");
}

TEST_F(StatsGolden, CompareWelchText) {
  ExpectGolden(Text(Compared({"old", "new", "same"})), "compare_welch.txt");
}

TEST_F(StatsGolden, CompareWelchJson) {
  ExpectJsonGolden(ComparisonJson(Compared({"old", "new", "same"})) + "\n", "compare_welch.json");
}

TEST_F(StatsGolden, CompareMannWhitneyText) {
  ExpectGolden(Text(Compared({"group:0a1d", "group:0e11"}, {.test = CompareTest::kMannWhitney})),
               "compare_mann_whitney.txt");
}

// A single run against a group: the plain ratio, and no test.
TEST_F(StatsGolden, CompareRunWithGroupText) {
  ExpectGolden(Text(Compared({"0a1d0001", "new"})), "compare_run_group.txt");
}

TEST_F(StatsGolden, Verdicts) {
  const Comparison c = Compared({"old", "new", "same"});
  std::string lines;
  for (const FigureComparison& f : c.figures) {
    for (size_t i = 1; i < c.sets.size(); ++i) {
      if (std::string v = Verdict(c, f, i); !v.empty()) lines += v + "\n";
    }
  }
  ExpectGolden(lines, "verdicts.txt");
}

// footprint's own cost (monitor_*) is compared but never significant and gets no verdict, even
// where the same change of the program's own figure is: its overhead is not the program's
// regression.
TEST_F(StatsGolden, OwnCostIsNeverSignificant) {
  auto with_own = [](double peak_mib, double monitor_mib) {
    Totals t = Figures(2.0, 1.8, peak_mib, 0);
    t["monitor_peak_rss_bytes"] = monitor_mib * 1048576;
    t["monitor_cpu_s"] = monitor_mib / 100;
    return t;
  };
  WriteGroup(*store_, "lean", "1ea10000", 300,
             {with_own(500, 10.0), with_own(501, 10.1), with_own(499, 9.9), with_own(500, 10.0)});
  WriteGroup(*store_, "fat", "fa700000", 400,
             {with_own(600, 12.0), with_own(601, 12.1), with_own(599, 11.9), with_own(600, 12.0)});
  runs_ = std::move(store_->ListRuns()).value();
  const Comparison c = Compared({"lean", "fat"});
  const nlohmann::json json = nlohmann::json::parse(ComparisonJson(c));
  int own = 0;
  for (size_t k = 0; k < c.figures.size(); ++k) {
    const FigureComparison& f = c.figures[k];
    EXPECT_EQ(f.own, f.name.starts_with("monitor_")) << f.name;
    EXPECT_EQ(json["figures"][k]["own"], f.own) << f.name;
    if (f.name != "peak_memory_bytes" && !f.own) continue;
    ASSERT_TRUE(f.changes[1] && f.changes[1]->test) << f.name;
    EXPECT_LT(f.changes[1]->test->p_value, 0.001) << f.name;  // a real change, tested
    // Own: no answer to "significant?" at all (null in JSON), not a "no".
    EXPECT_EQ(f.changes[1]->significant, f.own ? std::nullopt : std::optional<bool>(true))
        << f.name;
    EXPECT_EQ(Verdict(c, f, 1).empty(), f.own) << f.name;
    own += f.own;
  }
  EXPECT_EQ(own, 2);
}
}  // namespace
}  // namespace footprint
