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
#include <utility>

#include "util/clock.h"
#include "util/json_bounded.h"
#include "util/json_text.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// What reading a foreign database may cost. UMLAUT's largest values are its series, about 60
// bytes a sample as it encodes them: 64 MiB holds a day of samples every 0.1 s. Its tables
// have 4 and 8 columns and its queries are footprint's own, a few short lines.
constexpr int kMaxValueBytes = 64 << 20;
constexpr std::pair<int, int> kSqliteLimits[] = {{SQLITE_LIMIT_LENGTH, kMaxValueBytes},
                                                 {SQLITE_LIMIT_SQL_LENGTH, 1 << 20},
                                                 {SQLITE_LIMIT_COLUMN, 100},
                                                 {SQLITE_LIMIT_EXPR_DEPTH, 100},
                                                 {SQLITE_LIMIT_COMPOUND_SELECT, 4},
                                                 {SQLITE_LIMIT_FUNCTION_ARG, 8},
                                                 {SQLITE_LIMIT_ATTACHED, 0},
                                                 {SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 100},
                                                 {SQLITE_LIMIT_VARIABLE_NUMBER, 8},
                                                 {SQLITE_LIMIT_TRIGGER_DEPTH, 1}};
// A run's name is a label read in lists, its description a paragraph: what an UMLAUT run
// holds beyond these is cut, and said.
constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxDescriptionBytes = 64 * 1024;

// One row of UMLAUT's measurement table.
struct Measurement {
  int64_t at_ns = 0;  // measurement_datetime
  std::string description, type, unit, method;
  json data;               // measurement_data decoded (twice when UMLAUT encoded it twice)
  std::string unreadable;  // why measurement_data was refused (then `data` is null)
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
// again); text that is not JSON is a discarded value. An error when it nests too deep.
Result<json> Decode(sqlite3_stmt* s, int column) {
  const int type = sqlite3_column_type(s, column);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) return json(sqlite3_column_double(s, column));
  FP_ASSIGN_OR_RETURN(json j, ParseBoundedJson(Text(s, column)));
  for (int depth = 0; j.is_string() && depth < 3; ++depth) {
    FP_ASSIGN_OR_RETURN(json inner, ParseBoundedJson(j.get<std::string>()));
    if (inner.is_discarded()) break;
    j = std::move(inner);
  }
  return j;
}

using Db = std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)>;

// SQLite's error `rc` on `db` as one line that names the file.
Status ReadError(sqlite3* db, const std::string& path, int rc) {
  if (rc == SQLITE_TOOBIG) {
    return DatabaseError(path + " holds a value over " + std::to_string(kMaxValueBytes >> 20) +
                         " MiB, more than UMLAUT writes: not imported");
  }
  return DatabaseError("cannot read " + path + ": " + sqlite3_errmsg(db));
}

// Every row of `sql` as name -> column index, through `row`.
Status ForEachRow(
    sqlite3* db, const std::string& path, const std::string& sql,
    const std::function<void(sqlite3_stmt*, const std::map<std::string, int>&)>& row) {
  sqlite3_stmt* raw = nullptr;
  if (int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr); rc != SQLITE_OK) {
    return ReadError(db, path, rc);
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> s(raw, sqlite3_finalize);
  std::map<std::string, int> columns;
  for (int i = 0; i < sqlite3_column_count(raw); ++i) columns[sqlite3_column_name(raw, i)] = i;
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) row(raw, columns);
  return rc == SQLITE_DONE ? Status::Ok() : ReadError(db, path, rc);
}

