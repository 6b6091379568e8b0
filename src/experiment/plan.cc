// Plans: footprint's YAML (radT's formats: radt_plan.cc), resolved into runs with their full
// commands, and what the parsers share.
#include "experiment/plan.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

#include "footprint/experiment.h"
#include "footprint/metrics.h"
#include "footprint/monitor.h"
#include "run/run_metadata.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace experiment {

namespace {

Status CsvError(int line, const std::string& what) {
  return InvalidArgument("line " + std::to_string(line) + ": " + what);
}

// One record of CSV text from `i`, the start of a line that is neither blank nor a comment;
// `i` and `line` are moved past its end.
Result<CsvRecord> ReadCsvRecord(std::string_view text, size_t& i, int& line, size_t max_fields) {
  CsvRecord rec;
  rec.line = line;
  CsvField field;
  bool quoted = false, closed = false, in_quotes = false;
  std::string unquoted;  // the value of an unquoted field, untrimmed
  auto end_field = [&] {
    field.value = quoted ? field.value : std::string(Trim(unquoted));
    rec.fields.push_back(std::move(field));
    field = CsvField{};
    quoted = closed = false;
    unquoted.clear();
  };
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      field.raw += c;
      if (c == '\n') ++line;
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.value += '"';
          field.raw += '"';
          ++i;
        } else {
          in_quotes = false;
          closed = true;
        }
      } else {
        field.value += c;
      }
      continue;
    }
    if (c == ',') {
      end_field();
      if (rec.fields.size() >= max_fields) {  // a field follows every comma
        return CsvError(rec.line, "more than " + std::to_string(max_fields) +
                                      " fields; quote a field that holds a comma");
      }
      continue;
    }
    if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) break;
    field.raw += c;
    if (c == '"' && !quoted && Trim(unquoted).empty()) {
      quoted = in_quotes = true;
      continue;
    }
    if (closed && c != ' ' && c != '\t' && c != '\r') {
      return CsvError(rec.line, "text after the closing quote (" + field.raw +
                                    "); quote the whole field, writing \"\" for a quote");
    }
    if (!quoted) unquoted += c;
  }
  if (in_quotes) return CsvError(rec.line, "a quoted field is not closed; add the missing '\"'");
  end_field();
  if (i < text.size() && text[i] == '\r') ++i;
  if (i < text.size()) ++i;  // the newline
  ++line;
  return rec;
}

}  // namespace

Result<std::vector<CsvRecord>> TokenizeCsv(std::string_view text, size_t max_rows,
                                           size_t max_fields) {
  // The byte order mark that spreadsheets write at the start of a UTF-8 CSV is no text.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<CsvRecord> records;
  size_t i = 0;
  int line = 1;
  while (i < text.size()) {
    size_t eol = text.find('\n', i);
    std::string_view whole = text.substr(i, eol == std::string_view::npos ? eol : eol - i);
    std::string_view trimmed = Trim(whole);
    if (trimmed.empty() || trimmed.front() == '#') {  // blank and comment lines are skipped
      if (eol == std::string_view::npos) break;
      i = eol + 1;
      ++line;
      continue;
    }
    if (records.size() > max_rows) {  // the header and max_rows rows under it
      return CsvError(line, "more than " + std::to_string(max_rows) +
                                " rows; a plan holds at most " + std::to_string(max_rows) +
                                " runs: split it into several plans");
    }
    FP_ASSIGN_OR_RETURN(CsvRecord record, ReadCsvRecord(text, i, line, max_fields));
    records.push_back(std::move(record));
  }
  return records;
}

std::string CsvQuote(std::string_view value) {
  bool needs = value.find_first_of(",\"\n\r") != std::string_view::npos ||
               (!value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                                   std::isspace(static_cast<unsigned char>(value.back()))));
  if (!needs) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Absolute(const std::string& path) {
  return !path.empty() && path[0] == '/' ? path : CurrentDir() + "/" + path;
}

