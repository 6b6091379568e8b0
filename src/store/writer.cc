#include "store/writer.h"

#include <pthread.h>

#include <chrono>

#include "util/clock.h"

namespace footprint {

Writer::Writer(Store& store, SampleQueue& queue, std::string run_id, int64_t flush_interval_ns)
    : store_(store),
      queue_(queue),
      run_id_(std::move(run_id)),
      flush_interval_ns_(flush_interval_ns) {}

Writer::~Writer() {
  if (thread_.joinable()) Stop();
}

void Writer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Writer::Stop() {
  queue_.Close();
  if (thread_.joinable()) thread_.join();
}

void Writer::Flush() {
  queue_.Drain(drained_);
  if (pending_.empty()) {
    pending_.swap(drained_);
  } else {
    pending_.insert(pending_.end(), drained_.begin(), drained_.end());
  }
  Status st = store_.Append(run_id_, pending_, RealtimeNs());
  if (st.ok()) {
    stats_.samples_written += pending_.size();
    ++stats_.flushes;
    pending_.clear();
  } else {
    ++stats_.failed_flushes;
    stats_.last_error = st.message();
  }
}

void Writer::Loop() {
  pthread_setname_np(pthread_self(), "fp-writer");
  const auto period = std::chrono::nanoseconds(flush_interval_ns_);
  while (true) {
    bool open = queue_.WaitUntil(std::chrono::steady_clock::now() + period);
    Flush();
    if (!open) break;
  }
  if (!pending_.empty()) Flush();  // one more try for a batch that failed just before Stop
  getrusage(RUSAGE_THREAD, &stats_.usage);
}

}  // namespace footprint
