// footprint plot: runs, metrics and scopes (from options, or chosen in a menu) to one HTML file.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/report.h"
#include "report/plot.h"
#include "tui/terminal.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

// Asks with a menu; nullopt when the user cancelled.
Result<std::optional<std::vector<size_t>>> Ask(std::string title, std::vector<std::string> items) {
  tui::Menu menu(std::move(title), std::move(items));
  return tui::RunMenu(menu);
}

// Menu rows for runs, newest first: name, id, start, duration, status (aligned).
std::vector<std::string> RunItems(const std::vector<RunRecord>& newest_first) {
  Table t({"", "", "", "", ""}, {3});
  for (const RunRecord& r : newest_first) {
    int64_t end = r.ended_at_ns.value_or(r.heartbeat_ns.value_or(r.started_at_ns));
    t.Add({r.name.empty() ? "-" : r.name, r.id.substr(0, 8), FormatUtc(r.started_at_ns),
           FormatDuration(static_cast<double>(end - r.started_at_ns) / 1e9),
           std::string(RunStatusName(r.status))});
  }
  std::stringstream text;
  t.Print(text);
  std::vector<std::string> rows;
  std::string line;
  std::getline(text, line);  // the empty header
  while (std::getline(text, line)) rows.push_back(line);
  return rows;
}

int Cancelled() {
  std::cerr << "footprint: plot cancelled; nothing written\n";
  return kExitError;
}

struct PlotArgs {
  std::string db;
  std::vector<std::string> runs, metrics, scopes;
  std::string out = "footprint-plot.html";
  size_t points = 4000;
  size_t raw_limit = 200'000;
  bool no_menu = false;
  bool no_metrics = false;
};

// The runs to plot, from -u or asked in a menu (`ask`); false when the user cancelled.
Result<bool> ChoosePlotRuns(const PlotArgs& args, const std::vector<RunRecord>& all, bool ask,
                            std::vector<RunRecord>& runs) {
  if (args.runs.empty() && ask && !all.empty()) {
    std::vector<RunRecord> newest(all.rbegin(), all.rend());
    FP_ASSIGN_OR_RETURN(auto chosen, Ask("Runs to plot (newest first)", RunItems(newest)));
    if (!chosen) return false;
    for (size_t i : *chosen) runs.push_back(newest[i]);
    return true;
  }
  for (const std::string& spec : args.runs.empty() ? std::vector<std::string>{"last"} : args.runs) {
    // A name whose latest run is a repetition means its group's measured runs.
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSetNoted(all, spec));
    for (RunRecord& run : set.runs) {
      bool seen = false;
      for (const RunRecord& r : runs) seen |= r.id == run.id;
      if (!seen) runs.push_back(std::move(run));
    }
  }
  return true;
}

// Asks in menus for the metrics and scopes -t and -d did not give; false when cancelled.
Result<bool> AskPlotContents(Store& store, const PlotArgs& args, const std::vector<RunRecord>& runs,
                             PlotOptions& options) {
  FP_ASSIGN_OR_RETURN(auto catalog, CatalogRuns(store, runs));
  if (args.metrics.empty() && !catalog.metrics.empty()) {
    std::vector<std::string> items;
    for (const auto& m : catalog.metrics) {
      items.push_back(m.name + "  (" + (m.unit.empty() ? m.kind : m.unit) + ")");
    }
    FP_ASSIGN_OR_RETURN(auto chosen, Ask("Metrics to plot", items));
    if (!chosen) return false;
    for (size_t i : *chosen) options.metrics.push_back(catalog.metrics[i].name);
  }
  if (args.scopes.empty() && !catalog.scopes.empty()) {
    FP_ASSIGN_OR_RETURN(auto chosen, Ask("Scopes to show", catalog.scopes));
    if (!chosen) return false;
    for (size_t i : *chosen) options.scopes.push_back(catalog.scopes[i]);
  }
  return true;
}

