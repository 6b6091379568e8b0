#include "cli/load_view.h"

#include <cmath>
#include <cstdio>

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

// CPU per query over the load's window where the run has it (older runs: the run's, start-up
// included, said so), and energy per query, each with what it covers or why it is missing.
void PrintCostPerQuery(const json& load, const std::map<std::string, double>& totals,
                       const std::vector<LoadEnergy>& energy, double queries,
                       const std::string& prefix, std::ostream& out) {
  out << prefix << "per query:";
  auto cpu_user = totals.find("cpu_user_s"), cpu_system = totals.find("cpu_system_s");
  if (load.contains("cpu_s") && load["cpu_s"].is_number()) {
    out << " " << FormatDuration(load["cpu_s"].get<double>() / queries)
        << " of CPU (over the load's " << FormatDuration(load.value("duration_s", 0.0))
        << ", from the command's "
        << Inert(load.value("cpu_source", std::string("?")))
        // Without a cgroup of its own only the command's process is read: say what is left out.
        << (load.value("cpu_source", std::string()) == "process"
                ? " alone: processes it started are not counted"
                : "")
        << ")";
  } else if (cpu_user != totals.end() && cpu_system != totals.end()) {
    out << " " << FormatDuration((cpu_user->second + cpu_system->second) / queries)
        << " of CPU (the run's, start-up included)";
  }
  for (const LoadEnergy& e : energy) {
    const char* what = e.total == "gpu_energy_j" ? " GPU energy" : " CPU energy (whole machine)";
    if (!std::isfinite(e.joules)) {
      out << ", no" << what << " (" << Inert(e.why_not) << ")";
      continue;
    }
    out << ", " << FormatValue("J", e.joules / queries) << what
        << (e.over_window ? " (over the load's " + FormatDuration(e.window_s) + ")"
                          : std::string(" (the run's total: ") + e.why_not + ")");
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
  if (const json accuracy = load.value("accuracy", json::object()); !accuracy.empty()) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.2f %%", 100 * accuracy.value("fraction", 0.0));
    out << prefix << "accuracy: " << percent << " (" << accuracy.value("correct", 0) << " of "
        << accuracy.value("samples", 0) << " samples answered as expected)\n";
  }
  if (load.contains("latency_bound_s") && load["latency_bound_s"].is_number()) {
    out << prefix << Inert(load.value("validity", std::string("?"))) << " against the bound "
        << FormatDuration(load["latency_bound_s"].get<double>()) << " (p"
        << load.value("percentile", 0.0) * 100 << ")\n";
  }
  if (const std::string early = load.value("early_stopping", std::string()); !early.empty()) {
    out << prefix << Inert(early) << "\n";
  }
  PrintDistribution(load, "issue_lag_s", "issue lag (issued after the scheduled time):", prefix,
                    out);
  if (queries > 0) PrintCostPerQuery(load, totals, energy, queries, prefix, out);
}

}  // namespace footprint::cli
