// The footprint command line: one function per subcommand over the library, and the exit
// codes every subcommand shares.
#ifndef FOOTPRINT_CLI_CLI_H_
#define FOOTPRINT_CLI_CLI_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "footprint/groups.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint::cli {

// Exit codes of footprint's own failures (docs/cli.md). `run` otherwise exits with the
// command's status, so all of its own failures use kRunFailed, as env(1) and timeout(1) do.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,     // anything not listed below
  kExitUsage = 2,     // bad options or arguments
  kExitDatabase = 3,  // the database cannot be opened, read or written
  kExitNotFound = 4,  // no such run
  kExitRunFailed = 125,
};

// The whole command line: parses argv (argv[0] is the program) and runs the subcommand.
// Returns the exit status. Used by the footprint binary and by `python3 -m footprint`.
int Main(int argc, char** argv);

// UMLAUT's command line (src/cli/umlaut_cli.cc): the footprint binary runs it when called as
// umlaut-cli (a link to footprint, made by the build and by cmake --install).
int UmlautCliMain(int argc, char** argv);

// Prints "footprint: MESSAGE" on stderr and returns the exit code for `status`.
int Fail(const Status& status);
// Fail's line, with the exit code of a subcommand whose inputs are files it was given
// (evaluate's manifest, predict's model and datasets): one that is wrong or cannot be read
// (InvalidArgument, NotFound) is a usage error, kExitUsage; anything else `otherwise`.
int FailOnInputs(const Status& status, int otherwise);

// Each Add* declares a subcommand and returns the action to run once parsing succeeded.
using Action = std::function<int()>;
// `command` receives the words after "--", which main() splits off before parsing.
Action AddRun(CLI::App& app, const std::vector<std::string>& command);
Action AddLoad(CLI::App& app, const std::vector<std::string>& command);
Action AddProfileCost(CLI::App& app, const std::vector<std::string>& command);
Action AddEvaluate(CLI::App& app);
Action AddPredict(CLI::App& app);
Action AddRuns(CLI::App& app);
Action AddShow(CLI::App& app);
Action AddDoctor(CLI::App& app);
Action AddPlot(CLI::App& app);
Action AddServe(CLI::App& app);
Action AddQueue(CLI::App& app);

Action AddCompare(CLI::App& app);
Action AddExport(CLI::App& app);
Action AddExperiment(CLI::App& app);
Action AddImport(CLI::App& app);
Action AddPush(CLI::App& app);
Action AddAgent(CLI::App& app);

// Adds -o/--db with the default location and the help text every subcommand shares.
void AddDbOption(CLI::App& cmd, std::string& db);
// Declares the subcommand `name` of `parent`, `description` its line in --help, with -o/--db
// (AddDbOption) into `db` as its first option.
CLI::App* AddDbSubcommand(CLI::App& parent, std::string name, std::string description,
                          std::string& db);

// Opens an existing database for the readers (runs, show, compare, export, plot, experiment
// --dry-run) read-only: they leave the file and its folder as they found them. Runs whose
// monitor died are shown interrupted; the next writer stores it.
Result<std::unique_ptr<Store>> OpenExisting(const std::string& db);
// Every run, oldest first, with interrupted ones recognised (ReconcileInterrupted) on the real
// machine's clock: the CLI is above the Env line.
Result<std::vector<RunRecord>> LoadRuns(Store& store);

// What a subcommand that reads the database does once its options are parsed, given the open
// store and its runs (LoadRuns): an exit code, or a Status that Fail turns into one.
using ReaderBody = std::function<Result<int>(Store& store, const std::vector<RunRecord>& runs)>;
// The action of such a subcommand: opens the database named by `db` (read when the action
// runs, so bind it to the parsed option) with OpenExisting, loads its runs and calls `body`; a
// failure at any step is one line on stderr and its exit code.
Action ReadingAction(const std::string& db, ReaderBody body);
// ResolveRunSet for a RUN argument of a subcommand, saying on stderr in one
// "footprint: note:" line when a name was taken to mean its group (RunSet::chosen).
Result<RunSet> ResolveRunSetNoted(const std::vector<RunRecord>& runs, std::string_view spec,
                                  bool as_group = false);
// Runs `body` and turns a non-OK result into Fail's line and exit code.
int ExitCodeOf(const std::function<Result<int>()>& body);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_CLI_H_