std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(Absolute(path), ec);
  return ec ? std::filesystem::path(Absolute(path)).lexically_normal().string() : real.string();
}

std::string NamedFilePath(const std::string& path) {
  const std::filesystem::path absolute = Absolute(path);
  if (absolute == absolute.lexically_normal()) return absolute.string();  // as written
  return (std::filesystem::path(CanonicalPath(absolute.parent_path())) / absolute.filename())
      .string();
}

void ResolveCommand(const std::string& file, const std::vector<std::string>& args,
                    const std::string& plan_dir, const std::string& python, PlannedRun& run) {
  std::string script = file;
  if (!file.empty() && file[0] != '/' && IsFile(plan_dir + "/" + file)) {
    script = plan_dir + "/" + file;
  }
  auto ends_with = [&](std::string_view ext) {
    return file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0;
  };
  run.command.clear();
  if (ends_with(".py")) {
    run.interpreter = python;
  } else if (ends_with(".sh")) {
    run.interpreter = "bash";
  }
  if (!run.interpreter.empty()) run.command.push_back(run.interpreter);
  // An executable given by a bare name that is not next to the plan stays bare, so that
  // execvp searches PATH.
  run.command.push_back(script);
  if (IsFile(script)) run.script = NamedFilePath(script);
  run.command.insert(run.command.end(), args.begin(), args.end());
}

size_t MapDevicesToCpu(ExperimentPlan& plan) {
  size_t mapped = 0;
  for (PlannedWorkload& w : plan.workloads) {
    for (PlannedRun& r : w.runs) {
      mapped += !r.devices.empty() || r.collocation.mode != Collocation::Mode::kNone;
      r.devices.clear();
      r.collocation = {};
      r.mps_thread_percentage.reset();
      r.env["CUDA_VISIBLE_DEVICES"] = "";
    }
  }
  return mapped;
}

nlohmann::json YamlTypedValue(const std::string& text) {
  static const std::set<std::string, std::less<>> kNull = {"~", "null", "Null", "NULL"};
  static const std::set<std::string, std::less<>> kTrue = {"true", "True", "TRUE"};
  static const std::set<std::string, std::less<>> kFalse = {"false", "False", "FALSE"};
  if (kNull.contains(text)) return nullptr;
  if (kTrue.contains(text)) return true;
  if (kFalse.contains(text)) return false;
  // YAML's numbers, not C's: a sign, digits, a point, an exponent (no "inf", "0x1f", " 5").
  std::string_view number = text;
  if (number.starts_with('+')) number.remove_prefix(1);  // from_chars reads '-' only
  const std::string_view magnitude = text.starts_with('-') ? number.substr(1) : number;
  const bool looks_numeric =
      !magnitude.empty() &&
      (std::isdigit(static_cast<unsigned char>(magnitude[0])) || magnitude[0] == '.') &&
      !std::isspace(static_cast<unsigned char>(magnitude.back()));
  if (!looks_numeric) return text;
  if (auto i = ParseInt(number)) return *i;
  if (auto d = ParseDouble(number)) return *d;
  return text;
}

Status ParseDevices(std::string_view text, PlannedRun& run) {
  run.devices.clear();
  std::string_view t = Trim(text);
  if (t.empty() || t == "-") return Status::Ok();
  for (std::string_view d : Split(t, '+')) {
    d = Trim(d);
    if (d.empty()) return InvalidArgument("Devices '" + std::string(t) + "' has an empty entry");
    run.devices.emplace_back(d);
  }
  return Status::Ok();
}

