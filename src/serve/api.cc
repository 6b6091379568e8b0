#include "serve/api.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <variant>

#include "core/identity.h"
#include "footprint/compare.h"
#include "footprint/groups.h"
#include "footprint/report.h"
#include "report/export.h"
#include "report/json_out.h"
#include "report/plot.h"
#include "report/run_json.h"
#include "store/reconcile.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint::serve {
namespace {

using json = nlohmann::json;
using Params = std::multimap<std::string, std::string>;

// One run by its spec. The page asks for a live run by its full id every second: that is
// read by its key; prefixes, names and "last" need the whole list.
Result<RunRecord> FindRun(Store& store, std::string_view spec, Env& env) {
  if (spec.size() == 36) {  // the length of a run id (a UUID)
    auto run = store.GetRun(std::string(spec));
    if (run.ok()) {
      std::vector<RunRecord> one{std::move(run).value()};
      FP_RETURN_IF_ERROR(ReconcileInterrupted(store, one, env));
      return std::move(one.front());
    }
    if (run.status().code() != StatusCode::kNotFound) return run.status();
  }
  FP_ASSIGN_OR_RETURN(auto all, ListReconciledRuns(store, env));
  return ResolveRun(all, spec);
}

ApiResponse JsonResponse(std::string body) {
  ApiResponse r;
  r.body = std::move(body);
  return r;
}

ApiResponse Failure(const Status& status) {
  return ErrorResponse(HttpStatusOf(status), status.message());
}

std::optional<std::string> Param(const Params& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

// A whole number in [lo, hi]; `fallback` when the parameter is absent.
Result<int64_t> IntParam(const Params& params, const std::string& name, int64_t fallback,
                         int64_t lo, int64_t hi) {
  auto text = Param(params, name);
  if (!text) return fallback;
  auto v = ParseInt(*text);
  if (!v || *v < lo || *v > hi) {
    return InvalidArgument(name + "= must be a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", not '" + text->substr(0, 40) + "'");
  }
  return *v;
}

// "2024-05-01", "2024-05-01T12:30", "2024-05-01T12:30:05Z" (UTC) as ns since the epoch. A
// bare date as the end of a range means the end of that day.
Result<int64_t> TimeParam(const std::string& name, const std::string& text, bool end_of_range) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  bool date_only = false;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3 &&
      static_cast<size_t>(used) == text.size()) {
    date_only = true;
  } else if (!(std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s,
                           &used) == 6 ||
               std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d%n", &y, &mo, &d, &h, &mi, &used) ==
                   5) ||
             (static_cast<size_t>(used) != text.size() &&
              !(static_cast<size_t>(used) + 1 == text.size() && text.back() == 'Z'))) {
    used = -1;
  }
  if (used < 0 || y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
      mi > 59 || s > 60) {
    return InvalidArgument(name + "= must be a UTC date or time such as 2024-05-01 or " +
                           "2024-05-01T12:30:00Z, not '" + text.substr(0, 40) + "'");
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  int64_t seconds = timegm(&tm);
  if (date_only && end_of_range) seconds += 86400;
  return seconds * int64_t{1'000'000'000};
}

// Comma-separated, non-empty words of parameter `name`, at most `limit` of them.
Result<std::vector<std::string>> ListParam(const Params& params, const std::string& name,
                                           size_t limit) {
  std::vector<std::string> out;
  for (auto [it, end] = params.equal_range(name); it != end; ++it) {
    for (std::string_view word : Split(it->second, ',')) {
      word = Trim(word);
      if (!word.empty()) out.emplace_back(word);
    }
  }
  if (out.size() > limit) {
    return InvalidArgument(name + "= names " + std::to_string(out.size()) + " items; at most " +
                           std::to_string(limit) + " are allowed");
  }
  return out;
}

Result<std::vector<RunRecord>> SelectedRuns(const std::vector<RunRecord>& all, const Params& params,
                                            const std::string& name) {
  FP_ASSIGN_OR_RETURN(auto specs, ListParam(params, name, kMaxSelectedRuns));
  if (specs.empty()) {
    return InvalidArgument(name +
                           "= must name at least one run (id, unique id prefix, name, 'last' "
                           "or group:ID), comma-separated");
  }
  std::vector<RunRecord> out;
  std::set<std::string> seen;
  for (const std::string& spec : specs) {
    // A group, or a name whose latest run is a repetition, means the group's measured runs.
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSet(all, spec));
    for (RunRecord& run : set.runs) {
      if (seen.insert(run.id).second) out.push_back(std::move(run));
    }
  }
  if (out.size() > kMaxSelectedRuns) {
    return InvalidArgument(name + "= means " + std::to_string(out.size()) + " runs; at most " +
                           std::to_string(kMaxSelectedRuns) + " are shown at once");
  }
  return out;
}

// KEY or KEY=VALUE of a tag= or param= filter.
using KeyValueFilter = std::pair<std::string, std::optional<std::string>>;

KeyValueFilter ParseKeyValue(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos) return {std::string(text), std::nullopt};
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

// Whether the object `map` (meta "tags" or "params") has each key, with its value where given.
// Params may be numbers: 0.1 matches lr=0.1 whether it was stored as text or as a number.
bool HasAll(const json& map, const std::vector<KeyValueFilter>& wanted) {
  for (const auto& [key, value] : wanted) {
    if (!map.is_object() || !map.contains(key)) return false;
    if (!value) continue;
    const json& v = map[key];
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text == *value) continue;
    auto a = ParseDouble(text);
    auto b = ParseDouble(*value);
    if (!a || !b || *a != *b) return false;
  }
  return true;
}

