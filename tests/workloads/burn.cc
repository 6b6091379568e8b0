// burn THREADS SECONDS [IDLE_SECONDS]: keeps THREADS threads busy on the CPU for SECONDS of
// wall time, then sleeps IDLE_SECONDS (default 0) alive (and reports its own accounts, see
// self_report.h). The idle tail lets a gatherer that reads only live processes, as Slurm's
// jobacct_gather/linux does, see all of its CPU time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "self_report.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: burn THREADS SECONDS [IDLE_SECONDS]\n");
    return 2;
  }
  int threads = std::atoi(argv[1]);
  double seconds = std::atof(argv[2]);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([end] {
      volatile unsigned long x = 0;
      while (std::chrono::steady_clock::now() < end) {
        for (int k = 0; k < 10000; ++k) x = x + k;
      }
    });
  }
  for (auto& t : pool) t.join();
  if (argc == 4) std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[3])));
  ReportSelf(argc, argv);
  return 0;
}
