#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "footprint/report.h"
#include "footprint/stats.h"
#include "report/run_json.h"
#include "util/json_bounded.h"
#include "util/json_text.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 18> kTotals = {"duration_s",
                                                      "cpu_user_s",
                                                      "cpu_system_s",
                                                      "peak_memory_bytes",
                                                      "max_process_peak_bytes",
                                                      "rss_sum_peak_bytes",
                                                      "page_cache_peak_bytes",
                                                      "io_read_bytes",
                                                      "io_write_bytes",
                                                      "gpu_energy_j",
                                                      "gpu_energy_tree_j",
                                                      "cpu_energy_j",
                                                      "dram_energy_j",
                                                      "perf_instructions",
                                                      "perf_cycles",
                                                      "perf_cache_misses",
                                                      "monitor_cpu_s",
                                                      "monitor_peak_rss_bytes"};

json Nullable(const std::map<std::string, double>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  if (it == m.end()) return nullptr;
  return it->second;
}

}  // namespace

std::span<const std::string_view> TotalNames() { return kTotals; }

Result<RunRecord> ResolveRun(const std::vector<RunRecord>& runs, std::string_view spec) {
  if (runs.empty()) return NotFound("the database holds no runs yet");
  if (spec == "last") return runs.back();
  for (const RunRecord& r : runs) {
    if (r.id == spec) return r;
  }
  // A name means its most recent run.
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->name == spec) return *it;
  }
  std::vector<const RunRecord*> matches;
  for (const RunRecord& r : runs) {
    if (spec.size() >= 4 && r.id.compare(0, spec.size(), spec) == 0) matches.push_back(&r);
  }
  if (matches.size() == 1) return *matches[0];
  if (matches.size() > 1) {
    std::string ids;
    for (size_t i = 0; i < matches.size() && i < 5; ++i) ids += " " + matches[i]->id;
    return InvalidArgument("run prefix '" + std::string(spec) + "' is ambiguous (" +
                           std::to_string(matches.size()) + " runs:" + ids +
                           "); give more characters");
  }
  return NotFound("no run '" + std::string(spec) +
                  "' (tried id, id prefix of 4+ characters, name); list runs with footprint runs");
}

double RunDuration(const RunRecord& run, const std::map<std::string, double>& totals,
                   int64_t now_ns) {
  if (auto it = totals.find("duration_s"); it != totals.end()) return it->second;
  int64_t end = run.ended_at_ns.value_or(run.heartbeat_ns.value_or(now_ns));
  return static_cast<double>(std::max<int64_t>(0, end - run.started_at_ns)) / 1e9;
}

MetricSummary Summarize(std::vector<double>& values) {
  MetricSummary s;
  s.count = values.size();
  if (values.empty()) return s;
  // Selection instead of a full sort: a series may hold millions of samples.
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  s.p50 = SelectQuantile(values, 0.50);
  s.p95 = SelectQuantile(values, 0.95);
  return s;
}

std::vector<ScopeSummary> SummarizeScopes(const std::vector<ScopeRecord>& scopes) {
  std::vector<ScopeSummary> out;
  std::map<std::string, size_t> index;
  for (const ScopeRecord& s : scopes) {
    auto [it, added] = index.try_emplace(s.name, out.size());
    if (added) out.push_back({s.name});
    ScopeSummary& sum = out[it->second];
    ++sum.count;
    if (!s.end_ns) {
      ++sum.unfinished;
      continue;
    }
    double d = static_cast<double>(*s.end_ns - s.start_ns) / 1e9;
    size_t finished = sum.count - sum.unfinished;
    sum.min_s = finished == 1 ? d : std::min(sum.min_s, d);
    sum.max_s = std::max(sum.max_s, d);
    sum.total_s += d;
  }
  for (ScopeSummary& sum : out) {
    size_t finished = sum.count - sum.unfinished;
    sum.mean_s = finished ? sum.total_s / static_cast<double>(finished) : 0;
  }
  return out;
}