// What /api/runs and /api/tree keep (docs/serve.md): every given criterion must hold.
struct RunFilter {
  std::string q;  // lower-case; in the id, name, description or command
  std::vector<KeyValueFilter> tags, params;
  std::optional<RunStatus> status;
  std::optional<int64_t> from_ns, to_ns;
  std::optional<std::string> experiment, workload, group;

  static Status ParseStatus(const std::string& text, RunFilter& f) {
    f.status = RunStatusFromName(text);
    if (f.status) return Status::Ok();
    return InvalidArgument("status must be running, ok, failed, killed or interrupted, not '" +
                           text.substr(0, 40) + "'");
  }

  // The search box's words: status:NAME, tag:KEY[=VALUE] and KEY=VALUE (a param) filter; the
  // other words, joined again, are searched for in the text of the run.
  Status ParseQuery(std::string_view query) {
    std::vector<std::string_view> text;
    for (std::string_view word : Split(query, ' ')) {
      if (word.empty()) continue;
      if (word.starts_with("status:")) {
        FP_RETURN_IF_ERROR(ParseStatus(std::string(word.substr(7)), *this));
      } else if (word.starts_with("tag:") && word.size() > 4) {
        tags.push_back(ParseKeyValue(word.substr(4)));
      } else if (word.find('=') != std::string_view::npos && word.front() != '=') {
        params.push_back(ParseKeyValue(word));
      } else {
        text.push_back(word);
      }
    }
    for (std::string_view word : text) q += (q.empty() ? "" : " ") + Lower(word);
    return Status::Ok();
  }

  static Result<RunFilter> Parse(const Params& params) {
    RunFilter f;
    if (auto q = Param(params, "q")) FP_RETURN_IF_ERROR(f.ParseQuery(*q));
    for (const char* name : {"tag", "param"}) {
      for (auto [it, end] = params.equal_range(name); it != end; ++it) {
        if (!it->second.empty()) {
          (name == std::string("tag") ? f.tags : f.params).push_back(ParseKeyValue(it->second));
        }
      }
    }
    if (auto s = Param(params, "status"); s && !s->empty()) FP_RETURN_IF_ERROR(ParseStatus(*s, f));
    for (const char* name : {"from", "to"}) {
      auto text = Param(params, name);
      if (!text || text->empty()) continue;
      FP_ASSIGN_OR_RETURN(auto t, TimeParam(name, *text, name == std::string("to")));
      (name == std::string("from") ? f.from_ns : f.to_ns) = t;
    }
    f.experiment = Param(params, "experiment");
    f.workload = Param(params, "workload");
    f.group = Param(params, "group");
    return f;
  }

  bool Keeps(const RunRecord& r, const json& meta) const {
    if (status && r.status != *status) return false;
    if (from_ns && r.started_at_ns < *from_ns) return false;
    if (to_ns && r.started_at_ns >= *to_ns) return false;
    if (experiment && r.experiment != *experiment) return false;
    if (workload && r.workload != *workload) return false;
    if (group && !r.group_id.starts_with(*group)) return false;
    if (!tags.empty() && !HasAll(meta.value("tags", json::object()), tags)) return false;
    if (!params.empty() && !HasAll(meta.value("params", json::object()), params)) return false;
    if (!q.empty()) {
      std::string hay = r.id + "\n" + r.name + "\n" + r.description;
      for (const std::string& word : r.command) hay += "\n" + word;
      if (Lower(hay).find(q) == std::string::npos) return false;
    }
    return true;
  }
};

// A run and its meta, parsed on first use: parsing every run's meta costs seconds for 100 k
// runs, so only a tag or param filter or sort parses all of them.
struct ListedRun {
  RunRecord run;
  std::optional<json> parsed;
  const json& meta() {
    if (!parsed) parsed = RunMeta(run);
    return *parsed;
  }
};

