// Compare: sets of runs (groups of repetitions, or single runs) side by side, each figure
// against the first set (the baseline), with the relative change and whether it is
// statistically significant.
//
// - Both sides with at least 2 counted runs: a two-sided test over the repetitions, Welch's
//   t-test by default (it does not assume equal variances), or the Mann-Whitney U test when
//   asked for (no normality assumption; the better choice when a side has outliers).
//   Significant means p < alpha (default 0.05).
// - Otherwise (a single run on either side): the plain ratio, labelled "ratio", with no test
//   and `significant` unknown.
// A figure missing on one side compares as unknown there. relative = mean_b / mean_a - 1
// (unknown when mean_a is 0); ratio_sd is the ratio's uncertainty from the two sample sds
// (first-order propagation, as hyperfine gives it), when both sides have one.
//
// Thread-safety: pure functions over the summaries they are given.
#ifndef FOOTPRINT_COMPARE_H_
#define FOOTPRINT_COMPARE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/groups.h"
#include "footprint/stats.h"
#include "footprint/status.h"

namespace footprint {

enum class CompareTest { kWelch, kMannWhitney };
std::string_view CompareTestName(CompareTest test);  // "welch", "mann-whitney"
// Parses "welch" or "mann-whitney" (also "mwu"). InvalidArgument otherwise.
Result<CompareTest> ParseCompareTest(std::string_view name);

struct CompareOptions {
  CompareTest test = CompareTest::kWelch;
  double alpha = 0.05;
};

// One figure of one set against the baseline.
struct FigureChange {
  std::optional<double> ratio;     // mean / baseline mean
  std::optional<double> relative;  // ratio - 1
  std::optional<double> ratio_sd;  // ratio * sqrt((sd_a / mean_a)^2 + (sd_b / mean_b)^2)
  std::string_view method;         // "welch", "mann-whitney", or "ratio" (no test)
  std::optional<TestResult> test;
  std::optional<bool> significant;  // p < alpha; unknown for a plain ratio
};

struct FigureComparison {
  std::string name;
  std::string unit;
  bool headline = false;
  // footprint's own cost (monitor_*): its changes are tested but never significant and get no
  // verdict, so that footprint's overhead never reads as the program's regression.
  bool own = false;
  std::vector<std::optional<FigureStats>> sets;      // per set; none where the set lacks it
  std::vector<std::optional<FigureChange>> changes;  // per set; none for the baseline
};

struct Comparison {
  CompareOptions options;
  std::vector<SetSummary> sets;           // sets[0] is the baseline
  std::vector<FigureComparison> figures;  // the baseline's figures in order, then the others'
};

// Compares the summaries (at least 2). InvalidArgument for fewer, or a bad alpha.
Result<Comparison> Compare(std::vector<SetSummary> sets, const CompareOptions& options = {});

// The one-line verdict on figure `f` of set `i` (>= 1) against the baseline, as hyperfine says
// it, with the sets named as the user named them:
//   'new' ran 1.33 ± 0.04 times faster than 'old'            (duration_s)
//   'new' used 1.10 ± 0.02 times less cpu time than 'old'    (any other figure)
//   duration: no significant difference between 'old' and 'new' (p=0.431)
// Empty when no test ran (a single run on a side) or a side lacks the figure.
std::string Verdict(const Comparison& comparison, const FigureComparison& f, size_t i);

// "p<0.001" or "p=0.043".
std::string FormatPValue(double p);

// The `compare --json` object (docs/cli.md).
std::string ComparisonJson(const Comparison& comparison, int indent = 2);

}  // namespace footprint

#endif  // FOOTPRINT_COMPARE_H_
