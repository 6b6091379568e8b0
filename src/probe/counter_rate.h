// CounterRate: a cumulative counter (CPU time, bytes, events) turned into a rate per pass.
#ifndef FOOTPRINT_PROBE_COUNTER_RATE_H_
#define FOOTPRINT_PROBE_COUNTER_RATE_H_

#include <cstdint>
#include <optional>

namespace footprint {

class CounterRate {
 public:
  // The counter was 0 at monotonic t0_ns: the command it counts started then (Probe::Begin).
  // The first rate then runs from t0, so that nothing counted before the first pass is
  // missing, and is given at the second pass: the first, prompt on an idle machine, would
  // make it a rate over a few microseconds that holds only the command's start.
  void StartAtZero(int64_t t0_ns) {
    last_value_ = 0;
    last_ns_ = t0_ns;
    hold_first_ = true;
  }

  // The counter's change per second since the previous call (or since StartAtZero), times
  // `scale`. nullopt at the first call, which only sets the baseline (or is held, see
  // above), when no time passed, and when the counter stepped back (then the baseline moves
  // to `value`).
  std::optional<double> Next(int64_t now_ns, double value, double scale) {
    if (hold_first_) {
      hold_first_ = false;
      return std::nullopt;
    }
    std::optional<double> rate;
    if (last_ns_ != 0 && value >= last_value_) {
      if (now_ns <= last_ns_) return std::nullopt;
      rate = (value - last_value_) * scale / static_cast<double>(now_ns - last_ns_);
    }
    last_value_ = value;
    last_ns_ = now_ns;
    return rate;
  }

 private:
  double last_value_ = 0;
  int64_t last_ns_ = 0;  // 0 until StartAtZero or the first Next sets the baseline
  bool hold_first_ = false;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_COUNTER_RATE_H_
