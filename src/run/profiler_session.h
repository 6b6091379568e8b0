// A profiler around one monitored run (include/footprint/profiler.h): the command wrapped as
// radT wraps it, the profiler's own processes measured apart from the program's while it
// runs, and its trace files stored as the run's artifacts when it ends.
//
// Thread-safety: Start() runs a thread of its own that reads /proc; every other call is made
// from the monitor's thread.
#ifndef FOOTPRINT_RUN_PROFILER_SESSION_H_
#define FOOTPRINT_RUN_PROFILER_SESSION_H_

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "footprint/monitor.h"
#include "footprint/profiler.h"

namespace footprint {

// The folder footprint owns for a run's artifacts: beside a database file
// (DB.artifacts/RUN_ID), else in the user's data folder
// ($XDG_DATA_HOME/footprint/artifacts/RUN_ID), as footprint.radt places them.
std::string RunArtifactFolder(Env& env, const std::string& store_location,
                              const std::string& run_id);

// InvalidArgument when the run requires a profiler whose tool is not on PATH.
Status CheckProfilerPresent(const MonitorOptions& options);

class ProfilerSession {
 public:
  // For run `run_id` stored at `store_location`: the wrapped command and its environment
  // (replacing `command`'s words, adding to `environment`), or the command untouched when the
  // tool is absent (said once on stderr). Records meta.profiler.
  static Result<std::unique_ptr<ProfilerSession>> Prepare(
      const MonitorOptions& options, const std::string& run_id, const std::string& run_name,
      const std::string& store_location, std::vector<std::string>& command,
      std::map<std::string, std::string>& environment, nlohmann::json& meta);
  ~ProfilerSession();

  // Starts measuring the profiler's processes below footprint, every 20 ms.
  void Start();
  // The command's process `child` has ended and is not reaped yet: its own CPU time, exact
  // (the profiler's last moments, writing its report, are the costly ones).
  void BeforeReap(pid_t child);
  // Stops measuring; stores the trace files as artifacts of `run_id`, and the profiler's
  // totals (profiler_cpu_s, profiler_peak_rss_bytes, profiler_trace_bytes, program_cpu_s).
  void Finish(Store& store, const std::string& run_id, std::map<std::string, double>& totals,
              nlohmann::json& meta, std::vector<std::string>& warnings);

 private:
  ProfilerSession(Env& env, ProfiledCommand profiled, std::string folder, std::string trace_name);
  void Measure();
  void Loop();

  Env& env_;
  ProfiledCommand profiled_;
  std::string folder_, trace_name_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  // The profiler's processes by (pid, start time): their own CPU ticks as last read.
  std::map<std::pair<pid_t, uint64_t>, uint64_t> cpu_ticks_;
  int64_t peak_rss_bytes_ = 0;  // the largest high-water mark of one of them
};

}  // namespace footprint

#endif  // FOOTPRINT_RUN_PROFILER_SESSION_H_
