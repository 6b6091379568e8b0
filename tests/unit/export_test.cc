// Exports of a synthetic database (fixed ids, times and values written through the Store API)
// compared byte for byte with the golden files in tests/golden/.
//
// To regenerate the golden files after an intended format change (and review the diff):
//   FP_UPDATE_GOLDEN=1 build/tests/footprint_unit_tests --gtest_filter='Export*'
// (ExpectGolden, test_util.h).
#include "report/export.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using testing::ExpectGolden;
using testing::TempDir;

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;

// Two runs: a repetition of a group with samples, nested scopes (one never ended), scalar and
// document values and totals; and a failed run with a single value.
std::vector<RunRecord> WriteSyntheticRuns(Store& store) {
  RunRecord a;
  a.id = "00000000-0000-4000-8000-00000000000a";
  a.name = "golden";
  a.description = "synthetic run for the golden files";
  a.group_id = "00000000-0000-4000-8000-0000000000ff";
  a.repetition = 1;
  a.command = {"python3", "train.py", "--epochs", "2"};
  a.cwd = "/work";
  a.host = "host";
  a.user = "user";
  a.started_at_ns = kStart;
  a.meta_json = R"({"tags":{"team":"ml"},"params":{"lr":"0.1"}})";
  EXPECT_TRUE(store.CreateRun(a).ok());
  auto cpu = store.EnsureSeries({0, a.id, "cpu", "%", "tree", std::nullopt});
  auto mem = store.EnsureSeries({0, a.id, "memory", "bytes", "tree", std::nullopt});
  EXPECT_TRUE(cpu.ok() && mem.ok());
  std::vector<SamplePoint> samples;
  const double cpu_values[] = {0, 99.5, 100.25, 87.125, 3};
  for (int i = 0; i < 5; ++i) {
    samples.push_back({*cpu, i * 100 * kMs, cpu_values[i]});
    samples.push_back({*mem, i * 100 * kMs + 1, 1048576.0 * (i + 1) + 0.5});
  }
  EXPECT_TRUE(store.Append(a.id, samples, kStart + 500 * kMs).ok());
  EXPECT_TRUE(
      store
          .InTransaction([&]() -> Status {
            auto epoch = store.InsertScope(
                {0, a.id, std::nullopt, "epoch", 4242, 100 * kMs, 300 * kMs + 123});
            if (!epoch.ok()) return epoch.status();
            auto forward =
                store.InsertScope({0, a.id, *epoch, "forward", 4242, 110 * kMs, 150 * kMs});
            if (!forward.ok()) return forward.status();
            auto loader = store.InsertScope(
                {0, a.id, std::nullopt, "data \"loader\", v2", 4243, 120 * kMs, std::nullopt});
            if (!loader.ok()) return loader.status();
            FP_RETURN_IF_ERROR(store.InsertValue({a.id, *epoch, "loss", 1, 200 * kMs, 0.75, ""}));
            FP_RETURN_IF_ERROR(store.InsertValue({a.id, *epoch, "loss", 2, 290 * kMs, 0.5, ""}));
            return store.InsertValue(
                {a.id, std::nullopt, "confusion", 2, 300 * kMs, std::nullopt,
                 R"({"kind":"confusion_matrix","labels":["a","b"],"matrix":[[3,1],[0,4]]})"});
          })
          .ok());
  a.status = RunStatus::kOk;
  a.exit_code = 0;
  a.ended_at_ns = kStart + 500 * kMs;
  EXPECT_TRUE(store
                  .FinishRun(a, {{"duration_s", 0.5},
                                 {"cpu_user_s", 0.25},
                                 {"cpu_system_s", 0.125},
                                 {"peak_memory_bytes", 5242880.5},
                                 {"gpu_energy_j", 12.5}})
                  .ok());

  RunRecord b;
  b.id = "00000000-0000-4000-8000-00000000000b";
  b.name = "failing";
  b.command = {"false"};
  b.cwd = "/work";
  b.host = "host";
  b.user = "user";
  b.started_at_ns = kStart + 1000 * kMs;
  EXPECT_TRUE(store.CreateRun(b).ok());
  EXPECT_TRUE(store
                  .InTransaction([&] {
                    return store.InsertValue(
                        {b.id, std::nullopt, "accuracy, top-1", std::nullopt, 5 * kMs, 0.125, ""});
                  })
                  .ok());
  b.status = RunStatus::kFailed;
  b.exit_code = 7;
  b.ended_at_ns = kStart + 1010 * kMs;
  EXPECT_TRUE(store.FinishRun(b, {{"duration_s", 0.01}}).ok());
  return {a, b};
}

