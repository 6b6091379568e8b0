// Formatting for the terminal: values in units people read, aligned tables.
#ifndef FOOTPRINT_CLI_FORMAT_H_
#define FOOTPRINT_CLI_FORMAT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace footprint::cli {

// A metric value in its unit, scaled for people ("1.5 GiB", "250.0 %", "3.2 MiB/s").
std::string FormatValue(std::string_view unit, double value);
// "2026-11-22 03:40:12" (UTC) from ns since the epoch.
std::string FormatUtc(int64_t ns);

// Columns padded to their widest cell. `right` names the right-aligned columns (numbers).
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<size_t> right = {})
      : rows_{std::move(header)}, right_(std::move(right)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, std::string_view indent = "") const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> right_;
};

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_FORMAT_H_