Status ParseCollocation(std::string_view text, PlannedRun& run) {
  std::string c = Lower(Trim(text));
  run.collocation = {};
  if (c.empty() || c == "-" || c == "none") return Status::Ok();
  if (c == "mps" || c.starts_with("mps:")) {
    run.collocation.mode = Collocation::Mode::kMps;
    if (c.size() > 4) {
      auto pct = ParseInt(std::string_view(c).substr(4));
      if (!pct || *pct < 1 || *pct > 100) {
        return InvalidArgument("Collocation '" + std::string(text) +
                               "': the MPS active-thread percentage must be 1..100");
      }
      run.mps_thread_percentage = static_cast<int>(*pct);
    }
    return Status::Ok();
  }
  // MIG profiles: <slices>g.<memory>gb, optionally with +me (media extensions) and the like.
  size_t g = c.find("g.");
  bool looks_mig = g != std::string::npos && g > 0 &&
                   std::all_of(c.begin(), c.begin() + static_cast<long>(g), ::isdigit) &&
                   c.find("gb", g) != std::string::npos;
  if (!looks_mig) {
    return InvalidArgument("Collocation '" + std::string(text) +
                           "' is not '-', 'mps', 'mps:PERCENT' or a MIG profile such as 3g.40gb");
  }
  run.collocation.mode = Collocation::Mode::kMig;
  run.collocation.mig_profile = c;
  return Status::Ok();
}

Status CheckKeysUnique(const ExperimentPlan& plan) {
  std::set<std::string> seen;
  for (const auto& w : plan.workloads) {
    for (const auto& r : w.runs) {
      if (!seen.insert(r.key).second) {
        return InvalidArgument("two runs of the plan have the key '" + r.key +
                               "'; give them different names");
      }
    }
  }
  return Status::Ok();
}

Status YamlError(const YAML::Node& node, const std::string& what) {
  return InvalidArgument("line " + std::to_string(node.Mark().line + 1) + ": " + what);
}

namespace {

// Counts the nodes a YAML document makes, an alias counted as the nodes it repeats (what a
// walk over the tree visits), without building the tree; stops the parse past the limit.
class NodeCounter : public YAML::EventHandler {
 public:
  // Thrown out of the parse: what is refused, and where.
  struct Refusal {
    YAML::Mark mark;
    std::string what;
  };

  explicit NodeCounter(int64_t max_nodes) : max_nodes_(max_nodes) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const int64_t size = anchor < sizes_.size() ? sizes_[anchor] : 1;
    if (size == kOpen) throw Refusal{mark, "an alias inside the node it names makes a loop"};
    Add(mark, size);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  static constexpr int64_t kOpen = -1;  // the size of an anchored node not yet ended

  void Add(const YAML::Mark& mark, int64_t nodes) {
    count_ += nodes;
    if (count_ > max_nodes_) {
      throw Refusal{mark, "more than " + std::to_string(max_nodes_) +
                              " YAML nodes (keys, values, lists and mappings; an alias counts "
                              "as what it repeats), the limit: make it smaller"};
    }
  }
  void SetSize(YAML::anchor_t anchor, int64_t size) {
    if (anchor == YAML::NullAnchor) return;
    if (anchor >= sizes_.size()) sizes_.resize(anchor + 1, 1);
    sizes_[anchor] = size;
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Add(mark, 1);
    SetSize(anchor, 1);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Add(mark, 1);
    open_.emplace_back(anchor, count_ - 1);
    SetSize(anchor, kOpen);
  }
  void Close() {
    const auto [anchor, first] = open_.back();
    open_.pop_back();
    SetSize(anchor, count_ - first);
  }

  const int64_t max_nodes_;
  int64_t count_ = 0;
  std::vector<std::pair<YAML::anchor_t, int64_t>> open_;  // anchor and count at the start
  std::vector<int64_t> sizes_;                            // by anchor: nodes, or kOpen
};

std::string LinePrefix(const YAML::Mark& mark) {
  return mark.is_null() ? "" : "line " + std::to_string(mark.line + 1) + ": ";
}

}  // namespace

Result<YAML::Node> LoadYaml(const std::string& text, int64_t max_nodes) {
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    NodeCounter counter(max_nodes);
    parser.HandleNextDocument(counter);
    return YAML::Load(text);
  } catch (const NodeCounter::Refusal& refusal) {
    return InvalidArgument(LinePrefix(refusal.mark) + refusal.what);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(LinePrefix(e.mark) + "not valid YAML (" + e.msg + ")");
  }
}

