// Sampler: one thread that calls the probes on absolute deadlines (t0 + k * interval, never
// sleep-after-work), each metric on its own interval, and hands the values to the queue. A
// metric the kernel samples into a buffer (Probe::Buffered) is due only every
// kBufferDrainIntervalNs, and its probe emits the kernel's samples with their own times. The
// point of a buffer is fewer wake-ups: while one serves a metric, the others wake the thread no
// more often than kBufferedCompanionIntervalNs, unless they were given an interval of their own
// (`exact`); SeriesRate says so, and the run's meta says why such a series is below its rate.
//
// When a pass overruns the next deadline, the missed deadlines are skipped (counted, not
// bunched up). It measures itself: the CPU time of each pass (monitor.sample_cost) and how
// late each pass started after its deadline (monitor.sample_delay).
//
// Thread-safety: Start (or its steps) and Stop from one controlling thread; the statistics
// after Stop.
#ifndef FOOTPRINT_SAMPLER_SAMPLER_H_
#define FOOTPRINT_SAMPLER_SAMPLER_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "footprint/env.h"
#include "footprint/metrics.h"
#include "footprint/store.h"
#include "probe/probe.h"
#include "sampler/sample_queue.h"

namespace footprint {

// Interval per metric in ns; 0 means the metric is off.
using MetricIntervals = std::array<int64_t, kMetricCount>;

// The most often a metric wakes the sampler while a kernel buffer serves another (see above):
// 100 wake-ups a second cost a tenth of what the 1,000 of a 1 ms interval do, and a kernel
// buffer is used only for intervals below this (kCpuRingBelowIntervalNs).
inline constexpr int64_t kBufferedCompanionIntervalNs = 10'000'000;

class Sampler {
 public:
  struct Stats {
    uint64_t passes = 0;
    uint64_t missed_deadlines = 0;
    uint64_t samples = 0;  // pushed to the queue (those it dropped included)
    int64_t cpu_ns = 0;    // CPU time of the sampler thread
  };

  // `probes` are owned. Series ids come from the store, in the order the probes declared
  // their series (probe by probe), followed by the two monitor series when enabled. Time
  // (deadlines, sleeping) comes from `env`, which must outlive the sampler. `exact`: metrics
  // given an interval of their own, woken at it even beside a kernel buffer.
  Sampler(Env& env, std::vector<std::unique_ptr<Probe>> probes, const MetricIntervals& intervals,
          SampleQueue& queue, MetricSet exact = {});
  ~Sampler();

  // All series to register, in order: each probe's, then the sampler's own.
  const std::vector<SeriesSpec>& series() const { return series_; }
  // The probes, for AttachToCommand before Start and Finish after Stop.
  std::vector<Probe*> probes() const;

  // Tells each probe (Probe::Begin) and starts the thread; the first pass runs at t0_ns
  // (monotonic). `series_ids` parallels series(). Called once, or its steps below instead.
  void Start(int64_t t0_ns, std::vector<int64_t> series_ids);
  // Start in steps, for a controlling thread that samples until the thread is needed: Begin
  // tells each probe; FirstPass makes the pass due at t0_ns, on the calling thread, and
  // returns the next deadline (monotonic; INT64_MAX with nothing sampled); StartThread starts
  // the thread, which goes on from there (throws std::system_error when it cannot).
  void Begin(int64_t t0_ns, std::vector<int64_t> series_ids);
  int64_t FirstPass();
  void StartThread();
  // Stops the thread (if it was started) after one last pass at the moment of the call, of every
  // metric whose previous sample is at least half an interval old: a rate over the last few
  // milliseconds is noise (the kernel's CPU counters lag by up to a scheduler tick), and the run's
  // totals are exact anyway. A metric sampled fewer than twice, or an exact rate (MetricInfo: bytes
  // read and written, so that the series adds up to the total), gets its last sample
  // regardless.
  void Stop();
  // Changes the interval of a metric that is being sampled (ignored for one that is not);
  // the next deadline moves at once. Thread-safe.
  void SetInterval(MetricId metric, int64_t interval_ns);

  Stats stats() const;

  // How often a probe's series got a sample: a probe may emit less often than its metric is
  // due (costly reads spaced out, CallBudget), and a busy machine makes passes miss their
  // deadlines. After Stop.
  struct SeriesRate {
    SeriesSpec series;
    int64_t asked_interval_ns = 0;     // the metric's interval at the end
    int64_t woken_interval_ns = 0;     // how often it woke the thread (longer beside a buffer)
    int64_t achieved_interval_ns = 0;  // mean gap between its samples; 0 with fewer than 2
    uint64_t samples = 0;
    uint64_t due_passes = 0;  // passes its metric was due in (the last pass included)
  };
  std::vector<SeriesRate> SeriesRates() const;

 private:
  struct ProbeSlot {
    std::unique_ptr<Probe> probe;
    int first_series;
    MetricSet metrics;  // what it emits
  };
  class Batch;
  // Samples a series got (probes' series only), for SeriesRates.
  struct Tally {
    uint64_t samples = 0;
    int64_t first_t = 0, last_t = 0;
  };

  void Loop();
  void SleepUntil(int64_t deadline_ns);  // or until Stop()
  void Pass(int64_t deadline_ns, const MetricSet& due, bool measure_self);
  // A pass of the metrics `due` for the deadline, counted for each of them as done at `now`.
  void ScheduledPass(int64_t deadline_ns, const MetricSet& due, int64_t now);

  Env& env_;
  std::vector<ProbeSlot> probes_;
  std::vector<SeriesSpec> series_;
  MetricIntervals intervals_;  // as asked: the series' interval
  MetricIntervals wake_;       // how often the thread wakes for each (Probe::Buffered)
  MetricSet buffered_;         // metrics a probe drains from a kernel buffer
  SampleQueue& queue_;
  std::vector<int64_t> series_ids_;
  int cost_series_ = -1, delay_series_ = -1;
  int64_t t0_ns_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reschedule_{false};
  std::array<std::atomic<int64_t>, kMetricCount> requested_{};  // 0: no change asked
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  std::thread thread_;
  Stats stats_;
  std::vector<SamplePoint> batch_;                    // reused by every pass
  std::array<int64_t, kMetricCount> last_pass_ns_{};  // per metric, written by the thread
  std::array<uint32_t, kMetricCount> passes_of_{};
  std::vector<Tally> tallies_;  // parallels series_
};

// Creates the series `specs` of run `run_id` in `store`; returns their ids in the same order
// (what Sampler::Start takes). Call inside Store::InTransaction to commit them at once.
Result<std::vector<int64_t>> RegisterSeries(Store& store, const std::string& run_id,
                                            const std::vector<SeriesSpec>& specs);

}  // namespace footprint

#endif  // FOOTPRINT_SAMPLER_SAMPLER_H_
