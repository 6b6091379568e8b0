// OpenStore: the location string chooses the store (include/footprint/store.h).
#include <string>
#include <string_view>

#include "footprint/store.h"
#include "store/stores.h"

namespace footprint {

bool IsServerLocation(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string RedactedLocation(std::string_view location) {
  std::string out(location);
  // user:password@ in the authority.
  if (const size_t scheme = out.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = out.find_first_of("/?#", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at > start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
  }
  // password=... among the query parameters (or a key=value connection string).
  for (size_t at = out.find("password="); at != std::string::npos;
       at = out.find("password=", at + 1)) {
    const size_t value = at + 9;
    const size_t end = out.find_first_of("& ", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

std::string DefaultStoreLocation(Env& env) {
  std::optional<std::string> db = env.Var("FOOTPRINT_DB");
  return db && !db->empty() ? *db : "footprint.db";
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& location, const StoreOptions& options) {
  if (IsServerLocation(location)) return OpenPostgresStore(location, options, Env::Default());
  return OpenSqliteStore(location, options);
}

}  // namespace footprint