// The runs `filter` keeps, newest first.
Result<std::vector<ListedRun>> FilteredRuns(Store& store, const RunFilter& filter, Env& env) {
  FP_ASSIGN_OR_RETURN(auto all, ListReconciledRuns(store, env));
  const bool needs_meta = !filter.tags.empty() || !filter.params.empty();
  static const json kNoMeta = json::object();
  std::vector<ListedRun> out;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    ListedRun listed{std::move(*it), std::nullopt};
    if (filter.Keeps(listed.run, needs_meta ? listed.meta() : kNoMeta)) {
      out.push_back(std::move(listed));
    }
  }
  return out;
}

// The figures of the runs table's columns, from the run's totals: null where not measured.
json TableFigures(const std::map<std::string, double>& totals) {
  auto total = [&](const char* name) -> std::optional<double> {
    auto it = totals.find(name);
    if (it == totals.end()) return std::nullopt;
    return it->second;
  };
  auto sum = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
    if (!a && !b) return std::nullopt;
    return a.value_or(0) + b.value_or(0);
  };
  return {{"cpu_s", OrNull(sum(total("cpu_user_s"), total("cpu_system_s")))},
          {"peak_memory_bytes", OrNull(total("peak_memory_bytes"))},
          {"energy_j", OrNull(sum(total("cpu_energy_j"), total("gpu_energy_j")))},
          {"gpu_time_s", OrNull(total("gpu_time_s"))},
          {"monitor_cpu_s", OrNull(total("monitor_cpu_s"))},
          {"monitor_peak_rss_bytes", OrNull(total("monitor_peak_rss_bytes"))}};
}

// A run in lists: the run object of show --json, its duration (a running run's until `now_ns`),
// tags, params and `figures` (TableFigures).
json RunRow(const RunRecord& r, const json& meta, json figures, int64_t now_ns) {
  json row = RunJson(r);
  row["experiment"] = r.experiment;
  row["workload"] = r.workload;
  row["duration_s"] = RunDuration(r, {}, now_ns);
  row["tags"] = meta.value("tags", json::object());
  row["params"] = meta.value("params", json::object());
  row["figures"] = std::move(figures);
  if (auto lost = IncompleteReason(r)) row["incomplete"] = *lost;
  return row;
}

ApiResponse Info(StorePool& pool, Store& store, bool queue) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return Failure(runs.status());
  return JsonResponse(JsonText({{"footprint", FootprintVersion()},
                                {"db", pool.location()},
                                {"read_only", true},
                                {"runs", runs->size()},
                                {"plots", PlotAvailable()},
                                {"queue", queue}}));
}

// The order of the runs table: sort=COLUMN, order=asc|desc (docs/serve.md). Runs without the
// column's value come last either way.
struct RunOrder {
  std::string column = "started";  // started, name, status, duration, cpu, memory, energy,
                                   // gpu, param:KEY or tag:KEY
  bool descending = true;

  static Result<RunOrder> Parse(const Params& params) {
    RunOrder o;
    if (auto sort = Param(params, "sort"); sort && !sort->empty()) o.column = *sort;
    static const std::set<std::string> kColumns = {"started", "name",   "status", "duration",
                                                   "cpu",     "memory", "energy", "gpu"};
    if (!kColumns.contains(o.column) && !o.column.starts_with("param:") &&
        !o.column.starts_with("tag:")) {
      return InvalidArgument("sort= must be started, name, status, duration, cpu, memory, " +
                             std::string("energy, gpu, param:KEY or tag:KEY, not '") +
                             o.column.substr(0, 40) + "'");
    }
    const std::string order = Param(params, "order").value_or("desc");
    if (order != "asc" && order != "desc") {
      return InvalidArgument("order= must be asc or desc, not '" + order.substr(0, 40) + "'");
    }
    o.descending = order == "desc";
    return o;
  }
  // The figure of TableFigures that the column sorts by; empty for the others.
  std::string Figure() const {
    static const std::map<std::string, std::string> kFigures = {{"cpu", "cpu_s"},
                                                                {"memory", "peak_memory_bytes"},
                                                                {"energy", "energy_j"},
                                                                {"gpu", "gpu_time_s"}};
    auto it = kFigures.find(column);
    return it == kFigures.end() ? "" : it->second;
  }
};

// A run's sort key: a number or a text (or nothing: last).
using SortKey = std::variant<std::monostate, double, std::string>;

