// The SQLite schema as an ordered list of migrations: migration i takes a database from
// version i to version i + 1 (PRAGMA user_version). Never edit a released migration; add one.
#ifndef FOOTPRINT_STORE_SCHEMA_H_
#define FOOTPRINT_STORE_SCHEMA_H_

#include <span>
#include <string_view>

namespace footprint {

std::span<const std::string_view> SqliteMigrations();

}  // namespace footprint

#endif  // FOOTPRINT_STORE_SCHEMA_H_
