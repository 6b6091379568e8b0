// Formatting for the terminal: values in units people read, aligned tables.
#ifndef FOOTPRINT_CLI_FORMAT_H_
#define FOOTPRINT_CLI_FORMAT_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/store.h"

namespace footprint::cli {

// A metric value in its unit, scaled for people ("1.5 GiB", "250.0 %", "3.2 MiB/s",
// "1.50 ms" for 1500 us, "2.4 kJ", "1.2 G/s").
std::string FormatValue(std::string_view unit, double value);
// "+12.3 %", "-0.4 %".
std::string FormatPercentChange(double relative);

// How a subcommand decorates its terminal output. Sparklines need a terminal with a UTF-8
// locale; colour a terminal and no NO_COLOR (https://no-color.org) in the environment, unless
// forced with --color always. --json output is never decorated.
enum class ColorMode { kAuto, kAlways, kNever };
struct Decoration {
  bool color = false;
  bool sparklines = false;
};
// For output to `fd`: `sparklines_wanted` false (--no-sparklines) turns them off.
Decoration DecorationFor(int fd, ColorMode color, bool sparklines_wanted);
// Adds --color WHEN (auto, always, never) to a subcommand.
void AddColorOption(CLI::App& cmd, ColorMode& mode);

// Text in one of footprint's own SGR colours. Its text was made inert (util/strings.h), so the
// colour's escapes are the only ones it carries.
struct Painted {
  std::string text;
};
std::ostream& operator<<(std::ostream& out, const Painted& painted);
// `text`, made inert, in an SGR colour (e.g. "1" bold, "31" red, "32" green, "33" yellow,
// "2" dim) when `on`, without one otherwise.
Painted Paint(std::string_view text, std::string_view sgr, bool on);
// ▁▂▃▄▅▆▇█ scaled between the values' minimum and maximum (a flat series is all ▁).
std::string Sparkline(const std::vector<double>& values);
// "2026-11-22 03:40:12" (UTC) from ns since the epoch.
std::string FormatUtc(int64_t ns);
// A command line as a POSIX shell reads it back: words with any character outside
// [A-Za-z0-9_@%+=:,./-] are single-quoted (a quote inside becomes '\''); control characters
// are made inert (util/strings.h Inert), so such a word reads back changed.
std::string FormatCommand(const std::vector<std::string>& words);
// "ok", "failed (exit 5)", "killed (exit 137)".
std::string RunStatusText(const RunRecord& run);

// One line: `text` made inert as a whole (util/strings.h), then a newline. For lines that
// quote names and values from plans, databases and options ("footprint: experiment E,
// workload W: ..."), so that none of them reaches the terminal raw; not for Painted text.
void PrintLine(std::ostream& out, std::string_view text);
// `show`'s labelled lines, "cwd      /home/me": the label padded to 9 columns, then `value`,
// made inert by PrintLine.
void PrintField(std::ostream& out, std::string_view label, std::string_view value);
// `text` cut to `width` columns as displayed (Table's count), its end replaced by "…" when
// it is longer; colour escapes are kept whole and take no column.
std::string Shortened(std::string_view text, size_t width);

// A table cell. Text that is not Painted is made inert: names, scopes, paths and commands come
// from users and databases, and a table must not pass their escapes to a terminal.
class Cell {
 public:
  // Implicit, so that rows are written as lists of strings.
  Cell(const std::string& text);                             // NOLINT(google-explicit-constructor)
  Cell(const char* text);                                    // NOLINT(google-explicit-constructor)
  Cell(Painted painted) : text_(std::move(painted.text)) {}  // NOLINT(google-explicit-constructor)
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Columns padded to their widest cell (as displayed: UTF-8 characters count once and colour
// escapes not at all). `right` names the right-aligned columns (numbers).
class Table {
 public:
  explicit Table(const std::vector<std::string>& header, std::vector<size_t> right = {})
      : rows_{{header.begin(), header.end()}}, right_(std::move(right)) {}
  void Add(std::vector<Cell> row) { rows_.push_back(std::move(row)); }
  // Cells of `column` longer than `width` columns are Shortened, so that one long name cannot
  // pad every line of the table to its length.
  void Cap(size_t column, size_t width) { caps_[column] = width; }
  void Print(std::ostream& out, std::string_view indent = "") const;
  // Without the header row, for tables whose columns speak for themselves.
  void PrintBody(std::ostream& out, std::string_view indent = "") const;

 private:
  std::vector<std::vector<Cell>> rows_;
  std::vector<size_t> right_;
  std::map<size_t, size_t> caps_;  // column -> most columns it may take
};

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_FORMAT_H_
