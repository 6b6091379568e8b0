// getrusage's accounts in seconds, the unit every total of footprint's is kept in.
#ifndef FOOTPRINT_UTIL_RUSAGE_H_
#define FOOTPRINT_UTIL_RUSAGE_H_

#include <sys/resource.h>
#include <sys/time.h>

namespace footprint {

inline double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// User plus system time.
inline double RusageCpuSeconds(const rusage& ru) {
  return Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
}

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_RUSAGE_H_
