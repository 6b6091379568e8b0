// The instrumentation API, asserted on what lands in the database.
#include "footprint/api.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "fake_env.h"
#include "footprint/report.h"
#include "run/run_metadata.h"
#include "serve/api.h"
#include "store/reconcile.h"
#include "test_util.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/sha256.h"

namespace footprint {
namespace {

using testing::TempDir;

std::unique_ptr<Benchmark> OpenOrDie(const std::string& db, int64_t flush_ns = 50'000'000) {
  BenchmarkOptions o;
  o.db = db;
  o.name = "api-test";
  o.description = "unit";
  o.join = false;
  o.interval_ns = 10'000'000;
  o.flush_interval_ns = flush_ns;
  auto bm = Benchmark::Open(o);
  EXPECT_TRUE(bm.ok()) << bm.status().message();
  return bm.ok() ? std::move(bm).value() : nullptr;
}

// Options of a benchmark with a run of its own in dir/fp.db.
BenchmarkOptions OwnRun(const testing::TempDir& dir) {
  BenchmarkOptions o;
  o.db = dir.File("fp.db");
  o.join = false;
  return o;
}

std::unique_ptr<Store> Reopen(const std::string& db) {
  auto s = OpenStore(db, {.read_only = true});
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

TEST(Benchmark, NestedRepeatedScopesWithParentsAndDurations) {
  TempDir dir;
  auto bm = OpenOrDie(dir.File("fp.db"));
  ASSERT_TRUE(bm);
  EXPECT_FALSE(bm->joined());
  EXPECT_EQ(Benchmark::Current(), bm.get());
  static const ScopeName kOuter("epoch"), kInner("step");
  for (int epoch = 0; epoch < 2; ++epoch) {
    Scope outer(*bm, kOuter);
    for (int i = 0; i < 3; ++i) {
      Scope inner(*bm, kInner);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      bm->Log("loss", 1.0 / (epoch * 3 + i + 1), epoch * 3 + i);
    }
  }
  { FOOTPRINT_SCOPE("macro scope"); }
  ASSERT_TRUE(bm->Close().ok());
  EXPECT_EQ(Benchmark::Current(), nullptr);

  auto store = Reopen(dir.File("fp.db"));
  auto scopes = store->ListScopes(bm->run_id());
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), 2u + 6u + 1u);  // repeated calls are separate scopes
  std::map<int64_t, ScopeRecord> by_id;
  for (const auto& s : *scopes) by_id[s.id] = s;
  int epochs = 0, steps = 0;
  for (const auto& s : *scopes) {
    ASSERT_TRUE(s.end_ns.has_value()) << s.name;
    EXPECT_GE(*s.end_ns, s.start_ns);
    if (s.name == "epoch") {
      ++epochs;
      EXPECT_FALSE(s.parent_id.has_value());
      EXPECT_GE(*s.end_ns - s.start_ns, 30 * kNsPerMs);
    } else if (s.name == "step") {
      ++steps;
      ASSERT_TRUE(s.parent_id.has_value());
      const ScopeRecord& parent = by_id.at(*s.parent_id);
      EXPECT_EQ(parent.name, "epoch");
      EXPECT_GE(s.start_ns, parent.start_ns);  // nested in time too
      EXPECT_LE(*s.end_ns, *parent.end_ns);
      EXPECT_GE(*s.end_ns - s.start_ns, 10 * kNsPerMs);
    } else {
      EXPECT_EQ(s.name, "macro scope");
    }
  }
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(steps, 6);

  auto values = store->ListValues(bm->run_id());
  ASSERT_TRUE(values.ok());
  ASSERT_EQ(values->size(), 6u);
  for (const auto& v : *values) {
    EXPECT_EQ(v.name, "loss");
    ASSERT_TRUE(v.scope_id.has_value());  // logged inside a step
    EXPECT_EQ(by_id.at(*v.scope_id).name, "step");
    EXPECT_DOUBLE_EQ(*v.value, 1.0 / (*v.step + 1));
  }

