#include "run/stop_signals.h"

namespace footprint {
namespace {

// Set by the handler StopSignalCatcher installs: a stop signal that arrived between two runs.
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_catching = 0;  // a StopSignalCatcher is in place

}  // namespace

StopSignalCatcher::StopSignalCatcher() {
  g_stop_signal = 0;
  g_catching = 1;
  struct sigaction sa = {};
  sa.sa_handler = [](int sig) {
    if (g_stop_signal == 0) g_stop_signal = sig;
  };
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &sa, &old_[i]);
  }
}

StopSignalCatcher::~StopSignalCatcher() {
  g_catching = 0;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    sigaction(kStopSignals[i], &old_[i], nullptr);
  }
}

int StopSignalCatcher::received() const { return g_stop_signal; }

void PassStopSignal(int sig) {
  if (g_catching != 0 && g_stop_signal == 0) g_stop_signal = sig;
}

}  // namespace footprint
