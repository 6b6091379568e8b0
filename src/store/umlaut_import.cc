#include "store/umlaut_import.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "util/clock.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// One row of UMLAUT's measurement table.
struct Measurement {
  int64_t at_ns = 0;  // measurement_datetime
  std::string description, type, unit, method;
  json data;  // measurement_data decoded (twice when UMLAUT encoded it twice)
};

struct UmlautRun {
  std::string uuid, name, description;
  std::optional<int64_t> start_ns;
  std::vector<Measurement> rows;
};

// UMLAUT's naive local time "YYYY-MM-DD HH:MM:SS[.ffffff]" as ns since the epoch.
std::optional<int64_t> LocalTimeNs(const std::string& text) {
  std::tm tm{};
  double seconds = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d%*c%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &seconds) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = static_cast<int>(seconds);
  tm.tm_isdst = -1;
  const time_t t = std::mktime(&tm);
  // From 1970 to 2255: ns since the epoch then fit in 64 bits.
  if (t < 0 || t > time_t{9'000'000'000}) return std::nullopt;
  return int64_t{t} * kNsPerSec + static_cast<int64_t>(std::llround((seconds - tm.tm_sec) * 1e9));
}

std::string Text(sqlite3_stmt* s, int column) {
  const unsigned char* t = sqlite3_column_text(s, column);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// measurement_data: a number as stored, or JSON text decoded until it is no longer a string
// holding JSON (UMLAUT's series are json.dumps'ed before SQLAlchemy's JSON column dumps them
// again).
json Decode(sqlite3_stmt* s, int column) {
  const int type = sqlite3_column_type(s, column);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) return sqlite3_column_double(s, column);
  json j = json::parse(Text(s, column), nullptr, false);
  for (int depth = 0; j.is_string() && depth < 3; ++depth) {
    json inner = json::parse(j.get<std::string>(), nullptr, false);
    if (inner.is_discarded()) break;
    j = std::move(inner);
  }
  return j;
}

using Db = std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)>;

// Every row of `sql` as name -> column index, through `row`.
Status ForEachRow(
    sqlite3* db, const std::string& sql,
    const std::function<void(sqlite3_stmt*, const std::map<std::string, int>&)>& row) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    return DatabaseError(std::string("cannot read it: ") + sqlite3_errmsg(db));
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> s(raw, sqlite3_finalize);
  std::map<std::string, int> columns;
  for (int i = 0; i < sqlite3_column_count(raw); ++i) columns[sqlite3_column_name(raw, i)] = i;
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) row(raw, columns);
  if (rc != SQLITE_DONE) return DatabaseError(std::string("cannot read it: ") + sqlite3_errmsg(db));
  return Status::Ok();
}

Result<std::vector<UmlautRun>> ReadUmlaut(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw, sqlite3_close_v2);
  if (rc != SQLITE_OK) {
    return DatabaseError("cannot open " + path + ": " + (raw ? sqlite3_errmsg(raw) : "no memory"));
  }
  std::set<std::string> tables;
  FP_RETURN_IF_ERROR(ForEachRow(raw, "SELECT name FROM sqlite_master WHERE type = 'table'",
                                [&](sqlite3_stmt* s, auto&) { tables.insert(Text(s, 0)); }));
  if (!tables.contains("benchmark_metadata") || !tables.contains("measurement")) {
    return DatabaseError(path +
                         " is not an UMLAUT database (no tables benchmark_metadata and "
                         "measurement); footprint import reads UMLAUT's databases");
  }
  std::vector<UmlautRun> runs;
  std::map<std::string, size_t> index;
  auto get = [](sqlite3_stmt* s, const std::map<std::string, int>& c, const char* name) {
    auto it = c.find(name);
    return it == c.end() ? std::string() : Text(s, it->second);
  };
  FP_RETURN_IF_ERROR(
      ForEachRow(raw, "SELECT * FROM benchmark_metadata", [&](sqlite3_stmt* s, const auto& c) {
        UmlautRun r{.uuid = get(s, c, "uuid"),
                    .name = get(s, c, "meta_name"),
                    .description = get(s, c, "meta_description"),
                    .start_ns = LocalTimeNs(get(s, c, "meta_start_time"))};
        index[r.uuid] = runs.size();
        runs.push_back(std::move(r));
      }));
  Status row_error;
  FP_RETURN_IF_ERROR(
      ForEachRow(raw, "SELECT * FROM measurement ORDER BY id", [&](sqlite3_stmt* s, const auto& c) {
        auto it = index.find(get(s, c, "uuid"));
        if (it == index.end()) return;  // a measurement of no run: UMLAUT never writes one
        Measurement m{.at_ns = LocalTimeNs(get(s, c, "measurement_datetime")).value_or(0),
                      .description = get(s, c, "measurement_description"),
                      .type = get(s, c, "measurement_type"),
                      .unit = get(s, c, "measurement_unit"),
                      .method = get(s, c, "measured_method_name")};
        auto data = c.find("measurement_data");
        if (data != c.end()) m.data = Decode(s, data->second);
        runs[it->second].rows.push_back(std::move(m));
      }));
  return runs;
}

