#include "load/mlperf_log.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "load/load_samples.h"
#include "util/file.h"
#include "util/json_text.h"

namespace footprint {
namespace {

using json = nlohmann::json;

int64_t Ns(double seconds) { return std::llround(seconds * 1e9); }

// The latency distribution's names in footprint and LoadGen's percent in its keys and lines.
constexpr std::pair<const char*, double> kPercentiles[] = {
    {"p50", 50}, {"p90", 90}, {"p95", 95}, {"p97", 97}, {"p99", 99}, {"p99.9", 99.9}};

std::string LoadGenPercent(double percent) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", percent);
  return text;
}

// What LoadGen's result line reports for the scenario: (detail key, summary line, value).
struct ScenarioResult {
  std::string key, line;
  json value;
};
ScenarioResult ResultOf(const LoadSummary& s) {
  const std::optional<double> estimate = s.early_stopping.estimate_s;
  switch (s.options.scenario) {
    case Scenario::kSingleStream:
      return {"early_stopping_latency_ss", "Early stopping 90th percentile estimate (ns)",
              estimate ? Ns(*estimate) : 0};
    case Scenario::kMultiStream:
      return {"early_stopping_latency_ms", "Early stopping 99th percentile estimate (ns)",
              estimate ? Ns(*estimate) : 0};
    case Scenario::kServer:
      return {"result_completed_samples_per_sec", "Completed samples per second", s.samples_per_s};
    case Scenario::kOffline:
      return {"result_samples_per_second", "Samples per second", s.samples_per_s};
  }
  return {};
}

int64_t SamplesPerQuery(const LoadOptions& o) {
  if (o.scenario == Scenario::kMultiStream) return o.samples_per_query;
  return o.scenario == Scenario::kOffline ? o.min_queries : 1;  // offline: one query of all
}

// The detail log's (key, value) pairs: the effective settings, then the results.
std::vector<std::pair<std::string, json>> DetailEntries(const LoadSummary& s) {
  const LoadOptions& o = s.options;
  std::vector<std::pair<std::string, json>> e = {
      {"sut_name", "footprint load"},
      {"effective_scenario", MlperfScenarioName(o.scenario)},
      {"effective_test_mode", o.accuracy ? "AccuracyOnly" : "PerformanceOnly"},
      {"effective_samples_per_query", SamplesPerQuery(o)},
      {"effective_target_qps", o.scenario == Scenario::kServer ? o.qps : 0.0},
      {"effective_target_latency_ns", o.latency_bound_s ? Ns(*o.latency_bound_s) : 0},
      {"effective_target_latency_percentile", TargetPercentile(o) * 100},
      {"effective_min_duration_ms", o.min_duration_ns / 1'000'000},
      {"effective_min_query_count", o.min_queries},
      {"effective_performance_sample_count", PerformanceSampleCount(o)},
      {"effective_qsl_rng_seed", 0},  // footprint loads no sample set: the SUT holds it
      {"effective_sample_index_rng_seed", o.sample_seed},
      {"effective_schedule_rng_seed", o.seed},
      {"result_validity", MlperfValid(s) ? "VALID" : "INVALID"},
      {"result_query_count", s.completed},
      {"early_stopping_met", s.early_stopping.met},
      {"early_stopping_result", s.early_stopping.sentence},
      {"result_samples_per_second", s.samples_per_s}};
  const ScenarioResult result = ResultOf(s);
  if (result.key != "result_samples_per_second") e.emplace_back(result.key, result.value);
  for (const auto& [name, percent] : kPercentiles) {
    if (auto it = s.latency_s.find(name); it != s.latency_s.end()) {
      e.emplace_back("result_" + LoadGenPercent(percent) + "_percentile_latency_ns",
                     Ns(it->second));
    }
  }
  if (auto mean = s.latency_s.find("mean"); mean != s.latency_s.end()) {
    e.emplace_back("result_mean_latency_ns", Ns(mean->second));
    e.emplace_back("result_max_latency_ns", Ns(s.latency_s.at("max")));
  }
  if (o.scenario == Scenario::kMultiStream && s.latency_s.count("p99")) {  // queries' latencies
    e.emplace_back("result_99.00_percentile_per_query_latency_ns", Ns(s.latency_s.at("p99")));
    e.emplace_back("result_mean_query_latency_ns", Ns(s.latency_s.at("mean")));
  }
  return e;
}

}  // namespace

bool MlperfValid(const LoadSummary& s) {
  if (!s.validity.empty()) return s.validity == "valid";
  return s.ended_because == "done" && s.completed == s.issued &&
         (s.options.scenario == Scenario::kOffline || s.early_stopping.met);
}

