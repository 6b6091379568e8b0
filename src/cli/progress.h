// Progress of a long subcommand on stderr (run -r, parameter scans, export, import): the items
// done (runs, series), a bar and the time left, estimated from the time the items so far took
// (a run's hooks included).
#ifndef FOOTPRINT_CLI_PROGRESS_H_
#define FOOTPRINT_CLI_PROGRESS_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "footprint/progress.h"

namespace footprint::cli {

class Progress {
 public:
  // `total` items of `unit` ("runs"). With `live`, a bar is drawn on stderr from
  // `first_draw_ms` on and redrawn in place every 200 ms by a thread of its own: only for a
  // terminal that nothing else writes to meanwhile (the command's output goes elsewhere).
  // Otherwise nothing is drawn and Eta() is for the lines the caller prints.
  Progress(int total, bool live, std::string unit = "runs", int first_draw_ms = 0);
  ~Progress();  // erases the bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One more item is done.
  void Done();
  int done() const;
  // Writes `lines` (whole lines) to stderr, above the bar when one is drawn.
  void Print(std::string_view lines);
  // "ETA 12.0 s": the runs left times the mean time of those done, less the time since the
  // last was done; "" before the first run is done and after the last.
  std::string Eta() const;

 private:
  std::string EtaLocked() const;
  std::string BarLocked() const;
  void Redraw();

  const int total_;
  const std::string unit_;
  const int first_draw_ms_;
  const int64_t start_ns_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  int done_ = 0;
  int64_t last_done_ns_;
  bool stop_ = false;
  bool drawn_ = false;  // the bar is on the screen
  std::thread thread_;  // redraws; only when live
};

// A ProgressFn for a library operation (export, import) that draws `bar`, made at its first
// call (when the total is known) and shown from 0.5 s on, so a quick one shows nothing. Empty
// unless `live` (stderr is a terminal nothing else writes to). `bar` must outlive the
// operation; resetting it erases the bar.
ProgressFn FollowWith(std::unique_ptr<Progress>& bar, std::string unit, bool live);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_PROGRESS_H_