// The file at `path`, read-only, as a database that someone else wrote: its schema is code
// that runs when footprint reads it, so it runs without triggers, views or functions that
// could act outside the query, cannot change the file, and within kSqliteLimits.
Result<Db> OpenUntrusted(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw, sqlite3_close_v2);
  if (rc != SQLITE_OK) {
    return DatabaseError("cannot open " + path + ": " + (raw ? sqlite3_errmsg(raw) : "no memory"));
  }
  for (const auto& [option, value] : {std::pair{SQLITE_DBCONFIG_DEFENSIVE, 1},
                                      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
                                      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
                                      {SQLITE_DBCONFIG_ENABLE_VIEW, 0}}) {
    if (sqlite3_db_config(raw, option, value, nullptr) != SQLITE_OK) {
      return DatabaseError("cannot open " + path + " safely: " + sqlite3_errmsg(raw));
    }
  }
  for (const auto& [limit, value] : kSqliteLimits) sqlite3_limit(raw, limit, value);
  return db;
}

// Refuses a table with a column computed at each read (a virtual generated column, which
// UMLAUT never writes): its expression would run on footprint's memory and time, per row.
Status RefuseComputedColumns(sqlite3* db, const std::string& path, const std::string& table) {
  std::string computed;
  FP_RETURN_IF_ERROR(
      ForEachRow(db, path, "SELECT name FROM pragma_table_xinfo('" + table + "') WHERE hidden = 2",
                 [&](sqlite3_stmt* s, auto&) { computed = Text(s, 0); }));
  if (computed.empty()) return Status::Ok();
  return DatabaseError(path + ": column " + table + "." + computed +
                       " is computed at each read (a virtual generated column), which "
                       "UMLAUT never writes: not imported; import the database UMLAUT wrote");
}

