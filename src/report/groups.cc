#include "footprint/groups.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "footprint/report.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr std::string_view kGroupPrefix = "group:";
constexpr size_t kMinPrefix = 4;

// Headline figures in display order; energy totals (`*_j`) join them wherever they appear.
constexpr std::array<std::string_view, 3> kHeadline = {"duration_s", "cpu_s", "peak_memory_bytes"};

bool IsHeadline(std::string_view name) {
  return std::find(kHeadline.begin(), kHeadline.end(), name) != kHeadline.end() ||
         name.ends_with("_j");
}

// Sort key of a figure: headline first (in kHeadline order, then energy by the catalogue's
// order), then the totals of TotalNames() in their order, then any other by name.
std::pair<int, std::string> FigureOrder(const std::string& name) {
  auto headline = std::find(kHeadline.begin(), kHeadline.end(), name);
  if (headline != kHeadline.end()) return {static_cast<int>(headline - kHeadline.begin()), ""};
  auto known = TotalNames();
  auto it = std::find(known.begin(), known.end(), name);
  int rank = it == known.end() ? 1000 : static_cast<int>(it - known.begin());
  return {IsHeadline(name) ? 100 + rank : 2000 + rank, it == known.end() ? name : ""};
}

RunSet GroupOf(const std::vector<RunRecord>& runs, const std::string& group_id,
               std::string_view spec) {
  RunSet set;
  set.spec = std::string(spec);
  set.group_id = group_id;
  for (const RunRecord& r : runs) {
    if (r.group_id != group_id) continue;
    (IsWarmup(r) ? set.warmups : set.runs).push_back(r);
  }
  std::stable_sort(set.runs.begin(), set.runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.repetition < b.repetition;
  });
  return set;
}

Result<RunSet> ResolveGroup(const std::vector<RunRecord>& runs, std::string_view spec,
                            std::string_view what) {
  if (what == "last") {
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      if (!it->group_id.empty()) return GroupOf(runs, it->group_id, spec);
    }
    return NotFound(
        "the database holds no group of repetitions yet; record one with "
        "footprint run -r N -- COMMAND");
  }
  std::set<std::string> matches;
  for (const RunRecord& r : runs) {
    if (r.group_id.empty()) continue;
    if (r.group_id == what) return GroupOf(runs, r.group_id, spec);
    if (what.size() >= kMinPrefix && r.group_id.compare(0, what.size(), what) == 0) {
      matches.insert(r.group_id);
    }
  }
  if (matches.size() == 1) return GroupOf(runs, *matches.begin(), spec);
  if (matches.size() > 1) {
    std::string ids;
    for (const std::string& id : matches) ids += " " + id;
    return InvalidArgument("group prefix '" + std::string(what) + "' is ambiguous (" +
                           std::to_string(matches.size()) + " groups:" + ids +
                           "); give more characters");
  }
  // group:RUN, the group of a run.
  auto run = ResolveRun(runs, what);
  if (!run.ok()) {
    if (run.status().code() != StatusCode::kNotFound) return run.status();
    return NotFound("no group '" + std::string(what) +
                    "' (tried group id, group id prefix of 4+ characters, and a run's id, "
                    "prefix or name); list them with footprint runs");
  }
  if (run->group_id.empty()) {
    return NotFound("run " + run->id.substr(0, 8) + " (" + run->name +
                    ") belongs to no group; show it alone with footprint show " +
                    run->id.substr(0, 8));
  }
  return GroupOf(runs, run->group_id, spec);
}

json RunBrief(const RunRecord& r, const std::map<std::string, double>& durations) {
  auto it = durations.find(r.id);
  json duration = it == durations.end() ? json(nullptr) : json(it->second);
  return {{"id", r.id},
          {"repetition", r.repetition},
          {"status", RunStatusName(r.status)},
          {"exit_code", OrNull(r.exit_code)},
          {"duration_s", duration}};
}

}  // namespace

