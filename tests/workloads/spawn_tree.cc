// spawn_tree DEPTH FANOUT SECONDS: a tree DEPTH levels deep below this process, each process
// with FANOUT children; every process burns one CPU for SECONDS, then waits for its children.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

static void Burn(double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

static void Node(int depth, int fanout, double seconds) {
  for (int i = 0; depth > 0 && i < fanout; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      Node(depth - 1, fanout, seconds);
      _exit(0);
    }
  }
  Burn(seconds);
  while (wait(nullptr) > 0) {
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: spawn_tree DEPTH FANOUT SECONDS\n");
    return 2;
  }
  Node(std::atoi(argv[1]), std::atoi(argv[2]), std::atof(argv[3]));
  return 0;
}
