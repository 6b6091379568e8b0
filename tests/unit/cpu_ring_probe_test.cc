// The CPU ring probe's timeline: the count between the kernel's samples.
#include "probe/cpu_ring_probe.h"

#include <gtest/gtest.h>

#include "util/clock.h"

namespace footprint {
namespace {

// A steady run between two samples is exact; past the last sample the rest of the count comes
// at once (the run stopped before the drain read it), before the first one as late as it can.
TEST(CpuCountTimeline, PlacesTheCountNextToTheKernelsSamples) {
  CpuCountTimeline t(1);
  EXPECT_EQ(t.KnownUntil(), INT64_MIN);
  t.Add(0, 0, 0, /*sampled=*/false);                        // t0, read
  t.Add(0, 10 * kNsPerMs, 1 * kNsPerMs, /*sampled=*/true);  // ran 1 ms somewhere before 10 ms
  t.Add(0, 11 * kNsPerMs, 2 * kNsPerMs, /*sampled=*/true);  // and on, steadily
  t.Add(0, 50 * kNsPerMs, 2 * kNsPerMs + 300'000, /*sampled=*/false);  // 0.3 ms more, then nothing
  t.Add(0, 40 * kNsPerMs, 99 * kNsPerMs, /*sampled=*/true);  // not after the last point: ignored
  EXPECT_EQ(t.KnownUntil(), 50 * kNsPerMs);
  EXPECT_DOUBLE_EQ(t.SumAt(9 * kNsPerMs), 0.0);  // late: the run began at 9 ms
  EXPECT_DOUBLE_EQ(t.SumAt(9 * kNsPerMs + 500'000), 500'000.0);
  EXPECT_DOUBLE_EQ(t.SumAt(10 * kNsPerMs + 500'000), 1.5 * kNsPerMs);  // linear between samples
  EXPECT_DOUBLE_EQ(t.SumAt(11 * kNsPerMs + 100'000),
                   2.1 * kNsPerMs);  // early: right after the sample
  EXPECT_DOUBLE_EQ(t.SumAt(20 * kNsPerMs), 2.3 * kNsPerMs);
  EXPECT_DOUBLE_EQ(t.SumAt(50 * kNsPerMs), 2.3 * kNsPerMs);
  EXPECT_DOUBLE_EQ(t.Latest(), 2.3 * kNsPerMs);
}

// The sum over CPUs, known only up to the CPU read last.
TEST(CpuCountTimeline, SumsTheCpusUpToTheEarliestLastPoint) {
  CpuCountTimeline t(2);
  t.Add(0, 0, 0, false);
  t.Add(1, 0, 0, false);
  t.Add(0, 4 * kNsPerMs, 4 * kNsPerMs, true);
  EXPECT_EQ(t.KnownUntil(), 0);
  t.Add(1, 2 * kNsPerMs, 1 * kNsPerMs, false);
  EXPECT_EQ(t.KnownUntil(), 2 * kNsPerMs);
  EXPECT_DOUBLE_EQ(t.SumAt(2 * kNsPerMs), 2 * kNsPerMs + 1 * kNsPerMs);
}

}  // namespace
}  // namespace footprint
