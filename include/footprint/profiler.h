// Profilers around a run: radT's workload listeners (nsys, nsysraw, ncu, ncuraw, ncuattach)
// start the command inside NVIDIA's Nsight Systems or Nsight Compute, with the command line
// and environment radT gives them (docs/profiling.md). The trace files they write become the
// run's artifacts, and the profiler's own processes are measured apart from the program's.
#ifndef FOOTPRINT_PROFILER_H_
#define FOOTPRINT_PROFILER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// A profiler to start the command in (MonitorOptions::profiler).
struct ProfilerRequest {
  std::string listener;    // radT's name: nsys, nsysraw, ncu, ncuraw, ncuattach
  std::string trace_name;  // the trace files' name before the tool's suffix (radT:
                           // nsys_EXPERIMENT_WORKLOAD_LETTER); empty: TOOL_RUN-NAME
  bool required = false;   // refuse the run when the tool is absent (else it runs unprofiled)
};

// Whether `name` (any case) is one of radT's workload listeners.
bool IsProfilerListener(std::string_view name);
// radT's workload listeners, in its order, for messages.
const std::vector<std::string>& ProfilerListeners();

// The command as the profiler runs it.
struct ProfiledCommand {
  std::string tool;                                // the executable's name: "nsys" or "ncu"
  std::vector<std::string> command;                // the tool's words, then the command's
  std::map<std::string, std::string> environment;  // set on top of the command's
  bool writes_trace = true;                        // ncuattach waits for a UI instead
};

// `command` run by listener `listener` writing its trace to `trace_prefix` (a path without
// the tool's suffix), word for word as radT 0.2.x does it. InvalidArgument for a name that is
// not a workload listener.
Result<ProfiledCommand> WrapInProfiler(std::string_view listener,
                                       const std::vector<std::string>& command,
                                       const std::string& trace_prefix);

// `footprint run --profile torch:STEPS[:WAIT]`: a PyTorch-profiler window over optimizer steps
// with no change to the script. Writes `hook_dir`/sitecustomize.py, which has footprint's
// Python package (footprint.profiling) count every optimizer.step(), and sets PYTHONPATH
// (`hook_dir` first, then `env`'s) and FOOTPRINT_PROFILE in `environment`. InvalidArgument
// for a malformed `spec`.
Status AddTorchWindow(const std::string& spec, const std::string& hook_dir, Env& env,
                      std::map<std::string, std::string>& environment);

struct MonitorOptions;  // footprint/monitor.h

// `footprint profile-cost`: one command run with no tool, under footprint alone, and in each
// profiler window available here (a PyTorch window for a python command, nsys and ncu when on
// PATH), side by side.
struct ProfileCost {
  std::string tool;    // "none", "footprint", "torch:STEPS", "nsys", "ncu"
  std::string run_id;  // empty for "none" (not stored)
  int exit_status = 0;
  double duration_s = 0;
  double cpu_s = 0;              // the whole tree's, profiler included
  double peak_memory_bytes = 0;  // "none": the largest process's (wait4)
  std::optional<double> profiler_cpu_s;
  double trace_bytes = 0;  // the run's artifacts
};
// Runs `base.command` once per tool; the monitored runs are stored in `store`, named
// "profile-cost:TOOL", and the run with no tool is timed on `base.env`'s clock. `hook_dir`
// holds the PyTorch window's sitecustomize.py.
Result<std::vector<ProfileCost>> MeasureProfileCost(Store& store, const MonitorOptions& base,
                                                    int torch_steps, const std::string& hook_dir);

// The full path of executable `name` in `env`'s PATH; none when it is not there.
std::optional<std::string> FindOnPath(Env& env, const std::string& name);

// The last line `PATH --version` prints (the tool's version); none when it cannot be run.
std::optional<std::string> ProfilerVersion(const std::string& path);

}  // namespace footprint

#endif  // FOOTPRINT_PROFILER_H_
