// memory_spike CHILDREN MIB BEFORE_S HOLD_S AFTER_S: after BEFORE_S seconds, forks CHILDREN
// children that each allocate MIB MiB and write every page; once all have, they hold it
// together for HOLD_S seconds, free it and exit; the parent exits AFTER_S seconds later. The
// tree then held CHILDREN x MIB MiB at once for HOLD_S, while no single process's high-water
// mark is above MIB MiB: a spike only a tree-wide account sees. Every process reports its own
// accounts (self_report.h).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "self_report.h"

static void SleepSeconds(const char* seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(seconds)));
}

// One child: touches its share, says so on `ready`, and holds it until `go` closes.
static void Child(size_t bytes, int ready, int go, const char* hold_s, int argc, char** argv) {
  char* p = static_cast<char*>(std::malloc(bytes));
  if (p == nullptr) _exit(1);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < bytes; i += page) p[i] = static_cast<char>(i / page + 1);
  char c = 'r';
  if (write(ready, &c, 1) != 1) _exit(1);
  while (read(go, &c, 1) > 0) {
  }
  SleepSeconds(hold_s);
  volatile char sink = p[bytes / 2];
  (void)sink;
  std::free(p);
  ReportSelf(argc, argv);
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: memory_spike CHILDREN MIB BEFORE_S HOLD_S AFTER_S\n");
    return 2;
  }
  const int children = std::atoi(argv[1]);
  const size_t bytes = static_cast<size_t>(std::atol(argv[2])) << 20;
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return 1;
  SleepSeconds(argv[3]);
  for (int k = 0; k < children; ++k) {
    if (fork() != 0) continue;
    close(ready[0]);
    close(go[1]);
    Child(bytes, ready[1], go[0], argv[4], argc, argv);
  }
  close(ready[1]);
  close(go[0]);
  char c;
  for (int k = 0; k < children; ++k) {
    if (read(ready[0], &c, 1) != 1) return 1;  // a child died before touching its share
  }
  close(go[1]);  // all of them hold their share now: release them together
  while (wait(nullptr) > 0) {
  }
  SleepSeconds(argv[5]);
  ReportSelf(argc, argv);
  return 0;
}
