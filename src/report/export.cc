#include "report/export.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "footprint/groups.h"
#include "report/profiler_trace.h"
#include "report/run_json.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// Output through a buffer flushed in large writes: one std::ostream call per sample would
// dominate the export of a long run.
class Sink {
 public:
  explicit Sink(std::ostream& out) : out_(out) { buf_.reserve(kChunk + 1024); }
  ~Sink() { Flush(); }

  Sink& operator<<(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kChunk) Flush();
    return *this;
  }
  Sink& operator<<(char c) {
    buf_.push_back(c);
    return *this;
  }
  Sink& Int(int64_t v) {
    char tmp[24];
    auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
    return *this << std::string_view(tmp, static_cast<size_t>(end - tmp));
  }
  // Shortest text that reads back as the same double; `missing` for NaN and infinities.
  Sink& Real(double v, std::string_view missing) {
    if (!std::isfinite(v)) return *this << missing;
    char tmp[32];
    auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
    return *this << std::string_view(tmp, static_cast<size_t>(end - tmp));
  }
  // ns as µs with three decimals, exactly ("1234.567"), as the trace format's `ts` wants.
  Sink& Micros(int64_t ns) {
    if (ns < 0) {
      *this << '-';
      ns = -ns;
    }
    Int(ns / 1000);
    char frac[5] = {'.', static_cast<char>('0' + ns / 100 % 10),
                    static_cast<char>('0' + ns / 10 % 10), static_cast<char>('0' + ns % 10), 0};
    return *this << std::string_view(frac, 4);
  }
  Sink& Json(const json& j) { return *this << JsonText(j); }
  // Reports each series written to `progress` (the bulk of a long run's export), out of
  // `total`.
  void Follow(ProgressFn progress, size_t total) {
    progress_ = std::move(progress);
    total_ = total;
    if (progress_) progress_(0, total_);
  }
  void SeriesDone() {
    if (progress_) progress_(++series_done_, total_);
  }
  Status Finish() {
    Flush();
    out_.flush();
    if (!out_) return IoError("cannot write the export (disk full, or the reader went away?)");
    return Status::Ok();
  }

 private:
  static constexpr size_t kChunk = 1 << 16;
  void Flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }
  std::ostream& out_;
  std::string buf_;
  ProgressFn progress_;
  size_t series_done_ = 0, total_ = 0;
};

// One CSV field (RFC 4180): quoted when it holds a comma or a quote. Control characters of
// stored text (a line break or an escape sequence in a name) are written as visible escapes
// (Inert), so that a record is always one line and nothing reaches a terminal raw.
std::string Csv(std::string_view text) {
  const std::string s = Inert(text);
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string OptText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : std::string();
}

// Everything of a run but its samples, which are streamed series by series.
struct RunParts {
  std::map<std::string, double> totals;
  std::vector<ScopeRecord> scopes;
  std::vector<ValueRecord> values;
  std::vector<SeriesRecord> series;
};

Result<RunParts> LoadParts(Store& store, const RunRecord& run) {
  RunParts p;
  FP_ASSIGN_OR_RETURN(p.totals, store.LoadTotals(run.id));
  FP_ASSIGN_OR_RETURN(p.scopes, store.ListScopes(run.id));
  FP_ASSIGN_OR_RETURN(p.values, store.ListValues(run.id));
  FP_ASSIGN_OR_RETURN(p.series, store.ListSeries(run.id));
  return p;
}

constexpr std::string_view kCsvHeader =
    "run_id,kind,name,unit,entity,scope_id,parent_id,step,t_ns,end_ns,value,data\n";

