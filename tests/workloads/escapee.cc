// escapee BURN_SECONDS PARENT_SECONDS: double-forks a grandchild that burns the CPU for
// BURN_SECONDS after its parent exited (so it is re-parented away from this process), then
// this process sleeps PARENT_SECONDS and exits without waiting for it. With FP_WORKLOAD_REPORT
// set, both report their own accounts (self_report.h).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "self_report.h"

int main(int argc, char** argv) {
  const double cpu_at_start = SelfCpuSeconds();
  if (argc != 3) {
    std::fprintf(stderr, "usage: escapee BURN_SECONDS PARENT_SECONDS\n");
    return 2;
  }
  double burn = std::atof(argv[1]);
  pid_t middle = fork();
  if (middle == 0) {
    if (fork() == 0) {
      setsid();  // detached like a daemon
      auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(burn);
      volatile unsigned long x = 0;
      while (std::chrono::steady_clock::now() < end) x = x + 1;
      ReportSelf(argc, argv);
      _exit(0);
    }
    _exit(0);  // the grandchild is orphaned now
  }
  waitpid(middle, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
  ReportSelf(argc, argv, cpu_at_start);
  return 0;
}
