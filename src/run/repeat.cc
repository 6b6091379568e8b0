// RunRepeated: the runs of a group (warm-ups, repetitions) and the hooks around them.
#include <string>

#include "core/identity.h"
#include "footprint/monitor.h"
#include "run/stop_signals.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace footprint {
namespace {

// The argv of a hook's command line: `shell -c LINE`, or its words without a shell.
Result<std::vector<std::string>> HookCommand(const RunHooks& hooks, const std::string& line) {
  if (hooks.shell.empty()) return SplitShellWords(line);
  return std::vector<std::string>{hooks.shell, "-c", line};
}

Status ValidateHooks(const RunHooks& hooks) {
  const std::pair<const char*, const std::string*> all[] = {{"--setup", &hooks.setup},
                                                            {"--prepare", &hooks.prepare},
                                                            {"--conclude", &hooks.conclude},
                                                            {"--cleanup", &hooks.cleanup}};
  for (const auto& [flag, line] : all) {
    if (line->empty()) continue;
    auto argv = HookCommand(hooks, *line);
    if (!argv.ok()) return InvalidArgument(std::string(flag) + ": " + argv.status().message());
    if (argv->empty()) return InvalidArgument(std::string(flag) + " is blank");
  }
  return Status::Ok();
}

void StopBySignal(GroupOutcome& group, int sig) {
  group.signal_received = sig;
  if (group.exit_status == 0) group.exit_status = 128 + sig;
}

// "run 3 of 12" (warm-ups counted): which run a hook came before or after.
std::string RunOfGroup(int index, int total) {
  return "run " + std::to_string(index + 1) + " of " + std::to_string(total);
}

// Runs the group's hooks; each Run is false, with the group's status and reason set, when
// the hook failed or a stop signal reached footprint meanwhile.
class HookRunner {
 public:
  HookRunner(const RunHooks& hooks, const MonitorOptions& options, const StopSignalCatcher& catcher,
             GroupOutcome& group)
      : hooks_(hooks), options_(options), catcher_(catcher), group_(group) {}

  bool Run(const char* flag, const std::string& line, const std::string& when) {
    if (line.empty()) return true;
    const int status = RunAndWait(*HookCommand(hooks_, line), options_.environment,
                                  options_.working_dir, options_.output);
    if (int sig = catcher_.received(); sig != 0) {
      StopBySignal(group_, sig);
      return false;
    }
    if (status == 0) return true;
    group_.hook_failure =
        std::string(flag) + " exited with status " + std::to_string(status) + " " + when;
    if (group_.exit_status == 0) group_.exit_status = status;
    return false;
  }

 private:
  const RunHooks& hooks_;
  const MonitorOptions& options_;
  const StopSignalCatcher& catcher_;
  GroupOutcome& group_;
};

// The runs themselves, each between its --prepare and --conclude.
Status RunEach(Store& store, MonitorOptions& options, const RepeatOptions& repeat,
               const std::function<void(const MonitorOutcome&)>& on_run,
               const StopSignalCatcher& catcher, HookRunner& hooks, GroupOutcome& group) {
  const int total = repeat.warmups + repeat.repetitions;
  for (int i = 0; i < total; ++i) {
    if (int sig = catcher.received(); sig != 0) {
      StopBySignal(group, sig);
      return Status::Ok();
    }
    if (!hooks.Run("--prepare", repeat.hooks.prepare, "before " + RunOfGroup(i, total))) {
      return Status::Ok();
    }
    // Warm-ups are numbered -W..-1, measured repetitions 1..N.
    if (!options.group_id.empty()) {
      options.repetition = i < repeat.warmups ? i - repeat.warmups : i - repeat.warmups + 1;
    }
    FP_ASSIGN_OR_RETURN(auto outcome, RunMonitored(store, options));
    if (on_run) on_run(outcome);
    group.runs.push_back(std::move(outcome));
    const MonitorOutcome& last = group.runs.back();
    if (last.exit_status != 0 && group.exit_status == 0) group.exit_status = last.exit_status;
    if (last.signal_received != 0) {
      StopBySignal(group, last.signal_received);
      return Status::Ok();
    }
    if (last.exit_status != 0 && !repeat.keep_going) return Status::Ok();
    if (last.database_vanished) return Status::Ok();  // further runs would be written nowhere
    if (!hooks.Run("--conclude", repeat.hooks.conclude, "after " + RunOfGroup(i, total))) {
      return Status::Ok();
    }
  }
  group.complete = true;
  return Status::Ok();
}

}  // namespace

Result<GroupOutcome> RunRepeated(Store& store, MonitorOptions options, const RepeatOptions& repeat,
                                 const std::function<void(const MonitorOutcome&)>& on_run) {
  if (repeat.repetitions < 1 || repeat.repetitions > kMaxRepetitions) {
    return InvalidArgument("-r/--repetitions must be from 1 to " + std::to_string(kMaxRepetitions) +
                           " (got " + std::to_string(repeat.repetitions) + ")");
  }
  if (repeat.warmups < 0 || repeat.warmups > kMaxRepetitions) {
    return InvalidArgument("--warmup must be from 0 to " + std::to_string(kMaxRepetitions) +
                           " (got " + std::to_string(repeat.warmups) + ")");
  }
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(options));
  FP_RETURN_IF_ERROR(ValidateHooks(repeat.hooks));
  GroupOutcome group;
  if (repeat.repetitions > 1 || repeat.warmups > 0) {
    group.group_id = NewRunId();
    options.group_id = group.group_id;
    options.planned_repetitions = repeat.repetitions;
    options.planned_warmups = repeat.warmups;
  }
  StopSignalCatcher catcher;
  HookRunner hooks(repeat.hooks, options, catcher, group);
  if (!hooks.Run("--setup", repeat.hooks.setup, "before the first run")) return group;
  Status st = RunEach(store, options, repeat, on_run, catcher, hooks, group);
  // After a failed hook or a stop signal too: the cleanup undoes the setup. The first failure
  // is the one the group reports.
  const std::string first_failure = group.hook_failure;
  hooks.Run("--cleanup", repeat.hooks.cleanup, "after the last run");
  if (!first_failure.empty()) group.hook_failure = first_failure;
  if (group.signal_received == 0) group.signal_received = catcher.received();
  FP_RETURN_IF_ERROR(st);
  return group;
}

}  // namespace footprint
