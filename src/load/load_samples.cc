#include "load/load_samples.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {

SampleDraw::SampleDraw(const LoadOptions& options)
    : accuracy_(options.accuracy),
      rng_(options.sample_seed),
      uniform_(0, PerformanceSampleCount(options) - 1) {
  if (!accuracy_) return;
  order_.resize(options.expected_answers.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  std::shuffle(order_.begin(), order_.end(), rng_);
}

int64_t SampleDraw::Next() {
  if (!accuracy_) return uniform_(rng_);
  return next_ < order_.size() ? order_[next_++] : -1;
}

Result<std::vector<std::string>> ReadExpectedAnswers(const std::string& path) {
  constexpr size_t kMaxAnswersBytes = size_t{1} << 30;
  Result<std::string> read = ReadInputFile(path, kMaxAnswersBytes, "the answers file");
  // A file that cannot be read is a wrong --answers, not footprint failing: exit 2.
  if (!read.ok()) return InvalidArgument(read.status().message());
  const std::string& text = *read;
  std::vector<std::string> answers;
  for (std::string_view line : Split(text, '\n')) answers.emplace_back(Trim(line));
  while (!answers.empty() && answers.back().empty()) answers.pop_back();
  if (answers.empty()) {
    return InvalidArgument("the answers file " + Inert(path) +
                           " holds no answer: give one expected answer per line, line k for "
                           "sample index k");
  }
  return answers;
}

std::vector<std::string_view> SampleAnswers(const QueryRecord& query) {
  if (query.sample_indices.size() <= 1) return {Trim(query.result)};
  std::vector<std::string_view> answers = Split(query.result, ',');
  for (std::string_view& a : answers) a = Trim(a);
  return answers;
}

LoadAccuracy ScoreAccuracy(const std::vector<QueryRecord>& queries,
                           const std::vector<std::string>& expected) {
  LoadAccuracy score;
  for (const QueryRecord& q : queries) {
    score.samples += static_cast<int64_t>(q.sample_indices.size());
    if (!q.completed_ns) continue;
    const std::vector<std::string_view> answers = SampleAnswers(q);
    for (size_t k = 0; k < q.sample_indices.size() && k < answers.size(); ++k) {
      const auto index = static_cast<size_t>(q.sample_indices[k]);
      score.correct += index < expected.size() && answers[k] == expected[index] ? 1 : 0;
    }
  }
  if (score.samples > 0) {
    score.fraction = static_cast<double>(score.correct) / static_cast<double>(score.samples);
  }
  return score;
}

std::string MlperfAccuracyLog(const std::vector<QueryRecord>& queries) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  nlohmann::json log = nlohmann::json::array();
  int64_t seq_id = 0;  // the samples' order of issue, as LoadGen's sequence ids
  for (const QueryRecord& q : queries) {
    const std::vector<std::string_view> answers =
        q.completed_ns ? SampleAnswers(q) : std::vector<std::string_view>{};
    for (size_t k = 0; k < q.sample_indices.size(); ++k, ++seq_id) {
      if (k >= answers.size()) continue;
      std::string hex;
      for (unsigned char c : answers[k]) hex.append({kHex[c >> 4], kHex[c & 15]});
      log.push_back({{"seq_id", seq_id}, {"qsl_idx", q.sample_indices[k]}, {"data", hex}});
    }
  }
  return JsonText(log, 1) + "\n";
}

}  // namespace footprint
