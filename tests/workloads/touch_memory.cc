// touch_memory MIB HOLD_SECONDS: allocates MIB MiB, writes every page, holds it, exits
// (and reports its own accounts, see self_report.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "self_report.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: touch_memory MIB HOLD_SECONDS\n");
    return 2;
  }
  size_t bytes = static_cast<size_t>(std::atol(argv[1])) << 20;
  char* p = static_cast<char*>(std::malloc(bytes));
  if (p == nullptr) return 1;
  long page = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < bytes; i += static_cast<size_t>(page)) p[i] = static_cast<char>(i);
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
  volatile char sink = p[bytes / 2];
  (void)sink;
  std::free(p);
  ReportSelf(argc, argv);
  return 0;
}