SortKey KeyOf(const RunOrder& order, ListedRun& listed, const json* figures, int64_t now_ns) {
  const RunRecord& r = listed.run;
  if (order.column == "started") return static_cast<double>(r.started_at_ns);
  if (order.column == "name") return Lower(r.name);
  if (order.column == "status") return std::string(RunStatusName(r.status));
  if (order.column == "duration") return RunDuration(r, {}, now_ns);
  if (figures) {
    const json& v = (*figures)[order.Figure()];
    return v.is_number() ? SortKey(v.get<double>()) : SortKey();
  }
  const bool is_param = order.column.starts_with("param:");
  const json map = listed.meta().value(is_param ? "params" : "tags", json::object());
  const std::string key = order.column.substr(is_param ? 6 : 4);
  if (!map.is_object() || !map.contains(key)) return {};
  const json& v = map[key];
  if (v.is_number()) return v.get<double>();
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (auto number = ParseDouble(text)) return *number;  // lr=0.01 before lr=0.1
  return text;
}

// Sorts `runs` (newest first) by `order`, stably: equal keys stay newest first. Sorting by a
// figure reads the totals of every run (`figures`, filled for all); otherwise only the page's.
// Running runs last until `now_ns`.
Status SortRuns(Store& store, const RunOrder& order, std::vector<ListedRun>& runs,
                std::vector<json>& figures, int64_t now_ns) {
  if (order.column == "started" && order.descending) return Status::Ok();
  const bool by_figure = !order.Figure().empty();
  std::vector<std::pair<SortKey, size_t>> keys;
  keys.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (by_figure) {
      FP_ASSIGN_OR_RETURN(auto totals, store.LoadTotals(runs[i].run.id));
      figures[i] = TableFigures(totals);
    }
    keys.emplace_back(KeyOf(order, runs[i], by_figure ? &figures[i] : nullptr, now_ns), i);
  }
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) {
    const bool a_none = a.first.index() == 0, b_none = b.first.index() == 0;
    if (a_none || b_none) return !a_none && b_none;
    if (a.first.index() != b.first.index()) return a.first.index() < b.first.index();
    return order.descending ? b.first < a.first : a.first < b.first;
  });
  std::vector<ListedRun> sorted;
  std::vector<json> sorted_figures;
  sorted.reserve(runs.size());
  for (const auto& [key, i] : keys) {
    sorted.push_back(std::move(runs[i]));
    sorted_figures.push_back(std::move(figures[i]));
  }
  runs = std::move(sorted);
  figures = std::move(sorted_figures);
  return Status::Ok();
}

// The keys of the params or tags of `rows` (RunRow objects), for the table's column picker.
json KeysOf(const json& rows, const char* what) {
  std::set<std::string> keys;
  for (const json& row : rows) {
    for (const auto& item : row[what].items()) keys.insert(item.key());
  }
  return keys;
}

// One page of the runs table, with each run's figures (TableFigures) and the total count.
struct RunsPage {
  std::vector<ListedRun> runs;
  std::vector<json> figures;
  size_t total = 0;
};

