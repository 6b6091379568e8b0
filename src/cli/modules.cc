#include "cli/modules.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

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

std::string ModulePath(const char* file, const char* env_override) {
  const char* override_path = std::getenv(env_override);
  if (override_path && *override_path) return override_path;
  const std::string here = DirectoryOfThisCode();
  const std::string beside = here + "/" + file;
  const std::string installed = here + "/../lib/footprint/" + file;
  return ::access(beside.c_str(), F_OK) != 0 && ::access(installed.c_str(), F_OK) == 0 ? installed
                                                                                       : beside;
}

}  // namespace

Result<void*> LoadModuleEntry(const char* file, const char* symbol, const char* env_override,
                              const std::string& what) {
  const std::string path = ModulePath(file, env_override);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return IoError("cannot load the " + what + " module (" + dlerror() +
                   "); it is built and installed with footprint: rebuild with scripts/build, "
                   "reinstall with cmake --install, or name it with " +
                   env_override);
  }
  void* entry = dlsym(handle, symbol);
  if (!entry) {
    return IoError(path + " is not footprint's " + what + " module (no " + symbol +
                   "); rebuild with scripts/build");
  }
  return entry;  // the handle stays open for the life of the process
}

}  // namespace footprint::cli
