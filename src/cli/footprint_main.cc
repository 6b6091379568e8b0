// The footprint binary.
#include "cli/cli.h"

int main(int argc, char** argv) { return footprint::cli::Main(argc, argv); }