// Writes the page to `out` and says what it holds.
Result<int> WritePlotFile(Store& store, const std::string& out, const std::vector<RunRecord>& runs,
                          const PlotOptions& options) {
  // Written beside the target and renamed over it: a failure leaves no half-written page.
  const std::string partial = out + ".partial";
  std::ofstream file(partial, std::ios::binary | std::ios::trunc);
  if (!file) return IoError("cannot write " + partial + "; choose a writable place with --out");
  auto stats = WritePlot(store, runs, options, file);
  file.close();
  if (stats.ok() && !file) stats = IoError("cannot write " + partial + " (disk full?)");
  if (stats.ok() && std::rename(partial.c_str(), out.c_str()) != 0) {
    stats = IoError("cannot rename " + partial + " to " + out);
  }
  if (!stats.ok()) {
    std::remove(partial.c_str());
    return stats.status();
  }
  std::ifstream written(out, std::ios::binary | std::ios::ate);
  std::cout << "wrote " << out << ": " << stats->charts << " charts of " << runs.size()
            << (runs.size() == 1 ? " run" : " runs") << ", "
            << FormatBytes(static_cast<double>(written.tellg())) << "; open it in a browser\n";
  if (!stats->complete_csv) {
    std::cout << "  (more samples than --raw-limit: the page's CSV holds the drawn points; "
                 "footprint export writes them all)\n";
  }
  return kExitOk;
}

}  // namespace

Action AddPlot(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = AddDbSubcommand(
      app, "plot",
      "Write one self-contained HTML file of interactive charts (opens offline in a browser).",
      args->db);
  cmd->add_option("-u,--run", args->runs,
                  "runs: id, unique id prefix, name or 'last'; group:ID, or the name of a run "
                  "-r group, for its repetitions (default: asked in a menu on a terminal, "
                  "otherwise the last run)");
  cmd->add_option("-t,--metric", args->metrics,
                  "metrics: sampled (cpu, memory, ...) or valued (loss, accuracy, confusion "
                  "matrices, hyperparameters) (default: asked, otherwise all)");
  cmd->add_option("-d,--scope", args->scopes,
                  "scopes shown as bands and duration bars (default: asked, otherwise all)");
  cmd->add_option("--out", args->out, "the HTML file to write (default: footprint-plot.html)");
  cmd->add_option("--points", args->points,
                  "most points drawn per series; longer series are downsampled with LTTB")
      ->check(CLI::Range(size_t{3}, size_t{1'000'000}))
      ->default_val(4000)
      ->option_text("N (3 to 1000000, default 4000)");
  cmd->add_option("--raw-limit", args->raw_limit,
                  "most samples embedded at full resolution for the page's CSV download "
                  "(default 200000; beyond it the CSV holds the drawn points)")
      ->default_val(200'000)
      ->option_text("N");
  cmd->add_flag("--no-menu", args->no_menu, "never ask: use the defaults for what is not given");
  cmd->add_flag("--no-metrics", args->no_metrics,
                "scopes only: their bands and durations, no metric's chart (umlaut-cli -t time)");
  cmd->footer(
      "Menu keys: up/down move, space select, a all/none, enter confirm (nothing selected: the "
      "highlighted item), q or esc cancel.\n\n"
      "Examples:\n"
      "  footprint plot                                  # choose in menus\n"
      "  footprint plot -u last -t cpu memory --out run.html\n"
      "  footprint plot -u 3f2a 9c1e -t loss accuracy -d 'training step'");
  return ReadingAction(
      args->db, [args](Store& store, const std::vector<RunRecord>& all) -> Result<int> {
        const bool ask = !args->no_menu && tui::InteractiveTerminal();
        std::vector<RunRecord> runs;
        FP_ASSIGN_OR_RETURN(bool chosen, ChoosePlotRuns(*args, all, ask, runs));
        if (!chosen) return Cancelled();
        PlotOptions options{.metrics = args->metrics,
                            .scopes = args->scopes,
                            .max_points = args->points,
                            .raw_limit = args->raw_limit,
                            .no_metrics = args->no_metrics};
        if (ask && (args->metrics.empty() || args->scopes.empty())) {
          FP_ASSIGN_OR_RETURN(chosen, AskPlotContents(store, *args, runs, options));
          if (!chosen) return Cancelled();
        }
        return WritePlotFile(store, args->out, runs, options);
      });
}

}  // namespace footprint::cli
