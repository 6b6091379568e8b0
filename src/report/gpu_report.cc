#include "footprint/gpu_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/json_bounded.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// At most this many scope names are named in notes; the rest are counted.
constexpr size_t kMaxScopesNamed = 5;

// Utilisation this high with SM activity under this share of it is the misleading case: a kernel
// was running most of the time, on few of the SMs.
constexpr double kBusyUtilisation = 50;
constexpr double kFewSmsShare = 0.5;

const MetricSummary* WholeRun(const RunSummary& s, std::string_view metric,
                              const std::string& entity) {
  for (const MetricSummary& m : s.metrics) {
    if (m.metric == metric && m.entity == entity && m.scope.empty() && m.count > 0) return &m;
  }
  return nullptr;
}

// "88 %", "0.7 %"
std::string Percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %%" : "%.0f %%", v);
  return buf;
}

// "gpu:0 was busy 88 % of the time (NVML's utilisation) but only 0.7 % of its SMs were active".
void NoteFewSms(const RunSummary& s, std::vector<std::string>& notes) {
  for (const MetricSummary& util : s.metrics) {
    if (util.metric != "gpu" || !util.scope.empty() || util.count == 0) continue;
    const MetricSummary* sm = WholeRun(s, "gpu.sm_active", util.entity);
    if (sm == nullptr || util.mean < kBusyUtilisation || sm->mean >= kFewSmsShare * util.mean) {
      continue;
    }
    notes.push_back(util.entity + " was busy " + Percent(util.mean) +
                    " of the time by NVML's utilisation, but only " + Percent(sm->mean) +
                    " of its SMs were active on average: utilisation counts the time any kernel "
                    "ran, however few SMs it used; gpu.sm_active is the figure to tune against");
  }
}

// The coarsest energy resolution among a run's GPUs, and what it is.
struct EnergyResolution {
  double seconds = 0;
  std::string what;
};

EnergyResolution CoarsestEnergyResolution(const json& meta, const json& devices) {
  EnergyResolution coarsest;
  for (const auto& [entity, d] : devices.items()) {
    if (d.contains("energy_update_period_ms")) {
      const double p = d["energy_update_period_ms"].get<double>() / 1e3;
      if (p > coarsest.seconds) {
        coarsest.seconds = p;
        coarsest.what =
            "the update period of " + entity + "'s energy counter (~" + FormatDuration(p) + ")";
      }
    } else if (d.value("energy_source", "") == "power integration") {
      const double p = meta.value("intervals_ns", json::object()).value("gpu.energy", 0.0) / 1e9;
      if (p > coarsest.seconds) {
        coarsest.seconds = p;
        coarsest.what = "the interval at which " + entity + "'s power is sampled and integrated (" +
                        FormatDuration(p) + ")";
      }
    }
  }
  return coarsest;
}

// The run and the scopes too short for the GPU energy's resolution to tell anything.
void NoteShortEnergyWindows(const RunSummary& s, const EnergyResolution& resolution,
                            std::vector<std::string>& notes) {
  if (s.duration_s < resolution.seconds) {
    notes.push_back("the run (" + FormatDuration(s.duration_s) + ") is shorter than " +
                    resolution.what +
                    ": its GPU energy is a counter step or two, not a measurement");
  }
  size_t short_scopes = 0;
  for (const ScopeSummary& sc : s.scopes) {
    if (sc.count == sc.unfinished || sc.min_s >= resolution.seconds) continue;
    if (++short_scopes > kMaxScopesNamed) continue;
    notes.push_back("scope '" + sc.name + "' (shortest " + FormatDuration(sc.min_s) +
                    ") is shorter than " + resolution.what +
                    ": the GPU energy of one such scope cannot be told from 0");
  }
  if (short_scopes > kMaxScopesNamed) {
    notes.push_back(std::to_string(short_scopes - kMaxScopesNamed) +
                    " more scope name(s) are as short");
  }
}

// Devices lost during the run, and those whose share of the tree's energy is unknown.
void NoteDeviceTroubles(const json& devices, std::vector<std::string>& notes) {
  for (const auto& [entity, d] : devices.items()) {
    if (d.contains("lost_at_s")) {
      notes.push_back(entity + " was lost " + FormatDuration(d["lost_at_s"].get<double>()) +
                      " into the run (" + d.value("lost_reason", "") +
                      "); it was measured until then");
    }
    if (d.contains("energy_tree_unknown")) {
      notes.push_back("the tree's share of " + entity +
                      "'s energy is unknown: " + d["energy_tree_unknown"].get<std::string>());
    }
  }
}

}  // namespace

std::vector<std::string> GpuNotes(const RunSummary& s) {
  std::vector<std::string> notes;
  NoteFewSms(s, notes);
  json meta = ParseStoredJson(s.run.meta_json);
  if (!meta.is_object() || !meta.contains("gpu") || !meta["gpu"].is_object()) return notes;
  const json& gpu = meta["gpu"];
  const json devices = gpu.value("devices", json::object());
  if (devices.empty()) return notes;
  const EnergyResolution resolution = CoarsestEnergyResolution(meta, devices);
  if (resolution.seconds > 0) NoteShortEnergyWindows(s, resolution, notes);
  NoteDeviceTroubles(devices, notes);
  if (const json unsupported = gpu.value("unsupported", json::object()); !unsupported.empty()) {
    std::string fields;
    for (const auto& [key, why] : unsupported.items()) fields += (fields.empty() ? "" : ", ") + key;
    notes.push_back("not measurable here (meta.gpu.unsupported says why): " + fields);
  }
  return notes;
}

}  // namespace footprint