// What the store's SQL selects for `filter` and `order`: everything but tag and param filters,
// sorts by meta or totals, and a search for a line break (which the in-memory search finds
// across fields); nullopt for those.
std::optional<RunQuery> StoreQuery(const RunFilter& filter, const RunOrder& order) {
  static const std::map<std::string, RunQuery::Sort> kSorts = {
      {"started", RunQuery::Sort::kStarted},
      {"name", RunQuery::Sort::kName},
      {"status", RunQuery::Sort::kStatus},
      {"duration", RunQuery::Sort::kDuration}};
  auto sort = kSorts.find(order.column);
  if (sort == kSorts.end() || !filter.tags.empty() || !filter.params.empty() ||
      filter.q.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  return RunQuery{.status = filter.status,
                  .from_ns = filter.from_ns,
                  .to_ns = filter.to_ns,
                  .experiment = filter.experiment,
                  .workload = filter.workload,
                  .group_prefix = filter.group,
                  .text = filter.q,
                  .sort = sort->second,
                  .descending = order.descending};
}

// The page from the store's SQL, reconciled as ListReconciledRuns is: runs still stored as
// running whose monitor is gone select, sort and show as interrupted. Only a status filter or
// a sort by status or duration needs to know them before the query (reading the runs marked
// running costs a scan of the runs without an index on status).
Result<RunsPage> StorePage(Store& store, RunQuery query, Env& env) {
  if (query.status || query.sort == RunQuery::Sort::kStatus ||
      query.sort == RunQuery::Sort::kDuration) {
    FP_ASSIGN_OR_RETURN(auto running, store.ListRunsWithStatus(RunStatus::kRunning));
    FP_RETURN_IF_ERROR(ReconcileInterrupted(store, running, env));
    for (const RunRecord& r : running) {
      if (r.status != RunStatus::kRunning) query.interrupted_ids.push_back(r.id);
    }
  }
  FP_ASSIGN_OR_RETURN(RunPage found, store.ListRunsPage(query));
  FP_RETURN_IF_ERROR(ReconcileInterrupted(store, found.runs, env));
  RunsPage page;
  page.total = static_cast<size_t>(found.total);
  for (RunRecord& r : found.runs) page.runs.push_back({std::move(r), std::nullopt});
  page.figures.resize(page.runs.size());
  return page;
}

// The page from every run, filtered and sorted here: for what StoreQuery cannot push down.
Result<RunsPage> MemoryPage(Store& store, const RunFilter& filter, const RunOrder& order,
                            size_t limit, size_t offset, Env& env, int64_t now_ns) {
  FP_ASSIGN_OR_RETURN(auto runs, FilteredRuns(store, filter, env));
  std::vector<json> figures(runs.size());
  FP_RETURN_IF_ERROR(SortRuns(store, order, runs, figures, now_ns));
  RunsPage page;
  page.total = runs.size();
  for (size_t i = offset; i < runs.size() && page.runs.size() < limit; ++i) {
    page.runs.push_back(std::move(runs[i]));
    page.figures.push_back(std::move(figures[i]));
  }
  return page;
}

// The page of runs `filter` keeps in `order` (running runs last until `now_ns`), reconciled on
// `env`'s clock.
Result<RunsPage> FindRunsPage(Store& store, const RunFilter& filter, const RunOrder& order,
                              size_t limit, size_t offset, Env& env, int64_t now_ns) {
  if (auto query = StoreQuery(filter, order)) {
    query->limit = static_cast<int64_t>(limit);
    query->offset = static_cast<int64_t>(offset);
    return StorePage(store, *std::move(query), env);
  }
  return MemoryPage(store, filter, order, limit, offset, env, now_ns);
}

ApiResponse ListRunsPage(Store& store, const Params& params, Env& env) {
  auto filter = RunFilter::Parse(params);
  if (!filter.ok()) return Failure(filter.status());
  auto order = RunOrder::Parse(params);
  if (!order.ok()) return Failure(order.status());
  auto limit = IntParam(params, "limit", 100, 1, kMaxPageRuns);
  if (!limit.ok()) return Failure(limit.status());
  auto offset = IntParam(params, "offset", 0, 0, INT32_MAX);
  if (!offset.ok()) return Failure(offset.status());
  const int64_t now_ns = env.RealtimeNs();
  auto found = FindRunsPage(store, *filter, *order, static_cast<size_t>(*limit),
                            static_cast<size_t>(*offset), env, now_ns);
  if (!found.ok()) return Failure(found.status());
  json page = json::array();
  for (size_t i = 0; i < found->runs.size(); ++i) {
    json& figures = found->figures[i];
    if (figures.is_null()) {
      auto totals = store.LoadTotals(found->runs[i].run.id);
      if (!totals.ok()) return Failure(totals.status());
      figures = TableFigures(*totals);
    }
    page.push_back(RunRow(found->runs[i].run, found->runs[i].meta(), std::move(figures), now_ns));
  }
  return JsonResponse(JsonText({{"total", found->total},
                                {"offset", *offset},
                                {"limit", *limit},
                                {"sort", order->column},
                                {"order", order->descending ? "desc" : "asc"},
                                {"param_keys", KeysOf(page, "params")},
                                {"tag_keys", KeysOf(page, "tags")},
                                {"runs", page}}));
}

// experiments -> workloads -> runs (newest first), of the runs the filter keeps.
ApiResponse Tree(Store& store, const Params& params, Env& env) {
  auto filter = RunFilter::Parse(params);
  if (!filter.ok()) return Failure(filter.status());
  // The newest kMaxTreeRuns: one page, from the store's SQL unless a tag or param filter
  // needs every run.
  const int64_t now_ns = env.RealtimeNs();
  auto runs = FindRunsPage(store, *filter, RunOrder{}, kMaxTreeRuns, 0, env, now_ns);
  if (!runs.ok()) return Failure(runs.status());
  // Named experiments and workloads by name; the unnamed ones ("") last.
  auto order = [](const std::string& a, const std::string& b) {
    if (a.empty() != b.empty()) return b.empty();
    return a < b;
  };
  std::map<std::string, std::map<std::string, json, decltype(order)>, decltype(order)> tree(order);
  size_t listed = 0;
  for (const ListedRun& entry : runs->runs) {
    const RunRecord& r = entry.run;
    auto& workloads = tree.try_emplace(r.experiment, order).first->second;
    json& list = workloads.try_emplace(r.workload, json::array()).first->second;
    list.push_back({{"id", r.id},
                    {"name", r.name},
                    {"status", RunStatusName(r.status)},
                    {"started_at_ns", r.started_at_ns},
                    {"duration_s", RunDuration(r, {}, now_ns)},
                    {"group_id", TextOrNull(r.group_id)},
                    {"repetition", r.repetition}});
    if (auto lost = IncompleteReason(r)) list.back()["incomplete"] = *lost;
    ++listed;
  }
  json experiments = json::array();
  for (auto& [experiment, workloads] : tree) {
    json wl = json::array();
    for (auto& [workload, list] : workloads) {
      wl.push_back({{"name", workload}, {"runs", std::move(list)}});
    }
    experiments.push_back({{"name", experiment}, {"workloads", std::move(wl)}});
  }
  return JsonResponse(JsonText({{"total", runs->total},
                                {"listed", listed},
                                {"truncated", listed < runs->total},
                                {"experiments", experiments}}));
}

ApiResponse RunSummaryResponse(Store& store, const RunRecord& run, Env& env) {
  auto summary = SummarizeRun(store, run, 0, env);
  if (!summary.ok()) return Failure(summary.status());
  return JsonResponse(SummaryJson(*summary, -1));
}

// {"run": ID, KEY: [...]}: the run's records as the store read them, each as `to_json` writes it.
template <typename Record, typename ToJson>
ApiResponse RunRecords(const RunRecord& run, const Result<std::vector<Record>>& records,
                       const char* key, ToJson to_json) {
  if (!records.ok()) return Failure(records.status());
  json out = json::array();
  for (const Record& r : *records) out.push_back(to_json(r));
  return JsonResponse(JsonText({{"run", run.id}, {key, out}}));
}

ApiResponse RunScopes(Store& store, const RunRecord& run) {
  return RunRecords(run, store.ListScopes(run.id), "scopes", ScopeJson);
}

ApiResponse RunValues(Store& store, const RunRecord& run) {
  return RunRecords(run, store.ListValues(run.id), "values", [](const ValueRecord& v) -> json {
    json data = v.data_json.empty() ? json(nullptr) : json::parse(v.data_json, nullptr, false);
    if (data.is_discarded()) data = nullptr;
    return {{"scope_id", OrNull(v.scope_id)}, {"name", v.name},
            {"step", OrNull(v.step)},         {"t_ns", v.t_ns},
            {"value", OrNull(v.value)},       {"data", data}};
  });
}

ApiResponse RunSeries(Store& store, const RunRecord& run) {
  auto series = store.ListSeries(run.id);
  if (!series.ok()) return Failure(series.status());
  json out = json::array();
  for (const SeriesRecord& s : *series) {
    auto end = store.SeriesEnd(s.id);
    if (!end.ok()) return Failure(end.status());
    out.push_back({{"id", s.id},
                   {"metric", s.metric},
                   {"unit", s.unit},
                   {"entity", s.entity},
                   {"end_ns", *end ? json(**end) : json(nullptr)}});
  }
  return JsonResponse(JsonText({{"run", run.id}, {"series", out}}));
}

// One page of a series' samples at full resolution: ?series=ID&after=T_NS&limit=N.
ApiResponse RunSamples(Store& store, const RunRecord& run, const Params& params) {
  auto id = IntParam(params, "series", -1, 0, INT64_MAX);
  if (!id.ok()) return Failure(id.status());
  if (*id < 0) return ErrorResponse(400, "series= is required (ids: /api/runs/RUN/series)");
  auto after = IntParam(params, "after", INT64_MIN, INT64_MIN, INT64_MAX);
  if (!after.ok()) return Failure(after.status());
  auto limit = IntParam(params, "limit", 10'000, 1, kMaxPageSamples);
  if (!limit.ok()) return Failure(limit.status());
  auto series = store.ListSeries(run.id);
  if (!series.ok()) return Failure(series.status());
  auto s = std::find_if(series->begin(), series->end(),
                        [&](const SeriesRecord& r) { return r.id == *id; });
  if (s == series->end()) {
    return ErrorResponse(404, "run " + run.id + " has no series " + std::to_string(*id) +
                                  " (its series: /api/runs/" + run.id + "/series)");
  }
  std::string body;
  JsonOut j(body);
  j.Open('{').Key("run").Str(run.id).Key("series").Open('{').Key("id").Int(s->id);
  j.Key("metric").Str(s->metric).Key("unit").Str(s->unit).Key("entity").Str(s->entity);
  j.Close('}').Key("samples").Open('[');
  size_t count = 0;
  int64_t last = 0;
  // One more than a page, to know whether another follows.
  const size_t page = static_cast<size_t>(*limit);
  bool more = false;
  Status st = store.ScanSamplesAfter(s->id, *after, page + 1, [&](int64_t t, double v) {
    if (count == page) {
      more = true;
      return;
    }
    j.Open('[').Int(t).Num(v).Close(']');
    last = t;
    ++count;
  });
  if (!st.ok()) return Failure(st);
  j.Close(']').Key("count").Int(static_cast<int64_t>(count)).Key("next_after");
  more ? j.Int(last) : j.Null();
  j.Close('}');
  return JsonResponse(std::move(body));
}

// A download's file name: the artifact name's last part, with only characters that need no
// quoting in Content-Disposition.
std::string DownloadName(std::string_view name) {
  std::string out(name.substr(name.rfind('/') + 1));
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out.empty() || out == "." || out == ".." ? "artifact" : out;
}

// The file of the artifact `name` of the run, as recorded (the client names the artifact, never
// a path), opened before the answer starts so that a file gone or changed since is a 404/409.
ApiResponse RunArtifact(Store& store, const RunRecord& run, std::string_view name) {
  auto artifacts = store.ListArtifacts(run.id);
  if (!artifacts.ok()) return Failure(artifacts.status());
  auto a = std::find_if(artifacts->begin(), artifacts->end(),
                        [&](const ArtifactRecord& r) { return r.name == name; });
  if (a == artifacts->end()) {
    return ErrorResponse(404, "run " + run.id + " has no artifact named '" +
                                  std::string(name.substr(0, 200)) +
                                  "' (its artifacts: /api/runs/" + run.id + ", \"artifacts\")");
  }
  auto file = std::make_shared<std::ifstream>(a->path, std::ios::binary);
  std::error_code ec;
  const auto size = std::filesystem::file_size(a->path, ec);
  if (!*file || ec || !std::filesystem::is_regular_file(a->path, ec)) {
    return ErrorResponse(
        404, "artifact '" + a->name + "' of run " + run.id + ": its file " + a->path + " is gone");
  }
  if (static_cast<int64_t>(size) != a->size) {
    return ErrorResponse(409, "artifact '" + a->name + "' of run " + run.id + ": its file " +
                                  a->path + " has " + std::to_string(size) +
                                  " bytes, not the recorded " + std::to_string(a->size) +
                                  " (changed since the run)");
  }
  ApiResponse r;
  r.content_type = "application/octet-stream";
  r.filename = DownloadName(a->name);
  // An empty file inserts nothing, which operator<< counts as a failure.
  r.stream = [file, empty = size == 0](std::ostream& out) {
    return empty || static_cast<bool>(out << file->rdbuf());
  };
  return r;
}

ApiResponse Plot(Store& store, const Params& params, Env& env) {
  auto all = ListReconciledRuns(store, env);
  if (!all.ok()) return Failure(all.status());
  auto runs = SelectedRuns(*all, params, "runs");
  if (!runs.ok()) return Failure(runs.status());
  auto points = IntParam(params, "points", kDefaultPoints, 3, kMaxPoints);
  if (!points.ok()) return Failure(points.status());
  PlotOptions options{.max_points = static_cast<size_t>(*points), .raw_limit = 0, .env = &env};
  auto metrics = ListParam(params, "metrics", 1000);
  if (!metrics.ok()) return Failure(metrics.status());
  auto scopes = ListParam(params, "scopes", 1000);
  if (!scopes.ok()) return Failure(scopes.status());
  options.metrics = std::move(metrics).value();
  options.scopes = std::move(scopes).value();
  auto body = PlotDataJson(store, *runs, options);
  if (!body.ok()) return Failure(body.status());
  return JsonResponse(std::move(body).value());
}

ApiResponse Series(Store& store, const Params& params, Env& env) {
  auto spec = Param(params, "run");
  if (!spec || spec->empty()) return ErrorResponse(400, "run= is required (one run)");
  auto run = FindRun(store, *spec, env);
  if (!run.ok()) return Failure(run.status());
  auto points = IntParam(params, "points", kDefaultPoints, 3, kMaxPoints);
  if (!points.ok()) return Failure(points.status());
  auto since = IntParam(params, "since", INT64_MIN, INT64_MIN, INT64_MAX);
  if (!since.ok()) return Failure(since.status());
  auto metrics = ListParam(params, "metrics", 1000);
  if (!metrics.ok()) return Failure(metrics.status());
  auto body = LiveSeriesJson(store, *run, *metrics, static_cast<size_t>(*points), *since, env);
  if (!body.ok()) return Failure(body.status());
  return JsonResponse(std::move(body).value());
}

ApiResponse CompareSets(Store& store, const Params& params, Env& env) {
  auto all = ListReconciledRuns(store, env);
  if (!all.ok()) return Failure(all.status());
  auto specs = ListParam(params, "sets", kMaxSelectedRuns);
  if (!specs.ok()) return Failure(specs.status());
  if (specs->size() < 2) {
    return ErrorResponse(400,
                         "sets= must name at least two runs or groups (group:ID), "
                         "comma-separated; the first is the baseline");
  }
  auto test = ParseCompareTest(Param(params, "test").value_or("welch"));
  if (!test.ok()) return Failure(test.status());
  double alpha = 0.05;
  if (auto text = Param(params, "alpha")) {
    auto a = ParseDouble(*text);
    if (!a || !(*a > 0 && *a < 1)) {
      return ErrorResponse(
          400, "alpha= must be a number between 0 and 1, not '" + text->substr(0, 40) + "'");
    }
    alpha = *a;
  }
  std::vector<SetSummary> sets;
  for (const std::string& spec : *specs) {
    auto set = ResolveRunSet(*all, spec);
    if (!set.ok()) return Failure(set.status());
    auto summary = SummarizeSet(store, std::move(set).value());
    if (!summary.ok()) return Failure(summary.status());
    sets.push_back(std::move(summary).value());
  }
  auto comparison = Compare(std::move(sets), {.test = *test, .alpha = alpha});
  if (!comparison.ok()) return Failure(comparison.status());
  return JsonResponse(ComparisonJson(*comparison, -1));
}

ApiResponse Export(StorePool& pool, Store& store, const Params& params, Env& env) {
  auto all = ListReconciledRuns(store, env);
  if (!all.ok()) return Failure(all.status());
  auto runs = SelectedRuns(*all, params, "runs");
  if (!runs.ok()) return Failure(runs.status());
  auto format = ParseExportFormat(Param(params, "format").value_or("json"));
  if (!format.ok()) return Failure(format.status());
  ApiResponse r;
  r.content_type = *format == ExportFormat::kCsv ? "text/csv" : "application/json";
  r.filename = std::string("footprint-export.") + (*format == ExportFormat::kCsv ? "csv" : "json");
  r.stream = [&pool, runs = std::move(runs).value(), format = *format](std::ostream& out) {
    auto lease = pool.Acquire();
    if (!lease.ok()) return false;
    return ExportRuns(**lease, runs, format, out).ok();
  };
  return r;
}

}  // namespace

Result<StorePool::Lease> StorePool::Acquire() {
  std::unique_ptr<Store> store;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      store = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!store) {
    FP_ASSIGN_OR_RETURN(store, OpenStore(location_, {.read_only = true}));
  }
  return Lease(store.release(), [this](Store* s) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.emplace_back(s);
  });
}

