// The schemas as ordered lists of migrations: migration i takes a database from version i to
// version i + 1 (SQLite: PRAGMA user_version, up to kSchemaVersion; PostgreSQL: the
// footprint_schema table, up to kPostgresSchemaVersion). Both hold the same data model; a
// server also keeps the records of the local buffers written to it (v2). Never edit a released
// migration; add one.
#ifndef FOOTPRINT_STORE_SCHEMA_H_
#define FOOTPRINT_STORE_SCHEMA_H_

#include <span>
#include <string_view>

namespace footprint {

inline constexpr int kPostgresSchemaVersion = 2;

std::span<const std::string_view> SqliteMigrations();
std::span<const std::string_view> PostgresMigrations();

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SCHEMA_H_
