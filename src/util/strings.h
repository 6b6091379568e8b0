// Small string helpers shared by parsers and the command line.
#ifndef FOOTPRINT_UTIL_STRINGS_H_
#define FOOTPRINT_UTIL_STRINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/status.h"

namespace footprint {

std::string_view Trim(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
// ASCII lower case (names of columns, listeners, extensions; case-insensitive search).
std::string Lower(std::string_view s);
// `s` with each %XX (two hex digits) replaced by its byte, as URIs encode; a '%' not
// followed by two hex digits stays as it is.
std::string PercentDecoded(std::string_view s);
// The directory part of a path: "." when it has none, "/" for a file in the root.
std::string DirName(const std::string& path);

// Parses a base-10 integer that fills the whole of `s` (after trimming).
std::optional<int64_t> ParseInt(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);

// Parses a duration such as "100ms", "1.5s", "250us", "2m", "3h", "7d" or a bare number of
// seconds.
// Errors name the text and the accepted forms.
Result<int64_t> ParseDurationNs(std::string_view text);

// "1.50 ms", "2.00 s", "12.50 µs", "350 ns": a duration for people.
std::string FormatDuration(double seconds);
// "1.5 GiB", "512 KiB", "37 B": a byte count for people.
std::string FormatBytes(double bytes);

// Splits "KEY=VALUE". InvalidArgument naming `what` (e.g. "--tag") when there is no '='.
Result<std::pair<std::string, std::string>> ParseKeyValue(std::string_view text,
                                                          std::string_view what);

// Stored text made inert for a terminal, so that a name can neither move the cursor, set the
// window title, break a table's line nor reorder what is shown, and a reader sees what is
// there: control characters (C0, DEL, C1) written as escapes ("\e", "\n", "\x07", "\x9b"),
// Unicode's bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069)
// as "\u202e", and each byte that is not part of well-formed UTF-8 as "\xff". Everything else,
// UTF-8 included, is kept. Inert text is its own Inert: applying it twice changes nothing.
std::string Inert(std::string_view text);
// 'text', inert: a name quoted in a sentence.
std::string QuotedInert(std::string_view text);
// One word of a command line as a POSIX shell reads it back: as it is when it holds only
// [A-Za-z0-9_@%+=:,./-], else in single quotes (a quote inside becomes '\'').
std::string ShellWord(std::string_view word);
bool IsPlainShellWord(std::string_view word);
// The words joined by spaces, each a ShellWord.
std::string ShellCommandLine(const std::vector<std::string>& words);
// A command line split into words as a POSIX shell splits it, without expanding anything:
// blanks separate words; '...' keeps what it holds as it is; "..." too, except that \ \"
// \$ \` and a backslash-newline are escapes; outside quotes a backslash keeps the next
// character (a trailing one is kept). InvalidArgument, quoting `line`, for an unterminated
// quote.
Result<std::vector<std::string>> SplitShellWords(std::string_view line);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_STRINGS_H_