namespace {

// The samples of a series taken inside any of `windows` (sorted by start, may overlap).
std::vector<double> InsideWindows(const std::vector<int64_t>& times,
                                  const std::vector<double>& values,
                                  const std::vector<std::pair<int64_t, int64_t>>& windows) {
  std::vector<double> out;
  size_t w = 0;
  int64_t reach = INT64_MIN;  // the furthest end among windows that started so far
  for (size_t i = 0; i < times.size(); ++i) {
    while (w < windows.size() && windows[w].first <= times[i]) {
      reach = std::max(reach, windows[w].second);
      ++w;
    }
    if (times[i] <= reach) out.push_back(values[i]);
  }
  return out;
}

// `values` (in time order) reduced to at most `points` means of consecutive equal shares.
std::vector<double> Trend(const std::vector<double>& values, size_t points) {
  std::vector<double> out;
  if (points == 0 || values.empty()) return out;
  const size_t n = std::min(points, values.size());
  out.reserve(n);
  for (size_t b = 0; b < n; ++b) {
    const size_t from = b * values.size() / n, to = (b + 1) * values.size() / n;
    double sum = 0;
    for (size_t i = from; i < to; ++i) sum += values[i];
    out.push_back(sum / static_cast<double>(to - from));
  }
  return out;
}

// A rate series in % of a core, sampled at `times` (each value the rate since the previous
// sample), integrated from the first sample to the last.
RunSummary::SeriesCpu IntegrateCpu(const std::vector<int64_t>& times,
                                   const std::vector<double>& values) {
  RunSummary::SeriesCpu out;
  for (size_t i = 1; i < values.size(); ++i) {
    out.cpu_s += values[i] / 100 * static_cast<double>(times[i] - times[i - 1]) / 1e9;
    out.peak_cores = std::max(out.peak_cores, values[i] / 100);
  }
  out.window_s = static_cast<double>(times.back() - times.front()) / 1e9;
  return out;
}

// At most this many scope names get per-scope metric statistics (the busiest first).
constexpr size_t kMaxScopeNamesWithMetrics = 16;

}  // namespace

std::map<std::string, double> SumHostTotals(const std::vector<HostPart>& parts) {
  std::map<std::string, double> sums;
  for (const HostPart& part : parts) {
    for (const auto& [name, value] : part.totals) {
      auto [it, first] = sums.emplace(name, value);
      if (first) continue;
      const bool largest = name == "duration_s" || name.starts_with("max_");
      it->second = largest ? std::max(it->second, value) : it->second + value;
    }
  }
  return sums;
}

