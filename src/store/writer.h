// Writer: the thread that moves samples from the queue into the store in batched
// transactions, at least once per flush interval (default 500 ms, never more than 1 s), sooner
// when the queue asks (thousands of samples waiting), and once more when stopped. A failed write
// keeps the batch and retries at the next flush, so a briefly locked database loses nothing; errors
// are counted and the last one kept.
//
// Thread-safety: Start/Stop from the controlling thread. The store is used only by the writer
// thread between Start and Stop.
#ifndef FOOTPRINT_STORE_WRITER_H_
#define FOOTPRINT_STORE_WRITER_H_

#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "footprint/store.h"
#include "sampler/sample_queue.h"

namespace footprint {

class Writer {
 public:
  struct Stats {
    uint64_t flushes = 0;
    uint64_t samples_written = 0;
    uint64_t failed_flushes = 0;
    std::string last_error;
    rusage usage = {};  // the writer thread's own (RUSAGE_THREAD), at its end
  };

  Writer(Store& store, SampleQueue& queue, std::string run_id, int64_t flush_interval_ns);
  ~Writer();

  void Start();
  // Closes the queue, writes everything left and joins the thread.
  void Stop();
  Stats stats() const { return stats_; }  // valid after Stop()
  // The thread, between Start and Stop (e.g. for pthread_getcpuclockid).
  std::thread::native_handle_type native_handle() { return thread_.native_handle(); }

 private:
  void Loop();
  void Flush();

  Store& store_;
  SampleQueue& queue_;
  std::string run_id_;
  int64_t flush_interval_ns_;
  std::vector<SamplePoint> pending_;  // drained but not yet committed
  std::vector<SamplePoint> drained_;
  Stats stats_;
  std::thread thread_;
};

}  // namespace footprint

#endif  // FOOTPRINT_STORE_WRITER_H_
