#include "sampler/sampler.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>

namespace footprint {

void Sampler::SleepUntil(int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(wake_mu_);
  env_.WaitUntil(wake_cv_, lock, deadline_ns, [&] {
    return stop_.load(std::memory_order_acquire) || reschedule_.load(std::memory_order_acquire);
  });
}

void Sampler::SetInterval(MetricId metric, int64_t interval_ns) {
  if (interval_ns <= 0 || buffered_.test(static_cast<size_t>(metric))) return;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    requested_[static_cast<size_t>(metric)].store(interval_ns, std::memory_order_relaxed);
    reschedule_.store(true, std::memory_order_release);
  }
  wake_cv_.notify_all();
}

class Sampler::Batch final : public SampleOut {
 public:
  Batch(std::vector<SamplePoint>& points, const std::vector<int64_t>& ids,
        std::vector<Tally>& tallies, int first, int64_t t0, int64_t now)
      : points_(points), ids_(ids), tallies_(tallies), first_(first), t0_(t0), now_(now) {}
  void Add(int series, double value) override { AddAt(series, now_, value); }
  void AddAt(int series, int64_t at_ns, double value) override {
    const auto index = static_cast<size_t>(first_ + series);
    const int64_t t = at_ns - t0_;
    points_.push_back({ids_[index], t, value});
    Tally& tally = tallies_[index];
    if (tally.samples++ == 0) tally.first_t = t;
    tally.last_t = t;
  }

 private:
  std::vector<SamplePoint>& points_;
  const std::vector<int64_t>& ids_;
  std::vector<Tally>& tallies_;
  int first_;
  int64_t t0_, now_;
};

Sampler::Sampler(Env& env, std::vector<std::unique_ptr<Probe>> probes,
                 const MetricIntervals& intervals, SampleQueue& queue, MetricSet exact)
    : env_(env), intervals_(intervals), queue_(queue) {
  MetricSet wanted;
  for (size_t m = 0; m < kMetricCount; ++m) wanted.set(m, intervals[m] > 0);
  for (auto& p : probes) {
    std::vector<SeriesSpec> specs = p->Series(wanted);
    ProbeSlot slot{std::move(p), static_cast<int>(series_.size()), {}};
    for (const SeriesSpec& s : specs) {
      slot.metrics.set(static_cast<size_t>(s.metric));
      series_.push_back(s);
    }
    buffered_ |= slot.probe->Buffered() & slot.metrics;
    probes_.push_back(std::move(slot));
  }
  if (wanted.test(static_cast<size_t>(MetricId::kSampleCost))) {
    cost_series_ = static_cast<int>(series_.size());
    series_.push_back({MetricId::kSampleCost, "monitor"});
  }
  if (wanted.test(static_cast<size_t>(MetricId::kSampleDelay))) {
    delay_series_ = static_cast<int>(series_.size());
    series_.push_back({MetricId::kSampleDelay, "monitor"});
  }
  // Metrics nobody can produce here are switched off so they do not wake the thread.
  MetricSet produced;
  for (const SeriesSpec& s : series_) produced.set(static_cast<size_t>(s.metric));
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (!produced.test(m)) intervals_[m] = 0;
    wake_[m] = intervals_[m];
    if (buffered_.test(m)) {
      wake_[m] = std::max(wake_[m], kBufferDrainIntervalNs);
    } else if (buffered_.any() && !exact.test(m) && wake_[m] > 0) {
      wake_[m] = std::max(wake_[m], kBufferedCompanionIntervalNs);
    }
  }
  batch_.reserve(series_.size());
  tallies_.resize(series_.size());
}

std::vector<Probe*> Sampler::probes() const {
  std::vector<Probe*> out;
  for (const ProbeSlot& slot : probes_) out.push_back(slot.probe.get());
  return out;
}

Sampler::~Sampler() {
  if (thread_.joinable()) Stop();
}

void Sampler::Begin(int64_t t0_ns, std::vector<int64_t> series_ids) {
  t0_ns_ = t0_ns;
  series_ids_ = std::move(series_ids);
  for (ProbeSlot& slot : probes_) slot.probe->Begin(t0_ns);
}

void Sampler::Start(int64_t t0_ns, std::vector<int64_t> series_ids) {
  Begin(t0_ns, std::move(series_ids));
  StartThread();
}

int64_t Sampler::FirstPass() {
  MetricSet due;
  int64_t next = INT64_MAX;
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (wake_[m] <= 0) continue;
    due.set(m);
    next = std::min(next, t0_ns_ + wake_[m]);
  }
  if (due.any()) ScheduledPass(t0_ns_, due, env_.MonotonicNs());
  return next;
}

void Sampler::StartThread() {
  thread_ = std::thread([this] { Loop(); });
}

void Sampler::ScheduledPass(int64_t deadline_ns, const MetricSet& due, int64_t now) {
  Pass(deadline_ns, due, /*measure_self=*/true);
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (!due.test(m)) continue;
    last_pass_ns_[m] = now;
    ++passes_of_[m];
  }
}

