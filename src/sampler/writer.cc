#include "sampler/writer.h"

#include <pthread.h>

#include <algorithm>

namespace footprint {

Writer::Writer(Env& env, Store& store, SampleQueue& queue, std::string run_id,
               int64_t flush_interval_ns, size_t max_pending)
    : env_(env),
      store_(store),
      queue_(queue),
      run_id_(std::move(run_id)),
      flush_interval_ns_(flush_interval_ns),
      max_pending_(max_pending) {}

Writer::~Writer() {
  if (thread_.joinable()) Stop();
}

void Writer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Writer::Stop() {
  queue_.Close();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    Flush();
    FinalFlush();
  }
}

void Writer::FinalFlush() {
  if (!pending_.empty()) Flush();
  stats_.samples_unwritten = pending_.size();
}

void Writer::Flush() {
  queue_.Drain(drained_);
  if (pending_.empty()) {
    pending_.swap(drained_);
  } else {
    // The store failed before: keep what waits, and only as much new as the bound allows.
    const size_t room = max_pending_ > pending_.size() ? max_pending_ - pending_.size() : 0;
    const size_t taken = std::min(room, drained_.size());
    pending_.insert(pending_.end(), drained_.begin(),
                    drained_.begin() + static_cast<ptrdiff_t>(taken));
    stats_.samples_dropped += drained_.size() - taken;
  }
  Status st = store_.Append(run_id_, pending_, env_.RealtimeNs());
  if (st.ok()) {
    stats_.samples_written += pending_.size();
    ++stats_.flushes;
    pending_.clear();
    if (failing_ && notice_) {
      notice_("writing to the database works again; " + std::to_string(Lost()) +
              " samples were lost in all");
    }
    failing_ = false;
  } else {
    // A batch that failed whole may be larger than the bound (the writer was not scheduled
    // for a while): keep its oldest part, as above, and count the rest as lost.
    if (pending_.size() > max_pending_) {
      stats_.samples_dropped += pending_.size() - max_pending_;
      pending_.resize(max_pending_);
    }
    ++stats_.failed_flushes;
    if (stats_.first_error.empty()) stats_.first_error = st.message();
    stats_.last_error = st.message();
  }
  // A first failure and the queue's first losses are said at once, the rest rate-limited.
  const bool queue_losing = queue_.dropped() > queue_dropped_said_;
  const bool new_trouble = (!st.ok() && !failing_) || (queue_losing && queue_dropped_said_ == 0);
  failing_ = !st.ok();
  if (!st.ok() || queue_losing) NoticeTrouble(new_trouble);
}

uint64_t Writer::Lost() const { return stats_.samples_dropped + queue_.dropped(); }

void Writer::NoticeTrouble(bool new_trouble) {
  const int64_t now = env_.MonotonicNs();
  if (!notice_ || (!new_trouble && now - last_notice_ns_ < kNoticeEveryNs)) return;
  last_notice_ns_ = now;
  queue_dropped_said_ = queue_.dropped();
  std::string line = "the database cannot keep up with the samples; ";
  if (stats_.failed_flushes > 0) {
    line = "writing samples to the database failed " + std::to_string(stats_.failed_flushes) +
           " time(s) (" + stats_.last_error + "); ";
  }
  line += std::to_string(Lost()) + " samples lost so far";
  if (!pending_.empty()) line += ", " + std::to_string(pending_.size()) + " kept for a retry";
  notice_(line + "; the command goes on");
}

void Writer::Loop() {
  pthread_setname_np(pthread_self(), "fp-writer");
  while (true) {
    bool open = queue_.WaitUntil(env_, env_.MonotonicNs() + flush_interval_ns_);
    Flush();
    if (!open) break;
  }
  FinalFlush();
  getrusage(RUSAGE_THREAD, &stats_.usage);
}

}  // namespace footprint
