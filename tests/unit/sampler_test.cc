// The sampler's schedule: absolute deadlines, per-metric intervals, a last pass on Stop.
#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <thread>

#include "util/clock.h"

namespace footprint {
namespace {

// Emits the time it was called at for each due metric it owns.
class RecordingProbe final : public Probe {
 public:
  std::string_view name() const override { return "recording"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override {
    std::vector<SeriesSpec> s;
    for (MetricId m : {MetricId::kCpu, MetricId::kMemory}) {
      if (wanted.test(static_cast<size_t>(m))) s.push_back({m, "tree"});
    }
    return s;
  }
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override {
    if (due.test(static_cast<size_t>(MetricId::kCpu))) out.Add(0, static_cast<double>(now_ns));
    if (due.test(static_cast<size_t>(MetricId::kMemory))) out.Add(1, static_cast<double>(now_ns));
  }
};

TEST(Sampler, PerMetricIntervalsOnAbsoluteDeadlines) {
  MetricIntervals iv{};
  iv[static_cast<size_t>(MetricId::kCpu)] = 5 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kMemory)] = 50 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kSampleDelay)] = 5 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kSysCpu)] = 5 * kNsPerMs;  // nobody produces it: ignored
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<RecordingProbe>());
  SampleQueue queue(1 << 16);
  Sampler sampler(std::move(probes), iv, queue);
  ASSERT_EQ(sampler.series().size(), 3u);  // cpu, memory, monitor.sample_delay
  EXPECT_EQ(sampler.series()[2].metric, MetricId::kSampleDelay);

  const int64_t t0 = MonotonicNs();
  sampler.Start(t0, {100, 200, 300});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  sampler.Stop();

  std::vector<SamplePoint> pts;
  queue.Drain(pts);
  std::vector<int64_t> cpu_t, mem_t;
  for (const SamplePoint& p : pts) {
    if (p.series_id == 100) cpu_t.push_back(p.t_ns);
    if (p.series_id == 200) mem_t.push_back(p.t_ns);
    // Sample times are relative to t0 and the value is the probe's absolute time.
    if (p.series_id != 300) {
      EXPECT_EQ(static_cast<int64_t>(p.value) - t0, p.t_ns);
    }
  }
  // ~100 cpu passes and ~10 memory passes in 500 ms (plus the final pass). A loaded machine
  // delays the thread and missed deadlines are skipped, so only the upper bounds are tight.
  EXPECT_GE(cpu_t.size(), 25u);
  EXPECT_LE(cpu_t.size(), 102u);
  EXPECT_GE(mem_t.size(), 5u);
  EXPECT_LE(mem_t.size(), 12u);
  EXPECT_GT(cpu_t.size(), 3 * mem_t.size());
  EXPECT_LT(cpu_t.front(), 5 * kNsPerMs);  // the first pass is at t0
  // Absolute deadlines: the k-th memory sample is never before k * 50 ms.
  for (size_t k = 0; k + 1 < mem_t.size(); ++k) {
    EXPECT_GE(mem_t[k], static_cast<int64_t>(k) * 50 * kNsPerMs) << k;
  }
  Sampler::Stats st = sampler.stats();
  EXPECT_EQ(st.passes, cpu_t.size());
  EXPECT_GT(st.cpu_ns, 0);
}

TEST(SampleQueue, DropsWhenFullAndCounts) {
  SampleQueue q(4);
  std::vector<SamplePoint> batch(3, SamplePoint{1, 0, 0});
  q.Push(batch);
  q.Push(batch);
  EXPECT_EQ(q.dropped(), 2u);
  std::vector<SamplePoint> out;
  q.Drain(out);
  EXPECT_EQ(out.size(), 4u);
  q.Push(batch);
  q.Drain(out);
  EXPECT_EQ(out.size(), 3u);
}

}  // namespace
}  // namespace footprint
