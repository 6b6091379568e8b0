// short_children COUNT MILLIS: starts COUNT children one after another, each burning the CPU
// for MILLIS ms, and waits for each. Prints the children's CPU time from
// getrusage(RUSAGE_CHILDREN) as "children_cpu_s=<seconds>" on stderr, so a test can compare
// footprint's total with the kernel's own accounting of the same run; with FP_WORKLOAD_REPORT
// set, every process reports its own accounts (self_report.h).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "self_report.h"

int main(int argc, char** argv) {
  const double cpu_at_start = SelfCpuSeconds();
  if (argc != 3) {
    std::fprintf(stderr, "usage: short_children COUNT MILLIS\n");
    return 2;
  }
  int count = std::atoi(argv[1]);
  double millis = std::atof(argv[2]);
  for (int i = 0; i < count; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      auto end =
          std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(millis);
      volatile unsigned long x = 0;
      while (std::chrono::steady_clock::now() < end) x = x + 1;
      ReportSelf(argc, argv);
      _exit(0);
    }
    if (pid < 0) return 1;
    waitpid(pid, nullptr, 0);
  }
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  double s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::fprintf(stderr, "children_cpu_s=%.6f\nself_cpu_s=%.6f\n", s, SelfCpuSeconds());
  ReportSelf(argc, argv, cpu_at_start);
  return 0;
}
