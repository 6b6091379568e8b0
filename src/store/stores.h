// The Store implementations OpenStore chooses between (include/footprint/store.h).
#ifndef FOOTPRINT_STORE_STORES_H_
#define FOOTPRINT_STORE_STORES_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "footprint/env.h"
#include "footprint/store.h"

namespace footprint {

// An SQLite file: a path, `sqlite:PATH` or `sqlite://PATH`.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& location,
                                               const StoreOptions& options);

// How a reader opens the SQLite database at `path`: read-only (false), so that nothing in the
// file changes, not even what a killed writer left in its WAL; or, for a WAL database without
// such frames, read-write with query_only (true): SQLite makes -wal and -shm files to read it
// through, and only a connection that may write removes them at its close. Decided from the
// file's header read through SQLite's own descriptor, never one of footprint's (whose close
// would drop the locks SQLite holds on the file), so that a process holding connections to the
// database may ask (the Python module's readers do).
Result<bool> SqliteReaderMayWrite(const std::string& path);

// When a PostgreSQL store connects: at once (a reader, `push`: an unreachable server is an
// error now), or with its first statement (a buffered writer, whose run starts whatever the
// server's state).
enum class PostgresConnect { kNow, kOnFirstUse };
// A PostgreSQL database named by a libpq URI, through libpq loaded from `env`.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const StoreOptions& options, Env& env,
                                                 PostgresConnect when = PostgresConnect::kNow);

// Receives the buffered store's lines on the server going away and coming back (no
// "footprint:" prefix, no newline).
using BufferNotice = std::function<void(const std::string&)>;
// `remote` written through a local buffer in BufferDirectory(env) (include/footprint/buffer.h)
// when it is a server store; `remote` itself otherwise.
Result<std::unique_ptr<Store>> OpenBufferedStore(std::unique_ptr<Store> remote, Env& env,
                                                 BufferNotice notice);

// Sends the buffers in `dir` that earlier footprints left for the server at `uri` (they ended
// before the server took everything), saying each on `notice`; one that cannot be sent stays.
// Through `env`, as PushBuffer.
void PushLeftBehind(const std::string& dir, const std::string& uri, const BufferNotice& notice,
                    Env& env);

// `text` with every password `location` carries replaced by "***" (libpq may quote the URI it
// could not parse in its message).
std::string WithoutSecrets(std::string text, std::string_view location);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_STORES_H_
