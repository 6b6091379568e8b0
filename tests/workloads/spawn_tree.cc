// spawn_tree DEPTH FANOUT SECONDS: a tree DEPTH levels deep below this process, each process
// with FANOUT children; every process burns one CPU for SECONDS, then waits for its children.
// With FP_WORKLOAD_REPORT set, every process reports its own accounts (self_report.h).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "self_report.h"

static void Burn(double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

// One process of the tree; `cpu_at_start` as ReportSelf takes it.
static void Node(int depth, int fanout, double seconds, int argc, char** argv,
                 double cpu_at_start) {
  for (int i = 0; depth > 0 && i < fanout; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      Node(depth - 1, fanout, seconds, argc, argv, 0);
      _exit(0);
    }
  }
  Burn(seconds);
  while (wait(nullptr) > 0) {
  }
  ReportSelf(argc, argv, cpu_at_start);
}

int main(int argc, char** argv) {
  const double cpu_at_start = SelfCpuSeconds();
  if (argc != 4) {
    std::fprintf(stderr, "usage: spawn_tree DEPTH FANOUT SECONDS\n");
    return 2;
  }
  Node(std::atoi(argv[1]), std::atoi(argv[2]), std::atof(argv[3]), argc, argv, cpu_at_start);
  return 0;
}
