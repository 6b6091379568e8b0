// umlaut-cli: UMLAUT's command line (`umlaut-cli FILE [-u UUID...] [-t TYPE...]
// [-d DESCRIPTION...] [-p BACKEND] [-tmp DIR]`), answered by footprint's plot, show and export.
// UMLAUT's names are translated into footprint's (a type into a metric or value, a metric's
// description into the scope it measured), then the matching footprint subcommand runs.
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli.h"
#include "footprint/report.h"
#include "report/plot.h"
#include "store/reconcile.h"
#include "tui/terminal.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

// UMLAUT's measurement types, by what footprint records for them: a metric, then the metrics
// drawn beside it where the runs have them (GPU utilisation with the SM activity, since
// utilisation alone misleads). Empty: the scope durations (bars of each decorated function's
// time), which every plot of scopes draws.
const std::map<std::string, std::string>& UmlautTypes() {
  static const std::map<std::string, std::string> kTypes = {
      {"time", ""},
      {"gputime", ""},
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

// The scope a description stands for: the scope of that name, or the scope of the decorated
// function whose metric carries that description (value umlaut.supervision, footprint.umlaut).
std::map<std::string, std::string> DescribedScopes(Store& store,
                                                   const std::vector<RunRecord>& runs) {
  std::map<std::string, std::string> scopes;
  for (const RunRecord& run : runs) {
    auto values = store.ListValues(run.id);
    if (!values.ok()) continue;
    for (const ValueRecord& v : *values) {
      if (v.name != "umlaut.supervision") continue;
      auto doc = nlohmann::json::parse(v.data_json, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object()) continue;
      const std::string scope = doc.value("scope", "");
      for (const auto& metric : doc.value("metrics", nlohmann::json::array())) {
        if (metric.is_object() && metric.contains("description")) {
          scopes.emplace(metric.value("description", ""), scope);
        }
      }
    }
  }
  return scopes;
}

// footprint's names for UMLAUT's -t and -d, among what `runs` hold.
struct Names {
  std::vector<std::string> metrics, scopes;
};

Result<Names> PickNames(const Args& args, Store& store, const std::vector<RunRecord>& runs) {
  FP_ASSIGN_OR_RETURN(PlotCatalog catalog, CatalogRuns(store, runs));
  std::set<std::string> held(catalog.scopes.begin(), catalog.scopes.end());
  for (const auto& m : catalog.metrics) held.insert(m.name);
  auto note = [](const std::string& what) { std::cerr << "umlaut-cli: " << what << "\n"; };
  Names names;
  bool durations = false;  // a type drawn as the scopes' duration bars
  for (const std::string& type : args.types) {
    auto it = UmlautTypes().find(type);
    const std::vector<std::string_view> metrics =
        Split(it == UmlautTypes().end() ? type : it->second, ',');
    const std::string metric(metrics.empty() ? "" : metrics[0]);
    if (metric.empty()) {
      durations = true;
    } else if (held.contains(metric)) {
      for (std::string_view m : metrics) {
        if (held.contains(std::string(m))) names.metrics.emplace_back(m);
      }
    } else {
      note("type '" + Inert(type) + "' (footprint: " + Inert(metric) +
           ") is not in these runs; left out");
    }
  }
  const auto described = DescribedScopes(store, runs);
  for (const std::string& d : args.descriptions) {
    auto it = described.find(d);
    const std::string scope = held.contains(d) || it == described.end() ? d : it->second;
    if (!held.contains(scope)) {
      note("description '" + Inert(d) + "' names no scope of these runs; left out");
    } else if (std::find(names.scopes.begin(), names.scopes.end(), scope) == names.scopes.end()) {
      names.scopes.push_back(scope);
    }
  }
  // UMLAUT's own answer when its filters leave nothing.
  if ((!args.types.empty() && names.metrics.empty() && !durations) ||
      (!args.descriptions.empty() && names.scopes.empty())) {
    return NotFound("there are no entries with the given uuids, types and descriptions; " +
                    args.file + "'s runs are listed by: footprint show -o " + args.file);
  }
  return names;
}

// footprint's argv for `args`, given the runs it is about.
Result<std::vector<std::string>> Translate(const Args& args, Store& store,
                                           const std::vector<RunRecord>& runs) {
  FP_ASSIGN_OR_RETURN(Names names, PickNames(args, store, runs));
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
  } else if (args.backend == "csv") {
    argv.insert(argv.end(), {"export", "-o", args.file, "--format", "csv", "--out",
                             args.out.empty() ? "umlaut_output.csv" : args.out});
    add("-u", ids);
  } else {  // plotly, matplotlib: footprint's interactive page
    argv.insert(argv.end(), {"plot", "-o", args.file, "--out",
                             args.out.empty() ? "umlaut-plot.html" : args.out});
    if (!args.uuids.empty()) add("-u", ids);
    add("-t", names.metrics);
    add("-d", names.scopes);
  }
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
      "export) of the runs of a database written by footprint.umlaut; what -u, -t or -d "
      "leaves out is asked in menus on a terminal.",
      "umlaut-cli"};
  app.add_option("file", args->file, "the database (footprint.umlaut.Benchmark's db_file)")
      ->required();
  app.add_option("-u,--uuids", args->uuids, "runs (UMLAUT's uuid is footprint's run id)");
  app.add_option("-t,--types", args->types,
                 "UMLAUT's types (time, memory, cpu, gpu, gpumemory, gpupower, power, energy, "
                 "latency, throughput, tta, 'timed tta', loss, confusion-matrix, "
                 "hyperparameters) or footprint's metric names");
  app.add_option("-d,--descriptions", args->descriptions,
                 "metric descriptions ('bloat memory') or scope names");
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
  Result<std::vector<std::string>> translated = [&]() -> Result<std::vector<std::string>> {
    FP_ASSIGN_OR_RETURN(auto store, OpenStore(args->file, {.read_only = true}));
    FP_ASSIGN_OR_RETURN(auto all, ListReconciledRuns(*store));
    FP_ASSIGN_OR_RETURN(auto runs, ChosenRuns(*args, all, menus));
    return Translate(*args, *store, runs);
  }();
  if (!translated.ok() &&
      translated.status().message().find("not a footprint one") != std::string::npos) {
    return Fail(DatabaseError(translated.status().message() +
                              "; if it is UMLAUT's own database, import it first: footprint "
                              "import " +
                              args->file +
                              " -o footprint.db, then umlaut-cli "
                              "footprint.db ..."));
  }
  if (!translated.ok()) return Fail(translated.status());
  std::vector<char*> footprint_argv;
  for (std::string& w : *translated) footprint_argv.push_back(w.data());
  footprint_argv.push_back(nullptr);
  return Main(static_cast<int>(translated->size()), footprint_argv.data());
}

}  // namespace footprint::cli
