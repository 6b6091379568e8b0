#include "footprint/scan.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace footprint {
namespace {

Status CheckName(std::string_view name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  const bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                  std::all_of(name.begin(), name.end(), word);
  if (ok) return Status::Ok();
  return InvalidArgument("parameter name '" + std::string(name) +
                         "' must be letters, digits and _, not starting with a digit (it is "
                         "written {NAME} in the command)");
}

struct Decimal {
  double value;
  int decimals;  // digits after the point, as written
};

Result<Decimal> ParseDecimal(std::string_view text, std::string_view what) {
  Decimal d{0, 0};
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), d.value, std::chars_format::fixed);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(d.value)) {
    return InvalidArgument(std::string(what) + " '" + std::string(text) +
                           "' is not a decimal number");
  }
  if (size_t dot = text.find('.'); dot != std::string_view::npos) {
    d.decimals = static_cast<int>(text.size() - dot - 1);
  }
  return d;
}

}  // namespace

Result<ScanParameter> RangeParameter(std::string_view name, std::string_view min,
                                     std::string_view max, std::string_view step) {
  FP_RETURN_IF_ERROR(CheckName(name));
  const std::string what = "-P " + std::string(name);
  FP_ASSIGN_OR_RETURN(Decimal lo, ParseDecimal(min, what + ": MIN"));
  FP_ASSIGN_OR_RETURN(Decimal hi, ParseDecimal(max, what + ": MAX"));
  FP_ASSIGN_OR_RETURN(Decimal by, ParseDecimal(step, what + ": the step -D"));
  if (lo.value > hi.value) {
    return InvalidArgument(what + ": MIN " + std::string(min) + " is above MAX " +
                           std::string(max));
  }
  if (by.value <= 0) return InvalidArgument(what + ": the step -D must be above 0");
  const double count = std::floor((hi.value - lo.value) / by.value + 1e-6) + 1;
  if (count > static_cast<double>(kMaxScanValues)) {
    return InvalidArgument(what + ": " + std::to_string(static_cast<long long>(count)) +
                           " values, more than " + std::to_string(kMaxScanValues));
  }
  const int decimals = std::max({lo.decimals, hi.decimals, by.decimals});
  ScanParameter p{std::string(name), {}};
  for (int i = 0; i < static_cast<int>(count); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, lo.value + i * by.value);
    p.values.emplace_back(buf);
  }
  return p;
}

Result<ScanParameter> ListParameter(std::string_view name, std::string_view values) {
  FP_RETURN_IF_ERROR(CheckName(name));
  ScanParameter p{std::string(name), {}};
  for (size_t start = 0;;) {
    const size_t comma = values.find(',', start);
    std::string_view value = values.substr(start, comma - start);
    if (value.empty()) {
      return InvalidArgument("-L " + std::string(name) + " " + std::string(values) +
                             ": an empty value (list them as a,b,c)");
    }
    p.values.emplace_back(value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (p.values.size() > kMaxScanValues) {
    return InvalidArgument("-L " + std::string(name) + ": more than " +
                           std::to_string(kMaxScanValues) + " values");
  }
  return p;
}

Result<std::vector<std::map<std::string, std::string>>> ScanCombinations(
    const std::vector<ScanParameter>& parameters) {
  std::vector<std::map<std::string, std::string>> out(1);
  for (const ScanParameter& p : parameters) {
    if (out[0].contains(p.name)) {
      return InvalidArgument("parameter '" + p.name + "' is scanned twice");
    }
    if (out.size() * p.values.size() > kMaxScanValues) {
      return InvalidArgument("the scan has more than " + std::to_string(kMaxScanValues) +
                             " combinations of parameters");
    }
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& combination : out) {
      for (const std::string& value : p.values) {
        next.push_back(combination);
        next.back()[p.name] = value;
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string SubstituteParameters(std::string_view text,
                                 const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t open = text.find('{', i);
    const size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    auto it = values.find(std::string(text.substr(open + 1, close - open - 1)));
    if (it != values.end()) {
      out += it->second;
      i = close + 1;
    } else {
      out += '{';  // not a parameter: the brace stays, and the text after it is looked at
      i = open + 1;
    }
  }
  return out;
}

}  // namespace footprint