ApiResponse ErrorResponse(int status, std::string_view message) {
  ApiResponse r;
  r.status = status;
  r.body = JsonText({{"error", std::string(message)}});
  return r;
}

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kUnsupported:
      return 501;
    default:
      return 500;
  }
}

ApiResponse Api::Handle(const ApiRequest& request) {
  try {
    auto lease = pool_.Acquire();
    if (!lease.ok()) return Failure(lease.status());
    Store& store = **lease;
    const std::string& path = request.path;
    const Params& params = request.params;
    if (path == "/api/info") return Info(pool_, store, queue_);
    if (path == "/api/runs") return ListRunsPage(store, params, env_);
    if (path == "/api/tree") return Tree(store, params, env_);
    if (path == "/api/plot") return Plot(store, params, env_);
    if (path == "/api/series") return Series(store, params, env_);
    if (path == "/api/compare") return CompareSets(store, params, env_);
    if (path == "/api/export") return Export(pool_, store, params, env_);
    constexpr std::string_view kRunPrefix = "/api/runs/";
    if (path.starts_with(kRunPrefix)) {
      std::string_view rest = std::string_view(path).substr(kRunPrefix.size());
      std::string_view spec = rest.substr(0, rest.find('/'));
      std::string_view what =
          spec.size() < rest.size() ? rest.substr(spec.size() + 1) : std::string_view();
      if (spec.empty() || spec.size() > 200) return ErrorResponse(400, "no run named in the path");
      auto run = FindRun(store, spec, env_);
      if (!run.ok()) return Failure(run.status());
      if (what.empty()) return RunSummaryResponse(store, *run, env_);
      if (what == "scopes") return RunScopes(store, *run);
      if (what == "values") return RunValues(store, *run);
      if (what == "series") return RunSeries(store, *run);
      if (what == "samples") return RunSamples(store, *run, params);
      constexpr std::string_view kArtifactPrefix = "artifacts/";
      if (what.starts_with(kArtifactPrefix)) {
        return RunArtifact(store, *run, what.substr(kArtifactPrefix.size()));
      }
    }
    return ErrorResponse(404,
                         "no such API endpoint: " + path.substr(0, 200) + " (see docs/serve.md)");
  } catch (const std::exception& e) {  // e.g. bad_alloc; never take the server down
    return ErrorResponse(500, std::string("internal error: ") + e.what());
  }
}

}  // namespace footprint::serve
