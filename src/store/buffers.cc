// The local buffers of server stores as their user sees them (include/footprint/buffer.h):
// where they are, what waits in them, `footprint push` and what `show` says.
#include <algorithm>
#include <filesystem>

#include "footprint/buffer.h"
#include "store/journal.h"
#include "store/journal_records.h"
#include "store/shipment.h"
#include "store/shipper.h"
#include "store/stores.h"
#include "util/host.h"

namespace footprint {
namespace {

BufferState StateOf(const std::string& path, Journal* journal, const JournalBacklog& backlog) {
  BufferState s;
  s.path = path;
  s.live = journal == nullptr;
  if (journal != nullptr) {
    s.writer = journal->info().writer;
    s.location = journal->info().location;
    s.host = journal->info().host;
    s.created_ns = journal->info().created_ns;
  }
  s.entries = backlog.entries;
  s.samples = backlog.samples;
  s.closed = backlog.closed;
  s.runs = backlog.runs;
  return s;
}

}  // namespace

std::string BufferDirectory(Env& env) {
  if (auto dir = env.Var("FOOTPRINT_BUFFER_DIR"); dir && !dir->empty()) return *dir;
  if (auto state = env.Var("XDG_STATE_HOME"); state && !state->empty()) {
    return *state + "/footprint/buffers";
  }
  return env.Var("HOME").value_or("") + "/.local/state/footprint/buffers";
}

Result<BufferState> ReadBuffer(const std::string& path, Env& env) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, Journal::Open(path, env));
  if (!journal) return StateOf(path, nullptr, {});
  FP_ASSIGN_OR_RETURN(JournalBacklog backlog, journal->Backlog());
  return StateOf(path, journal.get(), backlog);
}

Result<std::vector<BufferState>> ListBuffers(const std::string& dir, Env& env) {
  std::vector<BufferState> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".db") continue;
    FP_ASSIGN_OR_RETURN(BufferState s, ReadBuffer(entry.path().string(), env));
    out.push_back(std::move(s));
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError("cannot read the folder of local buffers " + dir + ": " + ec.message());
  }
  std::sort(out.begin(), out.end(), [](const BufferState& a, const BufferState& b) {
    return a.created_ns != b.created_ns ? a.created_ns < b.created_ns : a.path < b.path;
  });
  return out;
}

Result<PushOutcome> PushBuffer(const std::string& path, const std::string& uri, Env& env) {
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal, Journal::Open(path, env));
  if (!journal) {
    return IoError(path +
                   " is open in another process (the footprint writing it is alive, or "
                   "another push): it sends what it holds itself");
  }
  const std::string& location = journal->info().location;
  if (!uri.empty() && RedactedLocation(uri) != location) {
    return InvalidArgument(path + " is a buffer of " + location + ", not of " +
                           RedactedLocation(uri));
  }
  FP_ASSIGN_OR_RETURN(std::unique_ptr<Store> remote,
                      OpenPostgresStore(uri.empty() ? location : uri, {}, env));
  auto* log = dynamic_cast<ShipmentLog*>(remote.get());
  if (log == nullptr) return InternalError(location + " keeps no records of buffers");
  FP_ASSIGN_OR_RETURN(JournalBacklog backlog, journal->Backlog());
  if (!backlog.closed) {  // its writer died: nothing more will come from it
    FP_RETURN_IF_ERROR(journal->Add(JournalOp::kClose, "", CloseEntry(/*died=*/true)).status());
  }
  Shipper shipper(*journal, *remote, *log, env);
  FP_RETURN_IF_ERROR(shipper.ShipAll());
  PushOutcome out{shipper.sent(), shipper.already_there(), false};
  FP_RETURN_IF_ERROR(journal->Remove());
  out.removed = true;
  return out;
}

void PushLeftBehind(const std::string& dir, const std::string& uri, const BufferNotice& notice,
                    Env& env) {
  Result<std::vector<BufferState>> buffers = ListBuffers(dir, env);
  if (!buffers.ok()) return;
  const std::string location = RedactedLocation(uri);
  for (const BufferState& b : *buffers) {
    if (b.live || b.location != location) continue;
    Result<PushOutcome> out = PushBuffer(b.path, uri, env);
    if (out.ok() && notice) {
      notice("sent what an earlier footprint left in " + b.path + " (" + std::to_string(b.samples) +
             " samples, " + std::to_string(out->sent) + " changes)");
    }
  }
}

Result<std::vector<WaitingBuffer>> WaitingBuffers(Store& store, const RunRecord& run, Env& env) {
  std::vector<WaitingBuffer> out;
  if (run.status == RunStatus::kRunning) return out;
  FP_ASSIGN_OR_RETURN(std::vector<PendingBuffer> pending, store.PendingBuffers(run.id));
  const std::string host = HostName();
  for (PendingBuffer& p : pending) {
    WaitingBuffer w{std::move(p), std::nullopt};
    // Read where this machine sees the file: its own disk, or a shared folder (--buffer-dir)
    // another node wrote to, where the name (the writer's UUID) tells it is the same buffer.
    if (std::filesystem::exists(w.where.path)) {
      Result<BufferState> s = ReadBuffer(w.where.path, env);
      if (s.ok() && (s->writer == w.where.writer || (s->live && w.where.host == host))) {
        w.here = std::move(*s);
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace footprint
