// `footprint run --container ID|NAME [--duration D]`: attaching to a running container
// (docs/containers.md#attach) instead of starting a command.
#ifndef FOOTPRINT_CLI_RUN_CONTAINER_H_
#define FOOTPRINT_CLI_RUN_CONTAINER_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/run_options.h"

namespace footprint::cli {

struct AttachArgs {
  std::string container;  // --container ID|NAME
  std::string duration;   // --duration D: how long at most (default: until it exits)
};

// Declares --container and --duration on `run`.
void AddContainerOptions(CLI::App& cmd, AttachArgs& attach);

// The run's action with --container: measures the container into the database of `args` and
// prints its summary as `run` does. Its exit code: 0, or 125 with one line (no such container,
// not running, a command given too, a bad duration).
int RunAttach(const AttachArgs& attach, const RunArgs& args, const CLI::App& cmd,
              const std::vector<std::string>& command);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_RUN_CONTAINER_H_