namespace {

// A part's meta.span: the multi-host run's key, the part's host and the hosts it spans.
struct Span {
  std::string key, host;
  int hosts = 1;
};
std::optional<Span> SpanOf(const RunRecord& run) {
  const json meta = ParseStoredJson(run.meta_json);
  if (!meta.is_object() || !meta.contains("span") || !meta["span"].is_object()) return std::nullopt;
  const json& span = meta["span"];
  const json& hosts = span.value("hosts", json(1));
  Span out{span.value("key", std::string()), span.value("host", run.host),
           hosts.is_number_integer() ? hosts.get<int>() : 1};
  if (out.key.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::string SpanHost(const RunRecord& run) {
  std::optional<Span> span = SpanOf(run);
  return span ? span->host : "";
}

std::string SpanKey(const RunRecord& run) {
  std::optional<Span> span = SpanOf(run);
  return span ? span->key : "";
}

Result<std::map<std::string, double>> TotalsFromSamples(Store& store, const RunRecord& run,
                                                        const std::string& host, int64_t& samples) {
  std::map<std::string, double> totals{{"duration_s", 0.0}};
  samples = 0;
  FP_ASSIGN_OR_RETURN(std::vector<SeriesRecord> series, store.ListSeries(run.id));
  for (const SeriesRecord& sr : series) {
    std::vector<int64_t> times;
    FP_ASSIGN_OR_RETURN(std::vector<double> values, store.LoadValues(sr.id, &times));
    samples += static_cast<int64_t>(values.size());
    if (values.empty()) continue;
    totals["duration_s"] = std::max(totals["duration_s"], static_cast<double>(times.back()) / 1e9);
    if (sr.entity != host || sr.scope_id) continue;  // the host's tree, not the system's
    if (sr.metric == "cpu" && values.size() >= 2) {
      totals["cpu_user_s"] = IntegrateCpu(times, values).cpu_s;
      totals["cpu_system_s"] = 0;
    } else if (sr.metric == "memory") {
      totals["peak_memory_bytes"] = *std::max_element(values.begin(), values.end());
    } else if (sr.metric == "io.read" || sr.metric == "io.write") {
      double bytes = 0;  // each value the rate since the previous sample
      for (size_t i = 1; i < values.size(); ++i) {
        bytes += values[i] * static_cast<double>(times[i] - times[i - 1]) / 1e9;
      }
      totals[sr.metric == "io.read" ? "io_read_bytes" : "io_write_bytes"] = bytes;
    }
  }
  return totals;
}

Result<std::vector<HostPart>> HostParts(Store& store, const RunRecord& run, int* hosts_expected) {
  std::vector<HostPart> parts;
  const std::optional<Span> span = SpanOf(run);
  if (!span) return parts;
  if (hosts_expected) *hosts_expected = span->hosts;
  FP_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, store.ListRuns());
  for (RunRecord& r : runs) {
    std::optional<Span> theirs = r.id == run.id ? span : SpanOf(r);
    if (!theirs || theirs->key != span->key) continue;
    HostPart part{theirs->host, std::move(r), {}};
    FP_ASSIGN_OR_RETURN(part.totals, store.LoadTotals(part.run.id));
    if (!part.totals.contains("duration_s")) {  // no end stored: what its samples say
      part.partial = true;
      FP_ASSIGN_OR_RETURN(part.totals, TotalsFromSamples(store, part.run, part.host, part.samples));
    }
    parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end(),
            [](const HostPart& a, const HostPart& b) { return a.host < b.host; });
  return parts;
}

namespace {

// A scope name's time windows, [start, end) in ns, sorted by start.
using ScopeWindows = std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>;

// The scopes with the most time, at most kMaxScopeNamesWithMetrics: their metrics are summed
// up inside them.
std::vector<ScopeSummary> BusiestScopes(std::vector<ScopeSummary> busiest) {
  std::sort(busiest.begin(), busiest.end(),
            [](const auto& a, const auto& b) { return a.total_s > b.total_s; });
  if (busiest.size() > kMaxScopeNamesWithMetrics) busiest.resize(kMaxScopeNamesWithMetrics);
  return busiest;
}

// The finished instances of each of `busiest` (`scopes` sorted by start).
ScopeWindows BusiestWindows(const std::vector<ScopeSummary>& busiest,
                            const std::vector<ScopeRecord>& scopes) {
  ScopeWindows windows;
  for (const ScopeSummary& b : busiest) windows[b.name];
  for (const ScopeRecord& sc : scopes) {
    auto it = windows.find(sc.name);
    if (it != windows.end() && sc.end_ns) it->second.emplace_back(sc.start_ns, *sc.end_ns);
  }
  return windows;
}

// The run's series, or with `hosts` every host's, each saying its host.
Result<std::vector<SeriesRecord>> SeriesOfRun(Store& store, const RunRecord& run,
                                              const std::vector<HostPart>& hosts) {
  if (hosts.empty()) return store.ListSeries(run.id);
  std::vector<SeriesRecord> series;
  for (const HostPart& part : hosts) {
    FP_ASSIGN_OR_RETURN(auto theirs, store.ListSeries(part.run.id));
    for (SeriesRecord& sr : theirs) {  // the tree's are the host's; "system@n01", ...
      if (sr.entity != part.host) sr.entity += "@" + part.host;
      series.push_back(std::move(sr));
    }
  }
  return series;
}

}  // namespace

Result<RunSummary> SummarizeRun(Store& store, const RunRecord& run, size_t trend_points, Env& env) {
  RunSummary out;
  out.run = run;
  FP_ASSIGN_OR_RETURN(auto totals, store.LoadTotals(run.id));
  out.totals = std::move(totals);
  FP_ASSIGN_OR_RETURN(out.hosts, HostParts(store, run, &out.hosts_expected));
  if (!out.hosts.empty()) out.totals = SumHostTotals(out.hosts);
  out.duration_s = RunDuration(run, out.totals, env.RealtimeNs());
  FP_ASSIGN_OR_RETURN(auto scopes, store.ListScopes(run.id));
  out.scopes = SummarizeScopes(scopes);
  for (const ScopeRecord& sc : scopes) out.scope_names[sc.id] = sc.name;
  const std::vector<ScopeSummary> busiest = BusiestScopes(out.scopes);
  ScopeWindows windows = BusiestWindows(busiest, scopes);
  FP_ASSIGN_OR_RETURN(std::vector<SeriesRecord> series, SeriesOfRun(store, run, out.hosts));
  std::vector<MetricSummary> per_scope;
  for (const SeriesRecord& sr : series) {
    std::vector<int64_t> times;
    const bool tree_cpu = sr.metric == "cpu" && sr.entity == "tree" && !sr.scope_id;
    FP_ASSIGN_OR_RETURN(auto values,
                        store.LoadValues(sr.id, windows.empty() && !tree_cpu ? nullptr : &times));
    if (tree_cpu && values.size() >= 3) out.series_cpu = IntegrateCpu(times, values);
    auto describe = [&](MetricSummary m, std::string scope) {
      m.metric = sr.metric;
      m.unit = sr.unit;
      m.entity = sr.entity;
      m.scope_id = sr.scope_id;
      m.scope = std::move(scope);
      return m;
    };
    for (const ScopeSummary& b : busiest) {
      std::vector<double> inside = InsideWindows(times, values, windows[b.name]);
      if (!inside.empty()) per_scope.push_back(describe(Summarize(inside), b.name));
    }
    std::vector<double> trend = Trend(values, trend_points);
    MetricSummary m = describe(Summarize(values), "");
    m.trend = std::move(trend);
    out.metrics.push_back(std::move(m));
  }
  out.metrics.insert(out.metrics.end(), per_scope.begin(), per_scope.end());

  FP_ASSIGN_OR_RETURN(out.values, store.ListValues(run.id));
  for (const ValueRecord& v : out.values) {
    if (v.name == kScopesDroppedValue && v.value) {
      out.scopes_dropped += static_cast<uint64_t>(*v.value);
    }
  }
  FP_ASSIGN_OR_RETURN(out.artifacts, store.ListArtifacts(run.id));
  FP_ASSIGN_OR_RETURN(out.load_energy, LoadWindowEnergy(store, run, out.totals));
  FP_ASSIGN_OR_RETURN(out.waiting, WaitingBuffers(store, run));
  return out;
}

std::optional<std::string> CpuDisagreement(const RunSummary& s) {
  auto user = s.totals.find("cpu_user_s"), system = s.totals.find("cpu_system_s");
  if (!s.series_cpu || user == s.totals.end() || system == s.totals.end()) return std::nullopt;
  // A container's CPU time is in the total, not in the tree's series (docs/containers.md).
  auto container = [&](const char* name) {
    auto it = s.totals.find(name);
    return it == s.totals.end() ? 0.0 : it->second;
  };
  const double total = user->second + system->second - container("container_cpu_user_s") -
                       container("container_cpu_system_s");
  const RunSummary::SeriesCpu& series = *s.series_cpu;
  // Outside the series' stretch the tree may have run at its peak rate; ticks of 10 ms.
  const double edges = std::max(0.0, s.duration_s - series.window_s) * series.peak_cores;
  const double gap = series.cpu_s - total;
  if (std::abs(gap) <= 0.05 * std::max(total, series.cpu_s) + edges + 0.02) return std::nullopt;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the cpu series adds up to %.3f s and the CPU total to %.3f s (%+.0f %%): %s",
                series.cpu_s, total, 100 * gap / std::max(total, 1e-9),
                gap > 0 ? "the total misses processes the series saw"
                        : "the series missed part of what the kernel accounted");
  return std::string(buf);
}

namespace {

// Every total of kTotals (null when unknown), then the others the run has (load_*, ...).
json SummaryTotalsJson(const RunSummary& s) {
  json totals = json::object();
  for (std::string_view name : kTotals) totals[std::string(name)] = Nullable(s.totals, name);
  if (!s.totals.count("duration_s")) totals["duration_s"] = s.duration_s;
  for (const auto& [name, value] : s.totals) {
    if (!totals.contains(name)) totals[name] = value;
  }
  return totals;
}

json SummaryMetricsJson(const std::vector<MetricSummary>& metrics) {
  json out = json::array();
  for (const MetricSummary& m : metrics) {
    // A series without samples has no figures.
    auto figure = [&](double v) { return m.count ? json(v) : json(nullptr); };
    out.push_back({{"metric", m.metric},
                   {"unit", m.unit},
                   {"entity", m.entity},
                   {"scope", TextOrNull(m.scope)},
                   {"count", m.count},
                   {"min", figure(m.min)},
                   {"mean", figure(m.mean)},
                   {"p50", figure(m.p50)},
                   {"p95", figure(m.p95)},
                   {"max", figure(m.max)}});
  }
  return out;
}

json SummaryScopesJson(const std::vector<ScopeSummary>& scopes) {
  json out = json::array();
  for (const ScopeSummary& sc : scopes) {
    out.push_back({{"name", sc.name},
                   {"count", sc.count},
                   {"unfinished", sc.unfinished},
                   {"total_s", sc.total_s},
                   {"mean_s", sc.mean_s},
                   {"min_s", sc.min_s},
                   {"max_s", sc.max_s}});
  }
  return out;
}

// Valued metrics, each with its document and the name of the scope it was logged in.
json SummaryValuesJson(const RunSummary& s) {
  json values = json::array();
  for (const ValueRecord& v : s.values) {
    json data = v.data_json.empty() ? json(nullptr) : ParseStoredJson(v.data_json);
    values.push_back({{"name", v.name},
                      {"step", OrNull(v.step)},
                      {"t_s", static_cast<double>(v.t_ns) / 1e9},
                      {"value", OrNull(v.value)},
                      {"data", data.is_discarded() ? json(nullptr) : data},
                      {"scope", v.scope_id && s.scope_names.count(*v.scope_id)
                                    ? json(s.scope_names.at(*v.scope_id))
                                    : json(nullptr)}});
  }
  return values;
}

// Server buffers whose changes have not all arrived, and what is left of them here.
json SummaryWaitingJson(const std::vector<WaitingBuffer>& waiting) {
  json out = json::array();
  for (const WaitingBuffer& w : waiting) {
    json b = {{"host", w.where.host},
              {"path", w.where.path},
              {"last_arrived_ns", w.where.shipped_at_ns},
              {"here", w.here.has_value()}};
    if (w.here && !w.here->live) {
      b["changes"] = w.here->entries;
      b["samples"] = w.here->samples;
    }
    out.push_back(b);
  }
  return out;
}

// The parts of a multi-host run, one per host.
json SummaryHostsJson(const std::vector<HostPart>& parts) {
  json hosts = json::array();
  for (const HostPart& part : parts) {
    json h = {{"host", part.host},
              {"run", part.run.id},
              {"status", RunStatusName(part.run.status)},
              {"totals", part.totals},
              {"partial", part.partial}};
    if (part.partial) h["samples"] = part.samples;
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// A load's energy per query, each total over the load's window where it could be.
json LoadEnergyJson(const std::vector<LoadEnergy>& load_energy, double queries) {
  json energy = json::object();
  for (const LoadEnergy& e : load_energy) {
    if (!std::isfinite(e.joules)) {  // no counter: nothing to divide, only why
      energy[e.total] = {{"per_query_j", nullptr}, {"why", e.why_not}};
      continue;
    }
    energy[e.total] = {{"per_query_j", queries > 0 ? json(e.joules / queries) : json(nullptr)},
                       {"joules", e.joules},
                       {"over", e.over_window ? "load window" : "run total"},
                       {"window_s", e.window_s}};
    if (!e.over_window) energy[e.total]["why"] = e.why_not;
  }
  return energy;
}

}  // namespace

std::string SummaryJson(const RunSummary& s, int indent) {
  json meta = RunMeta(s.run);
  json run = RunJson(s.run);
  run["duration_s"] = s.duration_s;
  run["tags"] = meta.value("tags", json::object());
  run["params"] = meta.value("params", json::object());
  json artifacts = json::array();
  for (const ArtifactRecord& a : s.artifacts) {
    artifacts.push_back(
        {{"name", a.name}, {"path", a.path}, {"sha256", a.sha256}, {"size", a.size}});
  }
  json out = {{"run", run},
              {"totals", SummaryTotalsJson(s)},
              {"hosts", SummaryHostsJson(s.hosts)},
              {"hosts_expected", s.hosts_expected},
              {"waiting", SummaryWaitingJson(s.waiting)},
              {"metrics", SummaryMetricsJson(s.metrics)},
              {"scopes", SummaryScopesJson(s.scopes)},
              {"scopes_dropped", s.scopes_dropped},
              {"cpu_disagreement", CpuDisagreement(s).value_or("")},
              {"values", SummaryValuesJson(s)},
              {"artifacts", artifacts},
              {"meta", meta}};
  // A load's summary (footprint load, include/footprint/load.h), where the run had one.
  if (meta.is_object() && meta.contains("load")) {
    out["load"] = meta["load"];
    out["load"]["energy"] = LoadEnergyJson(s.load_energy, meta["load"].value("queries", 0.0));
  }
  return JsonText(out, indent);
}

json RunJson(const RunRecord& r) {
  json run = {{"id", r.id},
              {"name", r.name},
              {"description", r.description},
              {"status", RunStatusName(r.status)},
              {"exit_code", OrNull(r.exit_code)},
              {"group_id", TextOrNull(r.group_id)},
              {"repetition", r.repetition},
              {"command", r.command},
              {"cwd", r.cwd},
              {"host", r.host},
              {"user", r.user},
              {"started_at_ns", r.started_at_ns},
              {"ended_at_ns", OrNull(r.ended_at_ns)}};
  if (!r.experiment.empty()) run["experiment"] = r.experiment;
  if (!r.workload.empty()) run["workload"] = r.workload;
  return run;
}

json ScopeJson(const ScopeRecord& s) {
  return {{"id", s.id},         {"parent_id", OrNull(s.parent_id)}, {"name", s.name},
          {"thread", s.thread}, {"start_ns", s.start_ns},           {"end_ns", OrNull(s.end_ns)}};
}

json RunMeta(const RunRecord& r) {
  json meta = ParseStoredJson(r.meta_json);
  return meta.is_object() ? meta : json::object();
}

}  // namespace footprint