  auto run = store->GetRun(bm->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, RunStatus::kOk);
  EXPECT_EQ(run->description, "unit");
  auto totals = store->LoadTotals(bm->run_id());
  ASSERT_TRUE(totals.ok());
  EXPECT_GT(totals->at("duration_s"), 0.06);
  EXPECT_GT(totals->at("monitor_cpu_s"), 0);  // stored beside the process's figures
  EXPECT_GE(totals->at("peak_memory_bytes"), totals->at("max_process_peak_bytes"));
  auto series = store->ListSeries(bm->run_id());
  ASSERT_TRUE(series.ok());
  bool has_cpu = false;
  for (const auto& s : *series) has_cpu |= s.metric == "cpu" && s.entity == "tree";
  EXPECT_TRUE(has_cpu);  // the process sampled itself out-of-band
}

// Scope times are read from the CPU's counter where the kernel's clock is that counter: each
// scope lands between clock_gettime readings of the run's timeline taken around it, across
// several flushes (each maps its own batch).
TEST(Benchmark, ScopeTimesAreOnTheRunsTimeline) {
  TempDir dir;
  auto bm = OpenOrDie(dir.File("fp.db"), /*flush_ns=*/20'000'000);
  ASSERT_TRUE(bm);
  static const ScopeName kName("timed");
  std::vector<std::pair<int64_t, int64_t>> around;  // NowNs() before and after each scope
  for (int i = 0; i < 8; ++i) {
    const int64_t before = bm->NowNs();
    {
      Scope scope(*bm, kName);
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * i));
    }
    around.emplace_back(before, bm->NowNs());
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
  }
  ASSERT_TRUE(bm->Close().ok());
  auto scopes = Reopen(dir.File("fp.db"))->ListScopes(bm->run_id());
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), around.size());
  const int64_t tolerance_ns = 5'000;
  for (size_t i = 0; i < around.size(); ++i) {
    const ScopeRecord& s = (*scopes)[i];
    ASSERT_TRUE(s.end_ns.has_value());
    EXPECT_GE(s.start_ns, around[i].first - tolerance_ns) << i;
    EXPECT_LE(*s.end_ns, around[i].second + tolerance_ns) << i;
    EXPECT_GE(*s.end_ns - s.start_ns, static_cast<int64_t>(3 * i) * kNsPerMs) << i;
  }
}

TEST(Benchmark, ConcurrentThreadsKeepTheirOwnNesting) {
  TempDir dir;
  auto bm = OpenOrDie(dir.File("fp.db"));
  ASSERT_TRUE(bm);
  static const ScopeName kWork("work"), kPart("part");
  constexpr int kThreads = 4, kIterations = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        Scope work(*bm, kWork);
        Scope part(*bm, kPart);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(bm->Close().ok());
  auto store = Reopen(dir.File("fp.db"));
  auto scopes = store->ListScopes(bm->run_id());
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), size_t{2 * kThreads * kIterations});
  std::map<int64_t, ScopeRecord> by_id;
  for (const auto& s : *scopes) by_id[s.id] = s;
  for (const auto& s : *scopes) {
    if (s.name != "part") continue;
    ASSERT_TRUE(s.parent_id.has_value());
    EXPECT_EQ(by_id.at(*s.parent_id).name, "work");
    EXPECT_EQ(by_id.at(*s.parent_id).thread, s.thread);  // never another thread's scope
  }
}

