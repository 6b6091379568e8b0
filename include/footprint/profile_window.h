// A profiling window over a program's steps, as footprint.profile in Python
// (docs/profiling.md): a schedule of `wait` idle steps, `warmup` steps and `active` recorded
// steps, `repeat` times (0: for ever). While it records, the NVTX range `profile` is open
// (radT's nsys and ncu listeners capture it; through libnvToolsExt.so.1 when it loads) and so
// is the scope `profile:NAME` of the benchmark, on footprint's timeline. With the window's
// last step the value `profiler.window_added_s` is stored: what its warm-up and recorded steps
// took beyond as many of the other steps (their median).
//
// Thread-safety: one thread steps a window.
#ifndef FOOTPRINT_PROFILE_WINDOW_H_
#define FOOTPRINT_PROFILE_WINDOW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "footprint/api.h"
#include "footprint/env.h"

namespace footprint {

struct ProfileSchedule {
  int wait = 1;
  int warmup = 1;
  int active = 1;
  int repeat = 1;  // 0: for ever
};

class ProfileWindow {
 public:
  // Starts step 0. `bm` (may be null: NVTX only) must outlive the window; InvalidArgument
  // for a schedule with a negative count or no active step.
  static Result<std::unique_ptr<ProfileWindow>> Open(Benchmark* bm, std::string name,
                                                     ProfileSchedule schedule,
                                                     Env& env = Env::Default());
  ~ProfileWindow();  // closes an open range and stores the added time
  ProfileWindow(const ProfileWindow&) = delete;
  ProfileWindow& operator=(const ProfileWindow&) = delete;

  // Ends the current step and begins the next.
  void Step();
  // Whether the current step is recorded.
  bool recording() const;
  // Whether NVTX ranges reach a profiler (libnvToolsExt.so.1 loaded).
  bool nvtx() const { return range_start_ != nullptr; }
  // The steps recorded so far.
  const std::vector<int64_t>& recorded_steps() const { return recorded_; }

 private:
  ProfileWindow(Benchmark* bm, std::string name, ProfileSchedule schedule, Env& env);
  enum class Phase { kIdle, kWarmup, kRecord };
  Phase PhaseOf(int64_t step) const;
  void Follow();
  void SetRange(bool open);
  void Finish();

  Benchmark* bm_;
  std::string name_;
  ProfileSchedule schedule_;
  std::vector<int64_t> begun_ns_;  // as each step began (the benchmark's clock, else monotonic)
  std::vector<int64_t> recorded_;
  std::vector<bool> in_window_;  // per step: warm-up or recorded
  uint64_t scope_ = 0;
  bool range_open_ = false;
  uint64_t range_id_ = 0;
  uint64_t (*range_start_)(const char*) = nullptr;
  void (*range_end_)(uint64_t) = nullptr;
  Env& env_;
  bool finished_ = false;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROFILE_WINDOW_H_
