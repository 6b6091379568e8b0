// exit_with CODE | exit_with signal NAME_OR_NUMBER: exits with CODE, or kills itself with a
// signal. "exit_with wait" waits for SIGTERM and exits 42 when it arrives, to test forwarding.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

static volatile sig_atomic_t g_got = 0;

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "wait") == 0) {
    signal(SIGTERM, [](int) { g_got = 1; });
    std::printf("ready\n");
    std::fflush(stdout);
    for (int i = 0; i < 3000 && !g_got; ++i) usleep(10000);
    return g_got ? 42 : 1;
  }
  if (argc == 3 && std::strcmp(argv[1], "signal") == 0) {
    int sig = std::atoi(argv[2]);
    signal(sig, SIG_DFL);
    raise(sig);
    return 1;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: exit_with CODE | exit_with signal N | exit_with wait\n");
    return 2;
  }
  return std::atoi(argv[1]);
}
