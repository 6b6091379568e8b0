// Catching the stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) between monitored runs, so that
// Ctrl-C ends a group or an experiment after the run that is stored instead of killing
// footprint. Shared by RunRepeated and RunExperiment.
//
// One catcher at a time per process (the signal state is process-wide); not thread-safe.
#ifndef FOOTPRINT_RUN_STOP_SIGNALS_H_
#define FOOTPRINT_RUN_STOP_SIGNALS_H_

#include <signal.h>

#include <iterator>

namespace footprint {

inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Installs a handler for the stop signals for its lifetime (restoring the old ones after);
// the first signal caught is kept. Handlers use SA_RESTART, so blocking calls other than
// poll/sigwait resume after the signal.
class StopSignalCatcher {
 public:
  StopSignalCatcher();
  ~StopSignalCatcher();
  StopSignalCatcher(const StopSignalCatcher&) = delete;
  StopSignalCatcher& operator=(const StopSignalCatcher&) = delete;

  // The first stop signal caught (or passed on by PassStopSignal) since construction, 0 if none.
  int received() const;

 private:
  struct sigaction old_[std::size(kStopSignals)];
};

// A stop signal footprint took itself while it held them blocked (a run's end, after the command):
// the catcher in place, if any, gets it as if it had caught it, so that a Ctrl-C there still
// stops the group; without one it is dropped. Async-signal-safe.
void PassStopSignal(int sig);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_STOP_SIGNALS_H_
