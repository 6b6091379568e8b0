// footprint predict's novelty (src/predict/novelty.h): how far a model's mix of work is from the
// training rows, and the widening of the band fitted on left-out families.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "predict/novelty.h"

namespace footprint::predict {
namespace {

// Features of a model whose FLOPs and bytes lie in the kinds given, with `flops` and `bytes`
// in total.
std::map<std::string, double> FeaturesOf(const std::map<std::string, double>& flop_share,
                                         const std::map<std::string, double>& byte_share,
                                         double flops, double bytes) {
  std::map<std::string, double> f = {{"flops", flops}, {"bytes", bytes}};
  for (const auto& [kind, share] : flop_share) f["flops." + kind] = share * flops;
  for (const auto& [kind, share] : byte_share) f["bytes." + kind] = share * bytes;
  return f;
}

TEST(PredictNovelty, MixHoldsTheSharesAndTheIntensity) {
  const Mix mix = MixOf(FeaturesOf({{"conv", 0.75}, {"gemm", 0.25}},
                                   {{"conv", 0.5}, {"elementwise", 0.5}}, 1e9, 1e7));
  ASSERT_EQ(mix.size(), 17u);
  EXPECT_DOUBLE_EQ(mix[0], 0.75);  // flops.conv
  EXPECT_DOUBLE_EQ(mix[2], 0.25);  // flops.gemm
  EXPECT_DOUBLE_EQ(mix[8], 0.5);   // bytes.conv
  EXPECT_DOUBLE_EQ(mix[12], 0.5);  // bytes.elementwise
  EXPECT_DOUBLE_EQ(mix[16], 2);    // log10 of 100 FLOPs per byte
  double flop_shares = 0;
  for (int i = 0; i < 8; ++i) flop_shares += mix[i];
  EXPECT_DOUBLE_EQ(flop_shares, 1);
}

TEST(PredictNovelty, DistanceIsZeroForTheSameMixAndGrowsWithWhatMoves) {
  const Mix cnn = MixOf(FeaturesOf({{"conv", 1}}, {{"conv", 1}}, 1e9, 1e7));
  const Mix transformer = MixOf(FeaturesOf({{"gemm", 1}}, {{"gemm", 1}}, 1e9, 1e7));
  const Mix half = MixOf(FeaturesOf({{"conv", 0.5}, {"gemm", 0.5}}, {{"conv", 1}}, 1e9, 1e7));
  EXPECT_DOUBLE_EQ(MixDistance(cnn, cnn), 0);
  // Every FLOP and byte in another kind, at the same intensity: two of the three figures.
  EXPECT_DOUBLE_EQ(MixDistance(cnn, transformer), 2.0 / 3);
  // Half the FLOPs moved, the bytes not.
  EXPECT_DOUBLE_EQ(MixDistance(cnn, half), 0.5 / 3);
  // Intensity counts up to a factor 10.
  const Mix dense = MixOf(FeaturesOf({{"conv", 1}}, {{"conv", 1}}, 1e12, 1e7));
  EXPECT_DOUBLE_EQ(MixDistance(cnn, dense), 1.0 / 3);
  EXPECT_DOUBLE_EQ(MixDistance(cnn, Mix{0.5, 0.5}), 1);  // another version's mix
}

TEST(PredictNovelty, NoveltyIsTheDistanceToTheNearestRow) {
  const Mix cnn = MixOf(FeaturesOf({{"conv", 1}}, {{"conv", 1}}, 1e9, 1e7));
  const Mix transformer = MixOf(FeaturesOf({{"gemm", 1}}, {{"gemm", 1}}, 1e9, 1e7));
  const Mix half = MixOf(FeaturesOf({{"conv", 0.5}, {"gemm", 0.5}}, {{"conv", 1}}, 1e9, 1e7));
  EXPECT_DOUBLE_EQ(Novelty(half, {transformer, cnn}), 0.5 / 3);
  EXPECT_DOUBLE_EQ(Novelty(cnn, {transformer, cnn}), 0);
  EXPECT_DOUBLE_EQ(Novelty(cnn, {}), 1);
}

TEST(PredictNovelty, BandFactorAndInside) {
  EXPECT_DOUBLE_EQ(BandFactor(0.2, 0, 0.9), 1.2);
  EXPECT_DOUBLE_EQ(BandFactor(0.2, 2, 0.5), 2.4);
  EXPECT_TRUE(InsideBand(10, 12, 1.2));
  EXPECT_TRUE(InsideBand(12, 10, 1.2));
  EXPECT_FALSE(InsideBand(10, 12.5, 1.2));
  EXPECT_FALSE(InsideBand(10, 8, 1.2));
}

// Five families predicted within 10 % where the training set has their like (novelty 0); one
// (say an LSTM among CNNs, 10 rows) far from every row (0.8) and predicted 3x too fast.
std::vector<LeftOutPrediction> FamiliarAndNovel() {
  std::vector<LeftOutPrediction> p;
  for (const char* family : {"A", "B", "C", "D", "E"}) {
    for (double error : {-0.1, -0.05, 0.0, 0.05, 0.1}) p.push_back({family, 1 + error, 1, 0});
  }
  for (int i = 0; i < 10; ++i) p.push_back({"LSTM", 1.0 / 3, 1, 0.8});
  return p;
}

TEST(PredictNovelty, WideningCoversTheNovelFamily) {
  const WideningFit fit = FitWidening(FamiliarAndNovel());
  EXPECT_EQ(fit.rows, 35u);
  // Without novelty the LSTM's rows fall outside their band: 25 of 35.
  EXPECT_NEAR(fit.coverage_plain, 25.0 / 35, 1e-12);
  // The LSTM's band, the other families' worst, is 1 / 0.9 - 1 (BandError), and (1 + 1 / 9) x
  // (1 + w 0.8) reaches 3 from w = 2.125: 2.15 in steps of 0.05; every row is then inside.
  EXPECT_NEAR(fit.widening, 2.15, 1e-9);
  EXPECT_DOUBLE_EQ(fit.coverage_widened, 1);
  // The novel half (18 rows): the LSTM's 10, outside without widening, and 8 familiar ones.
  EXPECT_NEAR(fit.novel_half_plain, 8.0 / 18, 1e-12);
  EXPECT_DOUBLE_EQ(fit.novel_half_widened, 1);
  // Nested, the LSTM is judged by a widening fitted on the five others, which need none: the
  // widening learnt from the LSTM's own rows does not count for them.
  EXPECT_NEAR(fit.coverage_nested, 25.0 / 35, 1e-12);
}

TEST(PredictNovelty, NestedCoverageKeepsAWideningLearntElsewhere) {
  // Two novel families, each 3x too fast: a widening fitted on one covers the other.
  std::vector<LeftOutPrediction> p = FamiliarAndNovel();
  for (int i = 0; i < 10; ++i) p.push_back({"GRU", 1.0 / 3, 1, 0.8});
  const WideningFit fit = FitWidening(p);
  EXPECT_DOUBLE_EQ(fit.coverage_widened, 1);
  EXPECT_DOUBLE_EQ(fit.coverage_nested, 1);
}

TEST(PredictNovelty, NoWideningWhereThePlainBandAlreadyHolds) {
  std::vector<LeftOutPrediction> p;
  for (const char* family : {"A", "B", "C", "D"}) {
    for (double error : {-0.05, 0.0, 0.1}) p.push_back({family, 1 + error, 1, 0.5});
  }
  const WideningFit fit = FitWidening(p);
  EXPECT_DOUBLE_EQ(fit.widening, 0);
  EXPECT_DOUBLE_EQ(fit.coverage_widened, fit.coverage_plain);
  EXPECT_DOUBLE_EQ(Coverage(p, 0.1, 0), 1);
  // The band is a factor either side: 10 % too fast needs 1 / 0.9, more than 1.1.
  EXPECT_DOUBLE_EQ(Coverage({{"A", 0.9, 1, 0}}, 0.1, 0), 0);
  EXPECT_DOUBLE_EQ(Coverage(p, 0.05, 0), 4.0 / 12);
  EXPECT_DOUBLE_EQ(Coverage(p, 0.05, 0.2), 1);  // 1.05 x 1.1 holds both
}

TEST(PredictNovelty, BandErrorIsTheFactorEitherSide) {
  EXPECT_NEAR(BandError(1.1, 1), 0.1, 1e-12);
  EXPECT_NEAR(BandError(0.9, 1), 1 / 0.9 - 1, 1e-12);
  EXPECT_NEAR(BandError(1.0 / 3, 1), 2, 1e-12);
}

TEST(PredictNovelty, TheBandIsOfFamiliesNotRows) {
  EXPECT_DOUBLE_EQ(FamilyBandError({}), 0);
  // One family of 50 rows within 5 %, nine of one row each, 10 % to 90 % off: by rows the
  // 80th percentile would be 5 %; by families it is the 9th of the ten worst ((10 + 1) x 0.8
  // = 8.8, up to 9), 80 %.
  std::vector<LeftOutPrediction> p(50, {"Many", 1.05, 1, 0});
  for (int i = 1; i <= 9; ++i) p.push_back({"F" + std::to_string(i), 1 + i / 10.0, 1, 0});
  EXPECT_NEAR(FamilyBandError(p), 0.8, 1e-12);
  // A family counts by its worst row.
  p.push_back({"Many", 1.0 / 3, 1, 0});
  EXPECT_NEAR(FamilyBandError(p), 0.9, 1e-12);
  // With as few families as the rank exceeds, the worst of them.
  EXPECT_NEAR(FamilyBandError({{"A", 1.2, 1, 0}, {"B", 1.4, 1, 0}}), 0.4, 1e-12);
}

}  // namespace
}  // namespace footprint::predict