std::string RunSet::Label() const {
  const RunRecord* first = !runs.empty()      ? &runs.front()
                           : !warmups.empty() ? &warmups.front()
                                              : nullptr;
  std::string name = first ? Inert(first->name) : "";
  if (is_group()) return "group " + group_id.substr(0, 8) + " (" + name + ")";
  if (runs.size() > 1) return std::to_string(runs.size()) + " runs (" + name + ")";
  return "run " + (first ? first->id.substr(0, 8) : std::string("?")) + " (" + name + ")";
}

// RUN+RUN+...: those runs, each as ResolveRun names it, as one set (duplicates once).
Result<RunSet> ResolveRunList(const std::vector<RunRecord>& runs, std::string_view spec) {
  RunSet set;
  set.spec = std::string(spec);
  for (std::string_view part : Split(spec, '+')) {
    FP_ASSIGN_OR_RETURN(auto run, ResolveRun(runs, Trim(part)));
    const bool seen = std::any_of(set.runs.begin(), set.runs.end(),
                                  [&](const RunRecord& r) { return r.id == run.id; });
    if (!seen) set.runs.push_back(std::move(run));
  }
  return set;
}

Result<RunSet> ResolveRunSet(const std::vector<RunRecord>& runs, std::string_view spec,
                             bool as_group) {
  if (spec.substr(0, kGroupPrefix.size()) == kGroupPrefix) {
    return ResolveGroup(runs, spec, spec.substr(kGroupPrefix.size()));
  }
  auto found = ResolveRun(runs, spec);
  // A name may hold a '+' ("c++"): only what names no run is read as a list.
  if (!found.ok() && found.status().code() == StatusCode::kNotFound &&
      spec.find('+') != std::string_view::npos) {
    return ResolveRunList(runs, spec);
  }
  FP_ASSIGN_OR_RETURN(auto run, std::move(found));
  // A name whose latest run is a repetition means its group: `compare old new` after
  // `run -r N -n old` and `-n new` compares the groups, not their last runs.
  const bool by_name = run.name == spec && run.id != spec;
  if ((as_group || by_name) && !run.group_id.empty()) {
    RunSet set = GroupOf(runs, run.group_id, spec);
    if (by_name && !as_group) {
      set.chosen = QuotedInert(spec) + " means " + set.Label() + ", the " +
                   std::to_string(set.runs.size()) + " repetition(s) of its latest run -r; " +
                   "give a run's id to take one run alone";
    }
    return set;
  }
  RunSet set;
  set.spec = std::string(spec);
  set.runs.push_back(std::move(run));
  return set;
}

std::string_view TotalUnit(std::string_view name) {
  if (name.ends_with("_s")) return "s";
  if (name.ends_with("_bytes")) return "bytes";
  if (name.ends_with("_j")) return "J";
  if (name.ends_with("_w")) return "W";
  return "count";
}

std::string FigureLabel(std::string_view name) {
  if (name == "duration_s") return "duration";
  if (name == "cpu_s") return "cpu time";
  if (name == "max_process_peak_bytes") return "largest process";
  if (name == "monitor_cpu_s") return "footprint cpu";
  if (name == "monitor_peak_rss_bytes") return "footprint rss";
  for (std::string_view suffix : {"_s", "_bytes", "_j", "_w"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.remove_suffix(suffix.size());
      break;
    }
  }
  std::string label(name);
  for (char& c : label) {
    if (c == '_') c = ' ';
  }
  return label;
}