// The export of the synthetic runs; `progress` (when given) hears of it.
std::string Export(ExportFormat format, ProgressFn progress = {}) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  EXPECT_TRUE(store.ok());
  std::vector<RunRecord> runs = WriteSyntheticRuns(**store);
  std::ostringstream out;
  Status st = ExportRuns(**store, runs, format, out, std::move(progress));
  EXPECT_TRUE(st.ok()) << st.message();
  return out.str();
}

TEST(ExportGolden, Csv) {
  const std::string csv = Export(ExportFormat::kCsv);
  ExpectGolden(csv, "export.csv");
  // Every row has the header's 12 columns (quoted commas do not count).
  std::istringstream lines(csv);
  std::string line;
  size_t rows = 0;
  while (std::getline(lines, line)) {
    size_t commas = 0;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++commas;
    }
    EXPECT_EQ(commas, 11u) << line;
    ++rows;
  }
  // header + 5 + 1 totals + 3 scopes + 3 + 1 values + 10 samples
  EXPECT_EQ(rows, 1u + 6 + 3 + 4 + 10);
}

TEST(ExportGolden, Json) {
  const std::string text = Export(ExportFormat::kJson);
  ExpectGolden(text, "export.json");
  json doc = json::parse(text);
  ASSERT_EQ(doc["runs"].size(), 2u);
  const json& a = doc["runs"][0];
  EXPECT_EQ(a["run"]["group_id"], "00000000-0000-4000-8000-0000000000ff");
  EXPECT_EQ(a["series"][0]["samples"].size(), 5u);
  EXPECT_EQ(a["series"][0]["samples"][2], json::parse("[200000000, 100.25]"));
  EXPECT_TRUE(a["scopes"][2]["end_ns"].is_null());
  EXPECT_EQ(a["values"][0]["data"]["kind"], "confusion_matrix");
  EXPECT_EQ(doc["runs"][1]["run"]["exit_code"], 7);
}

TEST(ExportGolden, TraceEventFormat) {
  const std::string text = Export(ExportFormat::kTrace);
  ExpectGolden(text, "export.trace.json");
  json doc = json::parse(text);
  ASSERT_TRUE(doc["traceEvents"].is_array());
  size_t spans = 0, counters = 0, names = 0;
  for (const json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e["pid"].is_number_integer()) << e;
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++spans;
      EXPECT_TRUE(e["tid"].is_number_integer() && e["ts"].is_number() && e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
    } else if (ph == "C") {
      ++counters;
      ASSERT_EQ(e["args"].size(), 1u) << e;  // one counter track per event name
      EXPECT_TRUE(e["args"].begin()->is_number());
    } else {
      ASSERT_EQ(ph, "M");
      ++names;
    }
  }
  EXPECT_EQ(spans, 3u);
  EXPECT_EQ(counters, 10u + 3);  // samples + scalar values
  EXPECT_EQ(names, 3u + 2 + 3);  // per run: process name, labels, sort index; thread names
}

TEST(ExportProgress, EverySeriesOfEveryRunIsReportedOnceInEveryFormat) {
  for (ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJson, ExportFormat::kTrace}) {
    std::vector<std::pair<size_t, size_t>> calls;
    const std::string text =
        Export(format, [&](size_t done, size_t total) { calls.emplace_back(done, total); });
    // Run a has two series (cpu, memory), run b none: (0, 2) first, then one call per series.
    EXPECT_EQ(calls, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 2}, {2, 2}}));
    EXPECT_EQ(text, Export(format));  // the same bytes as without progress
  }
}

}  // namespace
}  // namespace footprint
