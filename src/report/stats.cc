#include "footprint/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace footprint {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The continued fraction of I_x(a, b) (modified Lentz), converging fast for
// x < (a + 1) / (a + b + 2).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-16;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

std::vector<double> Sorted(std::span<const double> values) {
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

double Mean(std::span<const double> v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Sample variance (divisor n - 1), two-pass for accuracy.
double Variance(std::span<const double> v, double mean) {
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

// Number of arrangements of m values of one sample among n of the other with U = k, for every
// k in [0, m·n]: the coefficients of the Gaussian binomial [m+n choose m]_q =
// Π_{i=1..m} (1 - q^(n+i)) / (1 - q^i), built one factor at a time (each partial product is a
// polynomial, so the division is exact).
std::vector<double> ExactUCounts(size_t m, size_t n) {
  std::vector<double> c(m * n + 1, 0.0);
  c[0] = 1;
  for (size_t i = 1; i <= m; ++i) {
    const size_t up = n + i;
    for (size_t k = c.size(); k-- > up;) c[k] -= c[k - up];  // times (1 - q^(n+i))
    for (size_t k = i; k < c.size(); ++k) c[k] += c[k - i];  // divided by (1 - q^i)
  }
  return c;
}

}  // namespace

double RegularizedIncompleteBeta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return kNaN;
  if (x == 0) return 0;
  if (x == 1) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double StudentTCdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
  const double tail = 0.5 * RegularizedIncompleteBeta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

double StudentTQuantile(double p, double df) {
  if (!(p > 0) || !(p < 1) || !(df > 0)) return kNaN;
  if (p == 0.5) return 0;
  if (p < 0.5) return -StudentTQuantile(1 - p, df);
  double lo = 0, hi = 1;
  while (StudentTCdf(hi, df) < p && hi < 1e300) hi *= 2;
  for (int i = 0; i < 300 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (StudentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double SortedQuantile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double SelectQuantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(values.begin(), nth, values.end());
  const double low = *nth;
  if (lo + 1 >= values.size() || pos == static_cast<double>(lo)) return low;
  const double high = *std::min_element(nth + 1, values.end());  // the next rank up
  return low + (high - low) * (pos - static_cast<double>(lo));
}

Description Describe(std::span<const double> values) {
  Description d;
  d.n = values.size();
  if (d.n == 0) return d;
  const std::vector<double> sorted = Sorted(values);
  d.min = sorted.front();
  d.max = sorted.back();
  d.mean = Mean(values);
  d.median = SortedQuantile(sorted, 0.5);
  d.q1 = SortedQuantile(sorted, 0.25);
  d.q3 = SortedQuantile(sorted, 0.75);
  if (d.n >= 2) {
    d.sd = std::sqrt(Variance(values, d.mean));
    const double half =
        StudentTQuantile(0.975, static_cast<double>(d.n - 1)) * *d.sd / std::sqrt(d.n);
    d.ci_low = d.mean - half;
    d.ci_high = d.mean + half;
  }
  if (d.n >= 4) {
    const double iqr = d.q3 - d.q1;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] < d.q1 - 1.5 * iqr || values[i] > d.q3 + 1.5 * iqr) d.outliers.push_back(i);
    }
  }
  return d;
}

std::optional<double> RatioSd(const Description& base, const Description& other) {
  if (!base.sd || !other.sd || base.mean == 0 || other.mean == 0) return std::nullopt;
  return std::abs(other.mean / base.mean) *
         std::hypot(*base.sd / base.mean, *other.sd / other.mean);
}

std::vector<double> ModifiedZScores(std::span<const double> values) {
  std::vector<double> scores(values.begin(), values.end());
  if (scores.empty()) return scores;
  const double median = SortedQuantile(Sorted(values), 0.5);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::abs(v - median));
  const double mad = SelectQuantile(deviations, 0.5);
  for (double& s : scores) {
    const double off = s - median;
    s = off == 0  ? 0
        : mad > 0 ? off / mad
                  : std::copysign(std::numeric_limits<double>::infinity(), off);
  }
  return scores;
}

FarValues FindFarValues(std::span<const double> values) {
  FarValues out;
  if (values.size() < 3) return out;
  const std::vector<double> scores = ModifiedZScores(values);
  if (scores[0] > kFarOutlierScore) {
    out.first_slow = true;
    return out;
  }
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::abs(scores[i]) > kFarOutlierScore) out.far.push_back(i);
  }
  return out;
}

std::optional<TestResult> WelchTTest(std::span<const double> a, std::span<const double> b) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double ma = Mean(a), mb = Mean(b);
  const double sa = Variance(a, ma) / static_cast<double>(a.size());
  const double sb = Variance(b, mb) / static_cast<double>(b.size());
  TestResult r;
  r.test = "welch";
  if (sa + sb == 0) {  // no spread at all: the means either are the same or certainly differ
    r.statistic = ma == mb ? 0 : std::copysign(std::numeric_limits<double>::infinity(), mb - ma);
    r.p_value = ma == mb ? 1 : 0;
    return r;
  }
  r.statistic = (mb - ma) / std::sqrt(sa + sb);
  const double df =
      (sa + sb) * (sa + sb) /
      (sa * sa / static_cast<double>(a.size() - 1) + sb * sb / static_cast<double>(b.size() - 1));
  r.df = df;
  const double t2 = r.statistic * r.statistic;
  r.p_value = RegularizedIncompleteBeta(df / 2, 0.5, df / (df + t2));
  return r;
}

std::optional<TestResult> MannWhitneyU(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  // Ranks of the pooled sample, ties getting their average rank.
  std::vector<std::pair<double, size_t>> pooled;  // value, index (< n1: from a)
  pooled.reserve(n);
  for (size_t i = 0; i < n1; ++i) pooled.emplace_back(a[i], i);
  for (size_t i = 0; i < n2; ++i) pooled.emplace_back(b[i], n1 + i);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second < n1) rank_sum_a += rank;
    }
    i = j;
  }
  const double nn1 = static_cast<double>(n1), nn2 = static_cast<double>(n2);
  const double u1 = rank_sum_a - nn1 * (nn1 + 1) / 2;
  const double u = std::max(u1, nn1 * nn2 - u1);
  TestResult r;
  r.test = "mann-whitney";
  r.statistic = u1;
  if (tie_term == 0 && std::min(n1, n2) <= 8) {
    // Two-sided: twice P(U >= max(U1, U2)).
    const std::vector<double> counts = ExactUCounts(std::min(n1, n2), std::max(n1, n2));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double upper = 0;
    for (size_t k = static_cast<size_t>(std::llround(u)); k < counts.size(); ++k) {
      upper += counts[k];
    }
    r.p_value = std::min(1.0, 2 * upper / total);
    r.exact = true;
    return r;
  }
  const double nt = static_cast<double>(n);
  const double sd = std::sqrt(nn1 * nn2 / 12 * ((nt + 1) - tie_term / (nt * (nt - 1))));
  const double z = (u - nn1 * nn2 / 2 - 0.5) / sd;  // continuity correction
  // Two-sided: twice the upper tail, computed as erfc so that small p-values keep their digits.
  r.p_value = sd > 0 ? std::min(1.0, std::erfc(z / std::sqrt(2.0))) : 1.0;
  return r;
}

}  // namespace footprint
