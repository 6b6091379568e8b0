// Plans: footprint's YAML (radT's formats: radt_plan.cc), resolved into runs with their full
// commands, and what the parsers share.
#include "experiment/plan.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "footprint/experiment.h"
#include "run/run_metadata.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace experiment {

Result<std::vector<CsvRecord>> TokenizeCsv(std::string_view text) {
  std::vector<CsvRecord> records;
  size_t i = 0;
  int line = 1;
  while (i < text.size()) {
    // Skip blank and comment lines.
    size_t eol = text.find('\n', i);
    std::string_view whole = text.substr(i, eol == std::string_view::npos ? eol : eol - i);
    std::string_view trimmed = Trim(whole);
    if (trimmed.empty() || trimmed.front() == '#') {
      if (eol == std::string_view::npos) break;
      i = eol + 1;
      ++line;
      continue;
    }
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
        continue;
      }
      if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) break;
      field.raw += c;
      if (c == '"' && !quoted && Trim(unquoted).empty()) {
        quoted = in_quotes = true;
        continue;
      }
      if (closed && c != ' ' && c != '\t' && c != '\r') {
        return InvalidArgument("line " + std::to_string(rec.line) +
                               ": text after the closing quote (" + field.raw +
                               "); quote the whole field, writing \"\" for a quote");
      }
      if (!quoted) unquoted += c;
    }
    if (in_quotes) {
      return InvalidArgument("line " + std::to_string(rec.line) +
                             ": a quoted field is not closed; add the missing '\"'");
    }
    end_field();
    records.push_back(std::move(rec));
    if (i < text.size() && text[i] == '\r') ++i;
    if (i < text.size()) ++i;  // the newline
    ++line;
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
  if (IsFile(script)) run.script = Absolute(script);
  run.command.insert(run.command.end(), args.begin(), args.end());
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

using experiment::Absolute;
using experiment::CheckKeysUnique;
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
  std::map<std::string, std::string> intervals;
  std::vector<std::string> inputs;
};

// Applies the run fields of a defaults, workload or run mapping; `own` lists the other keys
// that mapping may hold. An unknown key is an error (a typo must not be ignored silently).
Status ApplyRunFields(const YAML::Node& node, RunFields& f, std::set<std::string> own) {
  static const std::set<std::string> kRunFields = {
      "env",      "params",      "intervals",
      "devices",  "collocation", "metrics",
      "interval", "inputs",      "mps_thread_percentage"};
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (!kRunFields.contains(key) && !own.contains(key)) {
      std::string known;
      for (const auto& k : kRunFields) known += (known.empty() ? "" : ", ") + k;
      for (const auto& k : own) known += ", " + k;
      return YamlError(kv.first, "unknown key '" + key + "' (known here: " + known + ")");
    }
    if (key == "env" || key == "params" || key == "intervals") {
      FP_ASSIGN_OR_RETURN(auto m, ScalarMap(v, key));
      auto& target = key == "env" ? f.env : key == "params" ? f.params : f.intervals;
      for (auto& [k, val] : m) target[k] = val;
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
      FP_ASSIGN_OR_RETURN(auto s, Scalar(v, key));
      auto ns = ParseDurationNs(s);
      if (!ns.ok()) return YamlError(v, "interval: " + ns.status().message());
      f.interval_ns = *ns;
    } else if (key == "inputs") {
      FP_ASSIGN_OR_RETURN(auto list, ScalarList(v, key));
      f.inputs.insert(f.inputs.end(), list.begin(), list.end());
    }
  }
  return Status::Ok();
}

