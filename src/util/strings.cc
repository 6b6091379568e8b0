#include "util/strings.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace footprint {

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string PercentDecoded(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::optional<int64_t> ParseInt(std::string_view s) {
  s = Trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  s = Trim(s);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

Result<int64_t> ParseDurationNs(std::string_view text) {
  std::string_view s = Trim(text);
  size_t unit_pos = s.find_first_not_of("0123456789.");
  std::string_view number = s.substr(0, unit_pos);
  std::string_view unit = unit_pos == std::string_view::npos ? "" : s.substr(unit_pos);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1e9;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "us" || unit == "µs") {
    scale = 1e3;
  } else if (unit == "ns") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60e9;
  } else if (unit == "h") {
    scale = 3600e9;
  } else if (unit == "d") {
    scale = 86400e9;
  }
  std::optional<double> value = ParseDouble(number);
  if (scale == 0 || !value || *value < 0) {
    std::string message = "'";  // built in steps: GCC 12 -O3 misreports "..." + string
    message += text;
    message +=
        "' is not a duration; write a number with a unit, e.g. 100ms, 1.5s, 250us (a bare "
        "number means seconds)";
    return InvalidArgument(std::move(message));
  }
  // int64 nanoseconds end at 292 years: beyond, the conversion itself would overflow.
  if (*value * scale >= 0x1p63) {
    std::string message = "'";
    message += text;
    message += "' is too long a duration; footprint counts in nanoseconds up to 292 years";
    return InvalidArgument(std::move(message));
  }
  return static_cast<int64_t>(std::llround(*value * scale));
}

std::string FormatDuration(double seconds) {
  char buf[32];
  double a = std::fabs(seconds);
  if (a == 0) {
    return "0 s";
  } else if (a >= 3600) {
    std::snprintf(buf, sizeof buf, "%.2f h", seconds / 3600);
  } else if (a >= 60) {
    std::snprintf(buf, sizeof buf, "%.2f min", seconds / 60);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  } else if (a >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  } else if (a >= 1e-6) {
    std::snprintf(buf, sizeof buf, "%.2f µs", seconds * 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
  }
  return buf;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[u]);
  return buf;
}

Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view text,
                                                          std::string_view what) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument(std::string(what) + " '" + std::string(text) +
                           "' is not KEY=VALUE; write it as e.g. " + std::string(what) +
                           " lr=0.01");
  }
  return std::pair<std::string, std::string>(std::string(text.substr(0, eq)),
                                             std::string(text.substr(eq + 1)));
}

std::string QuotedInert(std::string_view text) {
  std::string out = "'";  // built in steps: GCC 12 -O3 misreports "'" + string (-Wrestrict)
  out += Inert(text);
  out += '\'';
  return out;
}

bool IsPlainShellWord(std::string_view word) {
  constexpr std::string_view kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  return !word.empty() && word.find_first_not_of(kPlain) == std::string_view::npos;
}

std::string ShellWord(std::string_view word) {
  if (IsPlainShellWord(word)) return std::string(word);
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

std::string ShellCommandLine(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out += ' ';
    out += ShellWord(word);
  }
  return out;
}

Result<std::vector<std::string>> SplitShellWords(std::string_view line) {
  auto unterminated = [&](char quote) {
    return InvalidArgument(std::string("unterminated ") + quote + " in " + QuotedInert(line));
  };
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {  // keeps the next character; a backslash-newline joins lines
      if (i + 1 == line.size()) {
        word += c;  // nothing to escape: sh -c 'echo a\' prints a backslash too
      } else if (line[++i] != '\n') {
        word += line[i];
      }
    } else if (c == '\'') {
      const size_t close = line.find('\'', i + 1);
      if (close == std::string_view::npos) return unterminated(c);
      word += line.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {  // only \" \\ \$ \` and a backslash-newline are escapes here
        if (i == line.size()) return unterminated(c);
        if (line[i] == '"') break;
        if (line[i] == '\\' && i + 1 < line.size() &&
            std::string_view("\"\\$`\n").find(line[i + 1]) != std::string_view::npos) {
          if (line[++i] == '\n') continue;
        }
        word += line[i];
      }
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

namespace {

// The length of the well-formed UTF-8 sequence at the start of `text` (1 to 4 bytes), with its
// code point in `code`; 0 when there is none: a stray continuation byte, an overlong form, a
// surrogate, a code point beyond U+10FFFF or a sequence cut short.
size_t Utf8Sequence(std::string_view text, char32_t& code) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char second_low = 0x80, second_high = 0xBF;  // RFC 3629's table
  if (lead < 0x80) {
    code = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0F;
    if (lead == 0xE0) second_low = 0xA0;   // overlong
    if (lead == 0xED) second_high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07;
    if (lead == 0xF0) second_low = 0x90;   // overlong
    if (lead == 0xF4) second_high = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < second_low || byte(1) > second_high) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  return length;
}

// Unicode's Bidi_Control characters: marks, embeddings, overrides and isolates, which reorder
// what a terminal shows (U+202E makes "exe.txt" of "txt.exe").
bool IsBidiControl(char32_t code) {
  return code == 0x061C || code == 0x200E || code == 0x200F || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069);
}

// How Inert writes a code point it must not pass on.
void AppendEscaped(std::string& out, char32_t code) {
  char buf[16];
  switch (code) {
    case '\n':
      out += "\\n";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\r':
      out += "\\r";
      return;
    case 0x1B:
      out += "\\e";
      return;
  }
  std::snprintf(buf, sizeof buf, code <= 0xFF ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(code));
  out += buf;
}

}  // namespace

std::string Inert(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t code = 0;
    const size_t length = Utf8Sequence(text.substr(i), code);
    if (length == 0) {  // not UTF-8: each byte shown, none reaches the terminal as it is
      AppendEscaped(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const bool control = code < 0x20 || (code >= 0x7F && code <= 0x9F) || IsBidiControl(code);
    if (control) {
      AppendEscaped(out, code);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace footprint
