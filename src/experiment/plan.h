// Internals of plan parsing shared by the parser and the CSV status writer.
#ifndef FOOTPRINT_EXPERIMENT_PLAN_H_
#define FOOTPRINT_EXPERIMENT_PLAN_H_

#include <string>
#include <string_view>
#include <vector>

#include "footprint/status.h"

namespace footprint::experiment {

// One field of a CSV record: `raw` exactly as written (blanks and quotes included), `value`
// unquoted and trimmed.
struct CsvField {
  std::string raw;
  std::string value;
};

struct CsvRecord {
  int line = 0;  // 1-based line where the record starts
  std::vector<CsvField> fields;
};

// Splits CSV text into records: ',' separates fields, a field may be double-quoted (with ""
// for a quote, and commas or newlines inside), blanks around fields are not part of the value.
// Blank lines and lines starting with '#' are skipped. InvalidArgument for an unterminated
// quote or text after a closing quote.
Result<std::vector<CsvRecord>> TokenizeCsv(std::string_view text);

// A field for a CSV file: quoted when it holds a comma, quote, newline or edge blanks.
std::string CsvQuote(std::string_view value);

}  // namespace footprint::experiment

#endif  // FOOTPRINT_EXPERIMENT_PLAN_H_