Status CsvRun(Store& store, const RunRecord& run, const RunParts& p, Sink& out) {
  const std::string id = Csv(run.id);
  for (const auto& [name, value] : p.totals) {
    out << id << ",total," << Csv(name) << ',' << TotalUnit(name) << ",,,,,,,";
    out.Real(value, "") << ",\n";
  }
  for (const ScopeRecord& s : p.scopes) {
    out << id << ",scope," << Csv(s.name) << ",,thread:";
    out.Int(s.thread) << ',';
    out.Int(s.id) << ',' << OptText(s.parent_id) << ",,";
    out.Int(s.start_ns) << ',' << OptText(s.end_ns) << ",,\n";
  }
  for (const ValueRecord& v : p.values) {
    out << id << ",value," << Csv(v.name) << ",,," << OptText(v.scope_id) << ",," << OptText(v.step)
        << ',';
    out.Int(v.t_ns) << ",,";
    if (v.value) out.Real(*v.value, "");
    out << ',' << Csv(v.data_json) << '\n';
  }
  for (const SeriesRecord& sr : p.series) {
    const std::string prefix = id + ",sample," + Csv(sr.metric) + ',' + Csv(sr.unit) + ',' +
                               Csv(sr.entity) + ',' + OptText(sr.scope_id) + ",,,";
    FP_RETURN_IF_ERROR(store.ScanSamples(sr.id, [&](int64_t t, double value) {
      out << prefix;
      out.Int(t) << ",,";
      out.Real(value, "") << ",\n";
    }));
    out.SeriesDone();
  }
  return Status::Ok();
}

Status JsonRun(Store& store, const RunRecord& run, const RunParts& p, Sink& out) {
  json totals = json::object();
  for (const auto& [name, value] : p.totals) totals[name] = value;
  json scopes = json::array();
  for (const ScopeRecord& s : p.scopes) scopes.push_back(ScopeJson(s));
  json values = json::array();
  for (const ValueRecord& v : p.values) {
    json data = v.data_json.empty() ? json(nullptr) : ParseStoredJson(v.data_json);
    values.push_back({{"name", v.name},
                      {"scope_id", OrNull(v.scope_id)},
                      {"step", OrNull(v.step)},
                      {"t_ns", v.t_ns},
                      {"value", OrNull(v.value)},
                      {"data", data.is_discarded() ? json(v.data_json) : data}});
  }
  json run_json = RunJson(run);
  run_json["meta"] = RunMeta(run);
  out << "{\"run\":";
  out.Json(run_json) << ",\n\"totals\":";
  out.Json(totals) << ",\n\"scopes\":";
  out.Json(scopes) << ",\n\"values\":";
  out.Json(values) << ",\n\"series\":[";
  for (size_t i = 0; i < p.series.size(); ++i) {
    const SeriesRecord& sr = p.series[i];
    out << (i ? ",\n" : "\n") << "{\"metric\":";
    out.Json(sr.metric) << ",\"unit\":";
    out.Json(sr.unit) << ",\"entity\":";
    out.Json(sr.entity) << ",\"scope_id\":";
    out.Json(OrNull(sr.scope_id)) << ",\"samples\":[";
    bool first = true;
    FP_RETURN_IF_ERROR(store.ScanSamples(sr.id, [&](int64_t t, double value) {
      out << (first ? "[" : ",[");
      first = false;
      out.Int(t) << ',';
      out.Real(value, "null") << ']';
    }));
    out << "]}";
    out.SeriesDone();
  }
  out << "]}";
  return Status::Ok();
}

// The trace events of one run, its process `pid`, separated by ",\n" (`first`: true until the
// first event of the file is written).
class TraceEvents {
 public:
  TraceEvents(Sink& out, int pid, bool& first) : out_(out), pid_(pid), first_(first) {}
  // The sink, after the separator of a new event.
  Sink& Next() { return out_ << (std::exchange(first_, false) ? "\n" : ",\n"); }
  void Event(json e) {
    e["pid"] = pid_;
    Next().Json(e);
  }
  int pid() const { return pid_; }

 private:
  Sink& out_;
  const int pid_;
  bool& first_;
};

