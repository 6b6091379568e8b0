// footprint export: runs out of the database as CSV, JSON or a trace for Perfetto.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/progress.h"
#include "footprint/groups.h"
#include "report/export.h"

namespace footprint::cli {

namespace {

struct ExportArgs {
  std::string db;
  std::vector<std::string> runs;
  std::string format;
  std::string out;
};

// footprint export once its options are parsed, over the database's runs `all`.
Result<int> RunExportCommand(Store& store, const std::vector<RunRecord>& all,
                             const ExportArgs& args) {
  FP_ASSIGN_OR_RETURN(ExportFormat format, ParseExportFormat(args.format));
  std::vector<RunSet> sets;
  std::vector<RunRecord> runs;
  for (const std::string& spec : args.runs.empty() ? std::vector<std::string>{"last"} : args.runs) {
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSetNoted(all, spec));
    runs.insert(runs.end(), set.warmups.begin(), set.warmups.end());
    runs.insert(runs.end(), set.runs.begin(), set.runs.end());
    sets.push_back(std::move(set));
  }
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (args.out != "-") {
    file.open(args.out, std::ios::binary | std::ios::trunc);
    if (!file) {
      return IoError("cannot write " + args.out + "; check that its folder exists and is writable");
    }
    out = &file;
  }
  const bool by_set = ExportsSets(format);
  // A bar on a terminal, unless the data goes to that terminal too.
  const bool live = ::isatty(STDERR_FILENO) == 1 && (out == &file || !::isatty(STDOUT_FILENO));
  std::unique_ptr<Progress> bar;
  FP_RETURN_IF_ERROR(by_set
                         ? ExportSets(store, sets, format, *out)
                         : ExportRuns(store, runs, format, *out, FollowWith(bar, "series", live)));
  bar.reset();
  if (out == &file) {  // on standard output, the data says it all
    file.flush();
    std::cout << "wrote " << args.out << ": "
              << (by_set ? std::to_string(sets.size()) + " group(s) or run(s)"
                         : std::to_string(runs.size()) + " run(s)")
              << " as " << args.format << ", "
              << FormatValue("bytes", static_cast<double>(file.tellp())) << "\n";
  }
  return kExitOk;
}

}  // namespace

Action AddExport(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = AddDbSubcommand(
      app, "export",
      "Write runs' samples, scopes, values and totals as CSV or JSON, or as a Chrome Trace "
      "Event file that opens in Perfetto (ui.perfetto.dev); or groups' statistics as a "
      "Markdown table or in hyperfine's JSON.",
      args->db);
  cmd->add_option("-u,--run", args->runs,
                  "runs to export (id, prefix, name, last; group:ID for all of a group's runs, "
                  "warm-ups included); repeatable; default: last");
  cmd->add_option("-f,--format", args->format,
                  "csv, json or trace (runs); markdown or hyperfine (a row or result per group "
                  "or run named with -u, warm-ups left out)")
      ->required();
  cmd->add_option("--out", args->out, "file to write, or - for standard output")->required();
  cmd->footer(
      "The columns and fields are described in docs/cli.md.\n\n"
      "Examples:\n"
      "  footprint export --format csv --out run.csv\n"
      "  footprint export -u group:last --format json --out - | jq '.runs | length'\n"
      "  footprint export -u train --format trace --out train.trace.json\n"
      "  footprint export -u old -u new --format markdown --out -\n"
      "  footprint export -u group:last --format hyperfine --out results.json");
  return ReadingAction(args->db,
                       [args](Store& store, const std::vector<RunRecord>& all) -> Result<int> {
                         return RunExportCommand(store, all, *args);
                       });
}

}  // namespace footprint::cli
