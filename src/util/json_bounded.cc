#include "util/json_bounded.h"

#include <string>
#include <utility>

namespace footprint {
namespace {

// Whether the arrays and objects of `text` nest at most `limit` deep. Brackets inside strings
// do not count; a text that is not JSON may pass, and nlohmann's parser then refuses it.
bool NestsAtMost(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace

Result<nlohmann::json> ParseBoundedJson(std::string_view text) {
  if (!NestsAtMost(text, kMaxJsonDepth)) {
    return InvalidArgument("JSON nested more than " + std::to_string(kMaxJsonDepth) +
                           " levels deep: refused");
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json ParseStoredJson(std::string_view text) {
  Result<nlohmann::json> j = ParseBoundedJson(text);
  return j.ok() ? std::move(j).value() : nlohmann::json(nlohmann::json::value_t::discarded);
}

}  // namespace footprint
