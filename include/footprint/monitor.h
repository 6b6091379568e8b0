// Monitor: run a command and measure it and every process it starts into a store.
//
// RunMonitored() is what `footprint run` does: it records the run's metadata, starts the
// command with stdin/stdout/stderr untouched, samples the process tree on a background thread,
// forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT that are sent to footprint itself (signals a terminal
// sends to the whole foreground process group already reach the command and are not sent
// twice), waits for the command, and stores exact totals from kernel accounting.
//
// Process-wide effects, for the duration of the call: the calling process becomes a child
// subreaper (so double-forked descendants stay in the tree) and blocks SIGCHLD, SIGINT,
// SIGTERM, SIGHUP and SIGQUIT in the calling thread. Call it from the main thread of a process
// that runs no other monitor at the same time. Not thread-safe.
#ifndef FOOTPRINT_MONITOR_H_
#define FOOTPRINT_MONITOR_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/metrics.h"
#include "footprint/profiler.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// What a CommandDriver is given when the clock starts.
struct DriverStart {
  int to_command = -1;    // the command's stdin (the driver owns it and closes it when done)
  int from_command = -1;  // the command's stdout (the driver owns it)
  pid_t command = 0;      // to stop a command that hangs
  int64_t t0_ns = 0;      // the run's start, CLOCK_MONOTONIC: times are kept from here
};

// What a driver adds to the run once the command has ended.
struct DriverResult {
  std::map<std::string, double> totals;  // run totals (docs/metrics.md)
  std::string meta_key;                  // its member of the run's meta ...
  std::string meta_json;                 // ... a JSON value; empty: none
  std::vector<std::string> warnings;
  // The driver stopped the command with SIGTERM once it was done with it (a server does not
  // end on its own): a death by that signal is then the command's normal end (status ok, 0).
  bool stopped_command = false;
};

// Drives the command through its standard input and output while it runs (footprint load,
// include/footprint/load.h): with MonitorOptions::driver set, the command's stdin and stdout
// are pipes to the driver instead of footprint's own.
class CommandDriver {
 public:
  virtual ~CommandDriver() = default;
  // The clock has started and the command is being released: drive it on a thread of the
  // driver's own and return at once. An error stops the command (the run fails with it).
  virtual Status Start(const DriverStart& start) = 0;
  // Whether the command's stdin and stdout are to be the driver's pipes (else they stay
  // footprint's, and DriverStart has -1 for them).
  virtual bool wants_pipes() const { return true; }
  // The command has ended: wait for the driver's thread, store what it measured (values of
  // run `run_id` in `store`) and say what it adds to the run.
  virtual Status Finish(Store& store, const std::string& run_id, DriverResult& result) = 0;
};

struct MonitorOptions {
  std::vector<std::string> command;  // argv; argv[0] is looked up in PATH
  std::string name;                  // default: the command's base name
  std::string description;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> params;
  MetricSet metrics = DefaultMetrics();
  int64_t interval_ns = 100'000'000;               // default sampling interval
  std::map<MetricId, int64_t> metric_interval_ns;  // per-metric overrides
  int64_t flush_interval_ns = 500'000'000;         // at most 1 s
  bool use_cgroup = true;  // use a cgroup of the run where the machine allows it
  // How the tree's `cpu` is sampled (--cpu-sampler): kAuto, by the kernel into a ring buffer
  // where it allows perf events on the run's cgroup, else from cpu.stat at each deadline;
  // kRing, the ring or the run fails saying why; kTimer, cpu.stat at each deadline.
  enum class CpuSampler { kAuto, kRing, kTimer };
  CpuSampler cpu_sampler = CpuSampler::kAuto;
  // Whether the command lives on when footprint dies (SIGKILL, a lost node): by default it
  // is stopped with everything it started (run/orphan_guard.h).
  bool keep_running = false;
  bool record_git = true;  // git commit and dirty flag when cwd is in a repository
  // Repetitions (`footprint run -r N --warmup W`): the group the run belongs to and its number
  // in it (1..N, or -W..-1 for warm-ups), stored with the planned counts in meta.group. Empty
  // and 0 for a run on its own.
  std::string group_id;
  int repetition = 0;
  int planned_repetitions = 0;
  int planned_warmups = 0;
  // GPUs to measure, as CUDA_VISIBLE_DEVICES lists them (indices, UUIDs, "all"); when unset,
  // footprint's own CUDA_VISIBLE_DEVICES (which the command inherits), else every GPU.
  std::optional<std::string> gpus;
  // Experiments (footprint experiment): stored in the run's experiment and workload columns.
  std::string experiment;
  std::string workload;
  // Variables set in the command's environment on top of footprint's own.
  std::map<std::string, std::string> environment;
  // The folder the command starts in, stored as the run's cwd; empty: footprint's own.
  std::string working_dir;
  // Where the command's stdout and stderr go: empty, footprint's own; else this file,
  // appended to (created when missing; "/dev/null" discards them, as hyperfine does).
  std::string output;
  // A JSON object whose members are added to the run's meta (e.g. "experiment", "repro").
  std::string extra_meta_json;
  // Called once the run is stored and the command waits at the start gate, just before the
  // clock starts (experiments release collocated runs together here). A non-OK status
  // abandons the run: it is stored as failed with that reason and the command never runs.
  std::function<Status()> before_start;
  // A profiler to start the command in (radT's nsys, ncu, ... listeners; docs/profiling.md);
  // none: the command runs as it is.
  std::optional<ProfilerRequest> profiler;
  // Drives the command's stdin and stdout (footprint load); null: they are footprint's own.
  // Not with `output`. Must outlive the call.
  CommandDriver* driver = nullptr;
  // Every outside effect (clocks, /proc and /sys, vendor libraries, variables) goes through
  // it; tests pass a fake. Must outlive the call.
  Env* env = &Env::Default();
};