Status CheckKnownKeys(const YAML::Node& node, const std::string& where,
                      const std::set<std::string>& known) {
  if (!node.IsMap()) {
    return YamlError(
        node, where.empty() ? "a mapping is expected here" : "'" + where + "' must be a mapping");
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (known.contains(key)) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return YamlError(kv.first, "unknown key '" + (where.empty() ? "" : where + ".") + key +
                                   "' (known: " + list + ")");
  }
  return Status::Ok();
}

Result<std::string> Scalar(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) return YamlError(node, "'" + key + "' must be a single value");
  return node.as<std::string>();
}

Result<std::map<std::string, std::string>> ScalarMap(const YAML::Node& node,
                                                     const std::string& key) {
  if (!node.IsMap()) return YamlError(node, "'" + key + "' must be a mapping of NAME: VALUE");
  std::map<std::string, std::string> out;
  for (const auto& kv : node) {
    FP_ASSIGN_OR_RETURN(auto v, Scalar(kv.second, key + "." + kv.first.as<std::string>()));
    out[kv.first.as<std::string>()] = v;
  }
  return out;
}

Result<std::vector<std::string>> ScalarList(const YAML::Node& node, const std::string& key) {
  std::vector<std::string> out;
  if (node.IsScalar()) return std::vector<std::string>{node.as<std::string>()};
  if (!node.IsSequence()) return YamlError(node, "'" + key + "' must be a value or a list");
  for (const auto& item : node) {
    FP_ASSIGN_OR_RETURN(auto v, Scalar(item, key));
    out.push_back(v);
  }
  return out;
}

}  // namespace experiment