// The run as a process: its name, labels and place, and a name for each thread with scopes.
void TraceProcess(const RunRecord& run, const RunParts& p, TraceEvents& ev) {
  std::string status(RunStatusName(run.status));
  if (run.exit_code) status += ", exit " + std::to_string(*run.exit_code);
  ev.Event({{"ph", "M"},
            {"name", "process_name"},
            {"tid", 0},
            {"args", {{"name", run.name + " " + run.id.substr(0, 8)}}}});
  ev.Event({{"ph", "M"},
            {"name", "process_labels"},
            {"tid", 0},
            {"args", {{"labels", "run " + run.id + ", " + status}}}});
  ev.Event({{"ph", "M"},
            {"name", "process_sort_index"},
            {"tid", 0},
            {"args", {{"sort_index", ev.pid()}}}});
  std::set<int64_t> threads;
  for (const ScopeRecord& s : p.scopes) threads.insert(s.thread);
  for (int64_t t : threads) {
    ev.Event({{"ph", "M"},
              {"name", "thread_name"},
              {"tid", t},
              {"args", {{"name", "thread " + std::to_string(t)}}}});
  }
}

// Scopes as complete events on their thread.
void TraceScopes(const RunRecord& run, const RunParts& p, TraceEvents& ev) {
  const std::optional<int64_t> run_end =
      run.ended_at_ns ? std::optional<int64_t>(*run.ended_at_ns - run.started_at_ns) : std::nullopt;
  for (const ScopeRecord& s : p.scopes) {
    // A scope whose process died inside it lasts until the run's end, marked unfinished.
    const int64_t end = s.end_ns.value_or(std::max(run_end.value_or(s.start_ns), s.start_ns));
    Sink& out = ev.Next() << "{\"ph\":\"X\",\"cat\":\"scope\",\"name\":";
    out.Json(s.name) << ",\"pid\":";
    out.Int(ev.pid()) << ",\"tid\":";
    out.Int(s.thread) << ",\"ts\":";
    out.Micros(s.start_ns) << ",\"dur\":";
    out.Micros(end - s.start_ns) << ",\"args\":";
    json args = {{"scope_id", s.id}, {"parent_id", OrNull(s.parent_id)}};
    if (!s.end_ns) args["unfinished"] = true;
    out.Json(args) << '}';
  }
}

// Valued metrics with a finite value, as counters.
void TraceValues(const RunParts& p, TraceEvents& ev) {
  for (const ValueRecord& v : p.values) {
    if (!v.value || !std::isfinite(*v.value)) continue;
    Sink& out = ev.Next() << "{\"ph\":\"C\",\"cat\":\"value\",\"name\":";
    out.Json(v.name) << ",\"pid\":";
    out.Int(ev.pid()) << ",\"ts\":";
    out.Micros(v.t_ns) << ",\"args\":{\"value\":";
    out.Real(*v.value, "null") << "}}";
  }
}

// Each series as a counter track named "<metric> [<unit>] <entity>", streamed from the store.
Status TraceSeries(Store& store, const RunParts& p, Sink& out, TraceEvents& ev) {
  for (const SeriesRecord& sr : p.series) {
    const std::string name = sr.metric + " [" + sr.unit + "]";
    const std::string head = "{\"ph\":\"C\",\"cat\":\"metric\",\"name\":" + JsonText(json(name)) +
                             ",\"pid\":" + std::to_string(ev.pid()) + ",\"ts\":";
    const std::string arg = ",\"args\":{" + JsonText(json(sr.entity)) + ":";
    FP_RETURN_IF_ERROR(store.ScanSamples(sr.id, [&](int64_t t, double value) {
      if (!std::isfinite(value)) return;
      ev.Next() << head;
      out.Micros(t) << arg;
      out.Real(value, "null") << "}}";
    }));
    out.SeriesDone();
  }
  return Status::Ok();
}

// Chrome Trace Event format:
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU Perfetto names a
// counter track "<event name> <arg name>", one track per argument. `first` is true until the first
// event is written (events are separated by ",\n").
Status TraceRun(Store& store, const RunRecord& run, const RunParts& p, int pid, bool& first,
                Sink& out) {
  TraceEvents ev(out, pid, first);
  TraceProcess(run, p, ev);
  TraceScopes(run, p, ev);
  TraceValues(p, ev);
  // The profiler's operators and kernels, on the run's clock (docs/profiling.md).
  std::vector<std::string> notes;
  FP_ASSIGN_OR_RETURN(std::vector<json> profiled, ProfilerTraceEvents(store, run, p.values, notes));
  for (json& e : profiled) ev.Event(std::move(e));
  for (const std::string& note : notes) std::cerr << "footprint: " << note << "\n";
  return TraceSeries(store, p, out, ev);
}

