// Statistics: descriptive statistics of repeated measurements, confidence intervals and the
// two-sample tests `footprint compare` uses. No dependency beyond the C++ library: the Student
// t distribution is computed through the regularized incomplete beta function.
//
// Conventions (docs/cli.md):
// - the standard deviation is the sample one (divisor n - 1);
// - the median and quartiles interpolate linearly between closest ranks (numpy's default);
// - the 95 % confidence interval of the mean is mean ± t(0.975, n-1) · sd / √n;
// - outliers are values outside Tukey's fences [Q1 - 1.5 IQR, Q3 + 1.5 IQR], looked for
//   only when there are at least 4 values;
// - p-values are two-sided.
//
// Thread-safety: pure functions.
#ifndef FOOTPRINT_STATS_H_
#define FOOTPRINT_STATS_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace footprint {

// I_x(a, b) for a, b > 0 and 0 <= x <= 1 (NaN outside that domain).
double RegularizedIncompleteBeta(double a, double b, double x);
// P(T <= t) for Student's t distribution with `df` > 0 degrees of freedom (df may be
// fractional, as Welch's test needs).
double StudentTCdf(double t, double df);
// The t with P(T <= t) = p, for 0 < p < 1.
double StudentTQuantile(double p, double df);
// P(Z <= z) for the standard normal distribution.
double NormalCdf(double z);

// Descriptive statistics of repeated measurements of one figure.
struct Description {
  size_t n = 0;
  double mean = 0, median = 0, min = 0, max = 0;
  std::optional<double> sd;      // sample standard deviation; none for n < 2
  std::optional<double> ci_low;  // 95 % confidence interval of the mean; none for n < 2
  std::optional<double> ci_high;
  double q1 = 0, q3 = 0;         // quartiles (the median's interpolation)
  std::vector<size_t> outliers;  // indices into the input, ascending
};
// Describes `values` (in any order; the indices in `outliers` refer to it). n == 0 gives an
// all-zero Description.
Description Describe(std::span<const double> values);

// The uncertainty of the ratio of two means, other.mean / base.mean, carried to first order
// from the two sample standard deviations (as hyperfine reports "1.33 ± 0.04 times"):
// |ratio| * sqrt((sd_base / mean_base)^2 + (sd_other / mean_other)^2). None when either has
// no standard deviation or a mean of 0.
std::optional<double> RatioSd(const Description& base, const Description& other);

// Robust z-scores (Iglewicz and Hoaglin): (x - median) / MAD, the median absolute deviation
// from the median, one per value in input order. A value whose score is beyond
// kFarOutlierScore (10 standard deviations of normal data, as hyperfine warns at) lies far
// from the rest. MAD == 0 (half the values equal) gives ±infinity for the others, 0 for those.
std::vector<double> ModifiedZScores(std::span<const double> values);
inline constexpr double kFarOutlierScore = 1.4826 * 10.0;

// hyperfine's checks of repeated measurements in the order they were taken, from their
// modified z-scores: the first far above the rest (a cold cache, a first compilation), else
// the indices of every value far from the rest (a busy machine). Nothing below 3 values.
struct FarValues {
  bool first_slow = false;
  std::vector<size_t> far;  // ascending; empty when first_slow
};
FarValues FindFarValues(std::span<const double> values);

// Linear interpolation between closest ranks of sorted data at quantile q in [0, 1].
double SortedQuantile(std::span<const double> sorted, double q);
// The same quantile of unsorted data, by selection (linear time); reorders `values`.
double SelectQuantile(std::vector<double>& values, double q);

// A two-sample test of whether `b` differs from `a`.
struct TestResult {
  std::string_view test;     // "welch" or "mann-whitney"
  double statistic = 0;      // t (b minus a) or U of `a`
  std::optional<double> df;  // Welch-Satterthwaite degrees of freedom (Welch only)
  double p_value = 1;
  bool exact = false;  // Mann-Whitney: from the exact distribution of U
};

// Welch's unequal-variances t-test; both samples need at least 2 values. When both variances
// are 0 the difference is certain: p is 1 for equal means, 0 otherwise.
std::optional<TestResult> WelchTTest(std::span<const double> a, std::span<const double> b);
// Mann-Whitney U test (Wilcoxon rank-sum). Exact p-value when there are no ties and both
// samples hold fewer than 8 values (as SciPy's "auto"); otherwise the normal approximation
// with tie correction and continuity correction. Needs at least 1 value on each side.
std::optional<TestResult> MannWhitneyU(std::span<const double> a, std::span<const double> b);

}  // namespace footprint

#endif  // FOOTPRINT_STATS_H_