namespace {

using experiment::CanonicalPath;
using experiment::CheckKeysUnique;
using experiment::CheckKnownKeys;
using experiment::LoadYaml;
using experiment::NamedFilePath;
using experiment::ParseCollocation;
using experiment::ParseDevices;
using experiment::ResolveCommand;
using experiment::Scalar;
using experiment::ScalarList;
using experiment::ScalarMap;
using experiment::Workloads;
using experiment::YamlError;

// A count a plan multiplies runs by (repetitions, copies): a whole number in [1, max].
Result<int64_t> PlanCount(const YAML::Node& node, const std::string& what, int64_t max) {
  std::optional<int64_t> n = ParseInt(node.as<std::string>());
  if (!n || *n < 1 || *n > max) {
    return YamlError(node, what + " must be a whole number from 1 to " + std::to_string(max) +
                               " (got '" + node.as<std::string>() + "')");
  }
  return *n;
}

// ----- YAML ---------------------------------------------------------------------------------

// The fields a run inherits from the plan's defaults and its workload, then may override.
struct RunFields {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> params;
  std::string devices = "-";
  std::string collocation = "-";
  std::optional<int> mps_thread_percentage;
  std::string metrics;  // as for -m; empty: default
  std::optional<int64_t> interval_ns;
  std::map<MetricId, int64_t> metric_interval_ns;
  std::vector<std::string> inputs;
};

// A sampling interval of the plan, refused here when footprint run would refuse it, so that
// --dry-run says so.
Result<int64_t> IntervalAt(const YAML::Node& node, const std::string& key) {
  FP_ASSIGN_OR_RETURN(std::string text, Scalar(node, key));
  auto ns = ParseDurationNs(text);
  if (!ns.ok()) return YamlError(node, key + ": " + ns.status().message());
  if (Status st = CheckInterval(*ns, key); !st.ok()) return YamlError(node, st.message());
  return *ns;
}

Status ApplyIntervals(const YAML::Node& node, RunFields& f) {
  if (!node.IsMap()) return YamlError(node, "'intervals' must be a mapping of METRIC: INTERVAL");
  for (const auto& kv : node) {
    const std::string metric = kv.first.as<std::string>();
    auto id = MetricByName(metric);
    if (!id.ok()) return YamlError(kv.first, id.status().message());
    FP_ASSIGN_OR_RETURN(f.metric_interval_ns[*id], IntervalAt(kv.second, "intervals." + metric));
  }
  return Status::Ok();
}

// Applies the run fields of a defaults, workload or run mapping (`where` names it in
// messages, empty for a workload or a run); `own` lists the other keys that mapping may hold.
// An unknown key is an error (a typo must not be ignored silently).
Status ApplyRunFields(const YAML::Node& node, const std::string& where, RunFields& f,
                      std::set<std::string> own) {
  own.insert({"env", "params", "intervals", "devices", "collocation", "metrics", "interval",
              "inputs", "mps_thread_percentage"});
  FP_RETURN_IF_ERROR(CheckKnownKeys(node, where, own));
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "env" || key == "params") {
      FP_ASSIGN_OR_RETURN(auto m, ScalarMap(v, key));
      for (auto& [k, val] : m) (key == "env" ? f.env : f.params)[k] = val;
    } else if (key == "intervals") {
      FP_RETURN_IF_ERROR(ApplyIntervals(v, f));
    } else if (key == "devices") {
      FP_ASSIGN_OR_RETURN(auto list, ScalarList(v, key));
      std::string joined;
      for (const auto& d : list) joined += (joined.empty() ? "" : "+") + d;
      f.devices = joined;
    } else if (key == "collocation" || key == "metrics") {
      FP_ASSIGN_OR_RETURN(auto s, Scalar(v, key));
      (key == "collocation" ? f.collocation : f.metrics) = s;
    } else if (key == "mps_thread_percentage") {
      FP_ASSIGN_OR_RETURN(auto s, Scalar(v, key));
      auto pct = ParseInt(s);
      if (!pct || *pct < 1 || *pct > 100) return YamlError(v, "mps_thread_percentage is 1..100");
      f.mps_thread_percentage = static_cast<int>(*pct);
    } else if (key == "interval") {
      FP_ASSIGN_OR_RETURN(f.interval_ns, IntervalAt(v, key));
    } else if (key == "inputs") {
      FP_ASSIGN_OR_RETURN(auto list, ScalarList(v, key));
      f.inputs.insert(f.inputs.end(), list.begin(), list.end());
    }
  }
  return Status::Ok();
}

using Grid = std::vector<std::pair<std::string, std::vector<std::string>>>;
using Combination = std::vector<std::pair<std::string, std::string>>;

// The combinations of a grid in order, the last key varying fastest. Keys keep their order
// in the file.
std::vector<Combination> ExpandGrid(const Grid& grid) {
  std::vector<Combination> combos = {{}};
  for (const auto& [key, values] : grid) {
    std::vector<Combination> next;
    for (const auto& combo : combos) {
      for (const auto& v : values) {
        next.push_back(combo);
        next.back().emplace_back(key, v);
      }
    }
    combos = std::move(next);
  }
  return combos;
}

// Substitutes "{name}" in `text` with each parameter; returns whether any was used.
bool Substitute(std::string& text, const std::map<std::string, std::string>& params,
                std::set<std::string>& used) {
  bool any = false;
  for (const auto& [k, v] : params) {
    const std::string pattern = "{" + k + "}";
    for (size_t p = text.find(pattern); p != std::string::npos; p = text.find(pattern, p)) {
      text.replace(p, pattern.size(), v);
      p += v.size();
      used.insert(k);
      any = true;
    }
  }
  return any;
}

