#include "cli/load_view.h"

#include "cli/format.h"
#include "util/strings.h"

namespace footprint::cli {

using json = nlohmann::json;

void PrintLoadSummary(const json& load, const std::map<std::string, double>& totals,
                      const std::string& prefix, std::ostream& out) {
  const double queries = load.value("queries", 0.0);
  out << prefix << load.value("scenario", std::string("?")) << ": " << static_cast<int64_t>(queries)
      << " of " << load.value("issued", 0) << " queries answered in "
      << FormatDuration(load.value("duration_s", 0.0)) << ", "
      << FormatValue("count", load.value("qps", 0.0)) << " queries/s ("
      << FormatValue("count", load.value("samples_per_s", 0.0)) << " samples/s)\n";
  const json latency = load.value("latency_s", json::object());
  if (!latency.empty()) {
    out << prefix << "latency from the scheduled time:";
    const char* sep = " ";
    for (const char* p : {"p50", "p90", "p95", "p99", "p99.9", "max", "mean"}) {
      if (!latency.contains(p)) continue;
      out << sep << p << " " << FormatDuration(latency[p].get<double>());
      sep = ", ";
    }
    out << "\n";
  }
  if (load.contains("latency_bound_s") && load["latency_bound_s"].is_number()) {
    out << prefix << Inert(load.value("validity", std::string("?"))) << " against the bound "
        << FormatDuration(load["latency_bound_s"].get<double>()) << " (p"
        << load.value("percentile", 0.0) * 100 << ")\n";
  }
  out << prefix << Inert(load.value("early_stopping", std::string())) << "\n";
  if (queries > 0) {
    out << prefix << "per query:";
    const char* sep = " ";
    auto per = [&](const char* name, const char* unit, const char* what) {
      auto it = totals.find(name);
      if (it == totals.end()) return;
      out << sep << FormatValue(unit, it->second / queries) << " " << what;
      sep = ", ";
    };
    auto cpu_user = totals.find("cpu_user_s"), cpu_system = totals.find("cpu_system_s");
    if (cpu_user != totals.end() && cpu_system != totals.end()) {
      out << sep << FormatDuration((cpu_user->second + cpu_system->second) / queries) << " of CPU";
      sep = ", ";
    }
    per("gpu_energy_j", "J", "GPU energy");
    per("cpu_energy_j", "J", "CPU energy (whole machine)");
    out << " (the run's totals over the queries answered)\n";
  }
}

}  // namespace footprint::cli
