// The footprint binary; called as umlaut-cli (a link to it), UMLAUT's command line.
#include <cstring>

#include "cli/cli.h"

int main(int argc, char** argv) {
  const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  const char* name = slash ? slash + 1 : (argc > 0 ? argv[0] : "");
  if (std::strcmp(name, "umlaut-cli") == 0) return footprint::cli::UmlautCliMain(argc, argv);
  return footprint::cli::Main(argc, argv);
}