Status FinishYamlRun(const RunFields& f, const std::string& plan_dir, PlannedRun& run) {
  FP_RETURN_IF_ERROR(ParseDevices(f.devices, run));
  FP_RETURN_IF_ERROR(ParseCollocation(f.collocation, run));
  if (f.mps_thread_percentage) run.mps_thread_percentage = f.mps_thread_percentage;
  if (!f.metrics.empty()) {
    auto set = ParseMetricList(f.metrics);
    if (!set.ok()) return InvalidArgument("run " + run.key + ": " + set.status().message());
    run.metrics = *set;
  }
  if (f.interval_ns) run.interval_ns = *f.interval_ns;
  run.metric_interval_ns = f.metric_interval_ns;
  for (const auto& in : f.inputs) {
    run.inputs.push_back(NamedFilePath(in[0] == '/' ? in : plan_dir + "/" + in));
  }
  return Status::Ok();
}

// What every run of a YAML plan shares.
struct YamlPlanContext {
  std::string experiment;
  std::string plan_dir;
  std::string python;
};

// A workload of a YAML plan before any of its runs is made: its fields and how many runs it
// makes, so that the whole plan is counted first.
struct WorkloadShape {
  YAML::Node node;
  std::string name;
  RunFields fields;
  Grid grid;
  int64_t combinations = 1;
  int64_t repetitions = 1;
  int64_t runs_per_combination = 0;  // copies included
};

Result<int64_t> CopiesOf(const YAML::Node& run) {
  if (!run.IsMap() || !run["copies"]) return 1;
  return PlanCount(run["copies"], "copies", kMaxCopies);
}

Status ReadGrid(const YAML::Node& node, WorkloadShape& w) {
  if (!node.IsMap()) return YamlError(node, "'grid' must be a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    FP_ASSIGN_OR_RETURN(auto values, ScalarList(kv.second, "grid." + key));
    if (values.empty()) return YamlError(kv.second, "a grid entry has no values");
    if (static_cast<int64_t>(values.size()) > kMaxPlanRuns / w.combinations) {
      return YamlError(node, "the grid has more than " + std::to_string(kMaxPlanRuns) +
                                 " combinations; split it into several plans");
    }
    w.combinations *= static_cast<int64_t>(values.size());
    w.grid.emplace_back(key, std::move(values));
  }
  return Status::Ok();
}

// Workload `index` (1-based) of a plan, counted, its runs not yet made.
Result<WorkloadShape> ReadWorkload(const YAML::Node& node, int index, const RunFields& defaults) {
  if (!node.IsMap() || !node["runs"] || !node["runs"].IsSequence() || node["runs"].size() == 0) {
    return YamlError(node, "each workload needs 'runs:', a list of runs started together");
  }
  WorkloadShape w{.node = node,
                  .name = node["name"] ? node["name"].as<std::string>() : std::to_string(index),
                  .fields = defaults};
  FP_RETURN_IF_ERROR(ApplyRunFields(node, "", w.fields, {"name", "grid", "repetitions", "runs"}));
  if (node["grid"]) FP_RETURN_IF_ERROR(ReadGrid(node["grid"], w));
  if (node["repetitions"]) {
    FP_ASSIGN_OR_RETURN(w.repetitions, PlanCount(node["repetitions"], "repetitions", kMaxPlanRuns));
  }
  for (const YAML::Node& run : node["runs"]) {
    FP_ASSIGN_OR_RETURN(int64_t copies, CopiesOf(run));
    w.runs_per_combination += copies;
  }
  return w;
}

// Adds the workload's runs to `planned`, the plan's so far: InvalidArgument past kMaxPlanRuns.
Status CountRuns(const WorkloadShape& w, int64_t& planned) {
  const int64_t per_repetition = w.combinations * w.runs_per_combination;
  if (w.repetitions > (kMaxPlanRuns - planned) / per_repetition) {
    return InvalidArgument("workload " + w.name + " makes " + std::to_string(w.combinations) +
                           " combination(s) x " + std::to_string(w.runs_per_combination) +
                           " run(s) x " + std::to_string(w.repetitions) +
                           " repetition(s): more than " + std::to_string(kMaxPlanRuns) +
                           " runs in the plan; split it into several plans or lower the counts");
  }
  planned += w.repetitions * per_repetition;
  return Status::Ok();
}