TEST(Benchmark, TrackersAndArtifacts) {
  TempDir dir;
  auto bm = OpenOrDie(dir.File("fp.db"));
  ASSERT_TRUE(bm);
  for (int epoch = 0; epoch < 5; ++epoch) bm->LogAccuracy(0.5 + 0.1 * epoch, 0.75, epoch);
  ASSERT_TRUE(bm->LogConfusionMatrix("cm", {"cat", "dog"}, {{5, 1}, {2, 7}}).ok());
  EXPECT_EQ(bm->LogConfusionMatrix("bad", {"a", "b"}, {{1, 2}}).code(),
            StatusCode::kInvalidArgument);
  bm->LogHyperparameters("hp", {{"lr", 0.01}, {"batch", 64}}, "loss", 0.3, true);
  EXPECT_EQ(bm->LogJson("doc", "{not json").code(), StatusCode::kInvalidArgument);
  std::ofstream(dir.File("model.bin")) << "abc";
  ASSERT_TRUE(bm->Artifact("model", dir.File("model.bin")).ok());
  EXPECT_EQ(bm->Artifact("missing", dir.File("nope")).code(), StatusCode::kNotFound);
  ASSERT_TRUE(bm->Close().ok());

  auto store = Reopen(dir.File("fp.db"));
  auto values = store->ListValues(bm->run_id());
  ASSERT_TRUE(values.ok());
  std::map<std::string, std::vector<ValueRecord>> by_name;
  for (const auto& v : *values) by_name[v.name].push_back(v);
  EXPECT_EQ(by_name["accuracy"].size(), 5u);
  ASSERT_EQ(by_name["time_to_accuracy"].size(), 1u);  // only the first time 0.75 is reached
  EXPECT_EQ(by_name["time_to_accuracy"][0].step, std::optional<int64_t>(3));  // 0.8 at epoch 3
  EXPECT_GT(*by_name["time_to_accuracy"][0].value, 0);
  auto cm = nlohmann::json::parse(by_name["cm"].at(0).data_json);
  EXPECT_EQ(cm["labels"], nlohmann::json({"cat", "dog"}));
  EXPECT_EQ(cm["matrix"][1][1], 7);
  auto hp = nlohmann::json::parse(by_name["hp"].at(0).data_json);
  EXPECT_EQ(hp["params"]["lr"], 0.01);
  EXPECT_EQ(hp["target"], "loss");
  EXPECT_DOUBLE_EQ(*by_name["hp"].at(0).value, 0.3);
  auto artifacts = store->ListArtifacts(bm->run_id());
  ASSERT_TRUE(artifacts.ok());
  ASSERT_EQ(artifacts->size(), 1u);
  EXPECT_EQ((*artifacts)[0].size, 3);
  EXPECT_EQ((*artifacts)[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Benchmark, JoinsTheEnclosingRun) {
  TempDir dir;
  const std::string db = dir.File("fp.db");
  RunRecord run;
  {
    auto store = OpenStore(db);
    ASSERT_TRUE(store.ok());
    nlohmann::json meta;
    run = NewRunRecord({"outer"}, "outer", "", {}, {}, false, meta, Env::Default());
    ASSERT_TRUE((*store)->CreateRun(run).ok());
  }
  const int64_t t0 = MonotonicNs() - 5 * kNsPerMs;  // the run started 5 ms ago
  setenv("FOOTPRINT_RUN_ID", run.id.c_str(), 1);
  setenv("FOOTPRINT_DB", db.c_str(), 1);
  setenv("FOOTPRINT_T0_NS", std::to_string(t0).c_str(), 1);
  BenchmarkOptions o;
  o.db = dir.File("ignored.db");  // the enclosing run's database wins
  auto bm = Benchmark::Open(o);
  unsetenv("FOOTPRINT_RUN_ID");
  unsetenv("FOOTPRINT_DB");
  unsetenv("FOOTPRINT_T0_NS");
  ASSERT_TRUE(bm.ok()) << bm.status().message();
  EXPECT_TRUE((*bm)->joined());
  EXPECT_EQ((*bm)->run_id(), run.id);
  { Scope s(**bm, ScopeName("joined stage")); }
  (*bm)->Log("metric", 42);
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = Reopen(db);
  auto scopes = store->ListScopes(run.id);
  ASSERT_EQ(scopes->size(), 1u);
  EXPECT_GE((*scopes)[0].start_ns, 5 * kNsPerMs);  // on the enclosing run's timeline
  EXPECT_EQ(store->ListValues(run.id)->size(), 1u);
  EXPECT_EQ(store->GetRun(run.id)->status, RunStatus::kRunning);  // footprint run ends it
  struct stat st;
  EXPECT_NE(stat(dir.File("ignored.db").c_str(), &st), 0);
}

TEST(Benchmark, CrashKeepsWhatWasFlushed) {
  TempDir dir;
  const std::string db = dir.File("fp.db");
  pid_t child = fork();
  if (child == 0) {
    auto bm = OpenOrDie(db, /*flush_ns=*/20'000'000);
    if (!bm) _exit(3);
    static const ScopeName kDone("finished"), kOpen("still open");
    { Scope s(*bm, kDone); }
    bm->BeginScope(kOpen);
    bm->Log("loss", 0.5, 1);
    // Until the flushes (every 20 ms) have stored both scopes and the value, however busy the
    // machine; then a crash, without Close().
    const std::string run_id = bm->run_id();
    auto stored = [&] {
      auto reader = OpenStore(db, {.read_only = true});
      if (!reader.ok()) return false;
      auto scopes = (*reader)->ListScopes(run_id);
      auto values = (*reader)->ListValues(run_id);
      return scopes.ok() && values.ok() && scopes->size() == 2 && values->size() == 1;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!stored() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto store = OpenStore(db);
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns();
  ASSERT_EQ(runs->size(), 1u);
  ASSERT_TRUE(ReconcileInterrupted(**store, *runs, Env::Default()).ok());
  EXPECT_EQ((*runs)[0].status, RunStatus::kInterrupted);
  auto scopes = (*store)->ListScopes((*runs)[0].id);
  ASSERT_EQ(scopes->size(), 2u);
  EXPECT_TRUE((*scopes)[0].end_ns.has_value());
  EXPECT_FALSE((*scopes)[1].end_ns.has_value());  // the process died inside it
  EXPECT_EQ((*store)->ListValues((*runs)[0].id)->size(), 1u);
}

TEST(Sha256, KnownVectors) {
  auto hex = [](const std::string& s) {
    Sha256 h;
    h.Update(s.data(), s.size());
    return h.Hex();
  };
  EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
}  // namespace footprint

namespace footprint {
namespace {

TEST(Benchmark, SupervisionSpeedsUpSamplingWhileHeld) {
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  o.interval_ns = 100'000'000;
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok());
  {
    Supervised step(**bm, ScopeName("supervised step"), {{MetricId::kMemory, 5'000'000}});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = OpenStore(o.db, {.read_only = true});
  std::map<std::string, size_t> counts;
  auto series = (*store)->ListSeries((*bm)->run_id());
  ASSERT_TRUE(series.ok());
  for (const auto& s : *series) counts[s.metric] = (*store)->LoadValues(s.id)->size();
  // ~60 memory samples while held against ~7 cpu samples over the whole 600 ms.
  EXPECT_GT(counts["memory"], 3 * counts["cpu"]) << counts["memory"] << " vs " << counts["cpu"];
  EXPECT_LE(counts["cpu"], 10u);
  EXPECT_EQ((*store)->ListScopes((*bm)->run_id())->size(), 1u);
}

}  // namespace
}  // namespace footprint

namespace footprint {
namespace {

// The writer is held inside a flush by another connection's lock on the database while a
// thread opens scopes: the queue grows to its bound, then scopes are dropped whole (never an
// entry without its exit) and counted; nothing queued is lost once the lock goes.
TEST(Benchmark, ScopesBeyondAFullQueueAreDroppedWholeAndCounted) {
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  o.flush_interval_ns = 10'000'000;
  o.max_queued_scope_events = 1 << 15;
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok());
  { Scope s(**bm, ScopeName("before")); }
  ASSERT_TRUE((*bm)->Flush().ok());
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(o.db.c_str(), &lock), SQLITE_OK);
  // The writers commit every 10 ms: wait for the one in progress, as any other program would
  // (without a busy timeout, BEGIN EXCLUSIVE met one under ASan in a fresh-clone run).
  sqlite3_busy_timeout(lock, 60'000);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  { Scope s(**bm, ScopeName("taken")); }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the writer drains, then waits
  constexpr int kBurst = 20'000;
  {
    Scope outer(**bm, ScopeName("outer"));  // queued: 1 event
    static const ScopeName kName("burst");
    for (int i = 0; i < kBurst; ++i) Scope s(**bm, kName);  // 2 events each while they fit
  }
  ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(lock);
  const std::string run = (*bm)->run_id();
  ASSERT_TRUE((*bm)->Close().ok());

  auto scopes = Reopen(o.db)->ListScopes(run);
  ASSERT_TRUE(scopes.ok());
  std::map<std::string, int> count;
  std::optional<int64_t> outer_id;
  for (const ScopeRecord& r : *scopes) {
    ++count[r.name];
    EXPECT_TRUE(r.end_ns.has_value()) << r.name;  // no half-recorded scope
    if (r.name == "outer") outer_id = r.id;
  }
  // 1 + 2k < 2^15 queued events: the first 16,384 fit.
  constexpr int kKept = 16'384;
  EXPECT_EQ(count["burst"], kKept);
  EXPECT_EQ(count["before"] + count["taken"] + count["outer"], 3);
  for (const ScopeRecord& r : *scopes) {
    if (r.name == "burst") {
      ASSERT_EQ(r.parent_id, outer_id);
    }
  }
  auto reader = Reopen(o.db);
  auto record = reader->GetRun(run);
  ASSERT_TRUE(record.ok());
  auto summary = SummarizeRun(*reader, *record);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->scopes_dropped, static_cast<uint64_t>(kBurst - kKept));
  auto meta = nlohmann::json::parse(summary->run.meta_json);
  EXPECT_EQ(meta["monitor"]["scopes_dropped"], kBurst - kKept);
}

TEST(Benchmark, FlushCommitsBeforeItReturns) {
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  o.flush_interval_ns = 1'000'000'000;  // the periodic flush would come only after 1 s
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok());
  { Scope s(**bm, ScopeName("flushed")); }
  (*bm)->Log("loss", 0.1, 1);
  ASSERT_TRUE((*bm)->Flush().ok());
  auto reader = OpenStore(o.db, {.read_only = true});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->ListScopes((*bm)->run_id())->size(), 1u);
  EXPECT_EQ((*reader)->ListValues((*bm)->run_id())->size(), 1u);
  ASSERT_TRUE((*bm)->Close().ok());
  EXPECT_TRUE((*bm)->Flush().ok());  // after Close: nothing to do, returns at once
}

}  // namespace
}  // namespace footprint