// Sampling intervals accepted: 1 ms to 1 h (beyond, a run would hold one sample).
inline constexpr int64_t kMinIntervalNs = 1'000'000;
inline constexpr int64_t kMaxIntervalNs = int64_t{3600} * 1'000'000'000;
// Invalid argument naming `what` when `interval_ns` is outside [kMinIntervalNs, kMaxIntervalNs].
Status CheckInterval(int64_t interval_ns, const std::string& what);

struct MonitorOutcome {
  RunRecord run;                         // as stored at the end
  std::map<std::string, double> totals;  // the run totals (names as in DESIGN.md)
  // Status footprint should exit with, as a shell would: the command's code, 128+N when it
  // was killed by signal N, 127 when it was not found, 126 when it could not be executed.
  int exit_status = 0;
  std::string launch_error;           // why the command could not be started, if it could not
  std::vector<std::string> warnings;  // things the user should know (dropped samples, ...)
  // When the database vanished during the run (deleted or replaced): where the run was saved
  // instead, with every other run the file held; empty when it could not be saved (the
  // warnings say why) or nothing vanished.
  bool database_vanished = false;
  std::string saved_to;
  // False when the run's end could not be stored (it shows as interrupted).
  bool end_stored = true;
  // The first of SIGINT, SIGTERM, SIGHUP, SIGQUIT that reached footprint while the command
  // ran (from a terminal or another process), 0 if none: a caller running several commands
  // stops there.
  int signal_received = 0;
};

// Checks options without running anything (intervals, command present, a required
// profiler's tool on PATH). InvalidArgument.
Status ValidateMonitorOptions(const MonitorOptions& options);

// Runs and measures the command. A non-OK result means footprint itself failed before the
// command could start (and the command was not left running); a command that fails, cannot be
// found or is killed is a normal outcome.
Result<MonitorOutcome> RunMonitored(Store& store, const MonitorOptions& options);

// Repetitions of one command, measured as a group (`footprint run -r N --warmup W`).
// Most repetitions (and warm-ups) of one group.
inline constexpr int64_t kMaxRepetitions = 100'000;

// Commands run around the measured runs and not measured, as hyperfine's options of the same
// names. Each is a command line, run by `shell -c LINE`, or split into words (shell-style
// quotes) and run directly when `shell` is empty (hyperfine's -N); with the runs'
// environment, working folder and output (MonitorOptions::environment, working_dir, output),
// and footprint's stdin. Empty: none.
struct RunHooks {
  std::string setup;     // once, before the first run (warm-ups included)
  std::string prepare;   // before each run
  std::string conclude;  // after each run
  std::string cleanup;   // once after the last run, also after a group stopped early
  std::string shell = "sh";
};

struct RepeatOptions {
  int repetitions = 1;      // measured runs, 1 to kMaxRepetitions
  int warmups = 0;          // runs before them (0 to kMaxRepetitions), stored as warm-ups and
                            // kept out of statistics
  bool keep_going = false;  // go on after a repetition that fails
  RunHooks hooks;
};

struct GroupOutcome {
  std::string group_id;  // empty for one run (1 repetition, no warm-up): stored on its own
  std::vector<MonitorOutcome> runs;  // in the order they ran, warm-ups first
  // 0 when every run exited 0; otherwise the status of the first that did not (the command's
  // status, 128+N, 127, 126 as for one run), or 128+N when signal N stopped the group
  // between runs.
  int exit_status = 0;
  int signal_received = 0;  // the signal that stopped the group early, 0 if none
  bool complete = false;    // all W + N runs ran
  // Why a hook stopped the group ("--prepare exited with status 1 before run 3 of 5"), empty
  // if none did; exit_status is then the hook's status unless a run had failed before.
  std::string hook_failure;
};

// Runs `options.command` W + N times, one run each (RunMonitored), sharing a new group id
// (none for a single run), with the hooks around them; `on_run` (may be empty) is called
// after each. Stops after the first run that fails, unless keep_going, after a hook that
// fails (setup, prepare or conclude: the cleanup still runs once the setup succeeded), and
// after any run or hook during which footprint received SIGINT, SIGTERM, SIGHUP or
// SIGQUIT (Ctrl-C stops the group cleanly: every run so far is stored complete). Between runs,
// those signals are caught (a handler is installed for the call's duration) and stop the group
// before the next run. A non-OK result means footprint itself failed; the runs stored before
// stay stored. Same process-wide effects as RunMonitored. Not thread-safe.
Result<GroupOutcome> RunRepeated(Store& store, MonitorOptions options, const RepeatOptions& repeat,
                                 const std::function<void(const MonitorOutcome&)>& on_run);

}  // namespace footprint

#endif  // FOOTPRINT_MONITOR_H_