const FigureStats* SetSummary::Find(std::string_view name) const {
  for (const FigureStats& f : figures) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<SetSummary> SummarizeSet(Store& store, RunSet set) {
  SetSummary out;
  std::map<std::string, FigureStats> figures;
  for (const std::vector<RunRecord>* list : {&set.runs, &set.warmups}) {
    for (const RunRecord& r : *list) {
      FP_ASSIGN_OR_RETURN(auto totals, store.LoadTotals(r.id));
      if (auto d = totals.find("duration_s"); d != totals.end()) {
        out.durations[r.id] = d->second;
      }
      // One run named alone counts whatever its status; of several, the ok ones, as a group's.
      const bool alone = !set.is_group() && set.runs.size() == 1;
      const bool counted = list == &set.runs && (alone || r.status == RunStatus::kOk);
      if (!counted) continue;
      out.counted.push_back(r);
      auto user = totals.find("cpu_user_s"), system = totals.find("cpu_system_s");
      if (user != totals.end() && system != totals.end()) {
        (totals)["cpu_s"] = user->second + system->second;
      }
      for (const auto& [name, value] : totals) {
        FigureStats& f = figures[name];
        f.values.push_back(value);
        f.run_ids.push_back(r.id);
        f.repetitions.push_back(r.repetition);
      }
    }
  }
  for (auto& [name, f] : figures) {
    f.name = name;
    f.unit = std::string(TotalUnit(name));
    f.headline = IsHeadline(name);
    f.stats = Describe(f.values);
    // Every total is a cost that cannot be negative: a t-interval reaching below 0 (few,
    // spread values) is cut there rather than shown as "-5 MiB".
    if (f.stats.ci_low && *f.stats.ci_low < 0 &&
        std::all_of(f.values.begin(), f.values.end(), [](double v) { return v >= 0; })) {
      f.stats.ci_low = 0.0;
    }
    out.figures.push_back(std::move(f));
  }
  std::stable_sort(out.figures.begin(), out.figures.end(),
                   [](const FigureStats& a, const FigureStats& b) {
                     return FigureOrder(a.name) < FigureOrder(b.name);
                   });
  out.set = std::move(set);
  return out;
}

std::string SetSummaryJson(const SetSummary& s, int indent) {
  const RunSet& set = s.set;
  const RunRecord* first = !set.runs.empty()      ? &set.runs.front()
                           : !set.warmups.empty() ? &set.warmups.front()
                                                  : nullptr;
  json meta = first ? ParseStoredJson(first->meta_json) : json::object();
  json planned = meta.is_object() ? meta.value("group", json::object()) : json::object();
  json group = {{"id", TextOrNull(set.group_id)},
                {"name", first ? first->name : ""},
                {"command", first ? json(first->command) : json::array()},
                {"repetitions", set.runs.size()},
                {"warmups", set.warmups.size()},
                {"counted", s.counted.size()},
                {"planned_repetitions", planned.value("repetitions", json(nullptr))},
                {"planned_warmups", planned.value("warmups", json(nullptr))}};
  json runs = json::array();
  for (const RunRecord& r : set.runs) {
    json brief = RunBrief(r, s.durations);
    brief["counted"] = std::any_of(s.counted.begin(), s.counted.end(),
                                   [&](const RunRecord& c) { return c.id == r.id; });
    runs.push_back(std::move(brief));
  }
  json warmups = json::array();
  for (const RunRecord& r : set.warmups) warmups.push_back(RunBrief(r, s.durations));
  json figures = json::object();
  json order = json::array();
  for (const FigureStats& f : s.figures) {
    const Description& d = f.stats;
    json outliers = json::array();
    for (size_t i : d.outliers) {
      outliers.push_back(
          {{"run_id", f.run_ids[i]}, {"repetition", f.repetitions[i]}, {"value", f.values[i]}});
    }
    figures[f.name] = {{"unit", f.unit},
                       {"headline", f.headline},
                       {"n", d.n},
                       {"mean", d.mean},
                       {"sd", NumberOrNull(d.sd)},
                       {"median", d.median},
                       {"min", d.min},
                       {"max", d.max},
                       {"q1", d.q1},
                       {"q3", d.q3},
                       {"ci95_low", NumberOrNull(d.ci_low)},
                       {"ci95_high", NumberOrNull(d.ci_high)},
                       {"outliers", outliers},
                       {"values", f.values}};
    order.push_back(f.name);
  }
  json out = {{"group", group},
              {"runs", runs},
              {"warmups", warmups},
              {"figures", figures},
              {"order", order}};
  return JsonText(out, indent);
}

}  // namespace footprint
