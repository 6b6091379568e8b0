// The local buffer of a server store (store/journal.h): entries kept in order until forgotten,
// all or none per transaction, one process at a time, and records that read back as written.
#include "store/journal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "fake_env.h"
#include "store/journal_records.h"
#include "test_util.h"
#include "util/clock.h"

namespace footprint {
namespace {

using testing::TempDir;

TEST(Journal, KeepsEntriesInOrderUntilForgotten) {
  TempDir dir;
  const std::string path = dir.File("buffers/w.db");  // the folder is made
  auto j = Journal::Create(path, {"w-uuid", "postgresql://db/fp", "host1", 42}, Env::Default());
  ASSERT_TRUE(j.ok()) << j.status().message();
  const SamplePoint samples[] = {{-2, 10, 1.5}, {-2, 20, 2.5}, {-3, 10, -1.0}};
  auto a = (*j)->Add(JournalOp::kCreateRun, "r1", "{}");
  auto b = (*j)->Add(JournalOp::kSamples, "r1", SamplesEntry(7), samples);
  auto c = (*j)->Add(JournalOp::kFinishRun, "r1", "{}");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a + 1, *b);
  EXPECT_EQ(*b + 1, *c);
  // A transaction that fails leaves nothing.
  Status st = (*j)->InTransaction([&]() -> Status {
    EXPECT_TRUE((*j)->Add(JournalOp::kValue, "r1", "{}").ok());
    return InvalidArgument("no");
  });
  EXPECT_FALSE(st.ok());
  auto backlog = (*j)->Backlog();
  ASSERT_TRUE(backlog.ok());
  EXPECT_EQ(backlog->entries, 3);
  EXPECT_EQ(backlog->samples, 3);
  EXPECT_FALSE(backlog->closed);
  EXPECT_EQ(backlog->runs, std::vector<std::string>{"r1"});

  std::vector<JournalEntry> entries;
  ASSERT_TRUE((*j)->Read(*a, 10, 1 << 20, entries).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].op, JournalOp::kSamples);
  std::vector<SamplePoint> back = UnpackSamples(entries[0].samples);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].series_id, -3);
  EXPECT_EQ(back[1].t_ns, 20);
  EXPECT_EQ(back[1].value, 2.5);
  EXPECT_EQ(*ReadSamplesEntry(entries[0].record), 7);

  // A byte budget stops the read after the entry that reaches it.
  ASSERT_TRUE((*j)->Read(0, 10, 1, entries).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].seq, *b);
  ASSERT_TRUE((*j)->Forget(*b).ok());
  ASSERT_TRUE((*j)->Read(0, 10, 1 << 20, entries).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].seq, *c);
  // A new entry never reuses a number, even after the newest were forgotten.
  ASSERT_TRUE((*j)->Forget(*c).ok());
  auto d = (*j)->Add(JournalOp::kClose, "", CloseEntry(false));
  ASSERT_TRUE(d.ok());
  EXPECT_GT(*d, *c);
  EXPECT_TRUE((*j)->Backlog()->closed);
}

TEST(Journal, OneProcessAtATimeAndRemovedWhenDone) {
  TempDir dir;
  const std::string path = dir.File("w.db");
  auto writer = Journal::Create(path, {"w", "postgresql://db/fp", "h", 1}, Env::Default());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Add(JournalOp::kCreateRun, "r", "{}").ok());
  auto other = Journal::Open(path, Env::Default());  // a push while the writer lives
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, nullptr);
  writer->reset();  // the writer ends without sending: the file stays
  auto pusher = Journal::Open(path, Env::Default());
  ASSERT_TRUE(pusher.ok() && *pusher != nullptr);
  EXPECT_EQ((*pusher)->info().writer, "w");
  EXPECT_EQ((*pusher)->info().location, "postgresql://db/fp");
  EXPECT_EQ((*pusher)->Backlog()->entries, 1);
  ASSERT_TRUE((*pusher)->Remove().ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

// An entry that finds the file locked by another connection (the shipper's, mid-transaction)
// waits the store's busy timeout on the Env's clock, then fails: on the driven clock the 30 s
// pass at once and end exactly at the timeout; once the lock is gone the entry is kept.
TEST(Journal, AnEntryWaitsForALockOnTheEnvsClock) {
  TempDir dir;
  const std::string path = dir.File("w.db");
  FakeEnv env;
  env.SetHorizon(INT64_MAX);
  auto j = Journal::Create(path, {"w", "postgresql://db/fp", "h", 1}, env);
  ASSERT_TRUE(j.ok()) << j.status().message();
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_FALSE((*j)->Add(JournalOp::kCreateRun, "r", "{}").ok());
  EXPECT_EQ(env.MonotonicNs(), int64_t{StoreOptions{}.busy_timeout_ms} * kNsPerMs);
  EXPECT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_TRUE((*j)->Add(JournalOp::kCreateRun, "r", "{}").ok());
  EXPECT_EQ((*j)->Backlog()->entries, 1);
}

TEST(Journal, AFileThatIsNotABufferIsRefused) {
  TempDir dir;
  const std::string path = dir.File("junk.db");
  std::ofstream(path) << "not sqlite at all, but long enough to be read as a header......";
  auto j = Journal::Open(path, Env::Default());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("is not a local buffer of footprint"), std::string::npos)
      << j.status().message();
}

TEST(JournalRecords, ReadBackAsWritten) {
  RunRecord run;
  run.id = "r1";
  run.name = "näme";
  run.command = {"python", "train.py", "--lr", "0.1"};
  run.started_at_ns = 123;
  run.ended_at_ns = 456;
  run.status = RunStatus::kFailed;
  run.exit_code = 7;
  run.meta_json = R"({"a":1})";
  const double inf = std::numeric_limits<double>::infinity();
  std::map<std::string, double> totals = {{"cpu_s", 1.25}, {"nan", NAN}, {"inf", -inf}};
  RunRecord run_back;
  std::map<std::string, double> totals_back;
  ASSERT_TRUE(ReadFinishEntry(FinishEntry(run, totals), run_back, totals_back).ok());
  EXPECT_EQ(run_back.name, run.name);
  EXPECT_EQ(run_back.command, run.command);
  EXPECT_EQ(run_back.ended_at_ns, run.ended_at_ns);
  EXPECT_EQ(run_back.status, RunStatus::kFailed);
  EXPECT_EQ(run_back.exit_code, 7);
  EXPECT_EQ(run_back.meta_json, run.meta_json);
  EXPECT_EQ(totals_back["cpu_s"], 1.25);
  EXPECT_TRUE(std::isnan(totals_back["nan"]));
  EXPECT_EQ(totals_back["inf"], -inf);

  auto scope = ReadScopeEntry(ScopeEntry({0, "r1", -4, "epoch", 99, 10, std::nullopt}), "r1");
  ASSERT_TRUE(scope.ok());
  EXPECT_EQ(scope->parent_id, -4);
  EXPECT_EQ(scope->name, "epoch");
  EXPECT_FALSE(scope->end_ns);
  auto value = ReadValueEntry(ValueEntry({"r1", -5, "loss", 3, 11, inf, R"([1,2])"}), "r1");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->scope_id, -5);
  EXPECT_EQ(value->step, 3);
  EXPECT_EQ(value->value, inf);
  EXPECT_EQ(value->data_json, "[1,2]");
  EXPECT_TRUE(ReadCloseEntry(CloseEntry(true)));
  EXPECT_FALSE(ReadCloseEntry(CloseEntry(false)));
  EXPECT_FALSE(ReadRunEntry("[not json").ok());
}

}  // namespace
}  // namespace footprint