// A list of words, or a string split by shell rules.
Result<std::vector<std::string>> WordsOf(const YAML::Node& node, const std::string& key) {
  if (node.IsSequence()) return ScalarList(node, key);
  FP_ASSIGN_OR_RETURN(std::string line, Scalar(node, key));
  auto split = SplitShellWords(line);
  if (!split.ok()) return YamlError(node, split.status().message());
  return split;
}

// The words of a run's command: `file` or `command`, then `args`.
Result<std::vector<std::string>> CommandWords(const YAML::Node& run) {
  const std::string key = run["file"] ? "file" : "command";
  FP_ASSIGN_OR_RETURN(std::vector<std::string> words, WordsOf(run[key], key));
  if (words.empty()) return YamlError(run[key], "the command is empty");
  if (run["args"]) {
    FP_ASSIGN_OR_RETURN(std::vector<std::string> args, WordsOf(run["args"], "args"));
    words.insert(words.end(), args.begin(), args.end());
  }
  return words;
}

// The runs (copies included) of one run entry of the workload `w`, for one combination.
Status AddYamlRuns(const YAML::Node& node, const RunFields& workload_fields,
                   const Combination& combo, const YamlPlanContext& context, PlannedWorkload& w) {
  if (!node.IsMap() || (!node["file"] && !node["command"])) {
    return YamlError(node, "each run needs 'file:' or 'command:'");
  }
  RunFields f = workload_fields;
  for (const auto& [k, v] : combo) f.params[k] = v;
  FP_RETURN_IF_ERROR(ApplyRunFields(node, "", f, {"name", "file", "command", "args", "copies"}));
  FP_ASSIGN_OR_RETURN(const int64_t copies, CopiesOf(node));
  FP_ASSIGN_OR_RETURN(std::vector<std::string> words, CommandWords(node));
  // Parameters fill "{name}" placeholders; the others are appended as --name value.
  std::set<std::string> used;
  std::vector<std::string> args(words.begin() + 1, words.end());
  for (auto& a : args) Substitute(a, f.params, used);
  for (auto& [k, v] : f.env) Substitute(v, f.params, used);
  for (const auto& [k, v] : f.params) {
    if (used.contains(k)) continue;
    args.push_back("--" + k);
    args.push_back(v);
  }
  const std::string run_name =
      node["name"] ? node["name"].as<std::string>() : std::to_string(w.runs.size() + 1);
  for (int64_t copy = 1; copy <= copies; ++copy) {
    PlannedRun run;
    run.experiment = w.experiment;
    run.workload = w.workload;
    run.key = w.experiment + "/" + w.workload + "/" + run_name +
              (copies > 1 ? "." + std::to_string(copy) : "");
    run.name = run.key;
    run.params = f.params;
    run.env = f.env;
    ResolveCommand(words[0], args, context.plan_dir, node["file"] ? context.python : "", run);
    FP_RETURN_IF_ERROR(FinishYamlRun(f, context.plan_dir, run));
    if (!run.script.empty()) run.inputs.insert(run.inputs.begin(), run.script);
    w.runs.push_back(std::move(run));
  }
  return Status::Ok();
}

// "NAME[key=value,...]#REPETITION": a workload of the grid's combination and repetition.
std::string WorkloadLabel(const WorkloadShape& shape, const Combination& combo, int64_t rep) {
  std::string label = shape.name;
  if (!combo.empty()) {
    label += "[";
    for (size_t i = 0; i < combo.size(); ++i) {
      label += (i ? "," : "") + combo[i].first + "=" + combo[i].second;
    }
    label += "]";
  }
  if (shape.repetitions > 1) label += "#" + std::to_string(rep);
  return label;
}

Status ExpandWorkload(const WorkloadShape& shape, const YamlPlanContext& context,
                      Workloads& workloads) {
  for (const Combination& combo : ExpandGrid(shape.grid)) {
    for (int64_t rep = 1; rep <= shape.repetitions; ++rep) {
      PlannedWorkload& w = workloads.For(context.experiment, WorkloadLabel(shape, combo, rep));
      for (const YAML::Node& run : shape.node["runs"]) {
        FP_RETURN_IF_ERROR(AddYamlRuns(run, shape.fields, combo, context, w));
      }
    }
  }
  return Status::Ok();
}

