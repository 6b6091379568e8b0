#include "probe/gpu_energy.h"

#include <algorithm>
#include <numeric>

namespace footprint {

void DeviceEnergy::Count(int64_t now_ns) {
  if (readings_ == 0) first_ns_ = now_ns;
  last_ns_ = now_ns;
  ++readings_;
}

void DeviceEnergy::AddCounter(int64_t now_ns, unsigned long long millijoules) {
  if (started()) {
    if (millijoules != counter_last_) {
      if (changes_ > 0) {
        change_gaps_ns_[static_cast<size_t>(changes_ - 1) % change_gaps_ns_.size()] =
            now_ns - last_change_ns_;
      }
      ++changes_;
      last_change_ns_ = now_ns;
    }
    // A counter that went back (driver reloaded) restarts from its new value.
    if (millijoules >= counter_last_) {
      joules_ += static_cast<double>(millijoules - counter_last_) / 1e3;
    }
  }
  counter_last_ = millijoules;
  Count(now_ns);
}

void DeviceEnergy::AddPower(int64_t now_ns, double watts) {
  if (started()) {  // trapezoid
    joules_ += (power_last_w_ + watts) / 2 * static_cast<double>(now_ns - last_ns_) / 1e9;
  }
  power_last_w_ = watts;
  Count(now_ns);
}

std::optional<DeviceEnergy::UpdatePeriod> DeviceEnergy::Period() const {
  if (!counter_ || changes_ < 2) return std::nullopt;
  const size_t n = std::min<size_t>(static_cast<size_t>(changes_ - 1), change_gaps_ns_.size());
  std::array<int64_t, 255> gaps = change_gaps_ns_;
  std::nth_element(gaps.begin(), gaps.begin() + n / 2, gaps.begin() + n);
  const double median_ns = static_cast<double>(gaps[n / 2]);
  const double reading_gap_ns =
      static_cast<double>(last_ns_ - first_ns_) / static_cast<double>(readings_ - 1);
  // Changes seen at (nearly) every reading: the counter may update faster than footprint reads
  // it, and its period is only known to be at most the reading interval. Otherwise the gaps
  // are whole numbers of readings around the period (200 and 300 ms for 250 ms read every
  // 100 ms): their mean is the period.
  const bool upper_bound = median_ns < 1.5 * reading_gap_ns;
  const double period_ns =
      upper_bound
          ? median_ns
          : static_cast<double>(std::accumulate(gaps.begin(), gaps.begin() + n, int64_t{0})) /
                static_cast<double>(n);
  return UpdatePeriod{period_ns / 1e6, upper_bound};
}

void DeviceEnergy::Describe(bool capable, nlohmann::json& d) const {
  if (started() || capable) d["energy_source"] = counter_ ? "counter" : "power integration";
  if (started()) d["energy_j"] = joules_;
  if (std::optional<UpdatePeriod> p = Period()) {
    d["energy_update_period_ms"] = p->ms;
    d["energy_update_period_is_upper_bound"] = p->upper_bound;
  }
  if (counter_) d["energy_counter_changes"] = changes_;
}

bool TreeEnergy::Attribute(double device_j, std::optional<double> share, bool transient,
                           const std::string& why) {
  if (!unknown_.empty()) return false;
  if (started_) {
    if (!share) {
      // After a passing error the energy since attributed_device_j_ waits for the next share.
      if (!transient) unknown_ = why;
      return false;
    }
    joules_ += (device_j - attributed_device_j_) * *share;
  }
  started_ = true;
  attributed_device_j_ = device_j;
  return true;
}

}  // namespace footprint
