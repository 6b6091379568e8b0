// The sampler's schedule: absolute deadlines, per-metric intervals, a last pass on Stop.
#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "fake_env.h"
#include "util/clock.h"

namespace footprint {
namespace {

// Emits the time it was called at for each due metric it owns (cpu and memory, or `owned`).
class RecordingProbe final : public Probe {
 public:
  explicit RecordingProbe(std::vector<MetricId> owned = {MetricId::kCpu, MetricId::kMemory})
      : owned_(std::move(owned)) {}
  std::string_view name() const override { return "recording"; }
  std::vector<SeriesSpec> Series(const MetricSet& wanted) override {
    std::vector<SeriesSpec> s;
    for (MetricId m : owned_) {
      if (wanted.test(static_cast<size_t>(m))) s.push_back({m, "tree"});
    }
    emitted_ = s;
    return s;
  }
  void Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) override {
    for (size_t i = 0; i < emitted_.size(); ++i) {
      if (due.test(static_cast<size_t>(emitted_[i].metric))) {
        out.Add(static_cast<int>(i), static_cast<double>(now_ns));
      }
    }
  }

 private:
  std::vector<MetricId> owned_;
  std::vector<SeriesSpec> emitted_;
};

// The schedule on a clock the test drives: exactly the passes the deadlines call for.
TEST(Sampler, PerMetricIntervalsOnAbsoluteDeadlines) {
  FakeEnv env;
  env.SetHorizon(500 * kNsPerMs);
  MetricIntervals iv{};
  iv[static_cast<size_t>(MetricId::kCpu)] = 5 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kMemory)] = 50 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kSampleDelay)] = 5 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kSysCpu)] = 5 * kNsPerMs;  // nobody produces it: ignored
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<RecordingProbe>());
  SampleQueue queue(1 << 16);
  Sampler sampler(env, std::move(probes), iv, queue);
  ASSERT_EQ(sampler.series().size(), 3u);  // cpu, memory, monitor.sample_delay
  EXPECT_EQ(sampler.series()[2].metric, MetricId::kSampleDelay);

  sampler.Start(0, {100, 200, 300});
  env.AwaitParked();  // every pass up to 500 ms ran; the next waits for 505 ms
  sampler.Stop();     // at 500 ms: every series has its last sample already

  std::vector<SamplePoint> pts;
  queue.Drain(pts);
  std::vector<int64_t> cpu_t, mem_t;
  for (const SamplePoint& p : pts) {
    if (p.series_id == 100) cpu_t.push_back(p.t_ns);
    if (p.series_id == 200) mem_t.push_back(p.t_ns);
    if (p.series_id == 300) {
      EXPECT_EQ(p.value, 0.0);  // never late on a driven clock
    }
  }
  ASSERT_EQ(cpu_t.size(), 101u);  // 0, 5, ..., 500 ms
  ASSERT_EQ(mem_t.size(), 11u);   // 0, 50, ..., 500 ms
  for (size_t k = 0; k < cpu_t.size(); ++k) EXPECT_EQ(cpu_t[k], int64_t(k) * 5 * kNsPerMs);
  for (size_t k = 0; k < mem_t.size(); ++k) EXPECT_EQ(mem_t[k], int64_t(k) * 50 * kNsPerMs);
  Sampler::Stats st = sampler.stats();
  EXPECT_EQ(st.passes, 101u);
  EXPECT_EQ(st.missed_deadlines, 0u);
}

// A probe of cpu whose pass at now_ns does `work(now_ns)`: takes driven time or CPU.
class WorkingProbe final : public Probe {
 public:
  explicit WorkingProbe(std::function<void(int64_t)> work) : work_(std::move(work)) {}
  std::string_view name() const override { return "working"; }
  std::vector<SeriesSpec> Series(const MetricSet&) override { return {{MetricId::kCpu, "tree"}}; }
  void Sample(int64_t now_ns, const MetricSet&, SampleOut& out) override {
    work_(now_ns);
    out.Add(0, static_cast<double>(now_ns));
  }

 private:
  std::function<void(int64_t)> work_;
};

// Intervals of 10 ms for `metrics`, none for the others.
MetricIntervals EveryTenMs(std::initializer_list<MetricId> metrics) {
  MetricIntervals iv{};
  for (MetricId m : metrics) iv[static_cast<size_t>(m)] = 10 * kNsPerMs;
  return iv;
}

// Runs `sampler` from t0 = 0 until the driven clock stands at its horizon, stops it, and returns
// what it queued.
std::vector<SamplePoint> RunToTheHorizon(FakeEnv& env, Sampler& sampler, SampleQueue& queue,
                                         std::vector<int64_t> series_ids) {
  sampler.Start(0, std::move(series_ids));
  env.AwaitParked();
  sampler.Stop();
  std::vector<SamplePoint> pts;
  queue.Drain(pts);
  return pts;
}

