// Helpers for the probe tests: what a probe reports in Finish, and what it samples.
#ifndef FOOTPRINT_TESTS_UNIT_PROBE_TEST_UTIL_H_
#define FOOTPRINT_TESTS_UNIT_PROBE_TEST_UTIL_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/probe.h"

namespace footprint::testing {

// The totals, metadata and warnings of one Probe::Finish.
struct Findings {
  std::map<std::string, double> totals;
  nlohmann::json meta;
  std::vector<std::string> warnings;

  static Findings Of(Probe& probe) {
    Findings f;
    ProbeFindings view{f.totals, f.meta, f.warnings};
    probe.Finish(view);
    return f;
  }
};

// The last value a probe emitted per series.
class RecordingOut final : public SampleOut {
 public:
  void Add(int series, double value) override { values[series] = value; }
  std::map<int, double> values;
};

}  // namespace footprint::testing

#endif  // FOOTPRINT_TESTS_UNIT_PROBE_TEST_UTIL_H_
