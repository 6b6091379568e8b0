// touch_memory MIB HOLD_SECONDS [READERS]: allocates MIB MiB, writes every page, then forks
// READERS children (default 0) that read every page, as a PyTorch DataLoader's workers read
// the dataset their parent loaded: the pages stay shared, each counted in every process's RSS
// but held once. All hold it for HOLD_SECONDS and exit (each reports its own accounts, see
// self_report.h).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "self_report.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: touch_memory MIB HOLD_SECONDS [READERS]\n");
    return 2;
  }
  size_t bytes = static_cast<size_t>(std::atol(argv[1])) << 20;
  const int readers = argc == 4 ? std::atoi(argv[3]) : 0;
  char* p = static_cast<char*>(std::malloc(bytes));
  if (p == nullptr) return 1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < bytes; i += page) p[i] = static_cast<char>(i / page + 1);
  for (int r = 0; r < readers; ++r) {
    if (fork() != 0) continue;
    unsigned long sum = 0;
    for (size_t i = 0; i < bytes; i += page) sum += static_cast<unsigned char>(p[i]);
    if (sum == 0) _exit(1);  // every page was written non-zero: reading them all is real work
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
    ReportSelf(argc, argv);
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
  while (wait(nullptr) > 0) {
  }
  volatile char sink = p[bytes / 2];
  (void)sink;
  std::free(p);
  ReportSelf(argc, argv);
  return 0;
}
