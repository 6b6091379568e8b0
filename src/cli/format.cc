#include "cli/format.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "util/strings.h"

namespace footprint::cli {

std::string FormatValue(std::string_view unit, double v) {
  char buf[48];
  if (unit == "bytes") return FormatBytes(v);
  if (unit == "bytes/s") return FormatBytes(v) + "/s";
  if (unit == "s") return FormatDuration(v);
  if (unit == "count") {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (unit == "%") {
    std::snprintf(buf, sizeof buf, "%.1f %%", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g %.*s", v, static_cast<int>(unit.size()), unit.data());
  }
  return buf;
}

std::string FormatUtc(int64_t ns) {
  time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm utc;
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &utc);
  return buf;
}

void Table::Print(std::ostream& out, std::string_view indent) const {
  size_t cols = 0;
  for (const auto& r : rows_) cols = std::max(cols, r.size());
  std::vector<size_t> width(cols, 0);
  for (const auto& r : rows_) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows_) {
    std::string line(indent);
    for (size_t c = 0; c < r.size(); ++c) {
      size_t pad = width[c] - r[c].size();
      bool right = std::find(right_.begin(), right_.end(), c) != right_.end();
      if (right) line.append(pad, ' ');
      line += r[c];
      if (!right) line.append(pad, ' ');
      if (c + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace footprint::cli
