// CallBudget: keeps a costly read under a share of one core's time by spacing it out.
//
// Each call is timed on the Env's monotonic clock, and puts the next one off by its typical cost /
// share (share 1 %: a 4 ms NVML call waits 400 ms, a 10 µs one 1 ms). Typical is the (lower) median
// of the last five costs: one call slowed by preemption or by the measured program (an H100's
// energy reading once took 22 ms where the others took 4) must not put the next ones off for long.
// The gap never exceeds `longest_gap_ns`, so that a series stays as dense as the caller promises.
//
// Not thread-safe: one budget belongs to one sampling thread.
#ifndef FOOTPRINT_UTIL_CALL_BUDGET_H_
#define FOOTPRINT_UTIL_CALL_BUDGET_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace footprint {

// The kernel files a sampling pass reads at a cost that matters at high rates (a tree's
// per-process files, memory.stat, /proc/stat, /proc/meminfo): each kept under this share of a
// core, but read at least every 100 ms, the default interval, so a default run loses nothing.
inline constexpr double kKernelReadShare = 0.0025;
inline constexpr int64_t kKernelReadLongestGapNs = 100'000'000;

class CallBudget {
 public:
  explicit CallBudget(double share, int64_t longest_gap_ns = INT64_MAX)
      : share_(share), cap_ns_(longest_gap_ns) {}

  // Whether the call may be made at monotonic time now_ns.
  bool Due(int64_t now_ns) const { return lifted_ || now_ns >= next_ns_; }
  // Whether it may be made at now_ns if it were kept under `share` instead (a larger share:
  // sooner), for a caller with reason to read early (memory moved since the last read).
  bool DueAtShare(int64_t now_ns, double share) const {
    return Due(now_ns) || now_ns >= last_ns_ + GapAt(share);
  }
  // From now on every call is due: a run's last pass reads everything (Probe::BeforeLastPass).
  void Lift() { lifted_ = true; }

  // Makes the call (whatever is due or not: the caller decides), timed on `clock` (the Env:
  // anything with MonotonicNs(), so that util stays below core), and spaces the next one;
  // returns what the call returns.
  template <typename Clock, typename Call>
  auto Make(Clock& clock, int64_t now_ns, const Call& call) {
    const int64_t start = clock.MonotonicNs();
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
      Spent(now_ns, clock.MonotonicNs() - start);
    } else {
      auto result = call();
      Spent(now_ns, clock.MonotonicNs() - start);
      return result;
    }
  }

  // The longest the call was put off, in ms (for meta).
  double longest_gap_ms() const { return static_cast<double>(longest_gap_ns_) / 1e6; }

 private:
  void Spent(int64_t now_ns, int64_t cost_ns) {
    costs_[calls_++ % kCosts] = cost_ns;
    const size_t known = std::min<size_t>(calls_, kCosts);
    std::array<int64_t, kCosts> sorted = costs_;
    std::nth_element(sorted.begin(), sorted.begin() + (known - 1) / 2, sorted.begin() + known);
    typical_ns_ = sorted[(known - 1) / 2];
    last_ns_ = now_ns;
    const int64_t gap = GapAt(share_);
    next_ns_ = now_ns + gap;
    longest_gap_ns_ = std::max(longest_gap_ns_, gap);
  }

  int64_t GapAt(double share) const {
    return std::min(cap_ns_, static_cast<int64_t>(static_cast<double>(typical_ns_) / share));
  }

  static constexpr size_t kCosts = 5;
  double share_;
  int64_t cap_ns_;
  std::array<int64_t, kCosts> costs_{};
  size_t calls_ = 0;
  int64_t typical_ns_ = 0;  // the lower median of the last costs
  int64_t last_ns_ = 0;     // when the last call was made
  int64_t next_ns_ = 0;
  int64_t longest_gap_ns_ = 0;
  bool lifted_ = false;
};

// Records in a run's meta (monitor.reads_spaced_out_ms.WHAT) the longest gap a budget made
// between two reads, where it spaced them out at all (1 ms or more).
template <typename Json>
void NoteSpacedReads(const char* what, const CallBudget& budget, Json& meta) {
  if (budget.longest_gap_ms() >= 1) {
    meta["monitor"]["reads_spaced_out_ms"][what] = budget.longest_gap_ms();
  }
}

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_CALL_BUDGET_H_