// Series types: footprint's metric, its unit, and the factor from UMLAUT's unit.
struct SeriesType {
  const char* metric;
  const char* unit;
  double scale;
};
const std::map<std::string, SeriesType>& SeriesTypes() {
  static const std::map<std::string, SeriesType> kTypes = {
      {"memory", {"memory", "bytes", 1024.0 * 1024.0}},
      {"gpumemory", {"gpu.memory", "bytes", 1024.0 * 1024.0}},
      {"cpu", {"cpu", "%", 1.0}},
      {"gpu", {"gpu", "%", 1.0}},
      {"gpupower", {"gpu.power", "W", 1.0}},
  };
  return kTypes;
}

// The times of a series row (ns since the epoch) with its values.
std::vector<std::pair<int64_t, double>> SeriesPoints(const Measurement& m) {
  std::vector<std::pair<int64_t, double>> points;
  if (!m.data.is_object()) return points;
  const json& times = m.data.value("timestamps", json::array());
  const json& values = m.data.value("measurements", json::array());
  if (!times.is_array() || !values.is_array()) return points;
  for (size_t i = 0; i < times.size() && i < values.size(); ++i) {
    if (!times[i].is_string() || !values[i].is_number()) continue;
    if (auto t = LocalTimeNs(times[i].get<std::string>())) {
      points.emplace_back(*t, values[i].get<double>());
    }
  }
  return points;
}

// The scope a row lies in: its measured function, else its description, else its type.
const std::string& ScopeName(const Measurement& m) {
  return !m.method.empty() ? m.method : !m.description.empty() ? m.description : m.type;
}

// A time row's seconds, when they are a duration (UMLAUT sums a function's calls).
std::optional<double> Duration(const Measurement& m) {
  if (m.type != "time" || !m.data.is_number()) return std::nullopt;
  const double s = m.data.get<double>();
  if (!std::isfinite(s) || s < 0 || s > 1e7) return std::nullopt;
  return s;
}

// Where each row lies in time: [first, last] ns since the epoch.
std::pair<int64_t, int64_t> Span(const Measurement& m) {
  if (auto s = Duration(m)) return {m.at_ns - static_cast<int64_t>(*s * 1e9), m.at_ns};
  auto points = SeriesPoints(m);
  if (points.empty()) return {m.at_ns, m.at_ns};
  return {points.front().first, points.back().first};
}

