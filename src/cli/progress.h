// Progress of a long subcommand on stderr (run -r, parameter scans): the runs done, a bar and
// the time left, estimated from the time the runs so far took (their hooks included).
#ifndef FOOTPRINT_CLI_PROGRESS_H_
#define FOOTPRINT_CLI_PROGRESS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace footprint::cli {

class Progress {
 public:
  // `total` runs. With `live`, a bar is drawn on stderr and redrawn in place every 200 ms by a
  // thread of its own: only for a terminal that nothing else writes to meanwhile (the
  // command's output goes elsewhere). Otherwise nothing is drawn and Eta() is for the lines
  // the caller prints.
  Progress(int total, bool live);
  ~Progress();  // erases the bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One more run is done.
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
  const int64_t start_ns_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  int done_ = 0;
  int64_t last_done_ns_;
  bool stop_ = false;
  std::thread thread_;  // redraws; only when live
};

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_PROGRESS_H_