std::string MlperfDetailLog(const LoadSummary& s) {
  std::string out;
  const json metadata = {{"is_error", false}, {"is_warning", false}, {"file", "footprint"},
                         {"line_no", 0},      {"pid", ::getpid()},   {"tid", ::getpid()}};
  auto line = [&](const std::string& key, const json& value, json meta) {
    const json entry = {{"key", key},
                        {"value", value},
                        {"time_ms", static_cast<double>(s.window_end_ns) / 1e6},
                        {"namespace", "mlperf::logging"},
                        {"event_type", "POINT_IN_TIME"},
                        {"metadata", std::move(meta)}};
    out += ":::MLLOG " + JsonText(entry) + "\n";
  };
  for (const auto& [key, value] : DetailEntries(s)) line(key, value, metadata);
  if (s.ended_because != "done") {  // LoadGen logs what went wrong as an error entry
    json error = metadata;
    error["is_error"] = true;
    line("error_runtime", s.ended_because, error);
  }
  return out;
}

std::string MlperfSummaryLog(const LoadSummary& s) {
  const LoadOptions& o = s.options;
  const std::string rule = "================================================\n";
  auto yes = [](bool b) { return b ? "Yes" : "No"; };
  std::ostringstream out;
  out << rule << "MLPerf Results Summary\n" << rule;
  out << "SUT name : footprint load\n"
      << "Scenario : " << MlperfScenarioName(o.scenario) << "\n"
      << "Mode     : " << (o.accuracy ? "AccuracyOnly" : "PerformanceOnly") << "\n";
  const ScenarioResult result = ResultOf(s);
  out << result.line << " : " << result.value.dump() << "\n";
  if (s.accuracy) out << "Accuracy : " << s.accuracy->fraction << "\n";
  out << "Result is : " << (MlperfValid(s) ? "VALID" : "INVALID") << "\n";
  if (o.latency_bound_s) {
    out << "  Performance constraints satisfied : " << yes(s.validity == "valid") << "\n";
  }
  out << "  Min duration satisfied : " << yes(s.ended_because == "done") << "\n"
      << "  Min queries satisfied : " << yes(s.issued >= o.min_queries) << "\n";
  if (o.scenario != Scenario::kOffline) {
    out << "  Early stopping satisfied: " << yes(s.early_stopping.met) << "\n"
        << "Early Stopping Result:\n * " << s.early_stopping.sentence << "\n";
  }
  out << "\n" << rule << "Additional Stats\n" << rule;
  out << "Completed queries : " << s.completed << "\n";
  if (s.latency_s.count("mean")) {
    out << "Max latency (ns)                : " << Ns(s.latency_s.at("max")) << "\n"
        << "Mean latency (ns)               : " << Ns(s.latency_s.at("mean")) << "\n";
  }
  for (const auto& [name, percent] : kPercentiles) {
    if (auto it = s.latency_s.find(name); it != s.latency_s.end()) {
      out << LoadGenPercent(percent) << " percentile latency (ns)   : " << Ns(it->second) << "\n";
    }
  }
  out << "\n" << rule << "Test Parameters Used\n" << rule;
  out << "samples_per_query : " << SamplesPerQuery(o) << "\n"
      << "target_qps : " << (o.scenario == Scenario::kServer ? o.qps : 0.0) << "\n"
      << "target_latency (ns): " << (o.latency_bound_s ? Ns(*o.latency_bound_s) : 0) << "\n"
      << "min_duration (ms): " << o.min_duration_ns / 1'000'000 << "\n"
      << "min_query_count : " << o.min_queries << "\n"
      << "qsl_rng_seed : 0\n"
      << "sample_index_rng_seed : " << o.sample_seed << "\n"
      << "schedule_rng_seed : " << o.seed << "\n"
      << "performance_sample_count : " << PerformanceSampleCount(o) << "\n\n";
  out << "No warnings encountered during test.\n\n"
      << (s.ended_because == "done" ? "No errors encountered during test.\n"
                                    : "1 ERROR encountered. See detailed log.\n");
  return out.str();
}

Status WriteMlperfLogs(const std::string& dir, const LoadSummary& summary,
                       const std::vector<QueryRecord>& queries) {
  FP_RETURN_IF_ERROR(WriteFile(dir + "/mlperf_log_summary.txt", MlperfSummaryLog(summary), true));
  FP_RETURN_IF_ERROR(WriteFile(dir + "/mlperf_log_detail.txt", MlperfDetailLog(summary), true));
  if (!summary.options.accuracy) return Status::Ok();
  return WriteFile(dir + "/mlperf_log_accuracy.json", MlperfAccuracyLog(queries), true);
}

}  // namespace footprint
