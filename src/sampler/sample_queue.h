// SampleQueue: the bounded hand-off between the sampler thread (producer) and the writer
// thread (consumer). Push never allocates and never waits on I/O: when the writer has fallen
// so far behind that the queue is full, new samples are dropped and counted, so the sampler's
// timing (and the measured program) is never disturbed by a slow disk.
//
// Thread-safety: Push from one or more producers, Drain from one consumer; all methods are
// safe to call concurrently.
#ifndef FOOTPRINT_SAMPLER_SAMPLE_QUEUE_H_
#define FOOTPRINT_SAMPLER_SAMPLE_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"

namespace footprint {

class SampleQueue {
 public:
  // `early_drain` samples waiting wake the consumer before its deadline (see WaitUntil).
  explicit SampleQueue(size_t capacity, size_t early_drain = 4096)
      : capacity_(capacity), early_drain_(early_drain) {
    queued_.reserve(capacity);
  }

  void Push(std::span<const SamplePoint> batch) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      size_t before = queued_.size();
      size_t room = capacity_ - before;
      size_t n = batch.size() < room ? batch.size() : room;
      queued_.insert(queued_.end(), batch.begin(), batch.begin() + static_cast<ptrdiff_t>(n));
      dropped_ += batch.size() - n;
      wake = before < early_drain_ && queued_.size() >= early_drain_;
    }
    if (wake) cv_.notify_all();
  }

  // Moves everything queued into `out` (which must be empty; its capacity is recycled).
  void Drain(std::vector<SamplePoint>& out) {
    out.clear();
    std::lock_guard<std::mutex> lock(mu_);
    queued_.swap(out);
    if (queued_.capacity() < capacity_) queued_.reserve(capacity_);
  }

  // Waits until `deadline_ns` (monotonic, on `env`'s clock), until `early_drain` samples are
  // waiting, or until Close() is called. Returns false once closed.
  bool WaitUntil(Env& env, int64_t deadline_ns) {
    std::unique_lock<std::mutex> lock(mu_);
    env.WaitUntil(cv_, lock, deadline_ns,
                  [&] { return closed_ || queued_.size() >= early_drain_; });
    return !closed_;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  uint64_t dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }

 private:
  const size_t capacity_;
  const size_t early_drain_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SamplePoint> queued_;
  uint64_t dropped_ = 0;
  bool closed_ = false;
};

}  // namespace footprint

#endif  // FOOTPRINT_SAMPLER_SAMPLE_QUEUE_H_