// An overrun skips the deadlines it missed (counted) instead of bunching passes up, and the
// schedule stays on t0 + k * interval.
TEST(Sampler, OverrunSkipsMissedDeadlines) {
  FakeEnv env;
  env.SetHorizon(50 * kNsPerMs);
  MetricIntervals iv{};
  iv[static_cast<size_t>(MetricId::kCpu)] = 5 * kNsPerMs;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<WorkingProbe>([&](int64_t now_ns) {
    if (now_ns == 20 * kNsPerMs) env.Advance(12 * kNsPerMs);  // a pass that takes 12 ms
  }));
  SampleQueue queue(1 << 16);
  Sampler sampler(env, std::move(probes), iv, queue);
  std::vector<int64_t> t;
  for (const SamplePoint& p : RunToTheHorizon(env, sampler, queue, {1})) {
    t.push_back(p.t_ns / kNsPerMs);
  }
  // The pass at 20 ms ends at 32 ms: the deadline of 25 ms is served late, at 32 ms; 30 ms
  // is skipped (counted); then 35, 40, ... on the original grid.
  EXPECT_EQ(t, (std::vector<int64_t>{0, 5, 10, 15, 20, 32, 35, 40, 45, 50}));
  EXPECT_EQ(sampler.stats().missed_deadlines, 1u);
}

