#include "predict/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

namespace footprint::predict {
namespace {

// An operand's labels, an ellipsis as the one label '.' (expanded per operand below).
std::optional<std::vector<std::string>> SplitTerms(std::string_view side) {
  std::vector<std::string> terms(1);
  for (size_t i = 0; i < side.size(); ++i) {
    const char c = side[i];
    if (c == ',') {
      terms.emplace_back();
    } else if (c == '.') {
      if (side.substr(i, 3) != "...") return std::nullopt;
      terms.back() += '.';
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      terms.back() += c;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  return terms;
}

// An ellipsis of `rank` dimensions as labels, aligned from the right: ..., '1', '0'.
std::string EllipsisLabels(size_t rank) {
  std::string labels;
  for (size_t k = rank; k > 0; --k) labels += static_cast<char>('0' + (k - 1));
  return labels;
}

// Label -> size; the ellipsis's dimensions as labels '0', '1', ... counted from the right.
using Sizes = std::map<char, int64_t>;

bool Bind(Sizes& sizes, char label, int64_t size) {
  auto [it, fresh] = sizes.emplace(label, size);
  if (fresh || it->second == size || size == 1) return true;
  if (it->second != 1) return false;
  it->second = size;  // broadcast: 1 against n
  return true;
}

// The labels `term` stands for over an operand of `rank`, its ellipsis expanded; false where
// they do not fit the rank.
bool Expand(const std::string& term, size_t rank, std::string& labels, size_t& ellipsis_rank) {
  const auto ellipses = static_cast<size_t>(std::count(term.begin(), term.end(), '.'));
  if (ellipses > 1) return false;  // one ellipsis a term, as ONNX allows
  const size_t explicit_labels = term.size() - ellipses;
  if (explicit_labels > rank || (explicit_labels < rank && term.find('.') == std::string::npos)) {
    return false;
  }
  const size_t hidden = rank - explicit_labels;
  if (hidden > 9) return false;  // its labels '0' to '8' stay apart from the letters
  ellipsis_rank = std::max(ellipsis_rank, hidden);
  labels.clear();
  for (char c : term) {
    if (c != '.') {
      labels += c;
      continue;
    }
    labels += EllipsisLabels(hidden);
  }
  return true;
}

}  // namespace

std::optional<EinsumWork> ReadEinsum(std::string_view equation,
                                     const std::vector<std::vector<int64_t>>& input_dims) {
  const size_t arrow = equation.find("->");
  auto inputs = SplitTerms(equation.substr(0, arrow));
  if (!inputs || inputs->size() != input_dims.size() || input_dims.size() > 8) return std::nullopt;
  Sizes sizes;
  std::map<char, int> uses;
  size_t ellipsis_rank = 0;
  for (size_t i = 0; i < inputs->size(); ++i) {
    std::string labels;
    if (!Expand((*inputs)[i], input_dims[i].size(), labels, ellipsis_rank)) return std::nullopt;
    for (size_t d = 0; d < labels.size(); ++d) {
      if (input_dims[i][d] < 0 || !Bind(sizes, labels[d], input_dims[i][d])) return std::nullopt;
      ++uses[labels[d]];
    }
  }
  std::string out;
  if (arrow == std::string_view::npos) {  // implicit: the ellipsis, then labels used once, sorted
    out = EllipsisLabels(ellipsis_rank);
    for (const auto& [label, n] : uses) {
      if (n == 1 && std::isalpha(static_cast<unsigned char>(label))) out += label;
    }
  } else {
    auto terms = SplitTerms(equation.substr(arrow + 2));
    if (!terms || terms->size() != 1) return std::nullopt;
    for (char c : (*terms)[0]) {  // the output's ellipsis: the widest of the inputs'
      if (c != '.') {
        out += c;
        continue;
      }
      out += EllipsisLabels(ellipsis_rank);
    }
  }
  EinsumWork work;
  double space = 1;
  for (const auto& [label, size] : sizes) space *= static_cast<double>(size);
  for (char label : out) {
    auto it = sizes.find(label);
    if (it == sizes.end()) return std::nullopt;  // an output label no input has
    work.output_dims.push_back(it->second);
  }
  const bool summed = std::any_of(sizes.begin(), sizes.end(), [&](const auto& s) {
    return out.find(s.first) == std::string::npos;
  });
  work.macs = summed ? space : 0;
  work.products = summed ? 0 : space * static_cast<double>(input_dims.size() - 1);
  return work;
}

}  // namespace footprint::predict
