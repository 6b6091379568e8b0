// umlaut-cli: UMLAUT's command line (`umlaut-cli FILE [-u UUID...] [-t TYPE...]
// [-d DESCRIPTION...] [-p BACKEND] [-tmp DIR]`), answered by footprint's plot, show and export.
//
// UMLAUT keeps the measurements whose type is one of -t and whose description is one of -d,
// both at once. Here a type becomes the metric or value footprint records for it, and a
// description the scopes it was measured in: each decorated function whose metric of a chosen
// type carries that description (value umlaut.supervision; several functions may share one
// metric object, so one description may name several), or the scope of that name (a tracker's
// description). plot and show then run on footprint's names; csv writes export's rows that
// the choice keeps.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <streambuf>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/report.h"
#include "report/export.h"
#include "report/plot.h"
#include "store/reconcile.h"
#include "tui/terminal.h"
#include "util/json_bounded.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

// UMLAUT's measurement types, by what footprint records for them: a metric or value, then
// the metrics drawn beside it where the runs have them (GPU utilisation with the SM activity,
// since utilisation alone misleads). Empty: the scopes' durations (UMLAUT's time of each
// decorated function).
const std::map<std::string, std::string>& UmlautTypes() {
  static const std::map<std::string, std::string> kTypes = {
      {"time", ""},
      {"gputime", "gpu_time_s"},
      {"memory", "memory"},
      {"cpu", "cpu"},
      {"gpu", "gpu,gpu.sm_active"},
      {"gpumemory", "gpu.memory"},
      {"gpupower", "gpu.power"},
      {"power", "energy.cpu"},
      {"energy", "energy.cpu"},
      {"latency", "latency"},
      {"throughput", "throughput"},
      {"tta", "accuracy"},
      {"timed tta", "time_to_accuracy"},
      {"loss", "loss"},
      {"confusion-matrix", "confusion_matrix"},
      {"hyperparameters", "hyperparameters"},
  };
  return kTypes;
}

struct Args {
  std::string file;
  std::vector<std::string> uuids, types, descriptions;
  std::string backend = "plotly";
  std::string tmp_dir;
  std::string out;
};

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

void Note(const std::string& what) { PrintLine(std::cerr, "umlaut-cli: " + what); }

// A metric of a decorated function, as value umlaut.supervision keeps it.
struct Supervised {
  std::string scope, type, description;  // type: UMLAUT's ("memory")
};

// UMLAUT's type of a supervised metric: footprint.umlaut stores the class (MemoryMetric),
// footprint import the type itself (memory).
std::string UmlautType(std::string_view stored) {
  std::string type = Lower(stored);
  if (type.size() > 6 && type.ends_with("metric")) type.resize(type.size() - 6);
  return type;
}

