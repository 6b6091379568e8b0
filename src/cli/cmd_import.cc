// footprint import: another tool's database brought into footprint's (UMLAUT's, for now).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/progress.h"
#include "store/umlaut_import.h"
#include "util/strings.h"

namespace footprint::cli {

Action AddImport(CLI::App& app) {
  struct Args {
    std::string db, file;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = AddDbSubcommand(
      app, "import",
      "Bring the runs of an UMLAUT database into footprint's: series, scopes, values, confusion "
      "matrices and hyperparameters, with the same run ids (importing again adds nothing). "
      "The UMLAUT file is only read.",
      args->db);
  cmd->add_option("FILE", args->file, "UMLAUT's database (tables benchmark_metadata, measurement)")
      ->required();
  cmd->footer(
      "Examples:\n"
      "  footprint import hello_world.db -o footprint.db\n"
      "  umlaut-cli footprint.db -t memory cpu -p plotly");
  return [args]() -> int {
    return ExitCodeOf([&]() -> Result<int> {
      if (args->file == args->db) {
        return InvalidArgument("import " + args->file + " into another database (-o)");
      }
      FP_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(args->db));
      std::unique_ptr<Progress> bar;
      auto runs = ImportUmlautDatabase(args->file, *store,
                                       FollowWith(bar, "runs", ::isatty(STDERR_FILENO) == 1));
      bar.reset();
      if (!runs.ok()) return runs.status();
      size_t added = 0;
      for (const ImportedRun& r : *runs) {
        std::cout << r.id.substr(0, 8) << "  " << Inert(r.name) << "  ";
        if (r.already_there) {
          std::cout << "already in " << args->db << ", skipped\n";
          continue;
        }
        ++added;
        std::cout << r.series << " series (" << r.samples << " samples), " << r.scopes
                  << " scope(s), " << r.values << " value(s)\n";
        for (const std::string& u : r.unmapped)
          std::cout << "    not imported: " << Inert(u) << "\n";
      }
      std::cerr << "footprint: " << added << " of " << runs->size()
                << " UMLAUT run(s) imported into " << args->db << "\n";
      return kExitOk;
    });
  };
}

}  // namespace footprint::cli
