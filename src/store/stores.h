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

// A PostgreSQL database named by a libpq URI, through libpq loaded from `env`.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const StoreOptions& options, Env& env);

// Receives the buffered store's lines on the server going away and coming back (no
// "footprint:" prefix, no newline).
using BufferNotice = std::function<void(const std::string&)>;
// `remote` written through a local buffer in BufferDirectory(env) (include/footprint/buffer.h)
// when it is a server store; `remote` itself otherwise.
Result<std::unique_ptr<Store>> OpenBufferedStore(std::unique_ptr<Store> remote, Env& env,
                                                 BufferNotice notice);

// Sends the buffers in `dir` that earlier footprints left for the server at `uri` (they ended
// before the server took everything), saying each on `notice`; one that cannot be sent stays.
void PushLeftBehind(const std::string& dir, const std::string& uri, const BufferNotice& notice);

// `text` with every password `location` carries replaced by "***" (libpq may quote the URI it
// could not parse in its message).
std::string WithoutSecrets(std::string text, std::string_view location);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_STORES_H_
