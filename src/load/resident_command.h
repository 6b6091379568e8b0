// A command of footprint load's line protocol started once, outside any run, that serves the
// loads of several runs in turn: `footprint evaluate` starts the PyTorch agent once per model,
// so that the model loads once for all of its batch sizes (docs/evaluation.md).
//
// Between loads the command is told what comes next by a control line, which it answers with
// a new line `ready` (footprint never sends one while a query is outstanding):
//   #run<TAB>{JSON}   a load begins: the JSON holds the run to join (run_id, db, t0_ns, as a
//                     command started by footprint run finds them in its environment) and the
//                     load's settings (e.g. max_batch); `ready` once they are applied
//   #end              the load is over: whatever the command does once a load is done (a
//                     framework trace) belongs to this run; `ready` once it is done
// Closing its stdin ends it, as in a load of its own.
//
// Thread-safety: one thread at a time; a LoadDriver uses transport() from its thread while a
// load runs.
#ifndef FOOTPRINT_LOAD_RESIDENT_COMMAND_H_
#define FOOTPRINT_LOAD_RESIDENT_COMMAND_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "footprint/load.h"
#include "footprint/monitor.h"
#include "footprint/status.h"
#include "footprint/store.h"
#include "load/sut_transport.h"

namespace footprint {

class ResidentCommand {
 public:
  // Starts `argv` (looked up in PATH) with its stdin and stdout as the line protocol's pipes
  // and its stderr footprint's, outside any run (the variables that join one are removed), and
  // waits up to `ready_timeout_ns` for its first `ready`. Not found, not executable, or not
  // ready in time (then stopped): NotFound or IoError, one line. Every wait is on `env`'s
  // clock, the loads' (LoadOptions::env).
  static Result<std::unique_ptr<ResidentCommand>> Start(const std::vector<std::string>& argv,
                                                        int64_t ready_timeout_ns,
                                                        Env& env = Env::Default());
  ~ResidentCommand();  // End()s it if it still runs
  ResidentCommand(const ResidentCommand&) = delete;
  ResidentCommand& operator=(const ResidentCommand&) = delete;

  pid_t pid() const { return pid_; }
  SutTransport& transport() { return *transport_; }
  // Seconds from its start to its first `ready`: the start-up no run is charged with.
  double ready_s() const { return ready_s_; }
  // Closes its stdin and waits up to 10 s for it to exit, then stops it (SIGTERM, SIGKILL 10 s
  // later). Its status as a shell gives it. Once; later calls return the same status.
  int End();

 private:
  explicit ResidentCommand(Env& env) : env_(env) {}
  pid_t pid_ = -1;
  Env& env_;
  std::unique_ptr<SutTransport> transport_;
  double ready_s_ = 0;
  std::optional<int> status_;
};

// One load of a resident command, measured and stored as a run of its own (`options` as for
// RunMonitored: name, params, meta, intervals; its command is the one the run records): the
// run begins with the `#run` line (`settings` and the run to join) and ends with the `ready`
// that answers the load's `#end`, so that neither the command's start-up nor another load's
// work is in it. Its process is the command's, walked from footprint without a cgroup (the
// memory it holds was charged before the run existed); the CPU totals are its utime and stime
// over the run. `driver` must have been made with command.transport() as its resident one.
// The run is ok when the load was done, failed otherwise. A non-OK result: footprint itself
// failed (the database).
Result<MonitorOutcome> RunResidentLoad(Store& store, const MonitorOptions& options,
                                       ResidentCommand& command, LoadDriver& driver,
                                       const nlohmann::json& settings);

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_RESIDENT_COMMAND_H_
