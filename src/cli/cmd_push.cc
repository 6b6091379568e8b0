// footprint push: sends what waits in local buffers (include/footprint/buffer.h) to the servers
// they belong to.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/cli.h"
#include "cli/format.h"
#include "footprint/buffer.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint::cli {
namespace {

nlohmann::json BufferJson(const BufferState& b) {
  return {{"path", b.path},           {"location", b.location}, {"host", b.host},
          {"live", b.live},           {"changes", b.entries},   {"samples", b.samples},
          {"writer_ended", b.closed}, {"runs", b.runs}};
}

std::string Describe(const BufferState& b) {
  if (b.live) return b.path + ": open in a live footprint, which sends it itself";
  std::string runs;
  for (const std::string& r : b.runs) runs += (runs.empty() ? "" : ", ") + r.substr(0, 8);
  return b.path + ": " + std::to_string(b.samples) + " samples (" + std::to_string(b.entries) +
         " changes) for " + b.location + (runs.empty() ? "" : ", runs " + runs) +
         (b.closed ? "" : "; its footprint ended without closing it");
}

// The buffers in `dir` once no live footprint holds any, or `wait_s` passed (those still held
// are listed live).
Result<std::vector<BufferState>> ListBuffersOnceLetGo(const std::string& dir, double wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (true) {
    FP_ASSIGN_OR_RETURN(std::vector<BufferState> buffers, ListBuffers(dir));
    const bool held =
        std::any_of(buffers.begin(), buffers.end(), [](const BufferState& b) { return b.live; });
    if (!held || std::chrono::steady_clock::now() >= deadline) return buffers;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

struct PushArgs {
  std::string db, dir;
  bool list = false, json = false, all = false;
  double wait_s = 30;
};

// --list: what waits in `buffers` (of `dir`), as text or JSON.
void PrintWaitingBuffers(const std::vector<BufferState>& buffers, const std::string& dir,
                         bool as_json) {
  if (as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const BufferState& b : buffers) out.push_back(BufferJson(b));
    std::cout << JsonText(out, 2) << "\n";
    return;
  }
  for (const BufferState& b : buffers) std::cout << Inert(Describe(b)) << "\n";
  if (buffers.empty()) std::cerr << "footprint: nothing waits in " << dir << "\n";
}

// Sends each buffer not held by a live footprint (of -o's server only, if given); the exit
// status: kExitDatabase when one was kept.
int PushWaitingBuffers(const PushArgs& args, const std::vector<BufferState>& buffers,
                       const std::string& dir) {
  const std::string only = args.db.empty() ? "" : RedactedLocation(args.db);
  int failed = 0, pushed = 0;
  for (const BufferState& b : buffers) {
    if (b.live && args.all) {
      ++failed;
      std::cerr << "footprint: " << Inert(b.path) << " is still open in a live footprint after "
                << args.wait_s << " s; kept for later\n";
    }
    if (b.live || (!only.empty() && b.location != only)) continue;
    Result<PushOutcome> out = PushBuffer(b.path, only.empty() ? "" : args.db);
    if (!out.ok()) {
      ++failed;
      std::cerr << "footprint: " << Inert(out.status().message()) << "; kept for later\n";
      continue;
    }
    ++pushed;
    std::cout << Inert(Describe(b)) << ": sent " << out->sent << " changes"
              << (out->already_there > 0
                      ? ", " + std::to_string(out->already_there) + " already there"
                      : "")
              << "\n";
  }
  std::cerr << "footprint: " << pushed << " buffer(s) sent from " << dir
            << (failed > 0 ? ", " + std::to_string(failed) + " kept" : "") << "\n";
  return failed > 0 ? kExitDatabase : kExitOk;
}

// footprint push once its options are parsed.
Result<int> RunPushCommand(const PushArgs& args) {
  if (args.json && !args.list) return InvalidArgument("--json goes with --list");
  if (!args.db.empty() && !IsServerLocation(args.db)) {
    return InvalidArgument(
        "push sends to database servers: -o takes a postgresql:// URI, "
        "not " +
        args.db);
  }
  if (args.all && args.list) return InvalidArgument("--all sends: drop --list");
  const std::string dir = args.dir.empty() ? BufferDirectory() : args.dir;
  FP_ASSIGN_OR_RETURN(std::vector<BufferState> buffers,
                      args.all ? ListBuffersOnceLetGo(dir, args.wait_s) : ListBuffers(dir));
  if (!args.list) return PushWaitingBuffers(args, buffers, dir);
  PrintWaitingBuffers(buffers, dir, args.json);
  return kExitOk;
}

}  // namespace

Action AddPush(CLI::App& app) {
  auto args = std::make_shared<PushArgs>();
  CLI::App* cmd = app.add_subcommand(
      "push",
      "Send what waits in the local buffers to the database servers they belong to. Runs "
      "written to a server (-o postgresql://...) go through a local buffer; what could not be "
      "sent before footprint ended (the server down, a crash, a killed job) waits there. Each "
      "change is taken once, however often it is sent. A buffer whose footprint died is "
      "closed: its runs that never ended are marked interrupted.");
  cmd->add_option("-o,--db", args->db,
                  "push only the buffers of this server; its URI gives the credentials "
                  "(default: each buffer's own server, with ~/.pgpass or PGPASSWORD)");
  cmd->add_option("--dir", args->dir,
                  "the folder of the buffers (default: $FOOTPRINT_BUFFER_DIR, else "
                  "$XDG_STATE_HOME/footprint/buffers, else ~/.local/state/footprint/buffers)");
  cmd->add_flag("--all", args->all,
                "also the buffers a live footprint holds: wait (--wait) until each is let go "
                "(its footprint sent it, or ended) and send what is left; for a Slurm Epilog "
                "or TaskEpilog, where the job's last footprints may still be closing");
  cmd->add_option("--wait", args->wait_s,
                  "with --all: seconds to wait for live buffers (default 30)")
      ->check(CLI::Range(0.0, 86400.0))
      ->option_text("SECONDS");
  cmd->add_flag("--list", args->list, "say what waits, send nothing");
  cmd->add_flag("--json", args->json, "with --list: as JSON");
  cmd->footer(
      "Exit status: 0 when everything was sent (or nothing waited), 3 when a server could not "
      "take a buffer (it is kept; push again later), 2 for bad options.\n"
      "Examples:\n"
      "  footprint push --list\n"
      "  footprint push\n"
      "  footprint push --all --dir /shared/fp-buffers    (a Slurm Epilog line)\n"
      "  footprint push -o postgresql://alice@db.lab/footprint");
  return [args]() -> int { return ExitCodeOf([&] { return RunPushCommand(*args); }); };
}

}  // namespace footprint::cli