std::string TextField(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<Supervised> SupervisedMetrics(Store& store, const std::vector<RunRecord>& runs) {
  std::vector<Supervised> out;
  for (const RunRecord& run : runs) {
    auto values = store.ListValues(run.id);
    if (!values.ok()) continue;
    for (const ValueRecord& v : *values) {
      if (v.name != "umlaut.supervision") continue;
      const nlohmann::json doc = ParseStoredJson(v.data_json);
      if (!doc.is_object() || !doc.contains("metrics") || !doc["metrics"].is_array()) continue;
      for (const auto& metric : doc["metrics"]) {
        if (!metric.is_object()) continue;
        out.push_back({TextField(doc, "scope"), UmlautType(TextField(metric, "type")),
                       TextField(metric, "description")});
      }
    }
  }
  return out;
}

// What UMLAUT's -t and -d choose, in footprint's names among what the runs hold.
struct Selection {
  bool by_type = false, by_description = false;  // -t, -d given
  std::vector<std::string> metrics;              // metrics and values of the types
  bool durations = false;                        // the scopes' durations (time)
  std::vector<std::string> scopes;               // the scopes of the descriptions
};

// Whether UMLAUT's `type` is one of -t (given as UMLAUT's type or as footprint's name).
bool TypeChosen(const Args& args, const std::string& type) {
  if (args.types.empty() || Contains(args.types, type)) return true;
  auto it = UmlautTypes().find(type);
  return it != UmlautTypes().end() && !it->second.empty() &&
         Contains(args.types, Split(it->second, ',')[0]);
}

void PickMetrics(const Args& args, const std::set<std::string>& held, Selection& sel) {
  for (const std::string& type : args.types) {
    auto it = UmlautTypes().find(type);
    const std::vector<std::string_view> metrics =
        Split(it == UmlautTypes().end() ? type : it->second, ',');
    if (metrics[0].empty()) {
      sel.durations = true;
    } else if (!held.contains(std::string(metrics[0]))) {
      Note("type " + QuotedInert(type) + " (footprint: " + std::string(metrics[0]) +
           ") is not in these runs; left out");
    } else {
      for (std::string_view m : metrics) {
        if (held.contains(std::string(m)) && !Contains(sel.metrics, m)) sel.metrics.emplace_back(m);
      }
    }
  }
}

void PickScopes(const Args& args, const std::vector<std::string>& scopes,
                const std::vector<Supervised>& supervised, Selection& sel) {
  auto add = [&](const std::string& scope) {
    if (!Contains(scopes, scope)) return false;
    if (!Contains(sel.scopes, scope)) sel.scopes.push_back(scope);
    return true;
  };
  for (const std::string& d : args.descriptions) {
    bool found = false;
    for (const Supervised& m : supervised) {
      if (m.description == d && TypeChosen(args, m.type)) found |= add(m.scope);
    }
    found |= add(d);  // a tracker's description, or a scope's own name
    if (!found) {
      Note("description " + QuotedInert(d) + " is on no measurement of these runs" +
           (args.types.empty() ? "" : " of the types given") + "; left out");
    }
  }
}

Result<Selection> Select(const Args& args, Store& store, const std::vector<RunRecord>& runs) {
  FP_ASSIGN_OR_RETURN(PlotCatalog catalog, CatalogRuns(store, runs));
  std::set<std::string> held;
  for (const auto& m : catalog.metrics) held.insert(m.name);
  Selection sel{.by_type = !args.types.empty(), .by_description = !args.descriptions.empty()};
  PickMetrics(args, held, sel);
  PickScopes(args, catalog.scopes, SupervisedMetrics(store, runs), sel);
  // UMLAUT's own answer when its filters leave nothing.
  if ((sel.by_type && sel.metrics.empty() && !sel.durations) ||
      (sel.by_description && sel.scopes.empty())) {
    return NotFound("there are no entries with the given uuids, types and descriptions; " +
                    args.file + "'s runs are listed by: footprint show -o " + args.file);
  }
  return sel;
}

// The fields of one record of export's CSV (RFC 4180; a record is one line).
std::vector<std::string> CsvFields(std::string_view record) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < record.size(); ++i) {
    const char c = record[i];
    if (c == '"' && quoted && i + 1 < record.size() && record[i + 1] == '"') {
      fields.back() += c;
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\n') {
      fields.back() += c;
    }
  }
  return fields;
}