Result<std::vector<UmlautRun>> ReadUmlaut(const std::string& path) {
  FP_ASSIGN_OR_RETURN(Db db, OpenUntrusted(path));
  sqlite3* raw = db.get();
  std::set<std::string> tables;  // ordinary ones: a virtual table's rows are a module's code
  FP_RETURN_IF_ERROR(ForEachRow(
      raw, path, "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE TABLE%'",
      [&](sqlite3_stmt* s, auto&) { tables.insert(Text(s, 0)); }));
  if (!tables.contains("benchmark_metadata") || !tables.contains("measurement")) {
    return DatabaseError(path +
                         " is not an UMLAUT database (no tables benchmark_metadata and "
                         "measurement); footprint import reads UMLAUT's databases");
  }
  for (const char* table : {"benchmark_metadata", "measurement"}) {
    FP_RETURN_IF_ERROR(RefuseComputedColumns(raw, path, table));
  }
  std::vector<UmlautRun> runs;
  std::map<std::string, size_t> index;
  auto get = [](sqlite3_stmt* s, const std::map<std::string, int>& c, const char* name) {
    auto it = c.find(name);
    return it == c.end() ? std::string() : Text(s, it->second);
  };
  FP_RETURN_IF_ERROR(ForEachRow(
      raw, path, "SELECT * FROM benchmark_metadata", [&](sqlite3_stmt* s, const auto& c) {
        UmlautRun r{.uuid = get(s, c, "uuid"),
                    .name = get(s, c, "meta_name"),
                    .description = get(s, c, "meta_description"),
                    .start_ns = LocalTimeNs(get(s, c, "meta_start_time"))};
        index[r.uuid] = runs.size();
        runs.push_back(std::move(r));
      }));
  FP_RETURN_IF_ERROR(ForEachRow(
      raw, path, "SELECT * FROM measurement ORDER BY id", [&](sqlite3_stmt* s, const auto& c) {
        auto it = index.find(get(s, c, "uuid"));
        if (it == index.end()) return;  // a measurement of no run: UMLAUT never writes one
        Measurement m{.at_ns = LocalTimeNs(get(s, c, "measurement_datetime")).value_or(0),
                      .description = get(s, c, "measurement_description"),
                      .type = get(s, c, "measurement_type"),
                      .unit = get(s, c, "measurement_unit"),
                      .method = get(s, c, "measured_method_name")};
        if (auto data = c.find("measurement_data"); data != c.end()) {
          Result<json> decoded = Decode(s, data->second);
          if (decoded.ok()) {
            m.data = std::move(decoded).value();
          } else {
            m.unreadable = decoded.status().message();
          }
        }
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

// A run's name where UMLAUT's database has none (its first versions had no meta_name): the
// database file's name without its folder and extension, "hello_world" for hello_world.db.
std::string NameFromFile(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (const size_t dot = name.rfind('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  return name.empty() ? "umlaut" : name;
}

// `text` cut to at most `max_bytes`, at the start of a character, so that UTF-8 stays whole.
std::string CutToBytes(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

class RunImporter {
 public:
  RunImporter(Store& store, const UmlautRun& u, const std::string& path)
      : store_(store), u_(u), path_(path) {}

  Result<ImportedRun> Import() {
    out_.id = u_.uuid;
    out_.name =
        Bounded("meta_name", u_.name.empty() ? NameFromFile(path_) : u_.name, kMaxNameBytes);
    if (store_.GetRun(u_.uuid).ok()) {
      out_.already_there = true;
      return out_;
    }
    int64_t first = u_.start_ns.value_or(INT64_MAX), last = u_.start_ns.value_or(0);
    for (const Measurement& m : u_.rows) {
      auto [a, b] = Span(m);
      first = std::min(first, a);
      last = std::max({last, b, m.at_ns});
      Extent& e = extents_[ScopeName(m)];
      e.all = {std::min(e.all.first, a), std::max(e.all.second, b)};
      if (m.type == "time" || SeriesTypes().contains(m.type)) {
        e.timed = {std::min(e.timed.first, a), std::max(e.timed.second, b)};
      }
    }
    if (first == INT64_MAX) first = last = RealtimeNs();
    start_ns_ = first;
    RunRecord run{.id = u_.uuid,
                  .name = out_.name,
                  .description = Bounded("meta_description", u_.description, kMaxDescriptionBytes)};
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
    json meta = {{"imported", {{"from", path_}, {"format", "umlaut"}, {"unmapped", unmapped}}}};
    const std::map<std::string, double> totals = Totals(run, meta);
    run.meta_json = JsonText(meta);
    FP_RETURN_IF_ERROR(store_.FinishRun(run, totals));
    return out_;
  }

 private:
  // Where the rows of one scope lie: [first, last] ns since the epoch, of all of them and of
  // the timed ones (time rows and series).
  struct Extent {
    std::pair<int64_t, int64_t> all{INT64_MAX, 0}, timed{INT64_MAX, 0};
  };

  // The totals UMLAUT's rows determine, so that show and compare have them: the run's span,
  // and the largest memory sample, which meta.sources says (as a run footprint measured says
  // where each total came from).
  std::map<std::string, double> Totals(const RunRecord& run, json& meta) const {
    std::map<std::string, double> totals = {
        {"duration_s",
         static_cast<double>(run.ended_at_ns.value_or(run.started_at_ns) - run.started_at_ns) /
             1e9}};
    if (peak_memory_bytes_) {
      totals["peak_memory_bytes"] = *peak_memory_bytes_;
      meta["sources"]["peak_memory"] =
          "the largest memory sample UMLAUT took (its process's RSS): the peak was at least this";
    }
    return totals;
  }

  int64_t Rel(int64_t at_ns) const { return std::max<int64_t>(0, at_ns - start_ns_); }

  // `text` at most `max_bytes` long; a longer one is cut, and listed under `field`.
  std::string Bounded(const std::string& field, const std::string& text, size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    CountUnmapped(field, "longer than " + std::to_string(max_bytes) + " bytes: cut to its start");
    return CutToBytes(text, max_bytes);
  }

  // The scope named `name` ([first, last] of everything in it), made once.
  Result<int64_t> ScopeFor(const std::string& name) {
    auto it = scopes_.find(name);
    if (it != scopes_.end()) return it->second;
    // The function's timed call and its series say when it ran; values logged after it
    // only where there are none.
    const Extent& e = extents_[name];
    const auto [a, b] = e.timed.first != INT64_MAX ? e.timed : e.all;
    ScopeRecord s{.run_id = u_.uuid, .name = name, .start_ns = Rel(a), .end_ns = Rel(b)};
    FP_ASSIGN_OR_RETURN(int64_t id, store_.InsertScope(s));
    ++out_.scopes;
    return scopes_[name] = id;
  }

  // Keeps the description of a function's metric (UMLAUT's -d names it), once.
  void Describe(const Measurement& m) {
    if (m.method.empty()) return;
    const json metric = {{"type", m.type}, {"description", m.description}};
    json& described = described_[m.method];
    if (std::find(described.begin(), described.end(), metric) == described.end()) {
      described.push_back(metric);
    }
  }

  Status Value(const Measurement& m, const std::string& name, std::optional<double> v,
               std::optional<int64_t> step, const json& doc = nullptr) {
    FP_ASSIGN_OR_RETURN(int64_t scope, ScopeFor(ScopeName(m)));
    Describe(m);
    ValueRecord r{.run_id = u_.uuid,
                  .scope_id = scope,
                  .name = name,
                  .step = step,
                  .t_ns = Rel(m.at_ns),
                  .value = v,
                  .data_json = doc.is_null() ? "" : JsonText(doc)};
    ++out_.values;
    return store_.InsertValue(r);
  }

  // Counts a row of `what` that footprint has no place for, and why.
  void CountUnmapped(const std::string& what, const std::string& why) {
    auto& [rows, reason] = unmapped_[what];
    ++rows;
    reason = why;
  }
  // The same for a measurement, which the import then goes on without.
  Status Unmapped(const Measurement& m, const std::string& why) {
    CountUnmapped(m.type.empty() ? "(no type)" : m.type, why);
    return Status::Ok();
  }

  Status Add(const Measurement& m) {
    if (!m.unreadable.empty()) return Unmapped(m, "measurement_data: " + m.unreadable);
    if (m.type == "time") {
      if (!Duration(m)) return Unmapped(m, "not a duration in seconds");
      Describe(m);
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
    for (const auto& [t, v] : points) {
      samples.push_back({id, Rel(t), v * type.scale});
      if (s.metric == "memory" && std::isfinite(samples.back().value)) {
        peak_memory_bytes_ = std::max(peak_memory_bytes_.value_or(0), samples.back().value);
      }
    }
    ++out_.series;
    out_.samples += samples.size();
    Describe(m);
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
      text_labels.push_back(l.is_string() ? l.get<std::string>() : JsonText(l));
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
    const auto targets = df.find(target);
    if (targets == df.end() || !targets->is_array()) return Status::Ok();
    // Column by column, each named column once: the work is the table's size, whatever the
    // number of names or of rows.
    std::vector<json> params(targets->size(), json::object());
    std::set<std::string> seen;
    for (const auto& h : d.value("hyperparameters", json::array())) {
      if (!h.is_string() || !seen.insert(h.get<std::string>()).second) continue;
      const auto column = df.find(h.get<std::string>());
      if (column == df.end() || !column->is_array()) continue;
      for (size_t i = 0; i < column->size() && i < params.size(); ++i) {
        params[i][h.get<std::string>()] = (*column)[i];
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const json& v = (*targets)[i];
      FP_RETURN_IF_ERROR(Value(
          m, "hyperparameters", v.is_number() ? std::optional(v.get<double>()) : std::nullopt,
          std::nullopt,
          json{{"kind", "hyperparameters"},
               {"params", std::move(params[i])},
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
                    .data_json = JsonText(json{{"scope", method}, {"metrics", metrics}})};
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
  std::map<std::string, Extent> extents_;
  std::map<std::string, json> described_;
  std::optional<double> peak_memory_bytes_;
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
      return DatabaseError("importing UMLAUT run " + CutToBytes(u.uuid, kMaxNameBytes) +
                           " failed: " + imported.status().message());
    }
    out.push_back(std::move(imported).value());
    if (progress) progress(out.size(), runs.size());
  }
  return out;
}

}  // namespace footprint
