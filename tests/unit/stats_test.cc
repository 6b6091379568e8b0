// Statistics against reference values computed with SciPy 1.10 (scipy.special.betainc,
// scipy.stats.t, ttest_ind(equal_var=False), mannwhitneyu). tests/integration/test_stats.py
// checks the same functions end to end against SciPy on more data.
#include "footprint/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace footprint {
namespace {

TEST(RegularizedIncompleteBeta, MatchesSciPy) {
  EXPECT_NEAR(RegularizedIncompleteBeta(2, 3, 0.4), 0.5248, 1e-13);
  EXPECT_NEAR(RegularizedIncompleteBeta(0.5, 0.5, 0.1), 0.2048327646991335, 1e-13);
  EXPECT_NEAR(RegularizedIncompleteBeta(10, 0.5, 0.9), 0.15164090963470997, 1e-13);
  EXPECT_NEAR(RegularizedIncompleteBeta(50, 50, 0.45), 0.15865219893709973, 1e-12);
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 0), 0);
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 1), 1);
  EXPECT_TRUE(std::isnan(RegularizedIncompleteBeta(-1, 3, 0.5)));
  EXPECT_TRUE(std::isnan(RegularizedIncompleteBeta(2, 3, 1.5)));
}

TEST(StudentT, QuantilesAndCdfMatchSciPy) {
  struct Case {
    double df, q975, cdf_minus_2_5;
  };
  const Case cases[] = {{1, 12.706204736432095, 0.12111894159084335},
                        {2, 4.302652729911275, 0.0648058601107554},
                        {4, 2.7764451051977987, 0.03338327240599406},
                        {9.5, 2.244137461457777, 0.016292528894802167},
                        {30, 2.0422724563012373, 0.009057824534033353},
                        {1000, 1.9623390808264074, 0.006289283900545397}};
  for (const Case& c : cases) {
    EXPECT_NEAR(StudentTQuantile(0.975, c.df), c.q975, 1e-9 * c.q975) << c.df;
    EXPECT_NEAR(StudentTQuantile(0.025, c.df), -c.q975, 1e-9 * c.q975) << c.df;
    EXPECT_NEAR(StudentTCdf(-2.5, c.df), c.cdf_minus_2_5, 1e-12) << c.df;
    EXPECT_NEAR(StudentTCdf(2.5, c.df), 1 - c.cdf_minus_2_5, 1e-12) << c.df;
  }
  EXPECT_EQ(StudentTCdf(0, 3), 0.5);
  EXPECT_EQ(StudentTQuantile(0.5, 3), 0);
  EXPECT_TRUE(std::isnan(StudentTQuantile(1, 3)));
}

TEST(Describe, MeanSdMedianConfidenceInterval) {
  const std::vector<double> x = {3, 1, 4, 1, 5, 9, 2, 6};
  Description d = Describe(x);
  EXPECT_EQ(d.n, 8u);
  EXPECT_DOUBLE_EQ(d.mean, 3.875);
  ASSERT_TRUE(d.sd);
  EXPECT_NEAR(*d.sd, 2.748376143938713, 1e-12);
  EXPECT_DOUBLE_EQ(d.median, 3.5);
  EXPECT_DOUBLE_EQ(d.q1, 1.75);
  EXPECT_DOUBLE_EQ(d.q3, 5.25);
  EXPECT_EQ(d.min, 1);
  EXPECT_EQ(d.max, 9);
  ASSERT_TRUE(d.ci_low && d.ci_high);
  EXPECT_NEAR(*d.ci_low, 1.5773000437252445, 1e-9);
  EXPECT_NEAR(*d.ci_high, 6.172699956274755, 1e-9);
  EXPECT_TRUE(d.outliers.empty());  // 9 < 5.25 + 1.5 * 3.5
}

TEST(Describe, TukeyOutliersByIndex) {
  const std::vector<double> x = {10, 11, 10.5, 30, 10.2, 10.8, 1};
  Description d = Describe(x);
  EXPECT_EQ(d.outliers, (std::vector<size_t>{3, 6}));
  // Fewer than 4 values: no outlier is looked for.
  EXPECT_TRUE(Describe(std::vector<double>{1, 1, 100}).outliers.empty());
}

TEST(RatioSd, FirstOrderPropagationOfBothSpreads) {
  Description base, other;
  base.mean = 2.0;
  base.sd = 0.1;  // 5 %
  other.mean = 3.0;
  other.sd = 0.36;  // 12 %
  ASSERT_TRUE(RatioSd(base, other));
  EXPECT_NEAR(*RatioSd(base, other), 1.5 * 0.13, 1e-12);  // sqrt(5² + 12²) = 13 %
  other.sd.reset();
  EXPECT_FALSE(RatioSd(base, other));  // a single run has no spread to carry
  base.mean = 0;
  EXPECT_FALSE(RatioSd(base, base));
}