void Sampler::Pass(int64_t deadline_ns, const MetricSet& due, bool measure_self) {
  int64_t cpu_before = measure_self ? env_.CpuNs(CLOCK_THREAD_CPUTIME_ID) : 0;
  int64_t now = env_.MonotonicNs();
  int64_t t = now - t0_ns_;
  batch_.clear();
  for (ProbeSlot& slot : probes_) {
    if ((slot.metrics & due).none()) continue;
    Batch out(batch_, series_ids_, tallies_, slot.first_series, t0_ns_, now);
    slot.probe->Sample(now, due, out);
  }
  if (measure_self) {
    if (cost_series_ >= 0 && due.test(static_cast<size_t>(MetricId::kSampleCost))) {
      double cost_us = static_cast<double>(env_.CpuNs(CLOCK_THREAD_CPUTIME_ID) - cpu_before) / 1e3;
      batch_.push_back({series_ids_[static_cast<size_t>(cost_series_)], t, cost_us});
    }
    if (delay_series_ >= 0 && due.test(static_cast<size_t>(MetricId::kSampleDelay))) {
      double delay_us = static_cast<double>(now - deadline_ns) / 1e3;
      batch_.push_back({series_ids_[static_cast<size_t>(delay_series_)], t, delay_us});
    }
  }
  queue_.Push(batch_);
  ++stats_.passes;
  stats_.samples += batch_.size();
}

void Sampler::Loop() {
  pthread_setname_np(pthread_self(), "fp-sampler");
  // The default 50 us timer slack would delay every wake-up by that much: deadlines are the
  // point of this thread, and it sleeps rarely enough for precise wake-ups to cost nothing.
  prctl(PR_SET_TIMERSLACK, 1UL);
  std::array<int64_t, kMetricCount> next;
  next.fill(INT64_MAX);
  for (size_t m = 0; m < kMetricCount; ++m) {  // after FirstPass, t0's pass is done
    if (wake_[m] > 0) next[m] = passes_of_[m] > 0 ? t0_ns_ + wake_[m] : t0_ns_;
  }
  while (!stop_.load(std::memory_order_acquire)) {
    if (reschedule_.exchange(false, std::memory_order_acq_rel)) {
      const int64_t now = env_.MonotonicNs();
      for (size_t m = 0; m < kMetricCount; ++m) {
        int64_t want = requested_[m].exchange(0, std::memory_order_relaxed);
        if (want <= 0 || intervals_[m] <= 0) continue;  // not sampled: cannot be turned on
        intervals_[m] = wake_[m] = want;
        next[m] = std::min(next[m], now + want);
      }
    }
    int64_t deadline = *std::min_element(next.begin(), next.end());
    if (deadline == INT64_MAX) break;
    SleepUntil(deadline);
    if (stop_.load(std::memory_order_acquire)) break;
    if (reschedule_.load(std::memory_order_acquire)) continue;
    int64_t now = env_.MonotonicNs();
    MetricSet due;
    int64_t missed = 0;  // passes skipped because this one started too late
    for (size_t m = 0; m < kMetricCount; ++m) {
      if (next[m] > now) continue;
      due.set(m);
      int64_t behind = (now - next[m]) / wake_[m];
      missed = std::max(missed, behind);
      next[m] += (behind + 1) * wake_[m];
    }
    stats_.missed_deadlines += static_cast<uint64_t>(missed);
    ScheduledPass(deadline, due, now);
  }
  // Deadlines that came while this thread waited to be scheduled, and Stop() came first, were
  // missed too (Stop's last pass serves none of them): every deadline is a pass or counted.
  const int64_t now = env_.MonotonicNs();
  int64_t missed = 0;
  for (size_t m = 0; m < kMetricCount; ++m) {
    if (wake_[m] > 0 && next[m] <= now) {
      missed = std::max(missed, (now - next[m]) / wake_[m] + 1);
    }
  }
  stats_.missed_deadlines += static_cast<uint64_t>(missed);
  stats_.cpu_ns = env_.CpuNs(CLOCK_THREAD_CPUTIME_ID);
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_.store(true, std::memory_order_release);
  }
  wake_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // One last pass, so each series ends at the run's end (see the header for what is left out).
  const int64_t now = env_.MonotonicNs();
  MetricSet last;
  for (size_t m = 0; m < kMetricCount; ++m) {
    // A buffered metric's kernel samples since the last drain are all there is of it.
    const bool due = passes_of_[m] < 2 || now - last_pass_ns_[m] >= intervals_[m] / 2 ||
                     MetricCatalogue()[m].exact_rate || buffered_.test(m);
    last.set(m, intervals_[m] > 0 && due);
  }
  if (last.none()) return;
  for (ProbeSlot& slot : probes_) slot.probe->BeforeLastPass();
  Pass(now, last, /*measure_self=*/false);
  for (size_t m = 0; m < kMetricCount; ++m) passes_of_[m] += last.test(m);
}

std::vector<Sampler::SeriesRate> Sampler::SeriesRates() const {
  std::vector<SeriesRate> rates;
  for (size_t i = 0; i < tallies_.size(); ++i) {
    if (static_cast<int>(i) == cost_series_ || static_cast<int>(i) == delay_series_) continue;
    const Tally& tally = tallies_[i];
    const auto metric = static_cast<size_t>(series_[i].metric);
    SeriesRate r{.series = series_[i],
                 .asked_interval_ns = intervals_[metric],
                 .woken_interval_ns = wake_[metric],
                 .samples = tally.samples,
                 .due_passes = passes_of_[metric]};
    if (tally.samples >= 2) {
      r.achieved_interval_ns =
          (tally.last_t - tally.first_t) / static_cast<int64_t>(tally.samples - 1);
    }
    rates.push_back(r);
  }
  return rates;
}

Sampler::Stats Sampler::stats() const { return stats_; }

Result<std::vector<int64_t>> RegisterSeries(Store& store, const std::string& run_id,
                                            const std::vector<SeriesSpec>& specs) {
  std::vector<int64_t> ids;
  for (const SeriesSpec& s : specs) {
    const MetricInfo& info = InfoOf(s.metric);
    Result<int64_t> id = store.EnsureSeries(
        {0, run_id, std::string(info.name), std::string(info.unit), s.entity, std::nullopt});
    if (!id.ok()) return id.status();
    ids.push_back(*id);
  }
  return ids;
}

}  // namespace footprint
