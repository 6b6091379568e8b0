// footprint serve: the web UI and JSON API over a database (src/serve/, docs/serve.md).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "serve/module.h"
#include "serve/server.h"

namespace footprint::cli {
namespace {

// The directory of the file that holds this code: the footprint binary, or the Python module
// when the command line runs from `python3 -m footprint`.
std::string DirectoryOfThisCode() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&DirectoryOfThisCode), &info) == 0 || !info.dli_fname) {
    return ".";
  }
  // For the executable itself the loader reports argv[0] as given ("footprint" when found in
  // PATH), which names no folder: the kernel's link to it does.
  const bool executable = std::strchr(info.dli_fname, '/') == nullptr;
  std::error_code ec;
  std::filesystem::path file =
      std::filesystem::canonical(executable ? "/proc/self/exe" : info.dli_fname, ec);
  return (ec ? std::filesystem::path(info.dli_fname) : file).parent_path().string();
}

// Where libfootprint-serve.so is: $FOOTPRINT_SERVE_MODULE, else next to this code (the build
// folder, the Python package), else where `cmake --install` puts it (PREFIX/lib/footprint
// beside PREFIX/bin).
std::string ServeModulePath() {
  const char* override_path = std::getenv("FOOTPRINT_SERVE_MODULE");
  if (override_path && *override_path) return override_path;
  const std::string here = DirectoryOfThisCode();
  const std::string beside = here + "/" + serve::kModuleFile;
  const std::string installed = here + "/../lib/footprint/" + serve::kModuleFile;
  return ::access(beside.c_str(), F_OK) != 0 && ::access(installed.c_str(), F_OK) == 0 ? installed
                                                                                       : beside;
}

// Sets `entry` from libfootprint-serve.so (ServeModulePath).
Status LoadServeModule(serve::Entry& entry) {
  const std::string path = ServeModulePath();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return IoError(std::string("cannot load the web server module (") + dlerror() +
                   "); it is built and installed with footprint: rebuild with scripts/build, "
                   "reinstall with cmake --install, or name it with FOOTPRINT_SERVE_MODULE");
  }
  entry = reinterpret_cast<serve::Entry>(dlsym(handle, serve::kEntrySymbol));
  if (!entry) {
    return IoError(path + " is not footprint's web server module (no " + serve::kEntrySymbol +
                   "); rebuild with scripts/build");
  }
  return Status::Ok();  // the handle stays open for the life of the process
}

}  // namespace

Action AddServe(CLI::App& app) {
  auto options = std::make_shared<serve::ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve a web UI and a JSON API over the database (read-only): browse experiments, "
      "workloads and runs, compare them, watch running ones live.");
  AddDbOption(*cmd, options->db);
  cmd->add_option("--host", options->host,
                  "address to listen on (default 127.0.0.1; any other needs a token)");
  cmd->add_option("-p,--port", options->port, "port (default 8765; 0: any free port)");
  cmd->add_option("--token", options->token,
                  "token every request must carry (default: none on 127.0.0.1, generated and "
                  "printed for any other host)");
  cmd->add_option("--threads", options->threads, "request threads (default: max(32, cores))");
  cmd->footer(
      "Stops on Ctrl-C or SIGTERM. The API is described in docs/serve.md.\n\n"
      "Examples:\n"
      "  footprint serve                       # http://127.0.0.1:8765/\n"
      "  footprint serve -o team.db --host 0.0.0.0 --port 9000   # prints the URL with its token");
  return [options]() -> int {
    serve::Entry entry = nullptr;
    if (Status loaded = LoadServeModule(entry); !loaded.ok()) return Fail(loaded);
    Status status = entry(*options, std::cout);
    if (!status.ok()) return Fail(status);
    std::cout << "footprint serve: stopped" << std::endl;
    return kExitOk;
  };
}

}  // namespace footprint::cli
