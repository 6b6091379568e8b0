// JSON text for storage and output.
//
// Arguments, file names and run names are bytes, not necessarily UTF-8 (a Latin-1 file name
// is a valid argument). nlohmann::json throws on invalid UTF-8 when it writes text; every
// place footprint writes JSON goes through JsonText, which writes U+FFFD instead, so no byte
// sequence a user passes can stop footprint.
#ifndef FOOTPRINT_UTIL_JSON_TEXT_H_
#define FOOTPRINT_UTIL_JSON_TEXT_H_

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace footprint {

// `j` as JSON text, indented by `indent` spaces per level (-1: one line).
inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A figure for JSON: its value, or null when there is none (or it is not finite, which JSON
// cannot hold).
inline nlohmann::json NumberOrNull(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A value that may be absent, for JSON: its value, or null.
template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// Text where empty means unknown (a run's group, a verdict), for JSON: the text, or null.
inline nlohmann::json TextOrNull(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_JSON_TEXT_H_
