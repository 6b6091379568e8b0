#include "store/journal_records.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "store/rows.h"
#include "util/json_text.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// A double as JSON, which has no NaN or infinities: those as text.
json Real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
double RealOf(const json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string s = j.is_string() ? j.get<std::string>() : "nan";
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::quiet_NaN();
}

json Opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
std::optional<int64_t> OptOf(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}
int64_t IntOf(const json& j, const char* key) { return OptOf(j, key).value_or(0); }
std::string TextOf(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The record as an object; kDatabase when it is not one (a damaged buffer).
Result<json> Parse(const std::string& record) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return DatabaseError("a damaged entry in a local buffer: " + record);
  return j;
}

// BindRun's binder and ReadRun's row over a JSON array.
struct ArrayBinder {
  json& a;
  void Text(int i, std::string_view v) { a[static_cast<size_t>(i - 1)] = std::string(v); }
  void Int(int i, int64_t v) { a[static_cast<size_t>(i - 1)] = v; }
  void Null(int i) { a[static_cast<size_t>(i - 1)] = nullptr; }
};
struct ArrayRow {
  const json& a;
  const json& At(int c) const {
    static const json kNull;
    return static_cast<size_t>(c) < a.size() ? a[static_cast<size_t>(c)] : kNull;
  }
  bool IsNull(int c) const { return At(c).is_null(); }
  std::string Text(int c) const { return At(c).is_string() ? At(c).get<std::string>() : ""; }
  int64_t Int(int c) const { return At(c).is_number_integer() ? At(c).get<int64_t>() : 0; }
  std::optional<int64_t> OptInt(int c) const {
    if (!At(c).is_number_integer()) return std::nullopt;
    return Int(c);
  }
};

json RunArray(const RunRecord& run) {
  json a = json::array();
  ArrayBinder binder{a};
  BindRun(binder, run);
  return a;
}

}  // namespace

std::string RunEntry(const RunRecord& run) { return JsonText({{"run", RunArray(run)}}); }

Result<RunRecord> ReadRunEntry(const std::string& record) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  const json& a = j["run"];
  if (!a.is_array() || a.size() != kRunColumnCount) {
    return DatabaseError("a damaged run in a local buffer: " + record);
  }
  return ReadRun(ArrayRow{a});
}

std::string FinishEntry(const RunRecord& run, const std::map<std::string, double>& totals) {
  json t = json::object();
  for (const auto& [name, value] : totals) t[name] = Real(value);
  return JsonText({{"run", RunArray(run)}, {"totals", t}});
}

Status ReadFinishEntry(const std::string& record, RunRecord& run,
                       std::map<std::string, double>& totals) {
  FP_ASSIGN_OR_RETURN(run, ReadRunEntry(record));
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  if (j["totals"].is_object()) {
    for (const auto& [name, value] : j["totals"].items()) totals[name] = RealOf(value);
  }
  return Status::Ok();
}

std::string SeriesEntry(const SeriesRecord& s) {
  return JsonText(
      {{"metric", s.metric}, {"unit", s.unit}, {"entity", s.entity}, {"scope", Opt(s.scope_id)}});
}

Result<SeriesRecord> ReadSeriesEntry(const std::string& record, const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  return SeriesRecord{
      0, run_id, TextOf(j, "metric"), TextOf(j, "unit"), TextOf(j, "entity"), OptOf(j, "scope")};
}

std::string SamplesEntry(int64_t heartbeat_ns) {
  return JsonText({{"heartbeat_ns", heartbeat_ns}});
}

Result<int64_t> ReadSamplesEntry(const std::string& record) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  return IntOf(j, "heartbeat_ns");
}

std::string ScopeEntry(const ScopeRecord& s) {
  return JsonText({{"parent", Opt(s.parent_id)},
                   {"name", s.name},
                   {"thread", s.thread},
                   {"start_ns", s.start_ns},
                   {"end_ns", Opt(s.end_ns)}});
}

Result<ScopeRecord> ReadScopeEntry(const std::string& record, const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  return ScopeRecord{0,
                     run_id,
                     OptOf(j, "parent"),
                     TextOf(j, "name"),
                     IntOf(j, "thread"),
                     IntOf(j, "start_ns"),
                     OptOf(j, "end_ns")};
}

std::string EndScopeEntry(int64_t scope_id, int64_t end_ns) {
  return JsonText({{"scope", scope_id}, {"end_ns", end_ns}});
}

Status ReadEndScopeEntry(const std::string& record, int64_t& scope_id, int64_t& end_ns) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  scope_id = IntOf(j, "scope");
  end_ns = IntOf(j, "end_ns");
  return Status::Ok();
}

std::string ValueEntry(const ValueRecord& v) {
  return JsonText({{"scope", Opt(v.scope_id)},
                   {"name", v.name},
                   {"step", Opt(v.step)},
                   {"t_ns", v.t_ns},
                   {"value", v.value ? Real(*v.value) : json(nullptr)},
                   {"data", v.data_json}});
}

Result<ValueRecord> ReadValueEntry(const std::string& record, const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  ValueRecord v{run_id,           OptOf(j, "scope"), TextOf(j, "name"), OptOf(j, "step"),
                IntOf(j, "t_ns"), std::nullopt,      TextOf(j, "data")};
  if (!j["value"].is_null()) v.value = RealOf(j["value"]);
  return v;
}

std::string ArtifactEntry(const ArtifactRecord& a) {
  return JsonText({{"name", a.name}, {"path", a.path}, {"sha256", a.sha256}, {"size", a.size}});
}

Result<ArtifactRecord> ReadArtifactEntry(const std::string& record, const std::string& run_id) {
  FP_ASSIGN_OR_RETURN(json j, Parse(record));
  return ArtifactRecord{run_id, TextOf(j, "name"), TextOf(j, "path"), TextOf(j, "sha256"),
                        IntOf(j, "size")};
}

std::string CloseEntry(bool died) { return JsonText({{"died", died}}); }

bool ReadCloseEntry(const std::string& record) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("died") && j["died"].is_boolean() && j["died"].get<bool>();
}

}  // namespace footprint
