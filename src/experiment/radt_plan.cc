// radT's plans as radT 0.2.x reads them: its CSV (with or without Name) and its YAML sweeps
// (method grid or random), each row becoming one run of footprint's plan. radT's rules kept:
// rows of one (Experiment, Workload) start together, a script starts in its own folder, a
// sweep's combinations run one after another.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "experiment/plan.h"
#include "footprint/experiment.h"
#include "util/strings.h"

namespace footprint {
namespace {

using experiment::CsvRecord;

// One row of radT's table: a CSV line, or one combination of a YAML sweep.
struct RadtRow {
  std::string where;  // "plan.csv:12: ", for messages
  std::string experiment, workload, name, devices, collocation, file, listeners, params;
  std::map<std::string, std::string> swept;  // a sweep's parameters (meta.params)
  // A sweep's run key, "EXPERIMENT/--name value ...": radT knows a combination by its
  // parameters, so a run stays itself when the sweep gains values. Empty for a CSV row
  // ("EXPERIMENT/WORKLOAD/N").
  std::string key;
  int csv_row = -1;
};

// radT listeners footprint does not map, and why.
const std::map<std::string, std::string, std::less<>>& IgnoredListeners() {
  static const std::map<std::string, std::string, std::less<>> kIgnored = {
      {"macmon", "it reads Apple Silicon's counters"},
  };
  return kIgnored;
}

// The row's profiler listener (nsys, ncu, ...), its trace named as radT names it:
// TOOL_EXPERIMENT_WORKLOAD_LETTER, the letter being the row's devices and collocation.
std::optional<ProfilerRequest> RowProfiler(const RadtRow& row) {
  for (std::string_view word : Split(row.listeners, '+')) {
    if (!IsProfilerListener(word)) continue;
    const std::string listener = Lower(Trim(word));
    std::string letter = std::string(Trim(row.devices));
    if (letter.empty()) letter = "-";
    const std::string_view collocation = Trim(row.collocation);
    if (!collocation.empty() && collocation != "-") letter += "_" + std::string(collocation);
    const std::string tool = WrapInProfiler(listener, {}, "")->tool;
    return ProfilerRequest{
        .listener = listener,
        .trace_name = tool + "_" + row.experiment + "_" + row.workload + "_" + letter};
  }
  return std::nullopt;
}

// Adds the run of `row` to its workload in `plan`.
Status AddRadtRow(const RadtRow& row, const std::string& plan_dir, const PlanOptions& options,
                  experiment::Workloads& workloads, std::set<std::string>& ignored) {
  PlannedRun run;
  run.experiment = row.experiment;
  run.workload = row.workload;
  if (run.experiment.empty() || run.workload.empty() || row.file.empty()) {
    return InvalidArgument(row.where + "Experiment, Workload and File must not be empty");
  }
  auto args = SplitShellWords(row.params);
  if (!args.ok()) return InvalidArgument(row.where + "Params: " + args.status().message());
  run.params = row.swept;
  if (!row.params.empty() && row.swept.empty()) run.params["Params"] = row.params;
  experiment::ResolveCommand(row.file, *args, plan_dir, options.python, run);
  if (!run.script.empty()) {
    // radT starts a script in its own folder: the script is named by its absolute path.
    run.command[run.interpreter.empty() ? 0 : 1] = run.script;
    run.working_dir = DirName(run.script);
    run.inputs.push_back(run.script);
  }
  Status st = experiment::ParseDevices(row.devices, run);
  if (st.ok()) st = experiment::ParseCollocation(row.collocation, run);
  if (st.ok()) {
    auto metrics = MetricsForListeners(row.listeners, &ignored);
    if (metrics.ok()) {
      run.metrics = *metrics;
    } else {
      st = metrics.status();
    }
  }
  if (!st.ok()) return InvalidArgument(row.where + st.message());
  run.csv_row = row.csv_row;
  run.profiler = RowProfiler(row);
  PlannedWorkload& w = workloads.For(run.experiment, run.workload);
  run.key = !row.key.empty()
                ? row.key
                : run.experiment + "/" + run.workload + "/" + std::to_string(w.runs.size() + 1);
  run.name = row.name.empty() ? run.key : row.name;
  w.runs.push_back(std::move(run));
  return Status::Ok();
}

// The plan's closing checks, and a note for the listeners it ignored.
Result<ExperimentPlan> FinishRadtPlan(ExperimentPlan plan, const std::string& path,
                                      const std::set<std::string>& ignored) {
  if (plan.workloads.empty()) return InvalidArgument(path + ": the plan has no runs");
  FP_RETURN_IF_ERROR(experiment::CheckKeysUnique(plan));
  for (const std::string& name : ignored) {
    plan.notes.push_back("radT listener '" + name + "' is not used (" +
                         IgnoredListeners().find(name)->second +
                         "); footprint measures the run without it");
  }
  return plan;
}

// A radT sweep's parameters in file order, each with its values.
using SweepGrid = std::vector<std::pair<std::string, std::vector<std::string>>>;

Result<SweepGrid> ReadSweepParameters(const YAML::Node& parameters) {
  if (!parameters.IsMap()) return InvalidArgument("'parameters' must map NAME: {values: [...]}");
  SweepGrid grid;
  int64_t combinations = 1;
  for (const auto& kv : parameters) {
    const std::string name = kv.first.as<std::string>();
    const YAML::Node values = kv.second.IsMap() ? kv.second["values"] : YAML::Node();
    if (!values || !values.IsSequence() || values.size() == 0) {
      return InvalidArgument("parameter '" + name + "' needs values: [...]");
    }
    if (static_cast<int64_t>(values.size()) > kMaxPlanRuns / combinations) {
      return InvalidArgument("the sweep has more than " + std::to_string(kMaxPlanRuns) +
                             " combinations; split it into several plans");
    }
    combinations *= static_cast<int64_t>(values.size());
    auto& entry = grid.emplace_back(name, std::vector<std::string>{});
    std::set<std::string> seen;  // a value twice would make two runs of one combination
    for (const auto& v : values) {
      const std::string value = v.as<std::string>();
      if (!seen.insert(value).second) {
        return InvalidArgument("parameter '" + name + "' lists the value '" + value +
                               "' twice; list each value once");
      }
      entry.second.push_back(value);
    }
  }
  return grid;
}

// Every combination as value indices, in radT's order (the first parameter varies slowest).
Result<std::vector<std::vector<size_t>>> Combinations(const SweepGrid& grid) {
  size_t total = 1;
  for (const auto& [name, values] : grid) total *= values.size();
  std::vector<std::vector<size_t>> combos(total);
  for (size_t c = 0; c < combos.size(); ++c) {
    size_t rest = c;
    combos[c].resize(grid.size());
    for (size_t k = grid.size(); k-- > 0;) {
      combos[c][k] = rest % grid[k].second.size();
      rest /= grid[k].second.size();
    }
  }
  return combos;
}

// radT's random order, made repeatable: `seed` (default 0); `count` keeps the first N.
Result<std::vector<std::vector<size_t>>> ShuffledCombinations(const SweepGrid& grid,
                                                              const YAML::Node& seed_node,
                                                              const YAML::Node& count_node) {
  FP_ASSIGN_OR_RETURN(auto combos, Combinations(grid));
  auto seed = seed_node ? ParseInt(seed_node.Scalar()) : std::optional<int64_t>(0);
  if (!seed) return InvalidArgument("seed must be a whole number");
  std::mt19937_64 rng(static_cast<uint64_t>(*seed));
  std::shuffle(combos.begin(), combos.end(), rng);
  if (count_node) {
    auto count = ParseInt(count_node.Scalar());
    if (!count || *count < 1) return InvalidArgument("count must be a whole number from 1");
    if (static_cast<size_t>(*count) < combos.size()) combos.resize(static_cast<size_t>(*count));
  }
  return combos;
}

const char kRadtColumns[] =
    "Experiment, Workload, Name, Status, Run, Devices, Collocation, File, Listeners, Params";

}  // namespace

Result<MetricSet> MetricsForListeners(std::string_view listeners, std::set<std::string>* ignored) {
  std::string_view t = Trim(listeners);
  if (t.empty() || t == "-") return DefaultMetrics();
  // radT's listeners, by what they measured; any other word is a footprint metric list entry.
  static const std::map<std::string, std::string, std::less<>> kListeners = {
      {"smi", "gpu,gpu.memory,gpu.memory.tree,gpu.power,gpu.energy,gpu.sm_clock,gpu.temperature"},
      {"dcgmi", "gpu*"},
      {"top", "cpu,memory,threads,processes"},
      {"ps", "cpu,memory,threads"},
      {"iostat", "io.read,io.write"},
      {"free", "sys.memory"},
      {"none", ""},
  };
  // The run's own tree is always measured: it is what every total is made of.
  std::string list = "cpu,memory";
  for (std::string_view word : Split(t, '+')) {
    const std::string name = Lower(Trim(word));
    if (IsProfilerListener(name)) continue;  // PlannedRun::profiler
    if (IgnoredListeners().contains(name)) {
      if (ignored) ignored->insert(name);
      continue;
    }
    auto it = kListeners.find(name);
    const std::string metrics = it != kListeners.end() ? it->second : std::string(Trim(word));
    if (!metrics.empty()) list += "," + metrics;
  }
  auto set = ParseMetricList(list);
  if (!set.ok()) {
    return InvalidArgument("Listeners '" + std::string(t) + "': " + set.status().message() +
                           " (radT listeners: smi, dcgmi, top, ps, iostat, free, none, and the "
                           "profilers nsys, nsysraw, ncu, ncuraw, ncuattach)");
  }
  return set;
}

Result<ExperimentPlan> ParseCsvPlan(const std::string& text, const std::string& path,
                                    const PlanOptions& options) {
  auto where = [&](int line) { return path + ":" + std::to_string(line) + ": "; };
  static const std::set<std::string> kColumns = {"experiment", "workload", "name",        "status",
                                                 "run",        "devices",  "collocation", "file",
                                                 "listeners",  "params"};
  auto records = experiment::TokenizeCsv(text, static_cast<size_t>(kMaxPlanRuns), kColumns.size());
  if (!records.ok()) return InvalidArgument(path + ": " + records.status().message());
  if (records->empty())
    return InvalidArgument(path + ": the plan is empty; see docs/experiments.md");
  std::map<std::string, size_t> column;
  const CsvRecord& header = records->front();
  for (size_t i = 0; i < header.fields.size(); ++i) {
    std::string name = Lower(header.fields[i].value);
    if (!kColumns.contains(name)) {
      return InvalidArgument(where(header.line) + "unknown column '" + header.fields[i].value +
                             "' (radT's columns: " + kRadtColumns + ")");
    }
    column[name] = i;
  }
  for (const char* required : {"experiment", "workload", "file"}) {
    if (!column.contains(required)) {
      return InvalidArgument(where(header.line) + "the column '" + required +
                             "' is missing; radT plans start with: " + kRadtColumns);
    }
  }
  ExperimentPlan plan;
  plan.path = experiment::CanonicalPath(path);
  plan.format = "csv";
  plan.source = text;
  const std::string plan_dir = DirName(plan.path);
  experiment::Workloads workloads(plan);
  std::set<std::string> ignored;
  for (size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& rec = (*records)[r];
    if (rec.fields.size() > header.fields.size()) {
      return InvalidArgument(where(rec.line) + "more fields (" + std::to_string(rec.fields.size()) +
                             ") than columns (" + std::to_string(header.fields.size()) +
                             "); quote a field that holds a comma");
    }
    auto get = [&](const char* name) -> std::string {
      auto it = column.find(name);
      return it == column.end() || it->second >= rec.fields.size() ? ""
                                                                   : rec.fields[it->second].value;
    };
    RadtRow row{.where = where(rec.line),
                .experiment = get("experiment"),
                .workload = get("workload"),
                .name = get("name"),
                .devices = get("devices"),
                .collocation = get("collocation"),
                .file = get("file"),
                .listeners = get("listeners"),
                .params = get("params"),
                .csv_row = static_cast<int>(r - 1)};
    FP_RETURN_IF_ERROR(AddRadtRow(row, plan_dir, options, workloads, ignored));
  }
  return FinishRadtPlan(std::move(plan), path, ignored);
}

namespace experiment {

Result<ExperimentPlan> ParseRadtSweep(const YAML::Node& root, const std::string& text,
                                      const std::string& path, const PlanOptions& options) {
  auto fail = [&](const std::string& what) {
    return InvalidArgument(path + ": " + what +
                           " (radT's sweep keys: name, experiment, "
                           "collocation, devices, listeners, file, method, "
                           "parameters; see docs/experiments.md)");
  };
  for (const char* key : {"experiment", "file", "method", "parameters"}) {
    if (!root[key]) return fail(std::string("'") + key + "' is missing");
  }
  auto scalar = [&](const char* key, const char* fallback) -> std::string {
    const YAML::Node n = root[key];
    return n && n.IsScalar() ? n.as<std::string>() : fallback;
  };
  const std::string method = Lower(scalar("method", ""));
  if (method != "grid" && method != "random") {
    return fail("method must be grid or random, not '" + scalar("method", "") + "'");
  }
  auto grid = ReadSweepParameters(root["parameters"]);
  if (!grid.ok()) return fail(grid.status().message());
  const YAML::Node seed = root["seed"], count = root["count"];
  auto combos = method == "random" ? ShuffledCombinations(*grid, seed, count) : Combinations(*grid);
  if (!combos.ok()) return fail(combos.status().message());
  ExperimentPlan plan;
  plan.path = CanonicalPath(path);
  plan.format = "yaml";
  plan.source = text;
  const std::string plan_dir = DirName(plan.path);
  Workloads workloads(plan);
  std::set<std::string> ignored;
  const int width = std::max<int>(3, static_cast<int>(std::to_string(combos->size()).size()));
  for (size_t c = 0; c < combos->size(); ++c) {
    RadtRow row{.where = path + ": combination " + std::to_string(c + 1) + ": ",
                .experiment = scalar("experiment", ""),
                .name = scalar("name", ""),
                .devices = scalar("devices", "-"),
                .collocation = scalar("collocation", "-"),
                .file = scalar("file", ""),
                .listeners = scalar("listeners", "-")};
    std::string number = std::to_string(c);
    row.workload = std::string(static_cast<size_t>(width) - number.size(), '0') + number;
    for (size_t k = 0; k < grid->size(); ++k) {
      const auto& [name, values] = (*grid)[k];
      const std::string& value = values[(*combos)[c][k]];
      row.swept[name] = value;
      row.params += (k ? " --" : "--") + name + " " + ShellWord(value);
    }
    row.key = row.experiment + "/" + row.params;
    FP_RETURN_IF_ERROR(AddRadtRow(row, plan_dir, options, workloads, ignored));
  }
  return FinishRadtPlan(std::move(plan), path, ignored);
}

}  // namespace experiment
}  // namespace footprint
