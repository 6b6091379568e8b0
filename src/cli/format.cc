#include "cli/format.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

#include "util/strings.h"

namespace footprint::cli {

namespace {

// "2.4 k" + unit: SI prefixes from n to T, three significant digits.
std::string FormatSi(double v, std::string_view unit) {
  static const char* kPrefixes[] = {"n", "u", "m", "", "k", "M", "G", "T"};
  int p = 3;
  double scaled = v;
  while (std::fabs(scaled) >= 1000 && p < 7) {
    scaled /= 1000;
    ++p;
  }
  while (scaled != 0 && std::fabs(scaled) < 1 && p > 0) {
    scaled *= 1000;
    --p;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s%.*s", scaled, kPrefixes[p], static_cast<int>(unit.size()),
                unit.data());
  return buf;
}

// Display width: UTF-8 continuation bytes and SGR escapes ("\x1b[...m") take no column.
size_t DisplayWidth(std::string_view s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

bool Utf8Locale() {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;  // the first one set decides, as setlocale(3) does
    std::string lower(v);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
  }
  return false;
}

}  // namespace

std::string FormatValue(std::string_view unit, double v) {
  char buf[48];
  if (unit == "bytes") return FormatBytes(v);
  if (unit == "bytes/s") return FormatBytes(v) + "/s";
  if (unit == "s") return FormatDuration(v);
  if (unit == "us") return FormatDuration(v / 1e6);
  if (unit == "ns") return FormatDuration(v / 1e9);
  if (unit == "J" || unit == "W" || unit == "Hz") return FormatSi(v, unit);
  if (unit == "1/s") return FormatSi(v, "/s");
  if (unit == "count") {
    std::snprintf(buf, sizeof buf, v == std::floor(v) ? "%.0f" : "%.2f", v);
  } else if (unit == "%") {
    std::snprintf(buf, sizeof buf, "%.1f %%", v);
  } else {
    // Three significant digits, but whole numbers up to millions (1980 MHz, not 1.98e+03).
    const bool whole = std::fabs(v) >= 100 && std::fabs(v) < 1e7;
    std::snprintf(buf, sizeof buf, whole ? "%.0f %.*s" : "%.3g %.*s", v,
                  static_cast<int>(unit.size()), unit.data());
  }
  return buf;
}

std::string FormatPercentChange(double relative) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", relative * 100);
  return buf;
}

Decoration DecorationFor(int fd, ColorMode color, bool sparklines_wanted) {
  const bool tty = ::isatty(fd) == 1;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  const bool dumb = term && std::string_view(term) == "dumb";
  Decoration d;
  d.color = color == ColorMode::kAlways ||
            (color == ColorMode::kAuto && tty && !dumb && !(no_color && *no_color));
  d.sparklines = sparklines_wanted && tty && !dumb && Utf8Locale();
  return d;
}

void AddColorOption(CLI::App& cmd, ColorMode& mode) {
  cmd.add_option("--color", mode,
                 "colour: auto (on a terminal, unless NO_COLOR is set; default), always, never")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, ColorMode>{{"auto", ColorMode::kAuto},
                                                                   {"always", ColorMode::kAlways},
                                                                   {"never", ColorMode::kNever}},
                                  CLI::ignore_case))
      ->option_text("WHEN");
}

std::ostream& operator<<(std::ostream& out, const Painted& painted) { return out << painted.text; }

Painted Paint(std::string_view text, std::string_view sgr, bool on) {
  if (!on || text.empty()) return {Inert(text)};
  return {"\x1b[" + std::string(sgr) + "m" + Inert(text) + "\x1b[0m"};
}

Cell::Cell(const std::string& text) : text_(Inert(text)) {}
Cell::Cell(const char* text) : text_(Inert(text)) {}

std::string Sparkline(const std::vector<double>& values) {
  static const char* kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const double range = *hi - *lo;
  std::string out;
  for (double v : values) {
    int level = range > 0 ? static_cast<int>((v - *lo) / range * 7 + 0.5) : 0;
    out += kBars[std::clamp(level, 0, 7)];
  }
  return out;
}

std::string FormatUtc(int64_t ns) {
  time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm utc;
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &utc);
  return buf;
}

std::string FormatCommand(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += ' ';
    out += IsPlainShellWord(word) ? word : Inert(ShellWord(word));
  }
  return out;
}

std::string RunStatusText(const RunRecord& r) {
  std::string s(RunStatusName(r.status));
  if (r.exit_code && (*r.exit_code != 0 || r.status != RunStatus::kOk)) {
    s += " (exit " + std::to_string(*r.exit_code) + ")";
  }
  if (IncompleteReason(r)) s += ", incomplete";
  return s;
}

void PrintLine(std::ostream& out, std::string_view text) { out << Inert(text) << "\n"; }

void PrintField(std::ostream& out, std::string_view label, std::string_view value) {
  std::string line(label);
  line.resize(std::max<size_t>(label.size() + 1, 9), ' ');
  line += value;
  PrintLine(out, line);
}

std::string Shortened(std::string_view text, size_t width) {
  if (width == 0 || DisplayWidth(text) <= width) return std::string(text);
  std::string out;
  size_t characters = 0;  // characters begun so far, the current one included
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {  // a colour's escape: kept whole (its reset too), no column
      const size_t end = std::min(text.find('m', i), text.size() - 1);
      out.append(text.substr(i, end - i + 1));
      i = end;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && ++characters == width) {
      out += "…";
    }
    if (characters < width) out += text[i];
  }
  return out;
}

void Table::Print(std::ostream& out, std::string_view indent) const {
  size_t cols = 0;
  for (const auto& r : rows_) cols = std::max(cols, r.size());
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows_) {
    std::vector<std::string>& row = cells.emplace_back();
    for (size_t c = 0; c < r.size(); ++c) {
      auto cap = caps_.find(c);
      row.push_back(cap == caps_.end() ? r[c].text() : Shortened(r[c].text(), cap->second));
    }
  }
  std::vector<size_t> width(cols, 0);
  for (const auto& r : cells) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], DisplayWidth(r[c]));
  }
  for (const auto& r : cells) {
    std::string line(indent);
    for (size_t c = 0; c < r.size(); ++c) {
      const std::string& cell = r[c];
      size_t pad = width[c] - DisplayWidth(cell);
      bool right = std::find(right_.begin(), right_.end(), c) != right_.end();
      if (right) line.append(pad, ' ');
      line += cell;
      if (!right) line.append(pad, ' ');
      if (c + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void Table::PrintBody(std::ostream& out, std::string_view indent) const {
  std::ostringstream tmp;
  Print(tmp, indent);
  const std::string text = tmp.str();
  out << text.substr(text.find('\n') + 1);
}

}  // namespace footprint::cli
