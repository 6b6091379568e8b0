#include "cli/run_container.h"

#include <iostream>

#include "cli/cli.h"
#include "footprint/store.h"
#include "run/container.h"
#include "util/strings.h"

namespace footprint::cli {

void AddContainerOptions(CLI::App& cmd, AttachArgs& attach) {
  cmd.add_option("--container", attach.container,
                 "measure a running container (podman, docker or nerdctl; its id or name) "
                 "instead of a command, from its engine's cgroup, until it exits or --duration "
                 "passes; Ctrl-C ends it too (docs/containers.md#attach)")
      ->option_text("ID|NAME");
  cmd.add_option("--duration", attach.duration,
                 "with --container: measure for this long at most (e.g. 30s, 5m)")
      ->option_text("D");
}

namespace {

Result<int> Attach(const AttachArgs& attach, const RunArgs& args, const CLI::App& cmd,
                   const std::vector<std::string>& command) {
  if (!command.empty() || !cmd.remaining().empty()) {
    return InvalidArgument(
        "--container attaches to a container that runs already: give no command after it "
        "(or drop --container to start one: footprint run -- podman run ...)");
  }
  int64_t duration_ns = 0;
  if (!attach.duration.empty()) {
    FP_ASSIGN_OR_RETURN(duration_ns, ParseDurationNs(attach.duration));
  }
  MonitorOptions o;
  o.record_git = !args.no_git;
  FP_RETURN_IF_ERROR(ApplySamplingOptions(args, cmd, o));
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(args.db));
  FP_ASSIGN_OR_RETURN(MonitorOutcome out,
                      RunAttachedContainer(*store, o, attach.container, duration_ns));
  for (const std::string& w : out.warnings) std::cerr << "footprint: warning: " << w << "\n";
  if (!args.quiet) PrintOutcome(out, *store, "", std::cerr);
  return out.end_stored ? 0 : kExitRunFailed;
}

}  // namespace

int RunAttach(const AttachArgs& attach, const RunArgs& args, const CLI::App& cmd,
              const std::vector<std::string>& command) {
  Result<int> status =
      attach.container.empty()
          ? Result<int>(InvalidArgument("--duration goes with --container ID|NAME"))
          : Attach(attach, args, cmd, command);
  if (status.ok()) return *status;
  Fail(status.status());
  return kExitRunFailed;
}

}  // namespace footprint::cli