// What comes before the first run of an export in `format`.
void WriteExportHead(ExportFormat format, std::span<const RunRecord> runs, Sink& out) {
  switch (format) {
    case ExportFormat::kCsv:
      out << kCsvHeader;
      break;
    case ExportFormat::kJson:
      out << "{\"format\":\"footprint-export\",\"version\":1,\"runs\":[";
      break;
    case ExportFormat::kTrace: {
      json pids = json::array();
      for (size_t i = 0; i < runs.size(); ++i) {
        pids.push_back({{"pid", i + 1},
                        {"run_id", runs[i].id},
                        {"name", runs[i].name},
                        {"started_at_ns", runs[i].started_at_ns}});
      }
      out << "{\"displayTimeUnit\":\"ms\",\"otherData\":";
      out.Json({{"exporter", "footprint export --format trace"},
                {"time", "microseconds since each run's start"},
                {"runs", pids}});
      out << ",\"traceEvents\":[";
      break;
    }
    case ExportFormat::kMarkdown:
    case ExportFormat::kHyperfine:
      break;  // written by ExportSets
  }
}

// How many series `runs` have, for the progress of an export.
Result<size_t> CountSeries(Store& store, std::span<const RunRecord> runs) {
  size_t series = 0;
  for (const RunRecord& run : runs) {
    FP_ASSIGN_OR_RETURN(auto list, store.ListSeries(run.id));
    series += list.size();
  }
  return series;
}

}  // namespace

Result<ExportFormat> ParseExportFormat(std::string_view name) {
  if (name == "csv") return ExportFormat::kCsv;
  if (name == "json") return ExportFormat::kJson;
  if (name == "trace") return ExportFormat::kTrace;
  if (name == "markdown" || name == "md") return ExportFormat::kMarkdown;
  if (name == "hyperfine") return ExportFormat::kHyperfine;
  return InvalidArgument("unknown export format '" + std::string(name) +
                         "'; use --format csv, json, trace, markdown or hyperfine");
}

bool ExportsSets(ExportFormat format) {
  return format == ExportFormat::kMarkdown || format == ExportFormat::kHyperfine;
}

Status ExportRuns(Store& store, std::span<const RunRecord> runs, ExportFormat format,
                  std::ostream& stream, ProgressFn progress) {
  if (ExportsSets(format)) {  // a row per run
    std::vector<RunSet> sets;
    for (const RunRecord& run : runs) sets.push_back({.spec = run.id, .runs = {run}});
    return ExportSets(store, sets, format, stream);
  }
  Sink out(stream);
  if (progress) {
    FP_ASSIGN_OR_RETURN(size_t series, CountSeries(store, runs));
    out.Follow(std::move(progress), series);
  }
  bool first_event = true;
  WriteExportHead(format, runs, out);
  for (size_t i = 0; i < runs.size(); ++i) {
    FP_ASSIGN_OR_RETURN(auto parts, LoadParts(store, runs[i]));
    switch (format) {
      case ExportFormat::kCsv:
        FP_RETURN_IF_ERROR(CsvRun(store, runs[i], parts, out));
        break;
      case ExportFormat::kJson:
        out << (i ? ",\n" : "\n");
        FP_RETURN_IF_ERROR(JsonRun(store, runs[i], parts, out));
        break;
      case ExportFormat::kTrace:
        FP_RETURN_IF_ERROR(
            TraceRun(store, runs[i], parts, static_cast<int>(i + 1), first_event, out));
        break;
      case ExportFormat::kMarkdown:
      case ExportFormat::kHyperfine:
        break;  // written by ExportSets, above
    }
  }
  if (format == ExportFormat::kJson) out << "\n]}\n";
  if (format == ExportFormat::kTrace) out << "\n]}\n";
  return out.Finish();
}

}  // namespace footprint
