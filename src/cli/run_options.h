// What the measuring subcommands (run, load, evaluate) share: the measuring options, the
// monitor options made from them, and the line that says how a run went.
#ifndef FOOTPRINT_CLI_RUN_OPTIONS_H_
#define FOOTPRINT_CLI_RUN_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "footprint/monitor.h"
#include "footprint/scan.h"
#include "footprint/status.h"

namespace footprint::cli {

struct RunArgs {
  std::string db;
  std::string name, description, metrics, gpus, output;
  std::vector<std::string> tags, params, intervals;
  bool no_cgroup = false, no_git = false, quiet = false, keep_running = false;
  std::string cpu_sampler = "auto";  // --cpu-sampler: auto, ring or timer
  RepeatOptions repeat;
  std::string shell;  // --shell: the command too runs in it
  bool no_shell = false;
  std::vector<std::string> ranges, lists;  // -P NAME MIN MAX, -L NAME VALUES, flattened
  std::string step = "1";
  std::string profiler;  // --profiler LISTENER (run)
  std::string profile;   // --profile torch:STEPS (run)
  bool require_profiler = false;
};

// Declares -o, -n, -d, --tag, --param, -m, -i, --gpus and -q: how any measurement is sampled
// and recorded.
void AddSamplingOptions(CLI::App* cmd, RunArgs* args);
// Those, and --no-cgroup and --no-git: the options of a command footprint starts.
void AddMeasureOptions(CLI::App* cmd, RunArgs* args);

// What AddSamplingOptions declared, into `o` (its command and what it runs untouched).
Status ApplySamplingOptions(const RunArgs& args, const CLI::App& cmd, MonitorOptions& o);

// The command after `--` (or the first word CLI11 did not know), checked into options.
Result<MonitorOptions> CommandOptions(RunArgs& args, CLI::App& cmd,
                                      const std::vector<std::string>& command);

// A folder of footprint's own for --profile's sitecustomize.py (in $TMPDIR), removed with the
// object.
class HookFolder {
 public:
  static Result<std::unique_ptr<HookFolder>> Make();
  ~HookFolder();
  const std::string& path() const { return path_; }

 private:
  explicit HookFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// "footprint: NAME ok in 1.2 s: cpu ..." and where the run is: stored in `store`'s database,
// or waiting in its local buffer; `label` tells which run of a group it was ("[2/5] ",
// "[warm-up 1/1] "), empty otherwise.
void PrintOutcome(const MonitorOutcome& out, Store& store, const std::string& label,
                  std::ostream& err);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_RUN_OPTIONS_H_
