#include "cli/load_view.h"

#include "cli/format.h"
#include "util/strings.h"

namespace footprint::cli {

using json = nlohmann::json;

namespace {

// `title` and the percentiles of the distribution `load[key]`, on one line, when there is one.
void PrintDistribution(const json& load, const char* key, const char* title,
                       const std::string& prefix, std::ostream& out) {
  const json values = load.value(key, json::object());
  if (values.empty()) return;
  out << prefix << title;
  const char* sep = " ";
  for (const char* p : {"p50", "p90", "p95", "p99", "p99.9", "max", "mean"}) {
    if (!values.contains(p)) continue;
    out << sep << p << " " << FormatDuration(values[p].get<double>());
    sep = ", ";
  }
  out << "\n";
}

}  // namespace

void PrintLoadSummary(const json& load, const std::map<std::string, double>& totals,
                      const std::vector<LoadEnergy>& energy, const std::string& prefix,
                      std::ostream& out) {
  const double queries = load.value("queries", 0.0);
  out << prefix << load.value("scenario", std::string("?")) << ": " << static_cast<int64_t>(queries)
      << " of " << load.value("issued", 0) << " queries answered in "
      << FormatDuration(load.value("duration_s", 0.0)) << ", "
      << FormatValue("count", load.value("qps", 0.0)) << " queries/s ("
      << FormatValue("count", load.value("samples_per_s", 0.0)) << " samples/s)\n";
  PrintDistribution(load, "latency_s", "latency from the scheduled time:", prefix, out);
  PrintDistribution(load, "ttft_s", "time to first token (from the scheduled time):", prefix, out);
  PrintDistribution(load, "tpot_s", "time per output token after the first:", prefix, out);
  if (load.value("failed", 0) > 0) {
    out << prefix << load.value("failed", 0) << " queries failed, e.g. "
        << Inert(load.value("first_failure", std::string())) << "\n";
  }
  if (load.contains("latency_bound_s") && load["latency_bound_s"].is_number()) {
    out << prefix << Inert(load.value("validity", std::string("?"))) << " against the bound "
        << FormatDuration(load["latency_bound_s"].get<double>()) << " (p"
        << load.value("percentile", 0.0) * 100 << ")\n";
  }
  out << prefix << Inert(load.value("early_stopping", std::string())) << "\n";
  if (queries > 0) {
    out << prefix << "per query:";
    auto cpu_user = totals.find("cpu_user_s"), cpu_system = totals.find("cpu_system_s");
    if (cpu_user != totals.end() && cpu_system != totals.end()) {
      out << " " << FormatDuration((cpu_user->second + cpu_system->second) / queries)
          << " of CPU (the run's)";
    }
    for (const LoadEnergy& e : energy) {
      out << ", " << FormatValue("J", e.joules / queries)
          << (e.total == "gpu_energy_j" ? " GPU energy" : " CPU energy (whole machine)")
          << (e.over_window ? " (over the load's " + FormatDuration(e.window_s) + ")"
                            : std::string(" (the run's total: ") + e.why_not + ")");
    }
    out << "\n";
  }
}

}  // namespace footprint::cli