// The sampler's own cost is the CPU its passes took on the Env's thread clock: each pass's
// monitor.sample_cost and the thread's total, exactly.
TEST(Sampler, OwnCostIsTheCpuItsPassesTookOnTheEnvsClock) {
  FakeEnv env;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<WorkingProbe>(
      [&](int64_t) { env.AdvanceCpu(CLOCK_THREAD_CPUTIME_ID, 30'000); }));  // 30 us a pass
  SampleQueue queue(1 << 16);
  Sampler sampler(env, std::move(probes), EveryTenMs({MetricId::kCpu, MetricId::kSampleCost}),
                  queue);
  env.SetHorizon(100 * kNsPerMs);
  ASSERT_EQ(sampler.series().size(), 2u);
  EXPECT_EQ(sampler.series()[1].metric, MetricId::kSampleCost);
  std::vector<double> costs_us;
  for (const SamplePoint& p : RunToTheHorizon(env, sampler, queue, {1, 2})) {
    if (p.series_id == 2) costs_us.push_back(p.value);
  }
  EXPECT_EQ(costs_us, std::vector<double>(11, 30.0));  // 0, 10, ..., 100 ms
  EXPECT_EQ(sampler.stats().cpu_ns, 11 * 30'000);
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

// Emits cpu at every pass it is due in, memory at every fourth: a costly read spaced out.
class SpacingProbe final : public Probe {
 public:
  std::string_view name() const override { return "spacing"; }
  std::vector<SeriesSpec> Series(const MetricSet&) override {
    return {{MetricId::kCpu, "tree"}, {MetricId::kMemory, "tree"}};
  }
  void Sample(int64_t now_ns, const MetricSet&, SampleOut& out) override {
    out.Add(0, static_cast<double>(now_ns));
    if (passes_++ % 4 == 0) out.Add(1, static_cast<double>(now_ns));
  }

 private:
  int passes_ = 0;
};

// What each series achieved, against what was asked: the figures `show` reports.
TEST(Sampler, SeriesRatesTellTheAchievedIntervalOfEachSeries) {
  FakeEnv env;
  env.SetHorizon(100 * kNsPerMs);
  MetricIntervals iv{};
  iv[static_cast<size_t>(MetricId::kCpu)] = 5 * kNsPerMs;
  iv[static_cast<size_t>(MetricId::kMemory)] = 5 * kNsPerMs;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<SpacingProbe>());
  SampleQueue queue(1 << 16);
  Sampler sampler(env, std::move(probes), iv, queue);
  sampler.Start(0, {100, 200});
  env.AwaitParked();  // passes at 0, 5, ..., 100 ms
  sampler.Stop();

  std::vector<Sampler::SeriesRate> rates = sampler.SeriesRates();
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_EQ(rates[0].series.metric, MetricId::kCpu);
  EXPECT_EQ(rates[0].asked_interval_ns, 5 * kNsPerMs);
  EXPECT_EQ(rates[0].achieved_interval_ns, 5 * kNsPerMs);
  EXPECT_EQ(rates[0].samples, 21u);
  EXPECT_EQ(rates[1].series.metric, MetricId::kMemory);
  EXPECT_EQ(rates[1].achieved_interval_ns, 20 * kNsPerMs);  // 0, 20, ..., 100 ms
  EXPECT_EQ(rates[1].samples, 6u);
  EXPECT_EQ(rates[1].due_passes, 21u);
}

// A kernel buffer's stand-in: `cpu` sampled every ms, emitted with those times when drained.
class BufferedProbe final : public Probe {
 public:
  std::string_view name() const override { return "buffered"; }
  std::vector<SeriesSpec> Series(const MetricSet&) override { return {{MetricId::kCpu, "tree"}}; }
  MetricSet Buffered() const override {
    MetricSet m;
    m.set(static_cast<size_t>(MetricId::kCpu));
    return m;
  }
  void Sample(int64_t now_ns, const MetricSet&, SampleOut& out) override {
    ++drains;
    for (; next_ns_ <= now_ns; next_ns_ += kNsPerMs) out.AddAt(0, next_ns_, 1.0);
  }
  int drains = 0;

 private:
  int64_t next_ns_ = kNsPerMs;
};

// A buffered metric wakes the sampler at the drain interval, and its series has the kernel's
// times: one sample per ms, the achieved interval the asked one.
TEST(Sampler, BufferedMetricIsDrainedAFewTimesASecondWithItsOwnTimes) {
  FakeEnv env;
  env.SetHorizon(1000 * kNsPerMs);
  MetricIntervals iv{};
  iv[static_cast<size_t>(MetricId::kCpu)] = kNsPerMs;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<BufferedProbe>());
  auto* probe = static_cast<BufferedProbe*>(probes.back().get());
  SampleQueue queue(1 << 16);
  Sampler sampler(env, std::move(probes), iv, queue);
  sampler.Start(0, {100});
  sampler.SetInterval(MetricId::kCpu, 5 * kNsPerMs);  // fixed by the kernel's buffer: ignored
  env.AwaitParked();                                  // drains at 0, 250, 500, 750, 1000 ms
  sampler.Stop();                                     // and the last one
  EXPECT_EQ(sampler.stats().passes, 6u);
  EXPECT_EQ(probe->drains, 6);
  std::vector<SamplePoint> pts;
  queue.Drain(pts);
  ASSERT_EQ(pts.size(), 1000u);
  for (size_t k = 0; k < pts.size(); ++k) EXPECT_EQ(pts[k].t_ns, int64_t(k + 1) * kNsPerMs);
  std::vector<Sampler::SeriesRate> rates = sampler.SeriesRates();
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_EQ(rates[0].asked_interval_ns, kNsPerMs);
  EXPECT_EQ(rates[0].achieved_interval_ns, kNsPerMs);
}

// Beside a kernel buffer, the other metrics wake the thread every 10 ms at most, unless given
// an interval of their own; SeriesRate says how often each woke.
TEST(Sampler, BesideABufferOthersWakeEvery10msUnlessExact) {
  for (const bool exact : {false, true}) {
    FakeEnv env;
    env.SetHorizon(1000 * kNsPerMs);
    MetricIntervals iv{};
    iv[static_cast<size_t>(MetricId::kCpu)] = kNsPerMs;
    iv[static_cast<size_t>(MetricId::kMemory)] = kNsPerMs;
    std::vector<std::unique_ptr<Probe>> probes;
    probes.push_back(std::make_unique<BufferedProbe>());
    probes.push_back(std::make_unique<RecordingProbe>(std::vector<MetricId>{MetricId::kMemory}));
    SampleQueue queue(1 << 16);
    MetricSet named;
    named.set(static_cast<size_t>(MetricId::kMemory), exact);
    Sampler sampler(env, std::move(probes), iv, queue, named);
    sampler.Start(0, {100, 200});
    env.AwaitParked();
    sampler.Stop();
    std::vector<SamplePoint> pts;
    queue.Drain(pts);
    const auto memory = std::count_if(pts.begin(), pts.end(),
                                      [](const SamplePoint& p) { return p.series_id == 200; });
    EXPECT_EQ(memory, exact ? 1001 : 101);  // every ms from 0 to 1000 ms, or every 10 ms
    EXPECT_EQ(sampler.stats().passes, exact ? 1002u : 102u);  // and the last pass
    std::vector<Sampler::SeriesRate> rates = sampler.SeriesRates();
    ASSERT_EQ(rates.size(), 2u);
    EXPECT_EQ(rates[0].achieved_interval_ns, kNsPerMs);  // the buffer's own times
    EXPECT_EQ(rates[1].asked_interval_ns, kNsPerMs);
    EXPECT_EQ(rates[1].woken_interval_ns, exact ? kNsPerMs : 10 * kNsPerMs);
    EXPECT_EQ(rates[1].achieved_interval_ns, exact ? kNsPerMs : 10 * kNsPerMs);
  }
}

}  // namespace
}  // namespace footprint