// The combinations of a grid in order, the last key varying fastest. Keys keep their order
// in the file.
std::vector<std::vector<std::pair<std::string, std::string>>> ExpandGrid(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& grid) {
  std::vector<std::vector<std::pair<std::string, std::string>>> combos = {{}};
  for (const auto& [key, values] : grid) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
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
  for (const auto& [metric, text] : f.intervals) {
    auto id = MetricByName(metric);
    if (!id.ok()) return InvalidArgument("run " + run.key + ": " + id.status().message());
    auto ns = ParseDurationNs(text);
    if (!ns.ok()) return InvalidArgument("run " + run.key + ": " + ns.status().message());
    run.metric_interval_ns[*id] = *ns;
  }
  for (const auto& in : f.inputs) {
    run.inputs.push_back(in[0] == '/' ? in : Absolute(plan_dir + "/" + in));
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
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": not valid YAML: " + e.what());
  }
  if (root.IsMap() && root["method"] && !root["workloads"]) {
    return experiment::ParseRadtSweep(root, text, path, options);
  }
  ExperimentPlan plan;
  plan.path = Absolute(path);
  plan.format = "yaml";
  plan.source = text;
  const std::string plan_dir = DirName(plan.path);
  auto fail = [&](const Status& st) { return InvalidArgument(path + ": " + st.message()); };
  try {
    if (!root.IsMap() || !root["experiment"] || !root["workloads"]) {
      return InvalidArgument(path +
                             ": a plan needs 'experiment: NAME' and 'workloads:'; see "
                             "docs/experiments.md");
    }
    const std::string exp = root["experiment"].as<std::string>();
    const std::string python = root["python"] ? root["python"].as<std::string>() : options.python;
    RunFields defaults;
    if (root["defaults"]) {
      if (Status st = ApplyRunFields(root["defaults"], defaults, {}); !st.ok()) return fail(st);
    }
    if (!root["workloads"].IsSequence()) {
      return fail(YamlError(root["workloads"], "'workloads' must be a list"));
    }
    int index = 0;
    int64_t planned = 0;  // runs so far, against kMaxPlanRuns
    Workloads workloads(plan);
    for (const YAML::Node& wn : root["workloads"]) {
      ++index;
      if (!wn.IsMap() || !wn["runs"] || !wn["runs"].IsSequence()) {
        return fail(YamlError(wn, "each workload needs 'runs:', a list of runs started together"));
      }
      const std::string wname = wn["name"] ? wn["name"].as<std::string>() : std::to_string(index);
      RunFields wfields = defaults;
      if (Status st = ApplyRunFields(wn, wfields, {"name", "grid", "repetitions", "runs"});
          !st.ok())
        return fail(st);
      std::vector<std::pair<std::string, std::vector<std::string>>> grid;
      int64_t combinations = 1;
      if (wn["grid"]) {
        if (!wn["grid"].IsMap()) return fail(YamlError(wn["grid"], "'grid' must be a mapping"));
        for (const auto& kv : wn["grid"]) {
          auto values = ScalarList(kv.second, "grid." + kv.first.as<std::string>());
          if (!values.ok()) return fail(values.status());
          if (values->empty()) return fail(YamlError(kv.second, "a grid entry has no values"));
          grid.emplace_back(kv.first.as<std::string>(), *values);
          if (static_cast<int64_t>(values->size()) > kMaxPlanRuns / combinations) {
            return fail(YamlError(wn["grid"], "the grid has more than " +
                                                  std::to_string(kMaxPlanRuns) +
                                                  " combinations; split it into several plans"));
          }
          combinations *= static_cast<int64_t>(values->size());
        }
      }
      int64_t repetitions = 1;
      if (wn["repetitions"]) {
        auto n = PlanCount(wn["repetitions"], "repetitions", kMaxPlanRuns);
        if (!n.ok()) return fail(n.status());
        repetitions = *n;
      }
      // Every run the workload makes, copies included, counted before any is made.
      int64_t runs_per_combination = 0;
      for (const YAML::Node& rn : wn["runs"]) {
        if (!rn.IsMap() || !rn["copies"]) {
          ++runs_per_combination;
          continue;
        }
        auto copies = PlanCount(rn["copies"], "copies", kMaxCopies);
        if (!copies.ok()) return fail(copies.status());
        runs_per_combination += *copies;
      }
      const int64_t per_repetition = combinations * runs_per_combination;
      if (per_repetition > 0 && repetitions > (kMaxPlanRuns - planned) / per_repetition) {
        return fail(InvalidArgument(
            "workload " + wname + " makes " + std::to_string(combinations) + " combination(s) x " +
            std::to_string(runs_per_combination) + " run(s) x " + std::to_string(repetitions) +
            " repetition(s): more than " + std::to_string(kMaxPlanRuns) +
            " runs in the plan; split it into several plans or lower the counts"));
      }
      planned += repetitions * per_repetition;
      for (const auto& combo : ExpandGrid(grid)) {
        for (int64_t rep = 1; rep <= repetitions; ++rep) {
          std::string label = wname;
          if (!combo.empty()) {
            label += "[";
            for (size_t i = 0; i < combo.size(); ++i) {
              label += (i ? "," : "") + combo[i].first + "=" + combo[i].second;
            }
            label += "]";
          }
          if (repetitions > 1) label += "#" + std::to_string(rep);
          PlannedWorkload& w = workloads.For(exp, label);
          for (const YAML::Node& rn : wn["runs"]) {
            if (!rn.IsMap() || (!rn["file"] && !rn["command"])) {
              return fail(YamlError(rn, "each run needs 'file:' or 'command:'"));
            }
            RunFields f = wfields;
            for (const auto& [k, v] : combo) f.params[k] = v;
            if (Status st = ApplyRunFields(rn, f, {"name", "file", "command", "args", "copies"});
                !st.ok())
              return fail(st);
            const int64_t copies = rn["copies"] ? *ParseInt(rn["copies"].as<std::string>()) : 1;
            std::vector<std::string> words;
            const YAML::Node& cn = rn["file"] ? rn["file"] : rn["command"];
            if (cn.IsSequence()) {
              auto list = ScalarList(cn, "command");
              if (!list.ok()) return fail(list.status());
              words = *list;
            } else {
              auto split = SplitShellWords(cn.as<std::string>());
              if (!split.ok()) return fail(YamlError(cn, split.status().message()));
              words = *split;
            }
            if (words.empty()) return fail(YamlError(cn, "the command is empty"));
            if (rn["args"]) {
              std::vector<std::string> extra;
              if (rn["args"].IsSequence()) {
                auto list = ScalarList(rn["args"], "args");
                if (!list.ok()) return fail(list.status());
                extra = *list;
              } else {
                auto split = SplitShellWords(rn["args"].as<std::string>());
                if (!split.ok()) return fail(YamlError(rn["args"], split.status().message()));
                extra = *split;
              }
              words.insert(words.end(), extra.begin(), extra.end());
            }
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
                rn["name"] ? rn["name"].as<std::string>() : std::to_string(w.runs.size() + 1);
            for (int64_t copy = 1; copy <= copies; ++copy) {
              PlannedRun run;
              run.experiment = exp;
              run.workload = label;
              run.key = exp + "/" + label + "/" + run_name +
                        (copies > 1 ? "." + std::to_string(copy) : "");
              run.name = run.key;
              run.params = f.params;
              run.env = f.env;
              ResolveCommand(words[0], args, plan_dir, rn["file"] ? python : "", run);
              if (Status st = FinishYamlRun(f, plan_dir, run); !st.ok()) return fail(st);
              if (!run.script.empty()) run.inputs.insert(run.inputs.begin(), run.script);
              w.runs.push_back(std::move(run));
            }
          }
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": " + e.what());
  }
  if (plan.workloads.empty()) return InvalidArgument(path + ": the plan has no runs");
  FP_RETURN_IF_ERROR(CheckKeysUnique(plan));
  return plan;
}

Result<ExperimentPlan> LoadPlan(const std::string& path, const PlanOptions& options) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    return NotFound("cannot read the plan " + path + ": " + text.status().message());
  }
  std::string ext =
      Lower(path.substr(path.rfind('.') == std::string::npos ? path.size() : path.rfind('.')));
  if (ext == ".csv") return ParseCsvPlan(*text, path, options);
  if (ext == ".yaml" || ext == ".yml") return ParseYamlPlan(*text, path, options);
  return InvalidArgument(
      "the plan " + path +
      " must end in .csv (radT's format) or .yaml/.yml; see docs/experiments.md");
}

}  // namespace footprint
