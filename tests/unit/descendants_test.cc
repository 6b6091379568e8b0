// CPU of descendants between two snapshots: live workers counted for what they used in
// between, never for what they used before; processes that ended meanwhile left to rusage.
#include "session/descendants.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "footprint/env.h"
#include "util/clock.h"

namespace footprint {
namespace {

TEST(CpuBetween, LiveNewAndEndedProcesses) {
  const std::vector<ProcessCpu> before = {
      {.pid = 10, .start_ticks = 1, .user_s = 5.0, .system_s = 1.0},  // a worker from before
      {.pid = 11, .start_ticks = 1, .user_s = 2.0, .system_s = 0.5},  // ends meanwhile
      {.pid = 12, .start_ticks = 1, .user_s = 1.0, .system_s = 0.0},  // its PID is reused
  };
  const std::vector<ProcessCpu> after = {
      {.pid = 10, .start_ticks = 1, .user_s = 7.5, .system_s = 1.25},  // +2.5, +0.25
      {.pid = 12, .start_ticks = 9, .user_s = 0.5, .system_s = 0.5},   // new: all of it
      {.pid = 13, .start_ticks = 9, .user_s = 1.0, .system_s = 0.0},   // new
  };
  // 11 and the old 12 were waited for: their whole lives are in their parent's account
  // (RUSAGE_CHILDREN for footprint's children), so what they had used before is taken out.
  CpuSeconds used = CpuBetween(before, after);
  EXPECT_DOUBLE_EQ(used.user_s, 2.5 + 0.5 + 1.0 - 2.0 - 1.0);
  EXPECT_DOUBLE_EQ(used.system_s, 0.25 + 0.5 - 0.5);
  EXPECT_DOUBLE_EQ(CpuBetween(after, after).user_s, 0);
}

// A real child that burns CPU between two snapshots, alive at both: counted for the time in
// between, as the kernel accounts it to the child itself.
TEST(DescendantCpu, LiveChildIsCountedForTheTimeBetween) {
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    // Burns `s` seconds of the child's own CPU time, however long a busy machine makes that
    // take (burning wall time gave it 0.08 s of CPU in 0.3 s beside two busy loops).
    auto burn = [](double s) {
      auto cpu_ns = [] {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return NsOf(ts);
      };
      const int64_t end = cpu_ns() + static_cast<int64_t>(s * 1e9);
      volatile uint64_t x = 0;
      while (cpu_ns() < end) x = x + 1;
    };
    burn(0.3);  // before the first snapshot: not the stretch's
    (void)!write(ready[1], "r", 1);
    (void)!read(go[0], &c, 1);
    burn(0.5);
    (void)!write(ready[1], "r", 1);
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto before = DescendantCpu(Env::Default());
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto after = DescendantCpu(Env::Default());
  timespec child_cpu;
  clockid_t clock;
  ASSERT_EQ(clock_getcpuclockid(child, &clock), 0);
  ASSERT_EQ(clock_gettime(clock, &child_cpu), 0);  // the child's own total, now
  ASSERT_EQ(write(go[1], "g", 1), 1);
  waitpid(child, nullptr, 0);
  const double total = static_cast<double>(child_cpu.tv_sec) + child_cpu.tv_nsec / 1e9;
  const double before_s = before.empty() ? 0 : before[0].user_s + before[0].system_s;
  const CpuSeconds used = CpuBetween(before, after);
  // Ticks of 10 ms: the stretch is the child's total less what it had at the first snapshot.
  EXPECT_NEAR(used.user_s + used.system_s, total - before_s, 0.03);
  // The 0.3 s burnt before the first snapshot is left out (it is there, to a 10 ms tick).
  EXPECT_GE(before_s, 0.29);
}

}  // namespace
}  // namespace footprint
