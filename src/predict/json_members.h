// Members of JSON read without throwing, for records of another version or edited by hand
// (predictor files, runs' meta): a member that is missing or of another kind reads as absent.
#ifndef FOOTPRINT_PREDICT_JSON_MEMBERS_H_
#define FOOTPRINT_PREDICT_JSON_MEMBERS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace footprint::predict {

// Member `key` of `j` where `j` is an object and has it, else null.
inline nlohmann::json Member(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : nlohmann::json();
}

// Member `key` where it is an object, else an empty object.
inline nlohmann::json Object(const nlohmann::json& j, const char* key) {
  nlohmann::json m = Member(j, key);
  return m.is_object() ? m : nlohmann::json::object();
}

// Member `key` where it is text, else `fallback`.
inline std::string Text(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const nlohmann::json m = Member(j, key);
  return m.is_string() ? m.get<std::string>() : fallback;
}

// Member `key` where it is a number, else `fallback`.
inline double Number(const nlohmann::json& j, const char* key, double fallback) {
  const nlohmann::json m = Member(j, key);
  return m.is_number() ? m.get<double>() : fallback;
}

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_JSON_MEMBERS_H_
