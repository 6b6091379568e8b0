// The one clock: monotonic nanoseconds for ordering and intervals, wall-clock UTC
// nanoseconds only to anchor a run once.
#ifndef FOOTPRINT_UTIL_CLOCK_H_
#define FOOTPRINT_UTIL_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace footprint {

inline int64_t NsOf(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline timespec TimespecOf(int64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return NsOf(ts);
}

inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return NsOf(ts);
}

// CPU time consumed by the calling thread.
inline int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return NsOf(ts);
}

inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSec = 1'000'000'000;

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_CLOCK_H_