// A matrix as numbers: UMLAUT's list of lists, or numpy's text of one ("[[5 1]\n [2 7]]").
std::optional<std::vector<std::vector<double>>> Matrix(const json& j) {
  std::vector<std::vector<double>> rows;
  if (j.is_array()) {
    for (const auto& r : j) {
      if (!r.is_array()) return std::nullopt;
      auto& row = rows.emplace_back();
      for (const auto& v : r) {
        if (!v.is_number()) return std::nullopt;
        row.push_back(v.get<double>());
      }
    }
    return rows;
  }
  if (!j.is_string()) return std::nullopt;
  std::string text = j.get<std::string>();
  std::vector<double>* row = nullptr;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[' && i + 1 < text.size() && text[i + 1] != '[') row = &rows.emplace_back();
    if (row && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      char* end = nullptr;
      const double v = std::strtod(text.c_str() + i, &end);
      if (end == text.c_str() + i) return std::nullopt;  // "-" or "." alone: not numpy's
      row->push_back(v);
      i = static_cast<size_t>(end - text.c_str()) - 1;
    }
  }
  return rows;
}

class RunImporter {
 public:
  RunImporter(Store& store, const UmlautRun& u, const std::string& path)
      : store_(store), u_(u), path_(path) {}

  Result<ImportedRun> Import() {
    out_.id = u_.uuid;
    out_.name = u_.name.empty() ? "umlaut" : u_.name;
    if (store_.GetRun(u_.uuid).ok()) {
      out_.already_there = true;
      return out_;
    }
    int64_t first = u_.start_ns.value_or(INT64_MAX), last = u_.start_ns.value_or(0);
    for (const Measurement& m : u_.rows) {
      auto [a, b] = Span(m);
      first = std::min(first, a);
      last = std::max({last, b, m.at_ns});
    }
    if (first == INT64_MAX) first = last = RealtimeNs();
    start_ns_ = first;
    RunRecord run{.id = u_.uuid, .name = out_.name, .description = u_.description};
    run.started_at_ns = first;
    run.heartbeat_ns = first;
    FP_RETURN_IF_ERROR(store_.CreateRun(run));
    for (const Measurement& m : u_.rows) FP_RETURN_IF_ERROR(Add(m));
    FP_RETURN_IF_ERROR(AddSupervision());
    run.status = RunStatus::kOk;
    run.ended_at_ns = last;
    json unmapped = json::array();
    for (const auto& [type, count] : unmapped_) {
      out_.unmapped.push_back(type + ": " + std::to_string(count.first) + " row(s) (" +
                              count.second + ")");
      unmapped.push_back({{"type", type}, {"rows", count.first}, {"why", count.second}});
    }
    run.meta_json =
        json{{"imported", {{"from", path_}, {"format", "umlaut"}, {"unmapped", unmapped}}}}.dump();
    FP_RETURN_IF_ERROR(store_.FinishRun(run, {}));
    return out_;
  }

 private:
  int64_t Rel(int64_t at_ns) const { return std::max<int64_t>(0, at_ns - start_ns_); }

  // The scope named `name` ([first, last] of everything in it), made once.
  Result<int64_t> ScopeFor(const std::string& name) {
    auto it = scopes_.find(name);
    if (it != scopes_.end()) return it->second;
    // The function's timed call and its series say when it ran; values logged after it
    // only where there are none.
    int64_t a = INT64_MAX, b = 0;
    for (bool timed_only : {true, false}) {
      for (const Measurement& m : u_.rows) {
        const bool timed = m.type == "time" || SeriesTypes().contains(m.type);
        if (ScopeName(m) != name || (timed_only && !timed)) continue;
        auto [x, y] = Span(m);
        a = std::min(a, x);
        b = std::max(b, y);
      }
      if (a != INT64_MAX) break;
    }
    ScopeRecord s{.run_id = u_.uuid, .name = name, .start_ns = Rel(a), .end_ns = Rel(b)};
    FP_ASSIGN_OR_RETURN(int64_t id, store_.InsertScope(s));
    ++out_.scopes;
    return scopes_[name] = id;
  }

  Status Value(const Measurement& m, const std::string& name, std::optional<double> v,
               std::optional<int64_t> step, const json& doc = nullptr) {
    FP_ASSIGN_OR_RETURN(int64_t scope, ScopeFor(ScopeName(m)));
    ValueRecord r{.run_id = u_.uuid,
                  .scope_id = scope,
                  .name = name,
                  .step = step,
                  .t_ns = Rel(m.at_ns),
                  .value = v,
                  .data_json = doc.is_null() ? "" : doc.dump()};
    ++out_.values;
    return store_.InsertValue(r);
  }

  // Counts a row footprint has no place for, and why; the import goes on.
  Status Unmapped(const Measurement& m, const std::string& why) {
    auto& [rows, reason] = unmapped_[m.type.empty() ? "(no type)" : m.type];
    ++rows;
    reason = why;
    return Status::Ok();
  }

  Status Add(const Measurement& m) {
    if (m.type == "time") {
      if (!Duration(m)) return Unmapped(m, "not a duration in seconds");
      return ScopeFor(ScopeName(m)).status();
    }
    if (auto it = SeriesTypes().find(m.type); it != SeriesTypes().end())
      return AddSeries(m, it->second);
    static const std::map<std::string, std::pair<const char*, double>> kScalars = {
        {"gputime", {"gpu_time_s", 1.0}},
        {"latency", {"latency", 1.0}},
        {"throughput", {"throughput", 1.0}},
        {"energy", {"energy.cpu", 1e-6}},
        {"timed tta", {"time_to_accuracy", 1.0}}};
    if (auto it = kScalars.find(m.type); it != kScalars.end()) {
      if (!m.data.is_number()) return Unmapped(m, "not a number");
      return Value(m, it->second.first, m.data.get<double>() * it->second.second, std::nullopt);
    }
    if (m.type == "tta" || m.type == "loss") {
      if (!m.data.is_array()) return Unmapped(m, "not a list of numbers");
      int64_t step = 0;
      for (const auto& v : m.data) {
        if (v.is_number()) {
          FP_RETURN_IF_ERROR(
              Value(m, m.type == "tta" ? "accuracy" : "loss", v.get<double>(), step));
        }
        ++step;
      }
      return Status::Ok();
    }
    if (m.type == "confusion-matrix") return AddConfusionMatrix(m);
    if (m.type == "hyperparameters") return AddHyperparameters(m);
    if (m.type == "power") {
      return Unmapped(m, "CPU power in W: footprint records CPU energy (energy.cpu, J), not power");
    }
    return Unmapped(m, "a type footprint does not know");
  }

  Status AddSeries(const Measurement& m, const SeriesType& type) {
    auto points = SeriesPoints(m);
    if (points.empty()) return Unmapped(m, "no timestamps and measurements");
    FP_ASSIGN_OR_RETURN(int64_t scope, ScopeFor(ScopeName(m)));
    SeriesRecord s{.run_id = u_.uuid,
                   .metric = type.metric,
                   .unit = type.unit,
                   .entity = "tree",
                   .scope_id = scope};
    FP_ASSIGN_OR_RETURN(int64_t id, store_.EnsureSeries(s));
    std::vector<SamplePoint> samples;
    for (const auto& [t, v] : points) samples.push_back({id, Rel(t), v * type.scale});
    ++out_.series;
    out_.samples += samples.size();
    if (!m.method.empty())
      described_[m.method].push_back({{"type", m.type}, {"description", m.description}});
    return store_.Append(u_.uuid, samples, start_ns_);
  }

  Status AddConfusionMatrix(const Measurement& m) {
    auto matrix = m.data.is_object() ? Matrix(m.data.value("matrix", json())) : std::nullopt;
    const json labels = m.data.is_object() ? m.data.value("labels", json::array()) : json();
    if (!matrix || !labels.is_array()) return Unmapped(m, "no matrix and labels");
    const size_t n = labels.size();
    bool square = matrix->size() == n;
    for (const auto& row : *matrix) square = square && row.size() == n;
    if (!square) {  // stored as given, as footprint.umlaut does
      return Value(m, "confusion_matrix", std::nullopt, std::nullopt,
                   json{{"matrix", *matrix}, {"labels", labels}});
    }
    json text_labels = json::array(), transposed = json::array();
    for (const auto& l : labels)
      text_labels.push_back(l.is_string() ? l.get<std::string>() : l.dump());
    for (size_t t = 0; t < n; ++t) {  // UMLAUT's [predicted][true] as footprint's [true][predicted]
      json row = json::array();
      for (size_t p = 0; p < n; ++p) row.push_back((*matrix)[p][t]);
      transposed.push_back(row);
    }
    return Value(
        m, "confusion_matrix", std::nullopt, std::nullopt,
        json{{"kind", "confusion_matrix"}, {"labels", text_labels}, {"matrix", transposed}});
  }

  Status AddHyperparameters(const Measurement& m) {
    const json& d = m.data;
    if (!d.is_object() || !d.contains("df") || !d["df"].is_object() || !d.contains("target")) {
      return Unmapped(m, "no df and target");
    }
    const std::string target = d["target"].is_string() ? d["target"].get<std::string>() : "";
    const json& df = d["df"];
    const json names = d.value("hyperparameters", json::array());
    const size_t rows = df.contains(target) && df[target].is_array() ? df[target].size() : 0;
    for (size_t i = 0; i < rows; ++i) {
      json params = json::object();
      for (const auto& h : names) {
        if (!h.is_string() || !df.contains(h.get<std::string>())) continue;
        const json& column = df[h.get<std::string>()];
        if (column.is_array() && i < column.size()) params[h.get<std::string>()] = column[i];
      }
      const json& v = df[target][i];
      FP_RETURN_IF_ERROR(Value(
          m, "hyperparameters", v.is_number() ? std::optional(v.get<double>()) : std::nullopt,
          std::nullopt,
          json{{"kind", "hyperparameters"},
               {"params", params},
               {"target", target},
               {"low_means_good", !d.contains("low_means_good") || d["low_means_good"] != false}}));
    }
    return Status::Ok();
  }

  // Each function's metric descriptions, as footprint.umlaut records them (umlaut-cli -d).
  Status AddSupervision() {
    for (const auto& [method, metrics] : described_) {
      FP_ASSIGN_OR_RETURN(int64_t scope, ScopeFor(method));
      ValueRecord r{.run_id = u_.uuid,
                    .scope_id = scope,
                    .name = "umlaut.supervision",
                    .data_json = json{{"scope", method}, {"metrics", metrics}}.dump()};
      FP_RETURN_IF_ERROR(store_.InsertValue(r));
      ++out_.values;
    }
    return Status::Ok();
  }

  Store& store_;
  const UmlautRun& u_;
  const std::string& path_;
  int64_t start_ns_ = 0;
  ImportedRun out_;
  std::map<std::string, int64_t> scopes_;
  std::map<std::string, json> described_;
  std::map<std::string, std::pair<size_t, std::string>> unmapped_;
};

}  // namespace

Result<std::vector<ImportedRun>> ImportUmlautDatabase(const std::string& path, Store& store,
                                                      const ProgressFn& progress) {
  FP_ASSIGN_OR_RETURN(std::vector<UmlautRun> runs, ReadUmlaut(path));
  if (progress) progress(0, runs.size());
  std::vector<ImportedRun> out;
  for (const UmlautRun& u : runs) {
    Result<ImportedRun> imported = DatabaseError("not imported");
    try {
      imported = RunImporter(store, u, path).Import();
    } catch (const json::exception& e) {  // a document of a shape UMLAUT never writes
      imported = DatabaseError(std::string("a measurement's data is malformed (") + e.what() + ")");
    }
    if (!imported.ok()) {
      return DatabaseError("importing UMLAUT run " + u.uuid +
                           " failed: " + imported.status().message());
    }
    out.push_back(std::move(imported).value());
    if (progress) progress(out.size(), runs.size());
  }
  return out;
}

}  // namespace footprint
