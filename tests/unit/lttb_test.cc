#include "report/lttb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace footprint {
namespace {

struct Series {
  std::vector<int64_t> t;
  std::vector<double> v;
};

// n samples every `step` ns from 0, value f(i).
template <typename F>
Series Make(size_t n, int64_t step, F f) {
  Series s;
  for (size_t i = 0; i < n; ++i) {
    s.t.push_back(static_cast<int64_t>(i) * step);
    s.v.push_back(f(i));
  }
  return s;
}

bool Kept(const std::vector<size_t>& kept, size_t i) {
  return std::find(kept.begin(), kept.end(), i) != kept.end();
}

TEST(LttbTest, ShortSeriesComeBackUnchanged) {
  Series s = Make(100, 10'000'000, [](size_t i) { return std::sin(0.1 * i); });
  std::vector<size_t> kept = Lttb(s.t, s.v, 100);
  std::vector<size_t> all(100);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(kept, all);
  EXPECT_TRUE(Lttb(std::span<const int64_t>(), std::span<const double>(), 10).empty());
  EXPECT_EQ(Lttb(std::span(s.t).first(1), std::span(s.v).first(1), 10), std::vector<size_t>{0});
}

TEST(LttbTest, RegularSeriesGiveExactlyMaxPointsWithFirstAndLast) {
  for (size_t n : {101, 1000, 10'007, 100'000}) {
    Series s = Make(n, 1'000'000, [](size_t i) { return std::sin(0.01 * i) * 100; });
    for (size_t max_points : {3, 10, 100, 4000}) {
      if (max_points >= n) continue;
      std::vector<size_t> kept = Lttb(s.t, s.v, max_points);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " max_points=" << max_points);
      ASSERT_EQ(kept.size(), max_points);
      EXPECT_EQ(kept.front(), 0u);
      EXPECT_EQ(kept.back(), n - 1);
      EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
      EXPECT_EQ(std::adjacent_find(kept.begin(), kept.end()), kept.end()) << "no repeats";
    }
  }
}

TEST(LttbTest, KeepsTheExtremesOfSpikes) {
  // Flat noise-free signal with three narrow spikes, up and down, far apart.
  Series s = Make(100'000, 1'000'000, [](size_t i) {
    if (i == 20'000) return 500.0;
    if (i == 50'001) return -300.0;
    if (i == 80'000) return 1e6;
    return 1.0;
  });
  std::vector<size_t> kept = Lttb(s.t, s.v, 50);
  EXPECT_LE(kept.size(), 50u);
  EXPECT_TRUE(Kept(kept, 20'000));
  EXPECT_TRUE(Kept(kept, 50'001));
  EXPECT_TRUE(Kept(kept, 80'000));
}

TEST(LttbTest, KeepsPeaksAndTroughsOfAWave) {
  // 20 periods of a square-ish wave sampled 1000 times each: every plateau is kept.
  Series s = Make(20'000, 1'000'000, [](size_t i) { return (i / 500) % 2 ? 10.0 : -10.0; });
  std::vector<size_t> kept = Lttb(s.t, s.v, 200);
  double lo = 0, hi = 0;
  size_t changes = 0;
  for (size_t k = 0; k < kept.size(); ++k) {
    lo = std::min(lo, s.v[kept[k]]);
    hi = std::max(hi, s.v[kept[k]]);
    if (k && s.v[kept[k]] != s.v[kept[k - 1]]) ++changes;
  }
  EXPECT_EQ(lo, -10.0);
  EXPECT_EQ(hi, 10.0);
  EXPECT_EQ(changes, 39u) << "each of the 40 plateaus is drawn";
}

TEST(LttbTest, IrregularSamplingStaysWithinTheBound) {
  // Dense stretch in the middle (a supervised scope sampling faster), sparse elsewhere.
  Series s;
  int64_t t = 0;
  for (int i = 0; i < 30'000; ++i) {
    t += (i > 10'000 && i < 20'000) ? 1'000 : 100'000;
    s.t.push_back(t);
    s.v.push_back(i % 7);
  }
  std::vector<size_t> kept = Lttb(s.t, s.v, 500);
  EXPECT_LE(kept.size(), 500u);
  EXPECT_GT(kept.size(), 250u);
  EXPECT_EQ(kept.front(), 0u);
  EXPECT_EQ(kept.back(), s.t.size() - 1);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
}

TEST(LttbTest, StreamingSamplerMatchesTheArrayForm) {
  Series s = Make(12'345, 3'000, [](size_t i) { return std::cos(0.003 * i) + (i % 97 == 0); });
  LttbSampler sampler(s.t.back(), 300);
  for (size_t i = 0; i < s.t.size(); ++i) sampler.Add(s.t[i], s.v[i]);
  EXPECT_EQ(sampler.count(), s.t.size());
  std::vector<TimePoint> points = sampler.Finish();
  std::vector<size_t> kept = Lttb(s.t, s.v, 300);
  ASSERT_EQ(points.size(), kept.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    EXPECT_EQ(points[k].t, s.t[kept[k]]);
    EXPECT_EQ(points[k].v, s.v[kept[k]]);
  }
}

TEST(LttbTest, TooSmallABoundIsRaisedToThree) {
  Series s = Make(1000, 1'000, [](size_t i) { return i == 400 ? 50.0 : 0.0; });
  std::vector<size_t> kept = Lttb(s.t, s.v, 1);
  EXPECT_EQ(kept, (std::vector<size_t>{0, 400, 999}));
}

}  // namespace
}  // namespace footprint
