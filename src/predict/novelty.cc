#include "predict/novelty.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <utility>

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

// Each family's band as a fit without it would state it (FamilyBandError of the other
// families' predictions), and the novel half of the rows: the farthest from the other families',
// where such a band is likeliest to fall short (pooled, familiar rows inside their band would
// make up for them).
class FamilyBands {
 public:
  explicit FamilyBands(std::vector<LeftOutPrediction> predictions)
      : predictions_(std::move(predictions)) {
    std::set<std::string> families;
    for (const LeftOutPrediction& p : predictions_) families.insert(p.family);
    for (const std::string& family : families) {
      std::vector<LeftOutPrediction> others;
      std::copy_if(predictions_.begin(), predictions_.end(), std::back_inserter(others),
                   [&](const LeftOutPrediction& p) { return p.family != family; });
      band_[family] = FamilyBandError(others);
    }
    novel_half_ = predictions_;
    std::stable_sort(novel_half_.begin(), novel_half_.end(),
                     [](const auto& a, const auto& b) { return a.novelty > b.novelty; });
    novel_half_.resize((novel_half_.size() + 1) / 2);
  }
  const std::map<std::string, double>& band() const { return band_; }
  const std::vector<LeftOutPrediction>& novel_half() const { return novel_half_; }
  double CoverageOf(const std::vector<LeftOutPrediction>& rows, double widening) const {
    return ShareInside(
        rows, [&](const LeftOutPrediction& p) { return band_.at(p.family); }, widening);
  }
  // The smallest widening (in steps of kWideningStep) that puts kStatedCoverage of the rows and
  // of the novel half inside their band; kMaxWidening where none does.
  double SmallestWidening() const {
    for (int step = 0; step * kWideningStep <= kMaxWidening; ++step) {
      const double w = step * kWideningStep;
      if (CoverageOf(predictions_, w) >= kStatedCoverage &&
          CoverageOf(novel_half_, w) >= kStatedCoverage) {
        return w;
      }
    }
    return kMaxWidening;
  }

 private:
  std::vector<LeftOutPrediction> predictions_, novel_half_;
  std::map<std::string, double> band_;
};

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

double FamilyBandError(const std::vector<LeftOutPrediction>& predictions) {
  std::map<std::string, double> worst;
  for (const LeftOutPrediction& p : predictions) {
    worst[p.family] = std::max(worst[p.family], BandError(p.predicted, p.measured));
  }
  if (worst.empty()) return 0;
  std::vector<double> errors;
  for (const auto& [family, error] : worst) errors.push_back(error);
  std::sort(errors.begin(), errors.end());
  // The conformal rank: a new family is one more draw, so the ceil((n + 1) x 0.8)-th of n.
  const double n = static_cast<double>(errors.size());
  const size_t rank = static_cast<size_t>(std::ceil((n + 1) * kStatedCoverage - 1e-9));
  return errors[std::min(errors.size(), std::max<size_t>(rank, 1)) - 1];
}

bool InsideBand(double predicted, double measured, double factor) {
  return measured >= predicted / factor && measured <= predicted * factor;
}

double Coverage(const std::vector<LeftOutPrediction>& predictions, double p80, double widening) {
  return ShareInside(
      predictions, [p80](const LeftOutPrediction&) { return p80; }, widening);
}

WideningFit FitWidening(const std::vector<LeftOutPrediction>& predictions) {
  const FamilyBands bands(predictions);
  WideningFit fit;
  fit.rows = predictions.size();
  fit.widening = bands.SmallestWidening();
  fit.coverage_plain = bands.CoverageOf(predictions, 0);
  fit.coverage_widened = bands.CoverageOf(predictions, fit.widening);
  fit.novel_half_plain = bands.CoverageOf(bands.novel_half(), 0);
  fit.novel_half_widened = bands.CoverageOf(bands.novel_half(), fit.widening);
  // Nested: each family inside the band and the widening fitted without it.
  size_t inside = 0;
  for (const auto& [family, band] : bands.band()) {
    std::vector<LeftOutPrediction> others, own;
    for (const LeftOutPrediction& p : predictions) (p.family == family ? own : others).push_back(p);
    const double widening = FamilyBands(others).SmallestWidening();
    for (const LeftOutPrediction& p : own) {
      inside += InsideBand(p.predicted, p.measured, BandFactor(band, widening, p.novelty)) ? 1 : 0;
    }
  }
  fit.coverage_nested =
      predictions.empty() ? 0 : static_cast<double>(inside) / static_cast<double>(fit.rows);
  return fit;
}

}  // namespace footprint::predict
