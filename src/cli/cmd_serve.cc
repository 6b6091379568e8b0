// footprint serve: the web UI and JSON API over a database (src/serve/, docs/serve.md).
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/modules.h"
#include "serve/module.h"
#include "serve/server.h"

namespace footprint::cli {

Action AddServe(CLI::App& app) {
  auto options = std::make_shared<serve::ServeOptions>();
  options->env = &Env::Default();  // the binary's, which the module's deadlines are on
  CLI::App* cmd = AddDbSubcommand(
      app, "serve",
      "Serve a web UI and a JSON API over the database (read-only): browse experiments, "
      "workloads and runs, compare them, watch running ones live. With --manifests or --plans, "
      "also run the queue of evaluations and plans kept in the database (launch, watch, cancel "
      "from the browser; footprint queue from the shell).",
      options->db);
  cmd->add_option("--host", options->host,
                  "address to listen on (default 127.0.0.1; any other needs a token)");
  cmd->add_option("-p,--port", options->port, "port (default 8765; 0: any free port)");
  cmd->add_option("--token", options->token,
                  "token every request must carry (default: none on 127.0.0.1, generated and "
                  "printed for any other host)");
  cmd->add_option("--threads", options->threads,
                  "request threads, 1 to 1024 (default: max(32, cores)); with a token, a "
                  "quarter of them serve only requests that carry it")
      ->option_text("N");
  cmd->add_option("--tokens", options->tokens_file,
                  "file of tokens with roles, a line each: ROLE NAME TOKEN (ROLE read, run or "
                  "admin); --token is then an admin's too")
      ->option_text("FILE");
  cmd->add_option("--manifests", options->manifests,
                  "folder of evaluation manifests the queue may launch (docs/evaluation.md)")
      ->option_text("DIR");
  cmd->add_option("--plans", options->plans, "folder of plans (radT CSV/YAML) the queue may launch")
      ->option_text("DIR");
  cmd->add_option("--python", options->python,
                  "interpreter of the evaluations' agents (default: evaluate's, python3)")
      ->option_text("PATH");
  cmd->footer(
      "Stops on Ctrl-C or SIGTERM. A request must arrive whole within 10 s of its "
      "connection's opening (or of the answer before it), else 408; waiting for it takes no "
      "request thread. The API is described in docs/serve.md.\n\n"
      "Examples:\n"
      "  footprint serve                       # http://127.0.0.1:8765/\n"
      "  footprint serve -o team.db --host 0.0.0.0 --port 9000   # prints the URL with its token\n"
      "  footprint serve --manifests manifests --plans plans --tokens tokens.txt");
  return [options]() -> int {
    auto loaded = LoadModuleEntry(serve::kModuleFile, serve::kEntrySymbol, "FOOTPRINT_SERVE_MODULE",
                                  "web server");
    if (!loaded.ok()) return Fail(loaded.status());
    Status status = reinterpret_cast<serve::Entry>(*loaded)(*options, std::cout);
    if (!status.ok()) return Fail(status);
    std::cout << "footprint serve: stopped" << std::endl;
    return kExitOk;
  };
}

}  // namespace footprint::cli
