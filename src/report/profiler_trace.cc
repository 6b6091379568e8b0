#include "report/profiler_trace.h"

#include <set>

#include "util/file.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr int64_t kDeviceTrackBase = 1'000'000'000;

bool DeviceEvent(const json& e) {
  static const std::set<std::string> kDevice = {"kernel", "gpu_memcpy", "gpu_memset"};
  return e.contains("cat") && e["cat"].is_string() && kDevice.contains(e["cat"].get<std::string>());
}

// One trace's events, moved by `offset_us`, appended to `out`.
void AddEvents(const json& trace, double offset_us, const std::string& window,
               std::set<int64_t>& streams, std::vector<json>& out) {
  static const std::set<std::string> kKept = {"X", "i", "I", "C", "B", "E"};
  const json& events = trace.is_object() ? trace.value("traceEvents", json::array()) : trace;
  if (!events.is_array()) return;
  for (const json& e : events) {
    if (!e.is_object() || !e.contains("ts") || !e["ts"].is_number() || !e.contains("ph") ||
        !e["ph"].is_string() || !kKept.contains(e["ph"].get<std::string>())) {
      continue;
    }
    json moved = e;
    moved["ts"] = e["ts"].get<double>() + offset_us;
    const int64_t tid =
        e.contains("tid") && e["tid"].is_number_integer() ? e["tid"].get<int64_t>() : 0;
    if (DeviceEvent(e)) {
      streams.insert(tid);
      moved["tid"] = kDeviceTrackBase + tid;
    } else {
      moved["tid"] = tid;
    }
    moved.erase("pid");
    moved["args"] = e.contains("args") && e["args"].is_object() ? e["args"] : json::object();
    moved["args"]["window"] = window;
    out.push_back(std::move(moved));
  }
}

}  // namespace

Result<std::vector<json>> ProfilerTraceEvents(Store& store, const RunRecord& run,
                                              const std::vector<ValueRecord>& values,
                                              std::vector<std::string>& notes) {
  std::vector<json> out;
  std::vector<ArtifactRecord> artifacts;
  std::set<int64_t> streams;
  for (const ValueRecord& v : values) {
    if (v.name != "profiler.window" || v.data_json.empty()) continue;
    const json window = json::parse(v.data_json, nullptr, false);
    if (!window.is_object() || !window.contains("trace") ||
        !window.contains("trace_to_footprint_us") || !window["trace_to_footprint_us"].is_number()) {
      continue;
    }
    if (artifacts.empty()) {
      FP_ASSIGN_OR_RETURN(artifacts, store.ListArtifacts(run.id));
    }
    const std::string name = window["trace"].is_string() ? window["trace"].get<std::string>() : "";
    const ArtifactRecord* a = nullptr;
    for (const ArtifactRecord& r : artifacts) {
      if (r.name == name) a = &r;
    }
    if (a == nullptr) continue;
    auto text = ReadInputFile(a->path, kMaxProfilerTraceBytes, "the profiler trace");
    const json trace = text.ok() ? json::parse(*text, nullptr, false) : json();
    if (!text.ok() || trace.is_discarded()) {
      notes.push_back(
          name + " left out: " + (text.ok() ? std::string("not JSON") : text.status().message()));
      continue;
    }
    AddEvents(trace, window["trace_to_footprint_us"].get<double>(), name, streams, out);
  }
  for (int64_t stream : streams) {
    out.push_back({{"ph", "M"},
                   {"name", "thread_name"},
                   {"tid", kDeviceTrackBase + stream},
                   {"args", {{"name", "GPU stream " + std::to_string(stream)}}}});
  }
  return out;
}

}  // namespace footprint