namespace footprint {
namespace {

int64_t VmRssBytes() {
  auto status = ReadWholeFile("/proc/self/status");
  return status.ok() ? FindKeyedValue(*status, "VmRSS").value_or(0) * 1024 : 0;
}

TEST(Benchmark, ShortLivedThreadsKeepTheirScopesButNotTheirMemory) {
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok());
  static const ScopeName kTask("task");
  const int64_t rss_before = VmRssBytes();
  constexpr int kThreads = 200;
  for (int i = 0; i < kThreads; ++i) {
    std::thread([&] { Scope s(**bm, kTask); }).join();
    if (i % 50 == 49) {
      ASSERT_TRUE((*bm)->Flush().ok());  // retired rings are freed here
    }
  }
  ASSERT_TRUE((*bm)->Flush().ok());
#ifndef __SANITIZE_ADDRESS__  // ASan's allocator and shadow memory make RSS meaningless here
  // 200 rings of 512 KiB would be 100 MiB; pages are touched only as used and freed after.
  EXPECT_LT(VmRssBytes() - rss_before, 16 << 20);
#else
  (void)rss_before;
#endif
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = OpenStore(o.db, {.read_only = true});
  auto scopes = (*store)->ListScopes((*bm)->run_id());
  ASSERT_EQ(scopes->size(), size_t{kThreads});
  std::set<int64_t> tids;
  for (const auto& s : *scopes) tids.insert(s.thread);
  EXPECT_GT(tids.size(), 1u);  // kernel thread ids, not one shared slot
}

TEST(Benchmark, TotalsStartAtOpenAndJsonCarriesAValue) {
  const int64_t busy_until = MonotonicNs() + 300 * kNsPerMs;
  volatile uint64_t x = 0;
  while (MonotonicNs() < busy_until) x = x + 1;  // CPU spent before the run: not the run's
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok());
  ASSERT_TRUE((*bm)->LogJson("trial", R"({"optimizer": "adam"})", 2, 0.25).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = OpenStore(o.db, {.read_only = true});
  auto totals = (*store)->LoadTotals((*bm)->run_id());
  EXPECT_LT(totals->at("cpu_user_s") + totals->at("cpu_system_s"), 0.15);
  auto values = (*store)->ListValues((*bm)->run_id());
  ASSERT_EQ(values->size(), 1u);
  EXPECT_EQ((*values)[0].value, std::optional<double>(0.25));
  EXPECT_EQ(nlohmann::json::parse((*values)[0].data_json)["optimizer"], "adam");
}

// The own sampling and the run's clock come from the options' Env: on a driven clock the
// series lands on its exact deadlines and the run lasts exactly what the clock says. (Scope
// edges read the CPU's counter or the monotonic clock themselves: the hot path.)
TEST(Benchmark, OwnSamplingAndTheRunsClockComeFromItsEnv) {
  FakeEnv env;
  testing::TempDir dir;
  BenchmarkOptions o = OwnRun(dir);
  o.env = &env;
  o.metrics = MetricSet().set(static_cast<size_t>(MetricId::kMemoryRssSum));
  o.interval_ns = 100 * kNsPerMs;
  o.flush_interval_ns = 3600 * kNsPerSec;  // flushed at the end: never moves the driven clock
  env.SetHorizon(1000 * kNsPerMs);
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok()) << bm.status().message();
  env.AwaitParked(2);  // the sampler past the horizon, the sample writer at its first flush
  EXPECT_EQ((*bm)->NowNs(), 1000 * kNsPerMs);
  ASSERT_TRUE((*bm)->LogJson("at", "{}", 1, 1.0).ok());
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = Reopen(o.db);
  auto run = store->GetRun((*bm)->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(*run->ended_at_ns - run->started_at_ns, 1000 * kNsPerMs);
  EXPECT_EQ(store->LoadTotals((*bm)->run_id())->at("duration_s"), 1.0);
  auto series = store->ListSeries((*bm)->run_id());
  ASSERT_TRUE(series.ok());
  auto rss = std::find_if(series->begin(), series->end(),
                          [](const SeriesRecord& r) { return r.metric == "memory.rss_sum"; });
  ASSERT_NE(rss, series->end());
  std::vector<int64_t> times;
  ASSERT_TRUE(store->LoadValues(rss->id, &times).ok());
  std::vector<int64_t> expected;
  for (int64_t ms = 0; ms <= 1000; ms += 100) expected.push_back(ms * kNsPerMs);
  EXPECT_EQ(times, expected);
  EXPECT_EQ((*store->ListValues((*bm)->run_id()))[0].t_ns, 1000 * kNsPerMs);
}

// Joining the run of `footprint run` is asked through the Env's variables, and a half-set
// environment is refused with what to do.
TEST(Benchmark, JoiningReadsTheEnvsVariables) {
  FakeEnv env;
  env.vars["FOOTPRINT_RUN_ID"] = "r-1";
  BenchmarkOptions o;
  o.env = &env;
  auto bm = Benchmark::Open(o);
  ASSERT_FALSE(bm.ok());
  EXPECT_EQ(bm.status().message(),
            "FOOTPRINT_RUN_ID is set but FOOTPRINT_DB or FOOTPRINT_T0_NS is not; start the "
            "program with footprint run, or unset FOOTPRINT_RUN_ID");
}

// Runs stored as running, monitored on another machine, each last heartbeated one of
// `silences_s` before `now_ns` (and named "silent-S"): only the clock can tell whether their
// monitor is lost.
std::vector<RunRecord> AnotherMachinesRuns(Store& store, std::initializer_list<int64_t> silences_s,
                                           int64_t now_ns) {
  std::vector<RunRecord> runs;
  for (int64_t silent_s : silences_s) {
    RunRecord& r = runs.emplace_back();
    r.id = "silent-" + std::to_string(silent_s);
    r.name = r.id;
    r.status = RunStatus::kRunning;
    r.started_at_ns = now_ns - 600 * kNsPerSec;
    r.heartbeat_ns = now_ns - silent_s * kNsPerSec;
    r.meta_json = R"({"monitor": {"host": "another-machine", "boot_id": "b", "pid": 1}})";
    EXPECT_TRUE(store.CreateRun(r).ok());
  }
  return runs;
}

// A store of its own, on a driven clock.
class ReconcileInterruptedTest : public ::testing::Test {
 protected:
  FakeEnv env;
  testing::TempDir dir;
  Result<std::unique_ptr<Store>> store = OpenStore(dir.File("fp.db"));
};

// A run monitored on another machine is lost after two minutes without a heartbeat, by the
// Env's wall clock: 119 s is still running, 121 s is interrupted at its last heartbeat.
TEST_F(ReconcileInterruptedTest, AnotherMachinesRunIsLostAfterTwoMinutesOfSilence) {
  ASSERT_TRUE(store.ok());
  const int64_t now = env.RealtimeNs();
  std::vector<RunRecord> runs = AnotherMachinesRuns(**store, {119, 121}, now);
  ASSERT_TRUE(ReconcileInterrupted(**store, runs, env).ok());
  EXPECT_EQ(runs[0].status, RunStatus::kRunning);
  EXPECT_EQ(runs[1].status, RunStatus::kInterrupted);
  EXPECT_EQ(runs[1].ended_at_ns, now - 121 * kNsPerSec);
  EXPECT_EQ((*store)->GetRun("silent-121")->status, RunStatus::kInterrupted);
  EXPECT_EQ((*store)->GetRun("silent-119")->status, RunStatus::kRunning);
}

// The statuses /api/runs answers, by run id.
std::map<std::string, std::string> ServedStatuses(serve::Api& api) {
  serve::ApiResponse response = api.Handle({.path = "/api/runs", .params = {}});
  EXPECT_EQ(response.status, 200) << response.body;
  const auto page = nlohmann::json::parse(response.body);
  std::map<std::string, std::string> statuses;
  for (const auto& row : page["runs"]) statuses[row["id"]] = row["status"];
  return statuses;
}

// serve reconciles on the server's Env, not the real machine's clock: runs of another machine
// whose heartbeats are 1 and 3 minutes older than the FakeEnv's wall clock (2023, years behind
// the real one, by which both would be lost) are running and interrupted, and the first is lost
// once the driven clock has moved on 2 minutes more.
TEST_F(ReconcileInterruptedTest, ServeJudgesAnotherMachinesRunsOnTheServersClock) {
  ASSERT_TRUE(store.ok());
  AnotherMachinesRuns(**store, {60, 180}, env.RealtimeNs());
  serve::StorePool pool(dir.File("fp.db"));
  serve::Api api(pool, /*queue=*/false, env);
  EXPECT_EQ(ServedStatuses(api), (std::map<std::string, std::string>{
                                     {"silent-60", "running"}, {"silent-180", "interrupted"}}));
  env.Advance(120 * kNsPerSec);
  EXPECT_EQ(ServedStatuses(api), (std::map<std::string, std::string>{
                                     {"silent-60", "interrupted"}, {"silent-180", "interrupted"}}));
}

}  // namespace
}  // namespace footprint
