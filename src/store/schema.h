// The schemas as ordered lists of migrations: migration i takes a database from version i to
// version i + 1 (SQLite: PRAGMA user_version; PostgreSQL: the footprint_schema table). Both
// hold the same data model at the same version. Never edit a released migration; add one.
#ifndef FOOTPRINT_STORE_SCHEMA_H_
#define FOOTPRINT_STORE_SCHEMA_H_

#include <span>
#include <string_view>

namespace footprint {

std::span<const std::string_view> SqliteMigrations();
std::span<const std::string_view> PostgresMigrations();

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SCHEMA_H_
