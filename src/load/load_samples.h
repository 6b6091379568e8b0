// The samples of `footprint load`: which sample indices each query carries (LoadGen's
// performance sample set and its sample-index seed), and, in accuracy mode, how the command's
// answers score against the known ones and how MLPerf's accuracy log holds them.
//
// Thread-safety: a SampleDraw is used by one thread; the functions are thread-safe.
#ifndef FOOTPRINT_LOAD_LOAD_SAMPLES_H_
#define FOOTPRINT_LOAD_LOAD_SAMPLES_H_

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/load.h"
#include "footprint/status.h"

namespace footprint {

// Draws sample indices with LoadOptions::sample_seed. Performance mode: uniform, with
// replacement, over [0, PerformanceSampleCount) (LoadGen's performance mode); accuracy mode:
// every index of the answers once, in a shuffled order, then none.
class SampleDraw {
 public:
  explicit SampleDraw(const LoadOptions& options);
  // The next index; -1 once accuracy mode has drawn every sample.
  int64_t Next();
  bool exhausted() const { return accuracy_ && next_ >= order_.size(); }

 private:
  bool accuracy_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int64_t> uniform_;
  std::vector<int64_t> order_;  // accuracy mode: the permutation
  size_t next_ = 0;
};

// --answers FILE: one expected answer per line, line k for sample index k (trailing blanks and
// a final newline ignored). InvalidArgument, one line, for a file that cannot be one.
Result<std::vector<std::string>> ReadExpectedAnswers(const std::string& path);

// The answer of each of a query's samples, in its payload's order: the whole RESULT for a
// one-sample query, else RESULT's comma-separated words (trimmed).
std::vector<std::string_view> SampleAnswers(const QueryRecord& query);

// Accuracy mode: the samples answered right against `expected`, over all the samples drawn.
LoadAccuracy ScoreAccuracy(const std::vector<QueryRecord>& queries,
                           const std::vector<std::string>& expected);

// MLPerf's mlperf_log_accuracy.json: a JSON list of {"seq_id", "qsl_idx", "data"}, one per
// answered sample, data the answer's bytes in upper-case hex as LoadGen writes a response.
std::string MlperfAccuracyLog(const std::vector<QueryRecord>& queries);

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_LOAD_SAMPLES_H_
