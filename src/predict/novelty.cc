#include "predict/novelty.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace footprint::predict {
namespace {

// The kinds of predictors.cc's features, in the mix's order.
const char* const kMixKinds[] = {"conv",        "dwconv", "gemm",     "norm",
                                 "elementwise", "pool",   "movement", "other"};
constexpr size_t kMixKindCount = std::size(kMixKinds);

double FeatureOr0(const std::map<std::string, double>& f, const std::string& name) {
  const auto it = f.find(name);
  return it == f.end() || !std::isfinite(it->second) ? 0 : it->second;
}

// Half the sum of |a_i - b_i| over [from, from + count).
double TotalVariation(const Mix& a, const Mix& b, size_t from, size_t count) {
  double sum = 0;
  for (size_t i = from; i < from + count; ++i) sum += std::abs(a[i] - b[i]);
  return sum / 2;
}

// The share of `predictions` inside their band, its p80 given by `p80_of`.
template <typename P80Of>
double ShareInside(const std::vector<LeftOutPrediction>& predictions, const P80Of& p80_of,
                   double widening) {
  if (predictions.empty()) return 0;
  size_t inside = 0;
  for (const LeftOutPrediction& p : predictions) {
    const double factor = BandFactor(p80_of(p), widening, p.novelty);
    inside += InsideBand(p.predicted, p.measured, factor) ? 1 : 0;
  }
  return static_cast<double>(inside) / static_cast<double>(predictions.size());
}

}  // namespace

Mix MixOf(const std::map<std::string, double>& features) {
  Mix mix;
  for (const char* total : {"flops", "bytes"}) {
    double sum = 0;
    for (const char* kind : kMixKinds) sum += FeatureOr0(features, std::string(total) + "." + kind);
    for (const char* kind : kMixKinds) {
      mix.push_back(sum > 0 ? FeatureOr0(features, std::string(total) + "." + kind) / sum : 0);
    }
  }
  const double flops = FeatureOr0(features, "flops"), bytes = FeatureOr0(features, "bytes");
  mix.push_back(flops > 0 && bytes > 0 ? std::log10(flops / bytes) : 0);
  return mix;
}

double MixDistance(const Mix& a, const Mix& b) {
  if (a.size() != 2 * kMixKindCount + 1 || b.size() != a.size()) return 1;
  const double intensity = std::min(1.0, std::abs(a.back() - b.back()));
  return (TotalVariation(a, b, 0, kMixKindCount) +
          TotalVariation(a, b, kMixKindCount, kMixKindCount) + intensity) /
         3;
}

double Novelty(const Mix& mix, const std::vector<Mix>& rows) {
  double nearest = 1;
  for (const Mix& row : rows) nearest = std::min(nearest, MixDistance(mix, row));
  return nearest;
}

double BandFactor(double p80, double widening, double novelty) {
  return (1 + p80) * (1 + widening * novelty);
}

double BandError(double predicted, double measured) {
  return std::max(predicted / measured, measured / predicted) - 1;
}

double P80RelativeError(std::vector<double> errors) {
  if (errors.empty()) return 0;
  std::sort(errors.begin(), errors.end());
  return errors[std::min(errors.size() - 1, errors.size() * 8 / 10)];
}

bool InsideBand(double predicted, double measured, double factor) {
  return measured >= predicted / factor && measured <= predicted * factor;
}

double Coverage(const std::vector<LeftOutPrediction>& predictions, double p80, double widening) {
  return ShareInside(
      predictions, [p80](const LeftOutPrediction&) { return p80; }, widening);
}

WideningFit FitWidening(const std::vector<LeftOutPrediction>& predictions) {
  std::set<std::string> families;
  for (const LeftOutPrediction& p : predictions) families.insert(p.family);
  // Each family's band: what a fit without it would state, the other families' p80.
  std::map<std::string, double> band;
  for (const std::string& family : families) {
    std::vector<double> others;
    for (const LeftOutPrediction& p : predictions) {
      if (p.family != family) others.push_back(BandError(p.predicted, p.measured));
    }
    band[family] = P80RelativeError(others);
  }
  // The novel half: the rows farthest from the other families', where a band from their errors
  // is likeliest to fall short (pooled, the familiar rows could make up for them).
  std::vector<LeftOutPrediction> novel = predictions;
  std::stable_sort(novel.begin(), novel.end(),
                   [](const auto& a, const auto& b) { return a.novelty > b.novelty; });
  novel.resize((novel.size() + 1) / 2);
  auto coverage = [&](const std::vector<LeftOutPrediction>& rows, double widening) {
    return ShareInside(
        rows, [&](const LeftOutPrediction& p) { return band[p.family]; }, widening);
  };
  WideningFit fit;
  fit.rows = predictions.size();
  fit.widening = kMaxWidening;
  for (int step = 0; step * kWideningStep <= kMaxWidening; ++step) {
    const double w = step * kWideningStep;
    if (coverage(predictions, w) >= kStatedCoverage && coverage(novel, w) >= kStatedCoverage) {
      fit.widening = w;
      break;
    }
  }
  fit.coverage_plain = coverage(predictions, 0);
  fit.coverage_widened = coverage(predictions, fit.widening);
  fit.novel_half_plain = coverage(novel, 0);
  fit.novel_half_widened = coverage(novel, fit.widening);
  return fit;
}

}  // namespace footprint::predict
