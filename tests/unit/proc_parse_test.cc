// Parsers over checked-in /proc fixtures: odd command names, zombies, truncated files.
#include "util/proc_parse.h"

#include <gtest/gtest.h>

#include <vector>

#include "util/file.h"

namespace footprint {
namespace {

std::string Fixture(const std::string& name) {
  auto text = ReadWholeFile(std::string(FP_FIXTURES) + "/proc/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : "";
}

struct StatCase {
  const char* file;
  bool parses;
  pid_t pid;
  char state;
  pid_t ppid;
  uint64_t utime, stime;
  int64_t cutime, cstime, threads;
  uint64_t starttime;
  int64_t rss_pages;
};

TEST(ParseProcStat, Fixtures) {
  const std::vector<StatCase> cases = {
      {"stat_init.txt", true, 1, 'S', 0, 51, 146, 1008, 521, 13, 23, 2170},
      // "(my (weird) name) x)" must be read up to the LAST ')'.
      {"stat_weird_comm.txt", true, 4242, 'S', 1, 150, 25, 7, 3, 4, 98765, 2560},
      {"stat_zombie.txt", true, 777, 'Z', 4242, 31, 9, 0, 0, 1, 99999, 0},
      {"stat_truncated.txt", false},
  };
  for (const StatCase& c : cases) {
    SCOPED_TRACE(c.file);
    auto st = ParseProcStat(Fixture(c.file));
    ASSERT_EQ(st.has_value(), c.parses);
    if (!c.parses) continue;
    EXPECT_EQ(st->pid, c.pid);
    EXPECT_EQ(st->state, c.state);
    EXPECT_EQ(st->ppid, c.ppid);
    EXPECT_EQ(st->utime, c.utime);
    EXPECT_EQ(st->stime, c.stime);
    EXPECT_EQ(st->cutime, c.cutime);
    EXPECT_EQ(st->cstime, c.cstime);
    EXPECT_EQ(st->num_threads, c.threads);
    EXPECT_EQ(st->starttime, c.starttime);
    EXPECT_EQ(st->rss_pages, c.rss_pages);
  }
}

TEST(ParseProcStat, Malformed) {
  for (const char* text : {"", "garbage", "12 (x", "12 (x) ", "x (y) S 1 2", "12 (x) S a b c"}) {
    EXPECT_FALSE(ParseProcStat(text).has_value()) << text;
  }
}

TEST(ParseProcStat, LiveSelf) {
  auto text = ReadWholeFile("/proc/self/stat");
  ASSERT_TRUE(text.ok());
  auto st = ParseProcStat(*text);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, getpid());
  EXPECT_GE(st->num_threads, 1);
  EXPECT_GT(st->rss_pages, 0);
}

TEST(ParseProcStatm, LiveZombieAndMalformed) {
  auto live = ParseProcStatm("765 441 413 5 0 123 0\n");
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->size, 765);
  EXPECT_EQ(live->resident, 441);
  EXPECT_EQ(live->shared, 413);
  auto zombie = ParseProcStatm("0 0 0 0 0 0 0\n");
  ASSERT_TRUE(zombie.has_value());
  EXPECT_EQ(zombie->size, 0);
  for (const char* text : {"", "765 441", "765 x 413", "-1 2 3"}) {
    EXPECT_FALSE(ParseProcStatm(text).has_value()) << text;
  }
  auto self = ReadWholeFile("/proc/self/statm");
  ASSERT_TRUE(self.ok());
  auto mine = ParseProcStatm(*self);
  ASSERT_TRUE(mine.has_value());
  EXPECT_GT(mine->resident, 0);
  EXPECT_LE(mine->shared, mine->resident);
}

TEST(ParseProcIo, Fixture) {
  auto io = ParseProcIo(Fixture("io.txt"));
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->read_bytes, 0u);
  auto io2 =
      ParseProcIo("rchar: 5\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 7\n");
  ASSERT_TRUE(io2.has_value());
  EXPECT_EQ(io2->read_bytes, 4096u);
  EXPECT_EQ(io2->write_bytes, 8192u);  // not confused with cancelled_write_bytes
  EXPECT_FALSE(ParseProcIo("rchar: 5\n").has_value());
}

TEST(ParseProcStatCpu, Fixture) {
  auto t = ParseProcStatCpu(Fixture("stat_system.txt"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->busy, 10u + 20 + 30 + 6 + 7 + 8);
  EXPECT_EQ(t->total, t->busy + 400 + 50);
  EXPECT_FALSE(ParseProcStatCpu("cpu0 1 2 3 4").has_value());
}

TEST(ParseMemInfo, Fixture) {
  auto m = ParseMemInfo(Fixture("meminfo.txt"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->total_bytes, 24683656ull * 1024);
  EXPECT_EQ(m->available_bytes, 24354812ull * 1024);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 5 kB\n").has_value());
}

TEST(FindKeyedValue, CgroupCpuStat) {
  std::string text = Fixture("cgroup_cpu_stat.txt");
  EXPECT_EQ(FindKeyedValue(text, "usage_usec"), 1500);
  EXPECT_EQ(FindKeyedValue(text, "user_usec"), 1000);
  EXPECT_EQ(FindKeyedValue(text, "system_usec"), 500);
  EXPECT_FALSE(FindKeyedValue(text, "usage").has_value());  // whole words only
}

TEST(ForEachPid, ListsAndEdges) {
  std::vector<pid_t> pids;
  ForEachPid("12 345\n6789\n", [&](pid_t p) { pids.push_back(p); });
  EXPECT_EQ(pids, (std::vector<pid_t>{12, 345, 6789}));
  pids.clear();
  ForEachPid("", [&](pid_t p) { pids.push_back(p); });
  EXPECT_TRUE(pids.empty());
  ForEachPid("42", [&](pid_t p) { pids.push_back(p); });
  EXPECT_EQ(pids, (std::vector<pid_t>{42}));
}

}  // namespace
}  // namespace footprint