TEST(ModifiedZScores, MedianAbsoluteDeviationUnits) {
  // median 1.0; absolute deviations 0, .1, .1, 0, 2: MAD 0.1.
  const std::vector<double> scores = ModifiedZScores(std::vector<double>{1.0, 1.1, 0.9, 1.0, 3.0});
  ASSERT_EQ(scores.size(), 5u);
  EXPECT_DOUBLE_EQ(scores[0], 0);
  EXPECT_NEAR(scores[1], 1, 1e-9);
  EXPECT_NEAR(scores[2], -1, 1e-9);
  EXPECT_NEAR(scores[4], 20, 1e-9);
  EXPECT_GT(scores[4], kFarOutlierScore);
  // Half the values equal: MAD 0, the others infinitely far, the equal ones not at all.
  const std::vector<double> flat = ModifiedZScores(std::vector<double>{1, 1, 1, 2, 0.5});
  EXPECT_EQ(flat[0], 0);
  EXPECT_EQ(flat[3], std::numeric_limits<double>::infinity());
  EXPECT_EQ(flat[4], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(ModifiedZScores(std::vector<double>{}).empty());
}

TEST(FindFarValues, FirstSlowElseEveryFarOne) {
  // The first of a group 20 MADs above the median: a slow first run, and nothing else said.
  FarValues first = FindFarValues(std::vector<double>{3.0, 1.0, 1.1, 0.9, 1.0});
  EXPECT_TRUE(first.first_slow);
  EXPECT_TRUE(first.far.empty());
  // A later one far off (either way) is listed; the first far *below* is not a slow start.
  FarValues later = FindFarValues(std::vector<double>{1.0, 1.1, 0.9, 1.0, 3.0, -1.0});
  EXPECT_FALSE(later.first_slow);
  EXPECT_EQ(later.far, (std::vector<size_t>{4, 5}));
  EXPECT_EQ(FindFarValues(std::vector<double>{-1.0, 1.1, 0.9, 1.0, 1.0}).far,
            (std::vector<size_t>{0}));
  // Within 14.8 MADs (here 10): nothing to say; under 3 values: nothing looked for.
  FarValues calm = FindFarValues(std::vector<double>{1.0, 1.1, 0.9, 1.0, 2.0});
  EXPECT_FALSE(calm.first_slow);
  EXPECT_TRUE(calm.far.empty());
  EXPECT_FALSE(FindFarValues(std::vector<double>{100, 1}).first_slow);
}

TEST(Describe, SmallSamplesHaveNoSpread) {
  Description one = Describe(std::vector<double>{42});
  EXPECT_EQ(one.mean, 42);
  EXPECT_EQ(one.median, 42);
  EXPECT_FALSE(one.sd);
  EXPECT_FALSE(one.ci_low);
  EXPECT_EQ(Describe(std::vector<double>{}).n, 0u);
}

TEST(SelectQuantile, AgreesWithSortedQuantile) {
  std::vector<double> v;
  for (int i = 0; i < 1001; ++i) v.push_back(std::fmod(i * 7919.0, 1009.0));
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.0, 0.05, 0.5, 0.95, 0.999, 1.0}) {
    std::vector<double> copy = v;
    EXPECT_DOUBLE_EQ(SelectQuantile(copy, q), SortedQuantile(sorted, q)) << q;
  }
}

TEST(WelchTTest, MatchesSciPy) {
  const std::vector<double> a = {10.1, 10.3, 9.9, 10.0, 10.2};
  const std::vector<double> b = {11.0, 10.8, 11.4, 10.9};
  auto r = WelchTTest(a, b);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->test, "welch");
  EXPECT_NEAR(r->statistic, 6.195415851264024, 1e-10);  // b minus a
  EXPECT_NEAR(r->p_value, 0.002003986778952551, 1e-12);
  ASSERT_TRUE(r->df);
  EXPECT_GT(*r->df, 4);
  EXPECT_LT(*r->df, 7);
  EXPECT_FALSE(WelchTTest(std::vector<double>{1}, b));
}

TEST(WelchTTest, NoSpreadIsCertain) {
  const std::vector<double> same = {5, 5, 5};
  EXPECT_EQ(WelchTTest(same, same)->p_value, 1);
  EXPECT_EQ(WelchTTest(same, std::vector<double>{6, 6})->p_value, 0);
}

TEST(MannWhitneyU, ExactWithoutTies) {
  const std::vector<double> a = {10.1, 10.3, 9.9, 10.0, 10.2};
  const std::vector<double> b = {11.0, 10.8, 11.4, 10.9};
  auto r = MannWhitneyU(a, b);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->exact);
  EXPECT_EQ(r->statistic, 0);
  EXPECT_NEAR(r->p_value, 0.015873015873015872, 1e-14);
  // 3 against 3 can never reach 0.05: the smallest two-sided p is 2/20.
  EXPECT_NEAR(MannWhitneyU(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6})->p_value,
              0.1, 1e-14);
}

TEST(MannWhitneyU, NormalApproximationWithTies) {
  const std::vector<double> a = {1, 2, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> b = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12};
  auto r = MannWhitneyU(a, b);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->exact);
  EXPECT_EQ(r->statistic, 24.5);
  EXPECT_NEAR(r->p_value, 0.03411273712347272, 1e-12);
}

}  // namespace
}  // namespace footprint