// The workloads of a plan, every one counted before any run is made: a plan of too many
// runs is refused before it takes the memory they would.
Status ReadWorkloads(const YAML::Node& root, const YamlPlanContext& context, ExperimentPlan& plan) {
  RunFields defaults;
  if (root["defaults"]) {
    FP_RETURN_IF_ERROR(ApplyRunFields(root["defaults"], "defaults", defaults, {}));
  }
  if (!root["workloads"].IsSequence()) {
    return YamlError(root["workloads"], "'workloads' must be a list");
  }
  std::vector<WorkloadShape> shapes;
  int64_t planned = 0;
  for (const YAML::Node& node : root["workloads"]) {
    FP_ASSIGN_OR_RETURN(WorkloadShape shape,
                        ReadWorkload(node, static_cast<int>(shapes.size()) + 1, defaults));
    FP_RETURN_IF_ERROR(CountRuns(shape, planned));
    shapes.push_back(std::move(shape));
  }
  Workloads workloads(plan);
  for (const WorkloadShape& shape : shapes) {
    FP_RETURN_IF_ERROR(ExpandWorkload(shape, context, workloads));
  }
  return Status::Ok();
}

}  // namespace

size_t ExperimentPlan::run_count() const {
  size_t n = 0;
  for (const auto& w : workloads) n += w.runs.size();
  return n;
}

Result<ExperimentPlan> ParseYamlPlan(const std::string& text, const std::string& path,
                                     const PlanOptions& options) {
  auto fail = [&](const Status& st) { return InvalidArgument(path + ": " + st.message()); };
  Result<YAML::Node> loaded = LoadYaml(text, kMaxPlanYamlNodes);
  if (!loaded.ok()) return fail(loaded.status());
  const YAML::Node& root = *loaded;
  ExperimentPlan plan;
  try {
    if (root.IsMap() && root["method"] && !root["workloads"]) {
      return experiment::ParseRadtSweep(root, text, path, options);
    }
    if (!root.IsMap() || !root["experiment"] || !root["workloads"]) {
      return InvalidArgument(path +
                             ": a plan needs 'experiment: NAME' and 'workloads:'; see "
                             "docs/experiments.md");
    }
    Status st = CheckKnownKeys(root, "", {"experiment", "python", "defaults", "workloads"});
    Result<std::string> experiment = Scalar(root["experiment"], "experiment");
    if (st.ok() && !experiment.ok()) st = experiment.status();
    if (!st.ok()) return fail(st);
    plan.path = CanonicalPath(path);
    plan.format = "yaml";
    plan.source = text;
    const YamlPlanContext context{
        .experiment = *experiment,
        .plan_dir = DirName(plan.path),
        .python = root["python"] ? root["python"].as<std::string>() : options.python};
    if (st = ReadWorkloads(root, context, plan); !st.ok()) return fail(st);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": " + e.what());
  }
  if (plan.workloads.empty()) return InvalidArgument(path + ": the plan has no runs");
  FP_RETURN_IF_ERROR(CheckKeysUnique(plan));
  return plan;
}

Result<ExperimentPlan> LoadPlan(const std::string& path, const PlanOptions& options) {
  FP_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, kMaxPlanBytes, "the plan"));
  std::string ext =
      Lower(path.substr(path.rfind('.') == std::string::npos ? path.size() : path.rfind('.')));
  if (ext == ".csv") return ParseCsvPlan(text, path, options);
  if (ext == ".yaml" || ext == ".yml") return ParseYamlPlan(text, path, options);
  return InvalidArgument(
      "the plan " + path +
      " must end in .csv (radT's format) or .yaml/.yml; see docs/experiments.md");
}

}  // namespace footprint
