// How far a model is from the rows a predictor was fitted on, and how much that widens the
// latency band (issue 39: "the band comes from held-out families, widened by how far the model
// is from the training set").
//
// A model's mix is, per operator kind (convolution, depthwise convolution, matrix product,
// normalisation, element-wise, pooling, data movement, other), its share of the FLOPs and its
// share of the bytes, and log10 of its FLOPs per byte. The distance of two mixes is the mean of
// three figures, each from 0 (alike) to 1: the total variation distance of the FLOP shares
// (half the sum of the differences: the share of the FLOPs that would have to move to another
// kind), the same of the byte shares, and the difference of the log10 intensities, at most 1
// (a factor 10). A model's novelty is its distance to the nearest training row: 0 when a row
// has its mix, 1 when none shares a kind with it.
//
// The band is of families, the unit a new model comes from: every left-out family's worst
// prediction (its largest BandError), and the band the ceil((n + 1) x 0.8)-th smallest of these
// n (conformal: a new family is one more draw), so that 80 % of families, not of rows, fall
// wholly inside it. Rows are not exchangeable across families: a family's errors share its
// cause, and the row-wise 80th percentile held 29 % of the rows of three families never fitted
// on (issue 39). The band's factor (1 + that error) is multiplied by 1 + widening x novelty.
// `widening` is fitted at --train on leave-one-family-out predictions: each family's rows get
// the band of the other families' errors and their novelty against the other families' rows,
// and widening is the smallest (in steps of kWideningStep) that puts at least kStatedCoverage of
// the rows inside their band, and as many of the half of the rows of the highest novelty
// (pooled, familiar rows inside their band would make up for novel ones outside theirs).
#ifndef FOOTPRINT_PREDICT_NOVELTY_H_
#define FOOTPRINT_PREDICT_NOVELTY_H_

#include <map>
#include <string>
#include <vector>

namespace footprint::predict {

inline constexpr double kStatedCoverage = 0.8;  // the band's stated rate
inline constexpr double kWideningStep = 0.05;
inline constexpr double kMaxWidening = 20;

using Mix = std::vector<double>;

// The mix of a model's features (predictors.h: Features): the FLOP shares of the kinds, their
// byte shares, then log10 FLOPs per byte.
Mix MixOf(const std::map<std::string, double>& features);
// 0 (alike) to 1; mixes of another length (another version's file) are 1 apart.
double MixDistance(const Mix& a, const Mix& b);
// The distance from `mix` to the nearest of `rows`; 1 without rows.
double Novelty(const Mix& mix, const std::vector<Mix>& rows);

// The factor either side of a prediction: (1 + p80) x (1 + widening x novelty).
double BandFactor(double p80, double widening, double novelty);

// One prediction of a row whose family was left out of the fit.
struct LeftOutPrediction {
  std::string family;
  double predicted = 0, measured = 0;
  double novelty = 0;  // against the rows of the other families
};

// How far a prediction is from the truth as the band counts it: the factor either side, less
// 1 (max(predicted / measured, measured / predicted) - 1). A prediction 10 % too fast (0.9 for
// 1) is 11 % off: the band [value / f, value x f] holds it from f = 1.11.
double BandError(double predicted, double measured);
// The band of left-out predictions (as above): the conformal 80th percentile over the families
// of each family's largest BandError; 0 for none. A predictor stores it as p80_relative_error.
double FamilyBandError(const std::vector<LeftOutPrediction>& predictions);
// Whether `measured` lies in [predicted / factor, predicted x factor].
bool InsideBand(double predicted, double measured, double factor);
// The share of `predictions` inside (1 + p80) x (1 + widening x novelty).
double Coverage(const std::vector<LeftOutPrediction>& predictions, double p80, double widening);

struct WideningFit {
  double widening = 0;
  double coverage_plain = 0;    // of the bands without novelty (widening 0)
  double coverage_widened = 0;  // with the fitted widening
  // The same over the half of the rows of the highest novelty.
  double novel_half_plain = 0, novel_half_widened = 0;
  // Each family inside the band and the widening fitted without it: coverage on families the
  // fit did not see.
  double coverage_nested = 0;
  size_t rows = 0;
};
// From leave-one-family-out predictions (every family with its rows): each family's band from
// the FamilyBandError of the other families' rows, and the widening as above
// (kMaxWidening where none reaches kStatedCoverage).
WideningFit FitWidening(const std::vector<LeftOutPrediction>& predictions);

}  // namespace footprint::predict

#endif  // FOOTPRINT_PREDICT_NOVELTY_H_
