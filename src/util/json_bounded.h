// JSON text that footprint did not just write itself, parsed with its nesting bounded.
//
// nlohmann::json parses without recursion, but copying, comparing and writing a document
// recurse once per level of nesting: a text nested 100 000 deep parses, then overflows the
// stack wherever it is used. Text from outside (another tool's database, a footprint database
// someone handed over, a value stored by a program) is parsed here instead: nesting deeper
// than kMaxJsonDepth is refused before nlohmann sees it, by a scan that does not recurse.
#ifndef FOOTPRINT_UTIL_JSON_BOUNDED_H_
#define FOOTPRINT_UTIL_JSON_BOUNDED_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "footprint/status.h"

namespace footprint {

// Far deeper than any document footprint or the tools it reads write (theirs nest a few
// levels), far shallower than what exhausts a thread's stack.
inline constexpr int kMaxJsonDepth = 256;

// `text` as JSON, a discarded value (is_discarded()) when it is not JSON, as
// nlohmann::json::parse(text, nullptr, false) has it. InvalidArgument, one line, when its
// arrays and objects nest deeper than kMaxJsonDepth.
Result<nlohmann::json> ParseBoundedJson(std::string_view text);

// `text` as JSON, or a discarded value (is_discarded()) when it is not JSON or nests deeper
// than kMaxJsonDepth: for stored documents, where one that cannot be read counts as absent,
// as with nlohmann::json::parse(text, nullptr, false).
nlohmann::json ParseStoredJson(std::string_view text);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_JSON_BOUNDED_H_
