// LoadWindowEnergy (include/footprint/report.h): a load's energy over its window, from the
// cumulative energy series.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "footprint/report.h"
#include "util/json_bounded.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// The series' value at `t` (ns since the run's start), linear between the samples around it;
// nullopt outside the samples.
std::optional<double> At(const std::vector<int64_t>& times, const std::vector<double>& values,
                         int64_t t) {
  auto it = std::lower_bound(times.begin(), times.end(), t);
  if (it == times.end()) return std::nullopt;
  const size_t i = static_cast<size_t>(it - times.begin());
  if (times[i] == t) return values[i];
  if (i == 0) return std::nullopt;
  const double f =
      static_cast<double>(t - times[i - 1]) / static_cast<double>(times[i] - times[i - 1]);
  return values[i - 1] + f * (values[i] - values[i - 1]);
}

// The series' resolution: the longest gap between two of its samples, and the counter's update
// period where meta records one (a GPU's energy counter).
double ResolutionS(const std::vector<int64_t>& times, const json& device) {
  int64_t gap = 0;
  for (size_t i = 1; i < times.size(); ++i) gap = std::max(gap, times[i] - times[i - 1]);
  return std::max(static_cast<double>(gap) / 1e9,
                  device.value("energy_update_period_ms", 0.0) / 1e3);
}

// Why a run has no `total` of energy, from what its probes recorded in meta (as show says it),
// or "" when it never looked for that counter (a GPU on a machine that was not asked about).
std::string WhyNoCounter(const json& meta, const std::string& total) {
  if (total == "gpu_energy_j") {
    const json gpu = meta.value("gpu", json::object());
    if (!gpu.is_object() || gpu.empty()) return "";
    return "not measured: " + gpu.value("unavailable", std::string("the GPUs report no energy"));
  }
  const json rapl = meta.value("rapl", json::object());
  const json unavailable =
      rapl.is_object() ? rapl.value("unavailable", json::object()) : json::object();
  if (unavailable.is_object() && unavailable.contains("energy.cpu")) {
    return "not measured: " + unavailable.value("energy.cpu", std::string());
  }
  return "not measured: the run has no energy.cpu counter (RAPL; footprint doctor says why)";
}

}  // namespace

Result<std::vector<LoadEnergy>> LoadWindowEnergy(Store& store, const RunRecord& run,
                                                 const std::map<std::string, double>& totals) {
  std::vector<LoadEnergy> out;
  const json meta = ParseStoredJson(run.meta_json);
  if (!meta.is_object() || !meta.contains("load") || !meta["load"].is_object()) return out;
  const json& load = meta["load"];
  const int64_t start = load.value("window_start_ns", int64_t{0});
  const int64_t end = load.value("window_end_ns", int64_t{0});
  const double window_s = static_cast<double>(end - start) / 1e9;
  const json devices = meta.value("gpu", json::object()).value("devices", json::object());
  FP_ASSIGN_OR_RETURN(auto series, store.ListSeries(run.id));
  struct Kind {
    const char* metric;
    const char* total;
  };
  for (const Kind kind : {Kind{"gpu.energy", "gpu_energy_j"}, Kind{"energy.cpu", "cpu_energy_j"}}) {
    auto total = totals.find(kind.total);
    if (total == totals.end()) {
      // Said, not left out: a VM without RAPL would otherwise show no energy and no reason.
      std::string why = WhyNoCounter(meta, kind.total);
      if (!why.empty()) {
        out.push_back({kind.total, std::numeric_limits<double>::quiet_NaN(), window_s, false, why});
      }
      continue;
    }
    LoadEnergy e{kind.total, total->second, window_s, false, ""};
    double joules = 0;
    bool any = false;
    for (const SeriesRecord& sr : series) {
      // Whole GPUs only: a MIG device's energy is its GPU's.
      if (sr.metric != kind.metric || sr.scope_id || sr.entity.find("/mig:") != std::string::npos) {
        continue;
      }
      std::vector<int64_t> times;
      FP_ASSIGN_OR_RETURN(auto values, store.LoadValues(sr.id, &times));
      const double resolution = ResolutionS(times, devices.value(sr.entity, json::object()));
      auto first = At(times, values, start), last = At(times, values, end);
      if (end <= start || window_s < resolution || !first || !last) {
        char why[160];
        std::snprintf(why, sizeof why,
                      "the load's window (%.3f s) is shorter than %s's resolution (%.3f s), or "
                      "outside its samples",
                      window_s, sr.entity.c_str(), resolution);
        e.why_not = why;
        any = false;
        break;
      }
      joules += *last - *first;
      any = true;
    }
    if (any) {
      e.joules = joules;
      e.over_window = true;
    } else if (e.why_not.empty()) {
      e.why_not = std::string("no ") + kind.metric + " series";
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace footprint
