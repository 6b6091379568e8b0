// footprint's optional modules: shared libraries that a subcommand loads when it runs (the web
// server, the predictor), so that what they link (OpenSSL, protobuf, ONNX, xgboost) weighs on
// no other subcommand (DESIGN.md's start-up and memory targets for `footprint run`).
#ifndef FOOTPRINT_CLI_MODULES_H_
#define FOOTPRINT_CLI_MODULES_H_

#include <string>

#include "footprint/status.h"

namespace footprint::cli {

// The entry point `symbol` of module `file` (e.g. libfootprint-serve.so): the file named by
// the variable `env_override`, else the one next to this code (the build folder, the Python
// package), else where `cmake --install` puts it (PREFIX/lib/footprint beside PREFIX/bin).
// `what` names the module in the one-line error.
Result<void*> LoadModuleEntry(const char* file, const char* symbol, const char* env_override,
                              const std::string& what);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_MODULES_H_
