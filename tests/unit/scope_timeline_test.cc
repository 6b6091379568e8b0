// ScopeTimeline: the hot path's readings, turned into CLOCK_MONOTONIC ns, checked against
// clock_gettime read beside them.
#include "api/scope_timeline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"
#include "util/clock.h"

namespace footprint {
namespace {

// A sysfs tree whose clocksource is `source`.
std::string FakeSysRoot(const testing::TempDir& dir, const std::string& source) {
  const std::string folder = dir.path() + "/devices/system/clocksource/clocksource0";
  std::filesystem::create_directories(folder);
  std::ofstream(folder + "/current_clocksource") << source << "\n";
  return dir.path();
}

TEST(ScopeTimeline, UsesTheCounterOnlyWhereTheKernelKeepsItsClockFromIt) {
  testing::TempDir tsc, hpet, none;
#if defined(__x86_64__)
  EXPECT_TRUE(ScopeTimeline::CounterIsTheClock(FakeSysRoot(tsc, "tsc")));
#else
  EXPECT_FALSE(ScopeTimeline::CounterIsTheClock(FakeSysRoot(tsc, "tsc")));
#endif
  EXPECT_FALSE(ScopeTimeline::CounterIsTheClock(FakeSysRoot(hpet, "hpet")));
  EXPECT_FALSE(ScopeTimeline::CounterIsTheClock(none.path()));  // no such file
}

TEST(ScopeTimeline, WithoutTheCounterReadingsAreMonotonicNsAlready) {
  ScopeTimeline timeline(false);
  const int64_t before = MonotonicNs();
  const int64_t reading = ScopeTimeline::Read(timeline.uses_counter());
  EXPECT_GE(reading, before);
  EXPECT_LE(reading, MonotonicNs());
  EXPECT_EQ(timeline.Advance()(reading), reading);
}

// Readings of the counter taken between two clock_gettime calls map between them, batch after
// batch, over segments of very different lengths (from back to back to 60 ms).
TEST(ScopeTimeline, CounterReadingsMapOntoTheMonotonicClockBatchByBatch) {
  if (!ScopeTimeline::CounterIsTheClock("/sys")) GTEST_SKIP() << "the clocksource is not tsc";
  ScopeTimeline timeline(true);
  const int64_t tolerance_ns = 2'000;  // the paired readings' error is tens of ns
  for (int sleep_ms : {0, 1, 20, 60, 0, 5}) {
    struct Probe {
      int64_t before, reading, after;
    };
    std::vector<Probe> batch;
    for (int i = 0; i < 5; ++i) {
      Probe p;
      p.before = MonotonicNs();
      p.reading = ScopeTimeline::Read(true);
      p.after = MonotonicNs();
      batch.push_back(p);
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    }
    const ScopeTimeline::Mapping to_ns = timeline.Advance();
    for (const Probe& p : batch) {
      const int64_t ns = to_ns(p.reading);
      EXPECT_GE(ns, p.before - tolerance_ns) << "after sleeps of " << sleep_ms << " ms";
      EXPECT_LE(ns, p.after + tolerance_ns) << "after sleeps of " << sleep_ms << " ms";
    }
  }
}

}  // namespace
}  // namespace footprint
