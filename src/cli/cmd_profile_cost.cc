// footprint profile-cost: a command with no tool, with footprint alone and in each profiler
// window available here, side by side (docs/profiling.md).
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/run_options.h"
#include "footprint/monitor.h"
#include "footprint/profiler.h"

namespace footprint::cli {
namespace {

// A torch row without a trace had no window: the hook opens it at optimizer.step() calls
// (footprint run --profile), so a command without enough of them was measured unprofiled.
bool TorchWindowMissing(const ProfileCost& r) {
  return r.tool.starts_with("torch:") && r.trace_bytes == 0;
}

void PrintCosts(const std::vector<ProfileCost>& rows, std::ostream& out) {
  Table t({"tool", "time", "cpu", "peak memory", "profiler cpu", "trace", "exit", "run"},
          {1, 2, 3, 4, 5});
  const double base = rows.front().duration_s;
  for (const ProfileCost& r : rows) {
    std::string time = FormatValue("s", r.duration_s);
    if (&r != &rows.front() && base > 0) {
      time += " (" + FormatValue("count", std::round(100 * (r.duration_s / base - 1))) + " %)";
    }
    t.Add({r.tool, time, FormatValue("s", r.cpu_s), FormatValue("bytes", r.peak_memory_bytes),
           r.profiler_cpu_s ? FormatValue("s", *r.profiler_cpu_s) : "-",
           TorchWindowMissing(r) ? "no window" : FormatValue("bytes", r.trace_bytes),
           std::to_string(r.exit_status), r.run_id.substr(0, 8)});
  }
  t.Print(out);
  for (const ProfileCost& r : rows) {
    if (!TorchWindowMissing(r)) continue;
    out << r.tool << ": no window was recorded, so this row is the command unprofiled: the "
        << "window opens at the command's optimizer.step() calls, and it made too few of them "
        << "(or its Python cannot import footprint)\n";
  }
}

}  // namespace

Action AddProfileCost(CLI::App& app, const std::vector<std::string>& command) {
  auto args = std::make_shared<RunArgs>();
  auto steps = std::make_shared<int>(2);
  CLI::App* cmd = app.add_subcommand(
      "profile-cost",
      "Run COMMAND with no tool, under footprint alone and in each profiler window available "
      "here, and print time, CPU and space side by side.");
  AddMeasureOptions(cmd, args.get());
  cmd->add_option("--steps", *steps,
                  "optimizer steps the PyTorch window records, for a python command (default 2)")
      ->check(CLI::Range(1, 1'000'000));
  cmd->prefix_command();
  cmd->footer(
      "Rows: none (the command alone, timed with wait4's rusage), footprint (footprint run), "
      "torch:STEPS when COMMAND is a python interpreter (footprint run --profile), nsys and "
      "ncu when on PATH (footprint run --profiler). The measured runs are stored, named "
      "profile-cost:TOOL. Exits 0 when every row's command exited 0, 1 otherwise, 125 when "
      "footprint itself fails.\n\n"
      "Example:\n  footprint profile-cost -- python3 train.py --epochs 1");
  return [args, steps, cmd, &command]() -> int {
    Result<int> status = [&]() -> Result<int> {
      FP_ASSIGN_OR_RETURN(MonitorOptions o, CommandOptions(*args, *cmd, command));
      FP_ASSIGN_OR_RETURN(auto hook, HookFolder::Make());
      FP_ASSIGN_OR_RETURN(auto store, OpenStore(args->db));
      FP_ASSIGN_OR_RETURN(auto rows, MeasureProfileCost(*store, o, *steps, hook->path()));
      PrintCosts(rows, std::cout);
      for (const ProfileCost& r : rows) {
        if (r.exit_status != 0) return kExitError;
      }
      return kExitOk;
    }();
    if (status.ok()) return *status;
    Fail(status.status());
    return kExitRunFailed;
  };
}

}  // namespace footprint::cli
