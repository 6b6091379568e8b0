#include "footprint/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

FigureChange Change(const FigureStats& base, const FigureStats& other,
                    const CompareOptions& options, bool own) {
  FigureChange c;
  if (base.stats.mean != 0) {
    c.ratio = other.stats.mean / base.stats.mean;
    c.relative = *c.ratio - 1;
    c.ratio_sd = RatioSd(base.stats, other.stats);
  }
  c.method = "ratio";
  if (base.values.size() >= 2 && other.values.size() >= 2) {
    c.test = options.test == CompareTest::kWelch ? WelchTTest(base.values, other.values)
                                                 : MannWhitneyU(base.values, other.values);
    c.method = c.test->test;
    if (!own) c.significant = c.test->p_value < options.alpha;
  }
  return c;
}

json StatsJson(const FigureStats& f) {
  const Description& d = f.stats;
  return {{"n", d.n},
          {"mean", d.mean},
          {"sd", NumberOrNull(d.sd)},
          {"median", d.median},
          {"min", d.min},
          {"max", d.max},
          {"ci95_low", NumberOrNull(d.ci_low)},
          {"ci95_high", NumberOrNull(d.ci_high)},
          {"outliers", d.outliers.size()}};
}

json ChangeJson(const FigureChange& c) {
  json out = {{"ratio", NumberOrNull(c.ratio)},
              {"ratio_sd", NumberOrNull(c.ratio_sd)},
              {"relative", NumberOrNull(c.relative)},
              {"method", c.method},
              {"statistic", nullptr},
              {"df", nullptr},
              {"p_value", nullptr},
              {"exact", nullptr},
              {"significant", OrNull(c.significant)}};
  if (c.test) {
    out["statistic"] = NumberOrNull(c.test->statistic);
    out["df"] = NumberOrNull(c.test->df);
    out["p_value"] = c.test->p_value;
    out["exact"] = c.test->exact;
  }
  return out;
}

}  // namespace

std::string FormatPValue(double p) {
  if (p < 0.001) return "p<0.001";
  char buf[24];
  std::snprintf(buf, sizeof buf, "p=%.3f", p);
  return buf;
}

std::string Verdict(const Comparison& comparison, const FigureComparison& f, size_t i) {
  const std::optional<FigureChange>& ch = f.changes[i];
  if (f.own || !ch || !ch->test || !ch->ratio || *ch->ratio <= 0) return "";
  const std::string base = QuotedInert(comparison.sets[0].set.spec);
  const std::string other = QuotedInert(comparison.sets[i].set.spec);
  if (!*ch->significant) {
    return FigureLabel(f.name) + ": no significant difference between " + base + " and " + other +
           " (" + FormatPValue(ch->test->p_value) + ")";
  }
  // "2.00 times less" rather than "0.50 times": the factor is always >= 1.
  const bool more = *ch->ratio >= 1;
  const double factor = more ? *ch->ratio : 1 / *ch->ratio;
  char amount[64];
  if (ch->ratio_sd) {
    std::snprintf(amount, sizeof amount, "%.2f ± %.2f", factor,
                  factor * *ch->ratio_sd / *ch->ratio);
  } else {
    std::snprintf(amount, sizeof amount, "%.2f", factor);
  }
  if (f.name == "duration_s") {
    return other + " ran " + amount + " times " + (more ? "slower" : "faster") + " than " + base;
  }
  return other + " used " + amount + " times " + (more ? "more " : "less ") + FigureLabel(f.name) +
         " than " + base;
}

std::string_view CompareTestName(CompareTest test) {
  return test == CompareTest::kWelch ? "welch" : "mann-whitney";
}

Result<CompareTest> ParseCompareTest(std::string_view name) {
  if (name == "welch") return CompareTest::kWelch;
  if (name == "mann-whitney" || name == "mwu") return CompareTest::kMannWhitney;
  return InvalidArgument("unknown test '" + std::string(name) +
                         "'; use --test welch (default) or --test mann-whitney");
}

Result<Comparison> Compare(std::vector<SetSummary> sets, const CompareOptions& options) {
  if (sets.size() < 2) {
    return InvalidArgument(
        "compare needs at least two runs or groups, e.g. footprint compare "
        "group:3f2a group:9c1e");
  }
  if (!(options.alpha > 0 && options.alpha < 1)) {
    return InvalidArgument("--alpha must be between 0 and 1 (e.g. 0.05)");
  }
  Comparison out;
  out.options = options;
  std::vector<std::string> names;
  for (const SetSummary& s : sets) {
    for (const FigureStats& f : s.figures) {
      if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
    }
  }
  for (const std::string& name : names) {
    FigureComparison fc;
    fc.name = name;
    fc.own = name.starts_with("monitor_");
    for (const SetSummary& s : sets) {
      const FigureStats* f = s.Find(name);
      fc.sets.push_back(f ? std::optional<FigureStats>(*f) : std::nullopt);
      if (f) {
        fc.unit = f->unit;
        fc.headline = f->headline;
      }
    }
    fc.changes.emplace_back();  // the baseline
    for (size_t i = 1; i < sets.size(); ++i) {
      if (fc.sets[0] && fc.sets[i]) {
        fc.changes.push_back(Change(*fc.sets[0], *fc.sets[i], options, fc.own));
      } else {
        fc.changes.emplace_back();
      }
    }
    out.figures.push_back(std::move(fc));
  }
  out.sets = std::move(sets);
  return out;
}

std::string ComparisonJson(const Comparison& c, int indent) {
  json sets = json::array();
  for (const SetSummary& s : c.sets) {
    json run_ids = json::array();
    for (const RunRecord& r : s.counted) run_ids.push_back(r.id);
    const RunRecord* first = s.set.runs.empty() ? nullptr : &s.set.runs.front();
    sets.push_back({{"spec", s.set.spec},
                    {"kind", s.set.kind()},
                    {"id", s.set.is_group() ? s.set.group_id
                           : first          ? first->id
                                            : ""},
                    {"name", first ? first->name : ""},
                    {"label", s.set.Label()},
                    {"n", s.counted.size()},
                    {"run_ids", run_ids}});
  }
  json figures = json::array();
  for (const FigureComparison& f : c.figures) {
    json per_set = json::array();
    json changes = json::array();
    for (size_t i = 0; i < f.sets.size(); ++i) {
      per_set.push_back(f.sets[i] ? StatsJson(*f.sets[i]) : json(nullptr));
      changes.push_back(f.changes[i] ? ChangeJson(*f.changes[i]) : json(nullptr));
    }
    json verdicts = json::array();
    for (size_t i = 0; i < f.sets.size(); ++i) {
      const std::string v = i == 0 ? "" : Verdict(c, f, i);
      verdicts.push_back(TextOrNull(v));
    }
    figures.push_back({{"name", f.name},
                       {"label", FigureLabel(f.name)},
                       {"unit", f.unit},
                       {"headline", f.headline},
                       {"own", f.own},
                       {"sets", per_set},
                       {"changes", changes},
                       {"verdicts", verdicts}});
  }
  json out = {{"baseline", 0},
              {"test", CompareTestName(c.options.test)},
              {"alpha", c.options.alpha},
              {"sets", sets},
              {"figures", figures}};
  return JsonText(out, indent);
}

}  // namespace footprint