// Passes on to `out` the rows of export's CSV (docs/cli.md) that a Selection keeps: totals
// only when nothing was chosen; the chosen scopes (with -t, only when time is one of the
// types); values of the chosen names in the chosen scopes; samples of the chosen metrics
// taken while a chosen scope was open, as UMLAUT's series of a description are its function's
// calls. A run's scopes come before its values and samples, so one pass decides.
class CsvRowFilter : public std::streambuf {
 public:
  CsvRowFilter(const Selection& sel, std::streambuf* out) : sel_(sel), out_(out) {}
  size_t rows() const { return rows_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) {
      record_ += s[i];
      if (s[i] == '\n' && !Pass()) return i;
    }
    return n;
  }
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  int sync() override { return out_->pubsync(); }

 private:
  // Writes the complete record held when the choice keeps it; false when writing failed.
  bool Pass() {
    const bool header = !header_passed_;
    const bool keep = header || Keep(CsvFields(record_));
    const auto size = static_cast<std::streamsize>(record_.size());
    const bool written = !keep || out_->sputn(record_.data(), size) == size;
    header_passed_ = true;
    rows_ += keep && !header;
    record_.clear();
    return written;
  }

  bool Keep(const std::vector<std::string>& f) {
    if (f.size() < 10) return false;
    const std::string &run = f[0], &kind = f[1], &name = f[2], &scope_id = f[5];
    const bool named = !sel_.by_type || Contains(sel_.metrics, name);
    if (kind == "total") return !sel_.by_type && !sel_.by_description;
    if (!sel_.by_description) return kind == "scope" ? !sel_.by_type || sel_.durations : named;
    if (kind == "scope") {
      if (!Contains(sel_.scopes, name)) return false;
      chosen_scopes_.insert(run + "," + scope_id);
      AddWindow(windows_[run], ParseInt(f[8]).value_or(0), ParseInt(f[9]).value_or(INT64_MAX));
      return !sel_.by_type || sel_.durations;
    }
    if (kind == "value") return named && chosen_scopes_.contains(run + "," + scope_id);
    return kind == "sample" && named && InWindow(windows_[run], ParseInt(f[8]).value_or(-1));
  }

  // Windows kept disjoint: [start, end] merged with those it touches.
  static void AddWindow(std::map<int64_t, int64_t>& windows, int64_t start, int64_t end) {
    auto it = windows.upper_bound(start);
    if (it != windows.begin() && std::prev(it)->second >= start) {
      --it;
      start = it->first;
    }
    while (it != windows.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = windows.erase(it);
    }
    windows[start] = end;
  }
  static bool InWindow(const std::map<int64_t, int64_t>& windows, int64_t t) {
    auto it = windows.upper_bound(t);
    return it != windows.begin() && std::prev(it)->second >= t;
  }

  const Selection& sel_;
  std::streambuf* out_;
  std::string record_;
  bool header_passed_ = false;
  size_t rows_ = 0;
  std::set<std::string> chosen_scopes_;                        // "RUN,SCOPE_ID"
  std::map<std::string, std::map<int64_t, int64_t>> windows_;  // by run: start -> end ns
};

// UMLAUT's csv back end: export's CSV of `runs` (docs/cli.md), the rows `sel` keeps.
Status WriteCsv(Store& store, const std::vector<RunRecord>& runs, const Selection& sel,
                const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return IoError("cannot write " + path + "; choose a writable place with --out");
  CsvRowFilter filter(sel, file.rdbuf());
  std::ostream rows(&filter);
  FP_RETURN_IF_ERROR(ExportRuns(store, runs, ExportFormat::kCsv, rows));
  file.close();
  if (!file) return IoError("cannot write " + path + " (disk full?)");
  PrintLine(std::cout, "wrote " + path + ": " + std::to_string(filter.rows()) + " row(s) of " +
                           std::to_string(runs.size()) + " run(s), export's CSV columns");
  return Status::Ok();
}

// footprint's argv for plot or show of `runs`.
std::vector<std::string> FootprintArgv(const Args& args, const std::vector<RunRecord>& runs,
                                       const Selection& sel) {
  std::vector<std::string> argv = {"footprint"};
  auto add = [&](const char* flag, const std::vector<std::string>& words) {
    if (words.empty()) return;
    argv.push_back(flag);
    argv.insert(argv.end(), words.begin(), words.end());
  };
  std::vector<std::string> ids;
  for (const RunRecord& r : runs) ids.push_back(r.id);
  if (args.backend == "text") {
    argv.insert(argv.end(), {"show", "-o", args.file});
    argv.insert(argv.end(), ids.begin(), ids.end());
    return argv;
  }
  // plotly, matplotlib: footprint's interactive page
  argv.insert(argv.end(),
              {"plot", "-o", args.file, "--out", args.out.empty() ? "umlaut-plot.html" : args.out});
  if (!args.uuids.empty()) add("-u", ids);
  add("-t", sel.metrics);
  add("-d", sel.scopes);
  // `-t time` alone: UMLAUT draws the scopes' durations and nothing else.
  if (sel.by_type && sel.durations && sel.metrics.empty()) argv.push_back("--no-metrics");
  return argv;
}

// The runs `args` is about: its uuids, else all runs when menus will ask, else the last one.
Result<std::vector<RunRecord>> ChosenRuns(const Args& args, const std::vector<RunRecord>& all,
                                          bool menus) {
  if (all.empty()) return NotFound(args.file + " holds no runs");
  if (args.uuids.empty()) return menus ? all : std::vector<RunRecord>{all.back()};
  std::vector<RunRecord> runs;
  for (const std::string& uuid : args.uuids) {
    FP_ASSIGN_OR_RETURN(RunRecord run, ResolveRun(all, uuid));
    runs.push_back(std::move(run));
  }
  return runs;
}

