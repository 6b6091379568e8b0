// JsonOut: JSON written by hand into a string, for the documents of plots and of the web UI
// (footprint serve), whose series arrays are the bulk of them: numbers with 10 significant
// digits (1 µs over three hours) keep them half the size of a full-precision dump; NaN and
// infinities become null; strings go through nlohmann's escaping (invalid UTF-8 replaced) and
// every '<' is escaped, so that nothing in the data can end a <script> element that holds it.
//
// The caller writes a well-formed sequence (Key before each member value, Open/Close paired);
// commas are placed automatically. Thread-safety: one writer per object.
#ifndef FOOTPRINT_REPORT_JSON_OUT_H_
#define FOOTPRINT_REPORT_JSON_OUT_H_

#include <charconv>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json_text.h"

namespace footprint {

class JsonOut {
 public:
  explicit JsonOut(std::string& s) : s_(s) {}
  JsonOut& Null() {
    Comma();
    s_ += "null";
    return *this;
  }
  JsonOut& Bool(bool b) {
    Comma();
    s_ += b ? "true" : "false";
    return *this;
  }
  JsonOut& Key(std::string_view key) {
    Str(key);
    s_ += ':';
    first_ = true;  // the value that follows needs no comma
    return *this;
  }
  JsonOut& Str(std::string_view text) {
    Comma();
    Escaped(JsonText(nlohmann::json(text)));
    return *this;
  }
  JsonOut& Doc(const nlohmann::json& doc) {
    Comma();
    Escaped(JsonText(doc));
    return *this;
  }
  JsonOut& Num(double v) {
    Comma();
    AppendNumber(v);
    return *this;
  }
  JsonOut& Int(int64_t v) {
    Comma();
    s_ += std::to_string(v);
    return *this;
  }
  JsonOut& Opt(const std::optional<double>& v) { return v ? Num(*v) : Null(); }
  JsonOut& Open(char bracket) {
    Comma();
    s_ += bracket;
    first_ = true;
    return *this;
  }
  JsonOut& Close(char bracket) {
    s_ += bracket;
    first_ = false;
    return *this;
  }
  // A list of numbers: `scale` divides each (ns to s), NaN and infinities become null.
  template <typename T>
  JsonOut& Numbers(const std::vector<T>& values, double scale = 1) {
    Open('[');
    for (const T& v : values) {
      if (!first_) s_ += ',';
      first_ = false;
      AppendNumber(static_cast<double>(v) / scale);
    }
    return Close(']');
  }

 private:
  void Comma() {
    if (!first_) s_ += ',';
    first_ = false;
  }
  void AppendNumber(double v) {
    if (!std::isfinite(v)) {
      s_ += "null";
      return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 10);
    s_.append(buf, r.ptr);
  }
  void Escaped(const std::string& text) {
    for (char c : text) {
      if (c == '<') {
        s_ += "\\u003c";
      } else {
        s_ += c;
      }
    }
  }
  std::string& s_;
  bool first_ = true;
};

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_JSON_OUT_H_
