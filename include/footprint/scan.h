// Parameter scans (footprint run -P/-L, as hyperfine's): the values a parameter takes, every
// combination of several, and {NAME} in a command replaced by a combination's values.
//
// Thread-safety: pure functions.
#ifndef FOOTPRINT_SCAN_H_
#define FOOTPRINT_SCAN_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/status.h"

namespace footprint {

struct ScanParameter {
  std::string name;                 // [A-Za-z_][A-Za-z0-9_]*, used as {name}
  std::vector<std::string> values;  // in the order they are run
};

// At most this many values per parameter and combinations per scan: a typo in a range
// (-P n 1 100000) must not start a day of runs.
inline constexpr size_t kMaxScanValues = 1000;

// -P NAME MIN MAX [-D STEP]: MIN, MIN + STEP, ... up to MAX (which is included when a step
// lands on it, within a millionth of a step). Numbers are decimal; each value is written
// with as many decimals as the most precise of MIN, MAX and STEP ("0.5", not "0.500000").
// InvalidArgument for a bad name or number, MIN > MAX, STEP <= 0 or too many values.
Result<ScanParameter> RangeParameter(std::string_view name, std::string_view min,
                                     std::string_view max, std::string_view step = "1");
// -L NAME a,b,c: the comma-separated values as given. InvalidArgument for a bad name, an
// empty value or too many values.
Result<ScanParameter> ListParameter(std::string_view name, std::string_view values);

// Every combination of the parameters' values, the first parameter varying slowest (the
// order of nested loops over the parameters as given). One empty combination for no
// parameters. InvalidArgument for a name given twice or more than kMaxScanValues
// combinations.
Result<std::vector<std::map<std::string, std::string>>> ScanCombinations(
    const std::vector<ScanParameter>& parameters);

// `text` with each {NAME} of `values` replaced by its value; other braces stay as they are.
std::string SubstituteParameters(std::string_view text,
                                 const std::map<std::string, std::string>& values);

}  // namespace footprint

#endif  // FOOTPRINT_SCAN_H_
