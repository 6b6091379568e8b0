// footprint compare: runs or groups side by side, with the significance of each change.
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/format.h"
#include "cli/stats_view.h"
#include "experiment/repro.h"
#include "footprint/compare.h"
#include "footprint/groups.h"
#include "run/run_metadata.h"

namespace footprint::cli {
namespace {

// The summary of each run or group compared (`group`: the groups the runs belong to).
Result<std::vector<SetSummary>> SummarizeCompared(Store& store, const std::vector<RunRecord>& runs,
                                                  const std::vector<std::string>& specs,
                                                  bool group) {
  std::vector<SetSummary> sets;
  for (const std::string& spec : specs) {
    FP_ASSIGN_OR_RETURN(RunSet set, ResolveRunSetNoted(runs, spec, group));
    FP_ASSIGN_OR_RETURN(SetSummary summary, SummarizeSet(store, std::move(set)));
    sets.push_back(std::move(summary));
  }
  return sets;
}

// Runs that differ in how they were made (experiments' meta.repro) are compared with a
// warning per difference, so that a change is not taken for the code's alone.
void WarnReproDifferences(const std::vector<SetSummary>& sets) {
  for (size_t i = 1; i < sets.size(); ++i) {
    if (sets[0].set.runs.empty() || sets[i].set.runs.empty()) continue;
    for (const std::string& d : experiment::ReproDifferences(sets[0].set.runs[0].meta_json,
                                                             sets[i].set.runs[0].meta_json)) {
      PrintLine(std::cerr, "footprint: warning: " + sets[i].set.Label() + " differs from " +
                               sets[0].set.Label() + ": " + d);
    }
  }
}

}  // namespace

Action AddCompare(CLI::App& app) {
  struct Args {
    std::string db;
    std::vector<std::string> specs;
    bool json = false, group = false;
    std::string test = "welch";
    double alpha = 0.05;
    ColorMode color = ColorMode::kAuto;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = AddDbSubcommand(
      app, "compare",
      "Compare runs or groups of repetitions with the first: each total side by side, the "
      "relative change, and whether it is statistically significant.",
      args->db);
  cmd->add_option("RUN", args->specs,
                  "two or more: run (id, prefix, name, last) or group (group:ID, "
                  "group:PREFIX, group:last, group:RUN); a name whose latest run is a "
                  "repetition means its group; the first is the baseline")
      ->required();
  cmd->add_flag("--group", args->group, "compare the groups the RUNs belong to");
  cmd->add_option("--test", args->test,
                  "test over repetitions: welch (Welch's t-test, default) or mann-whitney "
                  "(ranks; no normality assumed)");
  cmd->add_option("--alpha", args->alpha, "significance level (default 0.05)");
  cmd->add_flag("--json", args->json, "print a JSON object (stable API)");
  AddColorOption(*cmd, args->color);
  cmd->footer(
      "Under the table, one verdict line per headline figure, as hyperfine says it ('new' ran "
      "1.33 ± 0.04 times faster than 'old'), or 'no significant difference'. A side with a "
      "single run is compared by the plain ratio of its figures, labelled as such, with no "
      "verdict. Exits 0 whatever the differences; 2, 3, 4 as the other subcommands.\n\n"
      "Examples:\n"
      "  footprint run -r 10 -n old -- ./old && footprint run -r 10 -n new -- ./new\n"
      "  footprint compare old new          # the two groups, with a verdict\n"
      "  footprint compare group:3f2a group:9c1e\n"
      "  footprint compare --group baseline-run candidate-run --test mann-whitney\n"
      "  footprint compare old new --json");
  return ReadingAction(
      args->db, [args](Store& store, const std::vector<RunRecord>& runs) -> Result<int> {
        FP_ASSIGN_OR_RETURN(CompareTest test, ParseCompareTest(args->test));
        if (args->specs.size() < 2) {
          return InvalidArgument(
              "compare needs at least two runs or groups (the first is the baseline); see "
              "footprint compare --help");
        }
        FP_ASSIGN_OR_RETURN(std::vector<SetSummary> sets,
                            SummarizeCompared(store, runs, args->specs, args->group));
        WarnReproDifferences(sets);
        FP_ASSIGN_OR_RETURN(Comparison comparison,
                            Compare(std::move(sets), {.test = test, .alpha = args->alpha}));
        if (args->json) {
          std::cout << ComparisonJson(comparison) << "\n";
          return kExitOk;
        }
        PrintComparison(comparison, DecorationFor(STDOUT_FILENO, args->color, false), std::cout);
        return kExitOk;
      });
}

}  // namespace footprint::cli
