// The Store implementations OpenStore chooses between (include/footprint/store.h).
#ifndef FOOTPRINT_STORE_STORES_H_
#define FOOTPRINT_STORE_STORES_H_

#include <memory>
#include <string>

#include "footprint/env.h"
#include "footprint/store.h"

namespace footprint {

// An SQLite file: a path, `sqlite:PATH` or `sqlite://PATH`.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& location,
                                               const StoreOptions& options);

// A PostgreSQL database named by a libpq URI, through libpq loaded from `env`.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri,
                                                 const StoreOptions& options, Env& env);

}  // namespace footprint

#endif  // FOOTPRINT_STORE_STORES_H_
