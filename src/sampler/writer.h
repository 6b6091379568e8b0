// Writer: the thread that moves samples from the queue into the store in batched
// transactions, at least once per flush interval (default 500 ms, never more than 1 s), sooner
// when the queue asks (thousands of samples waiting), and once more when stopped.
//
// Its contract: a sample is counted as written only once its transaction committed; a failed
// write keeps the batch and retries it at the next flush, so a briefly locked or slow database
// loses nothing. The batch kept for retries is bounded (max_pending samples): while the store
// keeps failing, newly drained samples beyond the bound are dropped and counted (the oldest
// are kept, so every series keeps its start). The first and the last error are kept, and
// trouble is said as it happens through the notice: a first failure or new losses of the queue
// at once, then at most one line every 10 s, and once more when the store works again. The sampler
// never waits for the writer, so a failing store never slows the measured command.
//
// Thread-safety: Start/Stop from the controlling thread. The store is used only by the writer
// thread between Start and Stop.
#ifndef FOOTPRINT_SAMPLER_WRITER_H_
#define FOOTPRINT_SAMPLER_WRITER_H_

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "footprint/env.h"
#include "footprint/store.h"
#include "sampler/sample_queue.h"

namespace footprint {

class Writer {
 public:
  struct Stats {
    uint64_t flushes = 0;
    uint64_t samples_written = 0;
    uint64_t failed_flushes = 0;
    uint64_t samples_dropped = 0;    // beyond max_pending while the store failed
    uint64_t samples_unwritten = 0;  // still failing when stopped: never stored
    std::string first_error, last_error;
    rusage usage = {};  // the writer thread's own (RUSAGE_THREAD), at its end
  };

  // The default bound on the retry batch: 2^18 samples, 6 MiB.
  static constexpr size_t kDefaultMaxPending = size_t{1} << 18;
  // Least time between two notices of the same trouble.
  static constexpr int64_t kNoticeEveryNs = 10'000'000'000;
  // Receives one line (no "footprint:" prefix, no newline), on the writer thread.
  using Notice = std::function<void(const std::string&)>;

  // Time (the flush deadlines, the run's heartbeat) comes from `env`.
  Writer(Env& env, Store& store, SampleQueue& queue, std::string run_id, int64_t flush_interval_ns,
         size_t max_pending = kDefaultMaxPending);
  ~Writer();

  // Before Start: who hears of failed writes and lost samples while the run goes on.
  void set_notice(Notice notice) { notice_ = std::move(notice); }
  // Starts the thread, which flushes every flush interval. Throws std::system_error when no
  // thread can be started.
  void Start();
  // Closes the queue, writes everything left and joins the thread; without a thread (never
  // started: a run too short to need one), writes everything on the calling thread.
  void Stop();
  Stats stats() const { return stats_; }  // valid after Stop()
  // The thread, between Start and Stop (e.g. for pthread_getcpuclockid).
  std::thread::native_handle_type native_handle() { return thread_.native_handle(); }

 private:
  void Loop();
  void Flush();
  // The last flushes once the queue is closed: one more try for a batch that failed just
  // before, then what could not be written is counted.
  void FinalFlush();
  // Says the trouble at once when `new_trouble`, else when the last notice is kNoticeEveryNs old.
  void NoticeTrouble(bool new_trouble);
  // Samples lost so far: dropped here or by the queue.
  uint64_t Lost() const;

  Env& env_;
  Store& store_;
  SampleQueue& queue_;
  std::string run_id_;
  int64_t flush_interval_ns_;
  size_t max_pending_;
  std::vector<SamplePoint> pending_;  // drained but not yet committed
  std::vector<SamplePoint> drained_;
  Stats stats_;
  Notice notice_;
  int64_t last_notice_ns_ = 0;
  bool failing_ = false;             // the last flush failed
  uint64_t queue_dropped_said_ = 0;  // the queue's losses as last said
  std::thread thread_;
};

}  // namespace footprint

#endif  // FOOTPRINT_SAMPLER_WRITER_H_
