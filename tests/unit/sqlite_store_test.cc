// The SQLite store: round trips, migrations, and the errors users see.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "fake_env.h"
#include "footprint/store.h"
#include "test_util.h"
#include "util/clock.h"

namespace footprint {
namespace {

using testing::TempDir;

RunRecord MakeRun(const std::string& id, const std::string& name) {
  RunRecord r;
  r.id = id;
  r.name = name;
  r.command = {"echo", "hi there"};
  r.cwd = "/tmp";
  r.host = "h";
  r.user = "u";
  r.started_at_ns = 1'000;
  r.meta_json = R"({"tags":{"a":"b"}})";
  return r;
}

void ExecSql(const std::string& path, const char* sql) {
  sqlite3* db;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqliteStore, RoundTrip) {
  TempDir dir;
  auto store = OpenStore(dir.File("fp.db"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  Store& s = **store;
  ASSERT_TRUE(s.CreateRun(MakeRun("r1", "first")).ok());
  EXPECT_EQ(s.CreateRun(MakeRun("r1", "dup")).code(), StatusCode::kInvalidArgument);

  auto cpu = s.EnsureSeries({0, "r1", "cpu", "%", "tree", std::nullopt});
  auto cpu_again = s.EnsureSeries({0, "r1", "cpu", "%", "tree", std::nullopt});
  auto mem = s.EnsureSeries({0, "r1", "memory", "bytes", "tree", std::nullopt});
  ASSERT_TRUE(cpu.ok() && cpu_again.ok() && mem.ok());
  EXPECT_EQ(*cpu, *cpu_again);  // NULL scope still identifies one series
  EXPECT_NE(*cpu, *mem);

  std::vector<SamplePoint> pts = {{*cpu, 10, 1.5}, {*cpu, 20, 2.5}, {*mem, 10, 100}};
  ASSERT_TRUE(s.Append("r1", pts, 5'000).ok());
  ASSERT_TRUE(s.Append("r1", std::vector<SamplePoint>{{*cpu, 20, 3.5}}, 6'000).ok());

  std::vector<int64_t> times;
  auto values = s.LoadValues(*cpu, &times);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<double>{1.5, 3.5}));  // same (series, t) keeps the last
  EXPECT_EQ(times, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(*s.LastSampleTime("r1"), std::optional<int64_t>(20));
  EXPECT_EQ(s.GetRun("r1")->heartbeat_ns, std::optional<int64_t>(6'000));

  RunRecord done = MakeRun("r1", "first");
  done.status = RunStatus::kFailed;
  done.exit_code = 3;
  done.started_at_ns = 1'500;
  done.ended_at_ns = 9'000;
  done.meta_json = R"({"x":1})";
  ASSERT_TRUE(s.FinishRun(done, {{"duration_s", 0.5}, {"cpu_user_s", 0.25}}).ok());
  auto back = s.GetRun("r1");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status, RunStatus::kFailed);
  EXPECT_EQ(back->exit_code, std::optional<int>(3));
  EXPECT_EQ(back->started_at_ns, 1'500);
  EXPECT_EQ(back->ended_at_ns, std::optional<int64_t>(9'000));
  EXPECT_EQ(back->command, (std::vector<std::string>{"echo", "hi there"}));
  EXPECT_EQ(back->meta_json, R"({"x":1})");
  auto totals = s.LoadTotals("r1");
  ASSERT_TRUE(totals.ok());
  EXPECT_EQ(totals->at("cpu_user_s"), 0.25);
  EXPECT_EQ(s.GetRun("nope").status().code(), StatusCode::kNotFound);
}

TEST(SqliteStore, ReopenAndListOldestFirst) {
  TempDir dir;
  {
    auto s = OpenStore(dir.File("fp.db"));
    ASSERT_TRUE(s.ok());
    RunRecord b = MakeRun("b", "second");
    b.started_at_ns = 2'000;
    ASSERT_TRUE((*s)->CreateRun(b).ok());
    ASSERT_TRUE((*s)->CreateRun(MakeRun("a", "first")).ok());
  }
  auto s = OpenStore(dir.File("fp.db"), {.read_only = true});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto runs = (*s)->ListRuns();
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].id, "a");
  EXPECT_EQ((*runs)[1].id, "b");
  EXPECT_FALSE((*s)->CreateRun(MakeRun("c", "x")).ok());  // read-only
}

TEST(SqliteStore, UsesWal) {
  TempDir dir;
  ASSERT_TRUE(OpenStore(dir.File("fp.db")).ok());
  sqlite3* db;
  ASSERT_EQ(sqlite3_open(dir.File("fp.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(SqliteStore, RefusesNewerSchema) {
  TempDir dir;
  ASSERT_TRUE(OpenStore(dir.File("fp.db")).ok());
  ExecSql(dir.File("fp.db"), "PRAGMA user_version = 99");
  auto s = OpenStore(dir.File("fp.db"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDatabase);
  EXPECT_NE(s.status().message().find("newer footprint (schema v99"), std::string::npos)
      << s.status().message();
}

TEST(SqliteStore, RefusesGarbageAndForeignDatabases) {
  TempDir dir;
  std::ofstream(dir.File("garbage.db")) << std::string(8192, 'x');
  auto g = OpenStore(dir.File("garbage.db"));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kDatabase);
  EXPECT_NE(g.status().message().find("not a footprint database"), std::string::npos)
      << g.status().message();

  ExecSql(dir.File("other.db"), "CREATE TABLE t(x)");
  auto o = OpenStore(dir.File("other.db"));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not a footprint one"), std::string::npos);
}

TEST(SqliteStore, ClearErrorsForUnwritableAndMissing) {
  TempDir dir;
  auto missing_dir = OpenStore(dir.File("no/such/dir/fp.db"));
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_EQ(missing_dir.status().code(), StatusCode::kDatabase);
  EXPECT_NE(missing_dir.status().message().find("folder exists and is writable"), std::string::npos)
      << missing_dir.status().message();

  auto missing = OpenStore(dir.File("absent.db"), {.read_only = true});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kDatabase);
  EXPECT_NE(missing.status().message().find("no database at"), std::string::npos);

  auto folder = OpenStore(dir.path());
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("is a folder"), std::string::npos);
}

TEST(SqliteStore, ConcurrentWritersLoseNothing) {
  TempDir dir;
  // All writers also create the database at the same moment: schema creation must serialize.
  constexpr int kWriters = 8, kBatches = 50, kPerBatch = 200;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto s = OpenStore(dir.File("fp.db"));
      ASSERT_TRUE(s.ok()) << s.status().message();
      std::string id = "run" + std::to_string(w);
      ASSERT_TRUE((*s)->CreateRun(MakeRun(id, id)).ok());
      auto series = (*s)->EnsureSeries({0, id, "cpu", "%", "tree", std::nullopt});
      ASSERT_TRUE(series.ok());
      std::vector<SamplePoint> batch(kPerBatch);
      for (int b = 0; b < kBatches; ++b) {
        for (int i = 0; i < kPerBatch; ++i) batch[i] = {*series, b * kPerBatch + i, 1.0 * i};
        ASSERT_TRUE((*s)->Append(id, batch, b).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto s = OpenStore(dir.File("fp.db"), {.read_only = true});
  ASSERT_TRUE(s.ok());
  for (int w = 0; w < kWriters; ++w) {
    auto series = (*s)->ListSeries("run" + std::to_string(w));
    ASSERT_TRUE(series.ok());
    ASSERT_EQ(series->size(), 1u);
    EXPECT_EQ((*s)->LoadValues((*series)[0].id)->size(), size_t{kBatches * kPerBatch});
  }
}

// Another connection that holds the write lock, as a second footprint writing would.
class WriteLock {
 public:
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~WriteLock() { sqlite3_close(db_); }
  void Release() { EXPECT_EQ(sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK); }

 private:
  sqlite3* db_ = nullptr;
};

// A write that finds the database locked waits busy_timeout_ms on the Env's clock, then fails
// saying so: on the driven clock the 30 s pass at once, and end exactly at the timeout.
TEST(SqliteStore, BusyWaitGivesUpAtItsTimeoutOnTheEnvsClock) {
  TempDir dir;
  const std::string path = dir.File("fp.db");
  FakeEnv env;
  env.SetHorizon(INT64_MAX);
  auto store = OpenStore(path, {.busy_timeout_ms = 30'000, .env = &env});
  ASSERT_TRUE(store.ok()) << store.status().message();
  WriteLock other(path);
  const int64_t before = env.MonotonicNs();
  const Status st = (*store)->CreateRun(MakeRun("r1", "late"));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("locked"), std::string::npos) << st.message();
  EXPECT_EQ(env.MonotonicNs() - before, 30 * kNsPerSec);
  other.Release();
  EXPECT_TRUE((*store)->CreateRun(MakeRun("r1", "late")).ok());
}

// A write waiting for a lock goes through at its first retry after the lock is released: the
// wait is parked on the driven clock while the lock is held and ends 1 ms (the first back-off)
// after the refusal.
TEST(SqliteStore, BusyWaitEndsAtTheRetryAfterTheLockIsReleased) {
  TempDir dir;
  const std::string path = dir.File("fp.db");
  FakeEnv env;
  auto store = OpenStore(path, {.env = &env});
  ASSERT_TRUE(store.ok()) << store.status().message();
  WriteLock other(path);
  Status st = InternalError("not written");
  std::thread writer([&] { st = (*store)->CreateRun(MakeRun("r1", "waits")); });
  env.AwaitParked();  // refused, and waiting beyond the horizon (0)
  other.Release();
  env.SetHorizon(INT64_MAX);
  writer.join();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(env.MonotonicNs(), kNsPerMs);
}

// 16 processes create the same new database at the same moment, over and over (the step that
// switches it to WAL answers "locked" at once, without SQLite's busy handler): every one opens
// it and stores its run. FP_CREATE_ROUNDS overrides the 300 rounds (1,000 by hand).
TEST(SqliteStore, ConcurrentCreationBySixteenProcessesNeverFails) {
  constexpr int kProcesses = 16;
  const char* rounds_var = std::getenv("FP_CREATE_ROUNDS");
  const int rounds = rounds_var ? std::atoi(rounds_var) : 300;
  TempDir dir;
  int failed_rounds = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string path = dir.File("fp" + std::to_string(round) + ".db");
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        (void)!::read(go[0], &c, 1);  // released together: end of file
        auto s = OpenStore(path);
        if (!s.ok()) {
          std::fprintf(stderr, "open: %s\n", s.status().message().c_str());
          _exit(1);
        }
        const std::string id = "run" + std::to_string(p);
        Status st = (*s)->CreateRun(MakeRun(id, id));
        if (!st.ok()) std::fprintf(stderr, "create run: %s\n", st.message().c_str());
        _exit(st.ok() ? 0 : 2);
      }
      children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    failed_rounds += failed > 0;
    auto s = OpenStore(path, {.read_only = true});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ((*s)->ListRuns()->size(), size_t{kProcesses} - failed);
  }
  EXPECT_EQ(failed_rounds, 0) << "of " << rounds;
}

}  // namespace
}  // namespace footprint
