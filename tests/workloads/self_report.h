// Ground truth from a workload itself: when FP_WORKLOAD_REPORT names a folder, the workload
// writes its own kernel accounts there at exit (file named after its PID): its arguments, its
// CPU time (getrusage RUSAGE_SELF, user + system), the part of it spent since `cpu_at_start`
// and its high-water mark (ru_maxrss). Tests compare footprint's figures for the run against
// what the processes measured of themselves.
#ifndef FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
#define FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

// This process's CPU time so far, as the kernel accounts it (user + system).
inline double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

// `cpu_at_start` is SelfCpuSeconds() when main began (0 in a forked child, whose account
// starts at its fork): "cpu_since_start_s" is then CPU time spent after exec, which counters
// enabled on exec see whole, while "cpu_s" also holds what the process did before exec.
inline void ReportSelf(int argc, char** argv, double cpu_at_start = 0) {
  const char* dir = std::getenv("FP_WORKLOAD_REPORT");
  if (dir == nullptr || *dir == '\0') return;
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = SelfCpuSeconds();
  std::string path = std::string(dir) + "/" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::string args;
  for (int i = 1; i < argc; ++i) {
    if (i > 1) args += ' ';
    args += argv[i];
  }
  std::fprintf(f,
               "{\"args\": \"%s\", \"cpu_s\": %.6f, \"cpu_since_start_s\": %.6f, "
               "\"maxrss_bytes\": %ld}\n",
               args.c_str(), cpu, cpu - cpu_at_start, ru.ru_maxrss * 1024L);
  std::fclose(f);
}

#endif  // FOOTPRINT_TESTS_WORKLOADS_SELF_REPORT_H_
