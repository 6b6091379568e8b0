// The serve module: `footprint serve` runs its HTTP server from libfootprint-serve.so, loaded
// when the subcommand runs, not linked into the footprint binary. cpp-httplib brings OpenSSL,
// zlib and brotli with it; linked in, every `footprint run` would load them, which costs ~4 MB
// of resident memory and ~2 ms of start-up (DESIGN.md's targets: < 8 MB, < 5 ms).
//
// The module is built with the binary and placed next to it (and next to the Python module);
// both sides come from the same build, so the entry point passes C++ types.
#ifndef FOOTPRINT_SERVE_MODULE_H_
#define FOOTPRINT_SERVE_MODULE_H_

#include <ostream>

#include "footprint/status.h"
#include "serve/server.h"

namespace footprint::serve {

// The module's file name and its one exported function.
inline constexpr char kModuleFile[] = "libfootprint-serve.so";
inline constexpr char kEntrySymbol[] = "footprint_serve_entry";

// Starts the server, prints its address to `out`, serves until SIGINT/SIGTERM. The errors of
// Server::Start and ServeUntilSignal.
using Entry = Status (*)(const ServeOptions& options, std::ostream& out);

}  // namespace footprint::serve

#endif  // FOOTPRINT_SERVE_MODULE_H_
