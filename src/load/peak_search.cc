// NextPeakRate (include/footprint/load.h): the server rate `footprint load --find-peak` tries
// next. Up by doubling until a rate is invalid (down by halving until one is valid), then
// bisection in the logarithm of the rate between the largest valid rate and the smallest
// invalid one, until they are within the tolerance.
#include <cmath>

#include "footprint/load.h"

namespace footprint {

std::optional<double> NextPeakRate(double start_qps, const std::vector<PeakTrial>& trials,
                                   double tolerance) {
  if (trials.empty()) return start_qps;
  if (static_cast<int>(trials.size()) >= kMaxPeakTrials) return std::nullopt;
  std::optional<double> valid, invalid;  // the largest valid rate, the smallest invalid one
  for (const PeakTrial& t : trials) {
    if (t.valid && (!valid || t.qps > *valid)) valid = t.qps;
    if (!t.valid && (!invalid || t.qps < *invalid)) invalid = t.qps;
  }
  if (!invalid) return *valid * 2;
  // Down no further than 1/64 of the start: a trial's queries take ever longer there.
  if (!valid)
    return *invalid / 2 >= start_qps / 64 ? std::optional<double>(*invalid / 2) : std::nullopt;
  // A noisy machine may find a rate valid above an invalid one: the bracket is then empty and
  // the search ends with the largest valid rate.
  if (*invalid <= *valid * (1 + tolerance)) return std::nullopt;
  return std::sqrt(*valid * *invalid);
}

}  // namespace footprint