// Answers `args`: the csv written here (nullopt), or footprint's argv for plot or show.
Result<std::optional<std::vector<std::string>>> Answer(const Args& args, bool menus) {
  FP_ASSIGN_OR_RETURN(auto store, OpenStore(args.file, {.read_only = true}));
  FP_ASSIGN_OR_RETURN(auto all, ListReconciledRuns(*store, Env::Default()));
  FP_ASSIGN_OR_RETURN(auto runs, ChosenRuns(args, all, menus));
  FP_ASSIGN_OR_RETURN(Selection sel, Select(args, *store, runs));
  using Argv = std::optional<std::vector<std::string>>;
  if (args.backend != "csv") return Argv(FootprintArgv(args, runs, sel));
  FP_RETURN_IF_ERROR(
      WriteCsv(*store, runs, sel, args.out.empty() ? "umlaut_output.csv" : args.out));
  return Argv();
}

}  // namespace

int UmlautCliMain(int argc, char** argv) {
  // UMLAUT spells its temporary folder option -tmp, which CLI11 reads as -t mp.
  std::vector<std::string> words(argv + 1, argv + argc);
  for (std::string& w : words) {
    if (w == "-tmp") w = "--tmp-dir";
  }
  std::reverse(words.begin(), words.end());  // CLI11's parse(vector) takes them backwards
  auto args = std::make_shared<Args>();
  CLI::App app{
      "umlaut-cli: UMLAUT's command line over footprint's database. Plots (plotly or "
      "matplotlib: one interactive HTML page), text (footprint show) or CSV (footprint "
      "export's rows of the chosen types and descriptions) of the runs of a database written "
      "by footprint.umlaut; what -u, -t or -d leaves out is asked in menus on a terminal.",
      "umlaut-cli"};
  app.add_option("file", args->file, "the database (footprint.umlaut.Benchmark's db_file)")
      ->required();
  app.add_option("-u,--uuids", args->uuids, "runs (UMLAUT's uuid is footprint's run id)");
  app.add_option("-t,--types", args->types,
                 "UMLAUT's types (time, memory, cpu, gpu, gpumemory, gpupower, power, energy, "
                 "latency, throughput, tta, 'timed tta', loss, confusion-matrix, "
                 "hyperparameters) or footprint's metric names");
  app.add_option("-d,--descriptions", args->descriptions,
                 "descriptions a script gave its metrics and trackers ('bloat memory'; one that "
                 "several functions share names them all), or scope names");
  app.add_option("-p,--plotting-backend", args->backend, "plotly (default), matplotlib, text, csv")
      ->check(CLI::IsMember({"plotly", "matplotlib", "text", "csv"}));
  app.add_option("--tmp-dir", args->tmp_dir,
                 "UMLAUT's folder of unsaved measurements (-tmp): footprint stores as it "
                 "measures, so there is nothing to recover; accepted and ignored");
  app.add_option("--out", args->out,
                 "file to write (default umlaut-plot.html; csv: umlaut_output.csv)");
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "umlaut-cli: " << e.what() << "; see umlaut-cli --help\n";
    return kExitUsage;
  }
  const bool menus =
      args->backend != "text" && args->backend != "csv" && tui::InteractiveTerminal();
  Result<std::optional<std::vector<std::string>>> answered = Answer(*args, menus);
  if (!answered.ok() &&
      answered.status().message().find("not a footprint one") != std::string::npos) {
    return Fail(DatabaseError(answered.status().message() +
                              "; if it is UMLAUT's own database, import it first: footprint "
                              "import " +
                              args->file +
                              " -o footprint.db, then umlaut-cli "
                              "footprint.db ..."));
  }
  if (!answered.ok()) return Fail(answered.status());
  if (!*answered) return kExitOk;
  std::vector<char*> footprint_argv;
  for (std::string& w : **answered) footprint_argv.push_back(w.data());
  footprint_argv.push_back(nullptr);
  return Main(static_cast<int>((*answered)->size()), footprint_argv.data());
}

}  // namespace footprint::cli
