#include "report/plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/identity.h"
#include "footprint/groups.h"
#include "footprint/report.h"
#include "report/json_out.h"
#include "report/lttb.h"
#include "report/plot_assets.h"
#include "util/clock.h"
#include "util/json_bounded.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// Scope instances drawn as bands, per run; beyond that profiler windows (`profile:NAME`) and
// then the longest are kept (a loop of a million iterations would otherwise bury the chart,
// and the page).
constexpr size_t kMaxBandsPerRun = 300;

// Kinds of valued metrics, from their JSON document.
std::string ValueKind(const ValueRecord& v) {
  if (v.data_json.empty()) return v.value ? "values" : "";
  json data = ParseStoredJson(v.data_json);
  std::string kind = data.is_object() ? data.value("kind", "") : "";
  if (kind == "confusion_matrix") return "confusion matrix";
  if (kind == "hyperparameters") return "hyperparameters";
  return v.value ? "values" : "";  // other documents have nothing to draw
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// "train #3 · 9c1e5d7a": the repetition of a group, or "warm-up 1", tells apart the runs of one
// name in legends and tables.
std::string RunLabel(const RunRecord& r) {
  std::string id = r.id.substr(0, 8);
  std::string name = r.name;
  if (std::string host = SpanHost(r); !host.empty()) name += " @ " + host;
  if (r.repetition > 0) name += " #" + std::to_string(r.repetition);
  if (r.repetition < 0) name += " warm-up " + std::to_string(-r.repetition);
  return name.empty() ? id : name + " · " + id;
}

template <typename T>
bool Wanted(const std::vector<std::string>& chosen, const T& name) {
  return chosen.empty() || std::find(chosen.begin(), chosen.end(), name) != chosen.end();
}

// Everything of one run the page needs besides the samples.
struct RunData {
  RunRecord run;
  std::map<std::string, double> totals;
  std::vector<SeriesRecord> series;
  std::vector<ScopeRecord> scopes;
  std::vector<ValueRecord> values;
};

// Moves a result's value into `into`, or returns its error.
template <typename T>
Status Take(Result<T> result, T& into) {
  if (!result.ok()) return result.status();
  into = std::move(result).value();
  return Status::Ok();
}

// `runs`, each part of a multi-host run replaced by all its parts (a line per host).
Result<std::vector<RunRecord>> WithHostParts(Store& store, const std::vector<RunRecord>& runs) {
  std::vector<RunRecord> out;
  std::set<std::string> seen;
  for (const RunRecord& r : runs) {
    FP_ASSIGN_OR_RETURN(std::vector<HostPart> parts, HostParts(store, r));
    if (parts.empty()) parts.push_back({"", r, {}});
    for (HostPart& p : parts) {
      if (seen.insert(p.run.id).second) out.push_back(std::move(p.run));
    }
  }
  return out;
}

// Totals and series: all that the sampled metrics need (a live poll, every second).
Result<std::vector<RunData>> LoadSampled(Store& store, const std::vector<RunRecord>& runs) {
  std::vector<RunData> out;
  for (const RunRecord& r : runs) {
    RunData d{.run = r};
    FP_RETURN_IF_ERROR(Take(store.LoadTotals(r.id), d.totals));
    FP_RETURN_IF_ERROR(Take(store.ListSeries(r.id), d.series));
    out.push_back(std::move(d));
  }
  return out;
}

// ... and the scopes and values: everything the page draws, a part of a multi-host run with
// all the others.
Result<std::vector<RunData>> LoadRuns(Store& store, const std::vector<RunRecord>& given) {
  FP_ASSIGN_OR_RETURN(std::vector<RunRecord> runs, WithHostParts(store, given));
  auto out = LoadSampled(store, runs);
  if (!out.ok()) return out;
  for (RunData& d : *out) {
    FP_RETURN_IF_ERROR(Take(store.ListScopes(d.run.id), d.scopes));
    FP_RETURN_IF_ERROR(Take(store.ListValues(d.run.id), d.values));
  }
  return out;
}

PlotCatalog Catalog(const std::vector<RunData>& runs) {
  PlotCatalog c;
  std::set<std::string> seen;
  for (const RunData& d : runs) {
    for (const SeriesRecord& s : d.series) {
      if (seen.insert(s.metric).second) c.metrics.push_back({s.metric, "samples", s.unit});
    }
  }
  for (const RunData& d : runs) {
    for (const ValueRecord& v : d.values) {
      std::string kind = ValueKind(v);
      if (!kind.empty() && seen.insert(v.name).second) c.metrics.push_back({v.name, kind, ""});
    }
  }
  std::set<std::string> scope_seen;
  for (const RunData& d : runs) {
    for (const ScopeRecord& s : d.scopes) {
      if (scope_seen.insert(s.name).second) c.scopes.push_back(s.name);
    }
  }
  return c;
}

// Every name in `chosen` must be one of `have`; otherwise InvalidArgument listing `have`.
template <typename Names>
Status CheckChosen(const std::vector<std::string>& chosen, const Names& have, std::string_view what,
                   std::string_view option) {
  for (const std::string& name : chosen) {
    if (std::find(have.begin(), have.end(), name) != have.end()) continue;
    std::string list;
    for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
    return InvalidArgument("no " + std::string(what) + " '" + name + "' in the selected runs (" +
                           (list.empty() ? "they have none" : "they have: " + list) +
                           "); choose with " + std::string(option) + " or leave it out");
  }
  return Status::Ok();
}

// Reads one series (its samples after `after_ns`) and writes it as
// {"run","entity","count","end_ns","t","v","raw"}.
Status WriteSeries(Store& store, const SeriesRecord& s, size_t run_index, size_t max_points,
                   int64_t after_ns, size_t& raw_left, PlotStats& stats, JsonOut& j) {
  FP_ASSIGN_OR_RETURN(auto end, store.SeriesEnd(s.id));
  LttbSampler sampler(end.value_or(0), max_points);
  std::vector<int64_t> raw_t;
  std::vector<double> raw_v;
  bool keep_raw = raw_left > max_points;
  FP_RETURN_IF_ERROR(store.ScanSamplesAfter(s.id, after_ns, 0, [&](int64_t t, double v) {
    sampler.Add(t, v);
    if (!keep_raw) return;
    if (raw_t.size() >= raw_left) {  // over the budget: the CSV gets displayed points
      keep_raw = false;
      std::vector<int64_t>().swap(raw_t);
      std::vector<double>().swap(raw_v);
      return;
    }
    raw_t.push_back(t);
    raw_v.push_back(v);
  }));
  const size_t count = sampler.count();
  std::vector<TimePoint> points = sampler.Finish();
  std::vector<int64_t> t(points.size());
  std::vector<double> v(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    t[i] = points[i].t;
    v[i] = points[i].v;
  }
  ++stats.series;
  stats.samples += count;
  stats.points += points.size();
  j.Open('{').Key("run").Int(static_cast<int64_t>(run_index)).Key("entity").Str(s.entity);
  j.Key("count").Int(static_cast<int64_t>(count)).Key("end_ns");
  end.has_value() && count ? j.Int(*end) : j.Null();
  j.Key("t").Numbers(t, 1e9).Key("v").Numbers(v);
  j.Key("raw");
  if (points.size() == count) {
    j.Bool(true);  // nothing was dropped: t and v are the samples
  } else if (keep_raw) {
    raw_left -= raw_t.size();
    j.Open('{').Key("t").Numbers(raw_t, 1e9).Key("v").Numbers(raw_v).Close('}');
  } else {
    j.Bool(false);
    stats.complete_csv = false;
  }
  j.Close('}');
  return Status::Ok();
}

// The "metrics" member: per sampled metric (in catalogue order) its series from every run.
Status WriteMetrics(Store& store, const std::vector<RunData>& data, const PlotCatalog& catalog,
                    const std::vector<std::string>& chosen, size_t max_points, int64_t after_ns,
                    size_t& raw_left, PlotStats& stats, JsonOut& j) {
  j.Key("metrics").Open('[');
  for (const auto& m : catalog.metrics) {
    if (m.kind != "samples" || !Wanted(chosen, m.name)) continue;
    ++stats.charts;
    j.Open('{').Key("name").Str(m.name).Key("unit").Str(m.unit).Key("series").Open('[');
    for (size_t i = 0; i < data.size(); ++i) {
      for (const SeriesRecord& s : data[i].series) {
        if (s.metric != m.name) continue;
        FP_RETURN_IF_ERROR(WriteSeries(store, s, i, max_points, after_ns, raw_left, stats, j));
      }
    }
    j.Close(']').Close('}');
  }
  j.Close(']');
  return Status::Ok();
}

// Scope instances of the chosen names as bands on the time axis, at most kMaxBandsPerRun.
void WriteBands(const RunData& d, size_t run_index, const std::vector<std::string>& chosen,
                double run_end_s, JsonOut& j) {
  std::vector<const ScopeRecord*> picked;
  for (const ScopeRecord& s : d.scopes) {
    if (Wanted(chosen, s.name)) picked.push_back(&s);
  }
  auto length = [&](const ScopeRecord* s) {
    return s->end_ns ? *s->end_ns - s->start_ns : INT64_MAX;  // unfinished: to the run's end
  };
  auto is_window = [](const ScopeRecord* s) { return s->name.starts_with("profile:"); };
  const size_t total = picked.size();
  if (picked.size() > kMaxBandsPerRun) {
    std::stable_sort(picked.begin(), picked.end(), [&](auto* a, auto* b) {
      if (is_window(a) != is_window(b)) return is_window(a);
      return length(a) > length(b);
    });
    picked.resize(kMaxBandsPerRun);
    std::sort(picked.begin(), picked.end(),
              [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  }
  j.Open('{').Key("run").Int(static_cast<int64_t>(run_index));
  j.Key("total").Int(static_cast<int64_t>(total)).Key("bands").Open('[');
  for (const ScopeRecord* s : picked) {
    j.Open('{').Key("name").Str(s->name).Key("start").Num(static_cast<double>(s->start_ns) / 1e9);
    j.Key("end").Num(s->end_ns ? static_cast<double>(*s->end_ns) / 1e9 : run_end_s);
    j.Key("open").Bool(!s->end_ns).Close('}');
  }
  j.Close(']').Close('}');
}

// Scalar values of one name as a curve per run, by step when every point has one.
void WriteCurves(const std::vector<RunData>& runs, const std::string& name, JsonOut& j) {
  bool by_step = true;
  for (const RunData& d : runs) {
    for (const ValueRecord& v : d.values) {
      if (v.name == name && v.value && !v.step) by_step = false;
    }
  }
  j.Open('{').Key("name").Str(name).Key("x").Str(by_step ? "step" : "time");
  j.Key("series").Open('[');
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> x, y;
    for (const ValueRecord& v : runs[i].values) {
      if (v.name != name || !v.value || ValueKind(v) != "values") continue;
      x.push_back(by_step ? static_cast<double>(*v.step) : static_cast<double>(v.t_ns) / 1e9);
      y.push_back(*v.value);
    }
    if (x.empty()) continue;
    j.Open('{').Key("run").Int(static_cast<int64_t>(i)).Key("x").Numbers(x).Key("y").Numbers(y);
    j.Close('}');
  }
  j.Close(']').Close('}');
}

// A load run's place on a throughput-latency curve: its scenario, the queries/s it achieved and
// its latency percentiles (meta.load, include/footprint/load.h); nullopt for other runs.
std::optional<json> LoadPoint(const RunRecord& r) {
  const json meta = ParseStoredJson(r.meta_json);
  if (!meta.is_object() || !meta.contains("load") || !meta["load"].is_object()) return std::nullopt;
  const json& load = meta["load"];
  json point = {{"scenario", load.value("scenario", std::string())},
                {"qps", load.value("qps", 0.0)},
                {"samples_per_s", load.value("samples_per_s", 0.0)}};
  const json latency = load.value("latency_s", json::object());
  for (const char* p : {"p50", "p90", "p99"}) {
    if (latency.contains(p)) point[p] = latency[p];
  }
  return point;
}

Status PlotsUnavailable() {
  return Unsupported(
      "this footprint was built without plots (FOOTPRINT_BUILD_PLOT=OFF); rebuild it with "
      "nodejs and npm installed (scripts/setup)");
}

// The runs' array of the page's data; returns each run's duration (a running one's until
// `now_ns`), where its bands end.
std::vector<double> WritePlotRuns(const std::vector<RunData>& data, int64_t now_ns, JsonOut& j) {
  std::vector<double> ends;
  j.Key("runs").Open('[');
  for (const RunData& d : data) {
    const RunRecord& r = d.run;
    ends.push_back(RunDuration(r, d.totals, now_ns));
    j.Open('{').Key("id").Str(r.id).Key("name").Str(r.name).Key("label").Str(RunLabel(r));
    j.Key("status").Str(RunStatusName(r.status)).Key("command").Str(ShellCommandLine(r.command));
    j.Key("group_id").Str(r.group_id).Key("repetition").Int(r.repetition);
    if (auto lost = IncompleteReason(r)) j.Key("incomplete").Str(*lost);
    j.Key("started_ms").Int(r.started_at_ns / kNsPerMs).Key("duration_s").Num(ends.back());
    if (std::string host = SpanHost(r); !host.empty()) {
      j.Key("span").Str(SpanKey(r)).Key("host").Str(host);  // a part of a multi-host run
    }
    if (auto load = LoadPoint(r)) j.Key("load").Doc(*load);
    j.Close('}');
  }
  j.Close(']');
  return ends;
}

// Scope durations: total, count and mean per name and run (null where a run lacks it).
void WritePlotScopes(const std::vector<RunData>& data, const PlotCatalog& catalog,
                     const std::vector<std::string>& chosen, PlotStats& stats, JsonOut& j) {
  std::vector<std::vector<ScopeSummary>> scope_sums;
  for (const RunData& d : data) scope_sums.push_back(SummarizeScopes(d.scopes));
  j.Key("scopes").Open('[');
  for (const std::string& name : catalog.scopes) {
    if (!Wanted(chosen, name)) continue;
    j.Open('{').Key("name").Str(name).Key("runs").Open('[');
    for (const auto& sums : scope_sums) {
      auto it = std::find_if(sums.begin(), sums.end(), [&](auto& s) { return s.name == name; });
      if (it == sums.end() || it->count == it->unfinished) {
        j.Null();
        continue;
      }
      j.Open('{').Key("count").Int(static_cast<int64_t>(it->count));
      j.Key("unfinished").Int(static_cast<int64_t>(it->unfinished));
      j.Key("total_s").Num(it->total_s).Key("mean_s").Num(it->mean_s).Close('}');
    }
    j.Close(']').Close('}');
  }
  j.Close(']');
  if (!catalog.scopes.empty()) ++stats.charts;
}

// Run totals, in TotalNames() order; unknown stays null (never 0). A chart per unit.
void WritePlotTotals(const std::vector<RunData>& data, PlotStats& stats, JsonOut& j) {
  j.Key("totals").Open('[');
  std::set<std::string> units;
  for (std::string_view name : TotalNames()) {
    const std::string key(name);
    bool any = false;
    for (const RunData& d : data) any |= d.totals.count(key) > 0;
    if (!any) continue;
    units.insert(std::string(TotalUnit(name)));
    j.Open('{').Key("name").Str(key).Key("unit").Str(TotalUnit(name)).Key("runs").Open('[');
    for (const RunData& d : data) {
      auto it = d.totals.find(key);
      j.Opt(it == d.totals.end() ? std::nullopt : std::optional<double>(it->second));
    }
    j.Close(']').Close('}');
  }
  j.Close(']');
  stats.charts += units.size();
}

// The last confusion matrix of each chosen name and run.
void WritePlotConfusion(const std::vector<RunData>& data, const PlotCatalog& catalog,
                        const std::vector<std::string>& chosen, PlotStats& stats, JsonOut& j) {
  j.Key("confusion").Open('[');
  for (const auto& m : catalog.metrics) {
    if (m.kind != "confusion matrix" || !Wanted(chosen, m.name)) continue;
    for (size_t i = 0; i < data.size(); ++i) {
      const ValueRecord* last = nullptr;
      for (const ValueRecord& v : data[i].values) {
        if (v.name == m.name && ValueKind(v) == m.kind) last = &v;
      }
      if (!last) continue;
      ++stats.charts;
      json doc = ParseStoredJson(last->data_json);
      j.Open('{').Key("run").Int(static_cast<int64_t>(i)).Key("name").Str(m.name);
      j.Key("step");
      last->step ? j.Int(*last->step) : j.Null();
      j.Key("labels").Doc(doc.value("labels", json::array()));
      j.Key("matrix").Doc(doc.value("matrix", json::array())).Close('}');
    }
  }
  j.Close(']');
}

// One hyperparameter chart: every set of that name across runs, on the union of their axes.
void WritePlotHyperparameterSet(const std::vector<RunData>& data, const PlotCatalog::Metric& m,
                                JsonOut& j) {
  std::set<std::string> axes;
  std::string target;
  bool low_means_good = true;
  std::vector<std::pair<size_t, json>> sets;
  for (size_t i = 0; i < data.size(); ++i) {
    for (const ValueRecord& v : data[i].values) {
      if (v.name != m.name || ValueKind(v) != m.kind) continue;
      json doc = ParseStoredJson(v.data_json);
      json params = doc.value("params", json::object());
      for (auto& [k, unused] : params.items()) axes.insert(k);
      target = doc.value("target", target);
      low_means_good = doc.value("low_means_good", low_means_good);
      sets.emplace_back(
          i, json{{"params", params}, {"value", v.value ? json(*v.value) : json(nullptr)}});
    }
  }
  j.Open('{').Key("name").Str(m.name).Key("target").Str(target.empty() ? "target" : target);
  j.Key("low_means_good").Bool(low_means_good).Key("axes").Doc(json(axes));
  j.Key("sets").Open('[');
  for (const auto& [run_index, set] : sets) {
    j.Open('{').Key("run").Int(static_cast<int64_t>(run_index));
    j.Key("params").Doc(set["params"]).Key("value").Doc(set["value"]).Close('}');
  }
  j.Close(']').Close('}');
}

// Valued metrics: curves of scalars, the last confusion matrix of each name and run, and
// hyperparameter sets across runs.
void WritePlotValues(const std::vector<RunData>& data, const PlotCatalog& catalog,
                     const std::vector<std::string>& chosen, PlotStats& stats, JsonOut& j) {
  j.Key("curves").Open('[');
  for (const auto& m : catalog.metrics) {
    if (m.kind != "values" || !Wanted(chosen, m.name)) continue;
    ++stats.charts;
    WriteCurves(data, m.name, j);
  }
  j.Close(']');
  WritePlotConfusion(data, catalog, chosen, stats, j);
  j.Key("hyperparameters").Open('[');
  for (const auto& m : catalog.metrics) {
    if (m.kind != "hyperparameters" || !Wanted(chosen, m.name)) continue;
    ++stats.charts;
    WritePlotHyperparameterSet(data, m, j);
  }
  j.Close(']');
}

}  // namespace

bool PlotAvailable() { return EmbeddedPlotAssets() != nullptr; }

Result<PlotCatalog> CatalogRuns(Store& store, const std::vector<RunRecord>& runs) {
  FP_ASSIGN_OR_RETURN(auto data, LoadRuns(store, runs));
  return Catalog(data);
}

Result<std::string> PlotDataJson(Store& store, const std::vector<RunRecord>& runs,
                                 const PlotOptions& options, PlotStats* stats_out) {
  const PlotAssets* assets = EmbeddedPlotAssets();
  if (!assets) return PlotsUnavailable();
  if (runs.empty()) return InvalidArgument("no runs to plot; choose some with -u");
  FP_ASSIGN_OR_RETURN(auto loaded, LoadRuns(store, runs));
  const std::vector<RunData>& data = loaded;
  PlotCatalog catalog = Catalog(data);
  std::vector<std::string> metric_names;
  for (const auto& m : catalog.metrics) metric_names.push_back(m.name);
  FP_RETURN_IF_ERROR(CheckChosen(options.metrics, metric_names, "metric", "-t"));
  FP_RETURN_IF_ERROR(CheckChosen(options.scopes, catalog.scopes, "scope", "-d"));
  if (options.no_metrics) catalog.metrics.clear();

  PlotStats stats;
  std::string body;
  JsonOut j(body);
  j.Open('{').Key("format").Int(1).Key("footprint").Str(FootprintVersion());
  j.Key("library").Str(assets->library_version);
  const int64_t now_ns = options.env->RealtimeNs();
  j.Key("generated_ms").Int(now_ns / kNsPerMs);
  j.Key("max_points").Int(static_cast<int64_t>(options.max_points));
  j.Key("raw_limit").Int(static_cast<int64_t>(options.raw_limit));
  j.Key("db").Str(store.location());
  const std::vector<double> ends = WritePlotRuns(data, now_ns, j);

  // Sampled metrics, each with its series from every run.
  size_t raw_left = options.raw_limit;
  FP_RETURN_IF_ERROR(WriteMetrics(store, data, catalog, options.metrics, options.max_points,
                                  INT64_MIN, raw_left, stats, j));

  j.Key("bands").Open('[');
  for (size_t i = 0; i < data.size(); ++i) WriteBands(data[i], i, options.scopes, ends[i], j);
  j.Close(']');
  WritePlotScopes(data, catalog, options.scopes, stats, j);
  WritePlotTotals(data, stats, j);
  WritePlotValues(data, catalog, options.metrics, stats, j);
  j.Key("complete_csv").Bool(stats.complete_csv);
  j.Close('}');
  if (stats_out) *stats_out = stats;
  return body;
}

Result<std::string> LiveSeriesJson(Store& store, const RunRecord& run,
                                   const std::vector<std::string>& metrics, size_t max_points,
                                   int64_t after_ns, Env& env) {
  FP_ASSIGN_OR_RETURN(auto loaded, LoadSampled(store, {run}));
  PlotCatalog catalog = Catalog(loaded);
  std::vector<std::string> metric_names;
  for (const auto& m : catalog.metrics) metric_names.push_back(m.name);
  FP_RETURN_IF_ERROR(CheckChosen(metrics, metric_names, "metric", "metrics="));
  const RunData& d = loaded.front();
  std::string body;
  JsonOut j(body);
  j.Open('{').Key("run").Str(run.id).Key("status").Str(RunStatusName(run.status));
  const double duration_s = RunDuration(run, d.totals, env.RealtimeNs());
  j.Key("duration_s").Num(duration_s).Key("after_ns").Int(after_ns);
  PlotStats stats;
  size_t raw_left = 0;  // the points are what the page appends; no CSV copy
  FP_RETURN_IF_ERROR(
      WriteMetrics(store, loaded, catalog, metrics, max_points, after_ns, raw_left, stats, j));
  j.Key("samples").Int(static_cast<int64_t>(stats.samples)).Close('}');
  return body;
}

Result<PlotStats> WritePlot(Store& store, const std::vector<RunRecord>& runs,
                            const PlotOptions& options, std::ostream& out) {
  const PlotAssets* assets = EmbeddedPlotAssets();
  if (!assets) return PlotsUnavailable();
  PlotStats stats;
  FP_ASSIGN_OR_RETURN(auto body, PlotDataJson(store, runs, options, &stats));
  std::string title = options.title;
  if (title.empty()) {
    for (const RunRecord& r : runs) title += (title.empty() ? "" : ", ") + RunLabel(r);
    title = "footprint: " + title;
  }
  out << "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<meta name=\"generator\" content=\"footprint " << FootprintVersion() << "\">\n"
      << "<title>" << HtmlEscape(title) << "</title>\n<style>\n"
      << assets->plot_css << "</style>\n</head>\n<body>\n"
      << "<header><h1>" << HtmlEscape(title) << "</h1><nav id=\"fp-actions\"></nav></header>\n"
      << "<main id=\"fp-charts\"></main>\n"
      << "<script>\n"
      << assets->library_js << "\n</script>\n"
      << "<script type=\"application/json\" id=\"fp-data\">" << body << "</script>\n"
      << "<script>\n"
      << assets->charts_js << "\n</script>\n<script>\n"
      << assets->plot_js << "\n</script>\n</body>\n</html>\n";
  if (!out) return IoError("cannot write the plot");
  return stats;
}

}  // namespace footprint
