// The entry point of libfootprint-serve.so (serve/module.h).
#include "serve/module.h"

#include "serve/server.h"

extern "C" __attribute__((visibility("default"))) footprint::Status footprint_serve_entry(
    const footprint::serve::ServeOptions& options, std::ostream& out) {
  using footprint::serve::Server;
  auto server = Server::Start(options);
  if (!server.ok()) return server.status();
  out << "footprint serve: " << (*server)->Url() << " (" << options.db
      << ", read-only); Ctrl-C stops it" << std::endl;
  return footprint::serve::ServeUntilSignal(**server);
}
