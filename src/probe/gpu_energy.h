// A GPU's energy over a run, and the process tree's share of it: the parts of a GPU probe that
// do not depend on the vendor's library, so that every backend (NVML today; an AMD or Jetson
// one would be one more probe file) accumulates and attributes energy the same way.
//
// Pure: readings and times come in as arguments. Thread-compatible (the sampler thread).
#ifndef FOOTPRINT_PROBE_GPU_ENERGY_H_
#define FOOTPRINT_PROBE_GPU_ENERGY_H_

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace footprint {

// Energy since the first reading, from the device's energy counter (mJ, monotone) or, where
// the device has none, from board power integrated by the trapezoid rule. With a counter, the
// counter's update period is detected from the readings that saw it change (Zeus warns that
// windows shorter than it read 0 J; `show` says so too).
class DeviceEnergy {
 public:
  explicit DeviceEnergy(bool counter) : counter_(counter) {}

  bool from_counter() const { return counter_; }
  bool started() const { return readings_ > 0; }
  double joules() const { return joules_; }

  // One reading at `now_ns`: the counter in millijoules, or the power in watts.
  void AddCounter(int64_t now_ns, unsigned long long millijoules);
  void AddPower(int64_t now_ns, double watts);

  struct UpdatePeriod {
    double ms;
    bool upper_bound;  // changes at (nearly) every reading: it may update faster than read
  };
  // Known once the counter changed at least twice.
  std::optional<UpdatePeriod> Period() const;

  // energy_source, energy_j, energy_update_period_ms(+_is_upper_bound), energy_counter_changes.
  void Describe(bool capable, nlohmann::json& device) const;

 private:
  void Count(int64_t now_ns);

  bool counter_;
  double joules_ = 0;
  int64_t readings_ = 0, first_ns_ = 0, last_ns_ = 0;
  unsigned long long counter_last_ = 0;
  double power_last_w_ = 0;
  int64_t changes_ = 0, last_change_ns_ = 0;
  // The latest gaps between readings that saw the counter change (a ring): their median is
  // the counter's update period, as far as readings this far apart can tell.
  std::array<int64_t, 255> change_gaps_ns_{};
};

// The device energy attributed to the process tree: each increment of the device's energy
// times the tree's share of the device over that interval. A share that cannot be told for
// good (a shared device without per-process figures) makes the tree's energy unknown; a
// passing failure only delays the increment to the next share.
class TreeEnergy {
 public:
  bool started() const { return started_; }
  double joules() const { return joules_; }
  // Why the tree's energy became unknown, "" while it is known.
  const std::string& unknown() const { return unknown_; }

  // The device energy is now `device_j`; `share` of the interval since the last call was the
  // tree's (nullopt: not known, with `why`, and `transient` when only a passing error stood in
  // the way). True when the tree's energy is known up to now (a new sample); false when the
  // increment waits for the next share or the tree's energy became unknown.
  bool Attribute(double device_j, std::optional<double> share, bool transient,
                 const std::string& why);

 private:
  bool started_ = false;
  double joules_ = 0;
  double attributed_device_j_ = 0;  // device energy already attributed
  std::string unknown_;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_GPU_ENERGY_H_
