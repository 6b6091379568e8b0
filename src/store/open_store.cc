// OpenStore: the location string chooses the store (include/footprint/store.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "footprint/store.h"
#include "store/stores.h"
#include "util/strings.h"

namespace footprint {

bool IsServerLocation(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

namespace {

// Where the password of a libpq URI is written: [begin, end) of the user information's
// password (after "user:", up to the last '@' before the path, as libpq reads it: a password may
// hold '?' or '#') and of each value of a query parameter whose name, percent-decoded, ends in
// "password".
std::vector<std::pair<size_t, size_t>> PasswordSpans(std::string_view location) {
  std::vector<std::pair<size_t, size_t>> spans;
  const size_t scheme = location.find("://");
  if (scheme == std::string_view::npos) return spans;
  const size_t start = scheme + 3;
  const size_t path = location.find('/', start);
  const size_t at = location.rfind('@', path == std::string_view::npos ? location.size() : path);
  if (at != std::string_view::npos && at >= start) {
    const size_t colon = location.find(':', start);
    if (colon < at) spans.emplace_back(colon + 1, at);
  }
  const size_t query = location.find('?', at == std::string_view::npos ? start : at);
  for (size_t begin = query; begin != std::string_view::npos && begin < location.size();) {
    const size_t end = std::min(location.find('&', begin + 1), location.size());
    const std::string_view param = location.substr(begin + 1, end - begin - 1);
    const size_t eq = param.find('=');
    if (eq != std::string_view::npos && PercentDecoded(param.substr(0, eq)).ends_with("password")) {
      spans.emplace_back(begin + 1 + eq + 1, end);
    }
    begin = end;
  }
  return spans;
}

}  // namespace

std::string RedactedLocation(std::string_view location) {
  std::string out(location);
  const auto spans = PasswordSpans(location);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {  // from the end: offsets hold
    const bool user_info = it->first > 0 && location[it->first - 1] == ':' &&
                           it->second < location.size() && location[it->second] == '@';
    if (user_info) {
      out.erase(it->first - 1, it->second - it->first + 1);  // "user:secret@" -> "user@"
    } else {
      out.replace(it->first, it->second - it->first, "***");
    }
  }
  return out;
}

std::string WithoutSecrets(std::string text, std::string_view location) {
  for (const auto& [begin, end] : PasswordSpans(location)) {
    const std::string_view secret = location.substr(begin, end - begin);
    if (secret.empty()) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
      text.replace(at, secret.size(), "***");
    }
  }
  return text;
}

std::string DefaultStoreLocation(Env& env) {
  std::optional<std::string> db = env.Var("FOOTPRINT_DB");
  return db && !db->empty() ? *db : "footprint.db";
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& location, const StoreOptions& options) {
  if (IsServerLocation(location)) {
    Env& env = *options.env;
    if (options.read_only) return OpenPostgresStore(location, options, env);
    FP_ASSIGN_OR_RETURN(auto remote,
                        OpenPostgresStore(location, options, env, PostgresConnect::kOnFirstUse));
    return OpenBufferedStore(std::move(remote), env, [](const std::string& line) {
      std::fprintf(stderr, "footprint: %s\n", line.c_str());
    });
  }
  return OpenSqliteStore(location, options);
}

}  // namespace footprint
