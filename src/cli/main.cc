#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <span>
#include <utility>
#include <vector>

#include "cli/cli.h"
#include "core/identity.h"
#include "footprint/store.h"

namespace footprint::cli {

int Fail(const Status& status) {
  std::cerr << "footprint: " << status.message() << "\n";
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return kExitUsage;
    case StatusCode::kDatabase:
      return kExitDatabase;
    case StatusCode::kNotFound:
      return kExitNotFound;
    default:
      return kExitError;
  }
}

int FailOnInputs(const Status& status, int otherwise) {
  Fail(status);
  const StatusCode code = status.code();
  return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ? kExitUsage
                                                                               : otherwise;
}

void AddDbOption(CLI::App& cmd, std::string& db) {
  db = DefaultStoreLocation();
  cmd.add_option("-o,--db", db,
                 "database: a file, or a postgresql:// URI (default: $FOOTPRINT_DB or "
                 "./footprint.db)");
}

CLI::App* AddDbSubcommand(CLI::App& parent, std::string name, std::string description,
                          std::string& db) {
  CLI::App* cmd = parent.add_subcommand(std::move(name), std::move(description));
  AddDbOption(*cmd, db);
  return cmd;
}

namespace {

using SubcommandAdder = std::function<Action()>;

// The top level's --version and the examples of its --help.
void DescribeFootprintApp(CLI::App& app) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(footprint::FootprintVersion()));
  app.footer(
      "Examples:\n"
      "  footprint run -- python3 train.py --epochs 3\n"
      "  footprint run -n sort -i 10ms --tag data=small -- sort big.txt -o /dev/null\n"
      "  footprint show last\n"
      "  footprint plot -u last -t cpu memory --out run.html\n"
      "  footprint run -r 10 --warmup 1 -- ./bench && footprint show group:last\n"
      "  footprint load --scenario server --qps 50 -- python3 sut.py\n"
      "  footprint serve                # web UI on http://127.0.0.1:8765/\n"
      "  footprint experiment plan.csv --write-status plan-status.csv\n"
      "  footprint import umlaut.db        # UMLAUT's runs into footprint.db\n"
      "  footprint doctor\n\n"
      "Run 'footprint SUBCOMMAND --help' for the options of each subcommand.");
}

// Everything after the first "--" is the command of `run`, untouched by option parsing: it
// goes into `command`; returns the count of arguments before it.
int SplitOffCommand(int argc, char** argv, std::vector<std::string>& command) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      command.assign(argv + i + 1, argv + argc);
      return i;
    }
  }
  return argc;
}

// Says what is wrong with a command line CLI11 refused; returns the exit status.
int ParseFailure(const CLI::ParseError& e, int argc, char** argv,
                 std::span<const std::pair<std::string, SubcommandAdder>> adders) {
  bool in_run = argc > 1 && std::strcmp(argv[1], "run") == 0;
  bool known = false;  // point to the subcommand's own help only if it exists
  std::string names;
  for (const auto& [name, add] : adders) {
    known |= argc > 1 && name == argv[1];
    names += (names.empty() ? "" : ", ") + name;
  }
  if (!known && argc > 1 && argv[1][0] != '-') {
    std::cerr << "footprint: unknown subcommand '" << argv[1] << "' (" << names
              << "); see footprint --help\n";
  } else {
    std::cerr << "footprint: " << e.what() << "; see footprint "
              << (known ? std::string(argv[1]) + " " : "") << "--help\n";
  }
  return in_run ? kExitRunFailed : kExitUsage;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "footprint: measure the time, CPU, memory and I/O of a command and every process it "
      "starts, into a database you can query, compare and plot.",
      "footprint"};
  DescribeFootprintApp(app);
  std::vector<std::string> command;
  argc = SplitOffCommand(argc, argv, command);
  // Subcommands in the order --help lists them. Only the one named is built when it is known
  // (building all sixteen cost 0.23 ms of every start); all are built for --help, --version
  // and a mistyped name, which list them.
  auto of_app = [&app](Action (*add)(CLI::App&)) -> SubcommandAdder {
    return [&app, add] { return add(app); };
  };
  const std::pair<std::string, SubcommandAdder> adders[] = {
      {"run", [&] { return AddRun(app, command); }},
      {"load", [&] { return AddLoad(app, command); }},
      {"profile-cost", [&] { return AddProfileCost(app, command); }},
      {"evaluate", of_app(AddEvaluate)},
      {"predict", of_app(AddPredict)},
      {"runs", of_app(AddRuns)},
      {"show", of_app(AddShow)},
      {"compare", of_app(AddCompare)},
      {"export", of_app(AddExport)},
      {"plot", of_app(AddPlot)},
      {"experiment", of_app(AddExperiment)},
      {"import", of_app(AddImport)},
      {"push", of_app(AddPush)},
      {"agent", of_app(AddAgent)},
      {"serve", of_app(AddServe)},
      {"queue", of_app(AddQueue)},
      {"doctor", of_app(AddDoctor)},
  };
  const auto named = std::find_if(std::begin(adders), std::end(adders),
                                  [&](const auto& a) { return argc > 1 && a.first == argv[1]; });
  std::vector<std::pair<std::string, Action>> actions;
  for (const auto& [name, add] : adders) {
    if (named == std::end(adders) || named->first == name) actions.emplace_back(name, add());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return ParseFailure(e, argc, argv, adders);
  }
  for (const auto& [name, action] : actions) {
    if (app.got_subcommand(name)) return action();
  }
  return kExitUsage;  // unreachable: require_subcommand(1)
}

}  // namespace footprint::cli
