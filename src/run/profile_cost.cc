// footprint profile-cost: the talk's table (no tool, footprint, each profiler) for one command.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "footprint/monitor.h"
#include "footprint/profiler.h"
#include "util/rusage.h"
#include "util/strings.h"
#include "util/subprocess.h"

extern char** environ;

namespace footprint {
namespace {

// The command with no tool at all: wall time on `env`'s clock and the kernel's rusage of its
// tree.
Result<ProfileCost> RunBare(Env& env, const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int64_t start = env.MonotonicNs();
  pid_t pid;
  if (int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ); err != 0) {
    return InvalidArgument("cannot run '" + command[0] + "': " + std::strerror(err));
  }
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  ProfileCost row{.tool = "none"};
  row.duration_s = static_cast<double>(env.MonotonicNs() - start) / 1e9;
  row.exit_status = ShellStatus(status);
  row.cpu_s = RusageCpuSeconds(ru);
  row.peak_memory_bytes = static_cast<double>(ru.ru_maxrss) * 1024;
  return row;
}

// One monitored run of `options`, its figures as a row named `tool`.
Result<ProfileCost> RunMeasured(Store& store, MonitorOptions options, const std::string& tool) {
  options.name = "profile-cost:" + tool;
  FP_ASSIGN_OR_RETURN(MonitorOutcome out, RunMonitored(store, options));
  auto total = [&](const char* name) {
    auto it = out.totals.find(name);
    return it == out.totals.end() ? 0.0 : it->second;
  };
  ProfileCost row{.tool = tool, .run_id = out.run.id, .exit_status = out.exit_status};
  row.duration_s = static_cast<double>(out.run.ended_at_ns.value_or(out.run.started_at_ns) -
                                       out.run.started_at_ns) /
                   1e9;
  row.cpu_s = total("cpu_user_s") + total("cpu_system_s");
  row.peak_memory_bytes = total("peak_memory_bytes");
  if (out.totals.contains("profiler_cpu_s")) row.profiler_cpu_s = total("profiler_cpu_s");
  FP_ASSIGN_OR_RETURN(auto artifacts, store.ListArtifacts(out.run.id));
  for (const ArtifactRecord& a : artifacts) row.trace_bytes += static_cast<double>(a.size);
  return row;
}

bool IsPython(const std::vector<std::string>& command) {
  const std::string& program = command.front();
  return program.substr(program.rfind('/') + 1).starts_with("python");
}

}  // namespace

Result<std::vector<ProfileCost>> MeasureProfileCost(Store& store, const MonitorOptions& base,
                                                    int torch_steps, const std::string& hook_dir) {
  FP_RETURN_IF_ERROR(ValidateMonitorOptions(base));
  std::vector<ProfileCost> rows;
  FP_ASSIGN_OR_RETURN(ProfileCost bare, RunBare(*base.env, base.command));
  rows.push_back(bare);
  FP_ASSIGN_OR_RETURN(ProfileCost alone, RunMeasured(store, base, "footprint"));
  rows.push_back(alone);
  if (IsPython(base.command)) {
    MonitorOptions torch = base;
    const std::string spec = "torch:" + std::to_string(torch_steps);
    FP_RETURN_IF_ERROR(AddTorchWindow(spec, hook_dir, *base.env, torch.environment));
    FP_ASSIGN_OR_RETURN(ProfileCost row, RunMeasured(store, torch, spec));
    rows.push_back(row);
  }
  for (const char* listener : {"nsys", "ncu"}) {
    if (!FindOnPath(*base.env, listener)) continue;
    MonitorOptions profiled = base;
    profiled.profiler = ProfilerRequest{.listener = listener};
    FP_ASSIGN_OR_RETURN(ProfileCost row, RunMeasured(store, profiled, listener));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace footprint
