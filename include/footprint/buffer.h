// Local buffers: how footprint writes to a database server without losing anything when the
// server goes away (docs/cluster.md).
//
// A store opened for writing at a server URI writes every change first into a local buffer
// (an SQLite file of its own, store/journal.h) and then sends it to the server, in order. A
// change is kept in the buffer until the server has committed it, and the server records how
// far each buffer's changes arrived, so a change sent twice is taken once. While the server
// cannot be reached the measured command goes on and its data waits in the buffer; the store
// sends it when the server answers again, or, when footprint ended first (the server still
// down, a crash, a killed job), `footprint push` does.
#ifndef FOOTPRINT_BUFFER_H_
#define FOOTPRINT_BUFFER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// Where this user's buffers are: $FOOTPRINT_BUFFER_DIR, else $XDG_STATE_HOME/footprint/buffers,
// else ~/.local/state/footprint/buffers.
std::string BufferDirectory(Env& env = Env::Default());

// One buffer file and what waits in it.
struct BufferState {
  std::string path;
  std::string writer;    // its UUID, as the server knows it
  std::string location;  // the server it writes to, without a password
  std::string host;
  int64_t created_ns = 0;  // UTC wall clock
  // A process (its writer, or a push) has it open: nothing below was read.
  bool live = false;
  int64_t entries = 0;            // changes waiting
  int64_t samples = 0;            // samples among them
  bool closed = false;            // its writer ended normally (false: it died, or is live)
  std::vector<std::string> runs;  // runs with changes waiting
};

// Every buffer in `dir` (none when it does not exist), oldest first. A buffer's file locked by
// its writer is waited for on `env`'s clock (as long as a store waits for its database).
Result<std::vector<BufferState>> ListBuffers(const std::string& dir, Env& env = Env::Default());
// The buffer at `path`, read as ListBuffers reads each.
Result<BufferState> ReadBuffer(const std::string& path, Env& env = Env::Default());

struct PushOutcome {
  int64_t sent = 0;           // changes the server took
  int64_t already_there = 0;  // changes it held already (sent before a crash): not taken again
  bool removed = false;       // the buffer was emptied and deleted
};

// Sends what waits in the buffer at `path` to its server, then deletes it. The server is `uri`
// when given (the URI carries the credentials; it must name the buffer's server), else the
// buffer's location, with credentials from ~/.pgpass, PGPASSFILE or PGPASSWORD. A buffer whose
// writer died is closed: the runs it created and never finished are marked interrupted.
// kInvalidArgument when `uri` names another server, kDatabase when the server cannot be reached
// (what was sent stays sent, the rest waits), kIo when a live process holds the buffer.
// libpq is loaded, and the shipments are stamped, through `env`.
Result<PushOutcome> PushBuffer(const std::string& path, const std::string& uri = "",
                               Env& env = Env::Default());

// A writer's buffer that may still hold changes of a run (Store::PendingBuffers), with its
// file's state when it is on this machine and still there.
struct WaitingBuffer {
  PendingBuffer where;
  std::optional<BufferState> here;
};
// The buffers that may still hold changes of `run`, for `show`: none while the run is live.
// Read as ListBuffers reads them.
Result<std::vector<WaitingBuffer>> WaitingBuffers(Store& store, const RunRecord& run,
                                                  Env& env = Env::Default());

}  // namespace footprint

#endif  // FOOTPRINT_BUFFER_H_
