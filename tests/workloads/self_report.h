// Ground truth from a workload itself: when FP_WORKLOAD_REPORT names a folder, the workload
// writes its own kernel accounts there at exit (file named after its PID): its arguments, its
// CPU time (getrusage RUSAGE_SELF, user + system) and its high-water mark (ru_maxrss). Tests
// compare footprint's figures for the run against what the process measured of itself.
#ifndef FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
#define FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

inline void ReportSelf(int argc, char** argv) {
  const char* dir = std::getenv("FP_WORKLOAD_REPORT");
  if (dir == nullptr || *dir == '\0') return;
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec / 1e6;
  std::string path = std::string(dir) + "/" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::string args;
  for (int i = 1; i < argc; ++i) args += (i > 1 ? " " : "") + std::string(argv[i]);
  std::fprintf(f, "{\"args\": \"%s\", \"cpu_s\": %.6f, \"maxrss_bytes\": %ld}\n", args.c_str(), cpu,
               ru.ru_maxrss * 1024L);
  std::fclose(f);
}

#endif  // FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
