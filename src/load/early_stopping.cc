// Early stopping as MLPerf LoadGen judges it (include/footprint/load.h): a percentile claim
// holds with 99 % confidence when so few queries were over it that a system whose true
// percentile were worse would rarely have shown so few. Written from LoadGen's published rule
// (a binomial tail, confidence 0.99, no tolerance), not from its code.
#include <cmath>
#include <string>

#include "footprint/load.h"
#include "util/strings.h"

namespace footprint {
namespace {

constexpr double kConfidence = 0.99;  // LoadGen's

// The chance that at most `over` of `under + over` queries are over the bound when each is
// over it, independently, with probability 1 - percentile: the binomial CDF, summed in logs
// so that a million queries neither underflow nor overflow.
double ChanceOfAtMostOver(int64_t under, int64_t over, double percentile) {
  const double n = static_cast<double>(under + over);
  const double log_odds_over = std::log((1 - percentile) / percentile);
  double log_term = n * std::log(percentile);  // none over
  double log_sum = log_term;
  for (int64_t k = 0; k < over; ++k) {
    const double kd = static_cast<double>(k);
    log_term += std::log((n - kd) / (kd + 1)) + log_odds_over;
    const double high = std::max(log_sum, log_term);
    log_sum = high + std::log(std::exp(log_sum - high) + std::exp(log_term - high));
  }
  return std::exp(log_sum);
}

std::string PercentileName(double percentile) {
  char text[16];
  std::snprintf(text, sizeof text, "p%g", percentile * 100);
  return text;
}

// Single and multi: the largest count of highest latencies LoadGen would discard, t >= 1 with
// t + PassingQueriesNeeded(t) <= n (both grow with t: a binary search); 0 when even one is too
// many for n queries.
int64_t LargestDiscard(int64_t n, double percentile) {
  auto fits = [&](int64_t t) { return t + PassingQueriesNeeded(t, percentile) <= n; };
  if (!fits(1)) return 0;
  int64_t fitting = 1, failing = n + 1;  // fits(n + 1) is false: no passing query is left
  while (failing - fitting > 1) {
    const int64_t mid = fitting + (failing - fitting) / 2;
    (fits(mid) ? fitting : failing) = mid;
  }
  return fitting;
}

}  // namespace

int64_t PassingQueriesNeeded(int64_t over, double percentile) {
  auto enough = [&](int64_t under) {
    return ChanceOfAtMostOver(under, over, percentile) < 1 - kConfidence;
  };
  int64_t high = 1;
  while (!enough(high)) high *= 2;  // the chance falls towards 0 as `under` grows
  int64_t low = high / 2;           // !enough(low), or low == 0
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    (enough(mid) ? high : low) = mid;
  }
  return high;
}

EarlyStopping JudgeEarlyStopping(Scenario scenario, double percentile,
                                 const std::vector<double>& sorted_latencies, int64_t issued,
                                 std::optional<double> bound_s) {
  EarlyStopping e;
  const std::string claim = "a " + PercentileName(percentile) + " claim";
  const auto answered = static_cast<int64_t>(sorted_latencies.size());
  if (scenario == Scenario::kOffline) return e;  // judged by throughput: no percentile claim
  if (scenario == Scenario::kServer) {
    if (!bound_s) {
      e.sentence = "no early stopping without --latency-bound: it counts the queries over it";
      return e;
    }
    for (double latency : sorted_latencies) e.over_bound += latency > *bound_s ? 1 : 0;
    e.over_bound += issued - answered;  // an unanswered query is over any bound
    e.needed = e.over_bound + PassingQueriesNeeded(e.over_bound, percentile);
    e.met = issued >= e.needed;
    e.sentence = std::to_string(issued) + " queries, " + std::to_string(e.over_bound) +
                 " over the bound: " + (e.met ? "enough" : "too few") + " for " + claim +
                 " (LoadGen's early stopping needs " + std::to_string(e.needed) + " with " +
                 std::to_string(e.over_bound) + " over it)";
    return e;
  }
  e.needed = 1 + PassingQueriesNeeded(1, percentile);
  const int64_t discard = LargestDiscard(answered, percentile);
  e.met = discard > 0 && answered == issued;
  if (discard > 0) e.estimate_s = sorted_latencies[static_cast<size_t>(answered - discard)];
  e.sentence = std::to_string(answered) + " queries answered: " + (e.met ? "enough" : "too few") +
               " for " + claim + " (LoadGen's early stopping needs " + std::to_string(e.needed) +
               ")";
  if (e.estimate_s) {
    e.sentence += "; its estimate of the " + PercentileName(percentile) + " latency, " +
                  FormatDuration(*e.estimate_s) + ", sets aside the " +
                  std::to_string(discard - 1) + " highest";
  }
  return e;
}

}  // namespace footprint
