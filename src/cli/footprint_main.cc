// The footprint binary; called as umlaut-cli (a link to it), UMLAUT's command line.
#include <signal.h>

#include <cstring>

#include "cli/cli.h"

namespace {

void IgnoreFileSizeLimitSignal(int) {}

// A file size limit (ulimit -f) reached by footprint's own writes must not kill it (SIGXFSZ's
// default) and orphan the command it measures: with a handler the write fails with EFBIG, which
// the store reports like a full disk. A handler, unlike SIG_IGN, is reset to the default by
// exec, so the command still gets the signal the user's limit implies.
void SurviveFileSizeLimit() {
  struct sigaction sa = {};
  sa.sa_handler = IgnoreFileSizeLimitSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGXFSZ, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  SurviveFileSizeLimit();
  const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  const char* name = slash ? slash + 1 : (argc > 0 ? argv[0] : "");
  if (std::strcmp(name, "umlaut-cli") == 0) return footprint::cli::UmlautCliMain(argc, argv);
  return footprint::cli::Main(argc, argv);
}
