// The entry point of libfootprint-serve.so (serve/module.h).
#include "serve/module.h"

#include "serve/server.h"

extern "C" __attribute__((visibility("default"))) footprint::Status footprint_serve_entry(
    const footprint::serve::ServeOptions& options, std::ostream& out) {
  using footprint::serve::Server;
  FP_ASSIGN_OR_RETURN(auto server, Server::Start(options));
  const bool queue = !options.manifests.empty() || !options.plans.empty();
  out << "footprint serve: " << (server)->Url() << " (" << options.db
      << (queue ? ", runs read-only, with its queue" : ", read-only") << "); Ctrl-C stops it"
      << std::endl;
  return footprint::serve::ServeUntilSignal(*server, *options.env);
}
