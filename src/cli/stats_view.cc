#include "cli/stats_view.h"

#include <cmath>
#include <cstdio>

#include "util/strings.h"

namespace footprint::cli {
namespace {

std::string MeanSd(const FigureStats& f) {
  std::string out = FormatValue(f.unit, f.stats.mean);
  if (f.stats.sd) out += " ± " + FormatValue(f.unit, *f.stats.sd);
  return out;
}

// One line per headline figure and set that was tested, hyperfine's way ("'new' ran 1.33 ±
// 0.04 times faster than 'old'"): the answer people look for, under the table that backs it.
void PrintVerdicts(const Comparison& c, const Decoration& deco, std::ostream& out) {
  bool first = true;
  for (size_t i = 1; i < c.sets.size(); ++i) {
    for (const FigureComparison& f : c.figures) {
      if (!f.headline) continue;
      const std::string verdict = Verdict(c, f, i);
      if (verdict.empty()) continue;
      if (first) out << "\n" << Paint("verdict", "1", deco.color) << "\n";
      first = false;
      const bool significant = f.changes[i]->significant.value_or(false);
      out << "  " << Paint(verdict, significant ? "1" : "2", deco.color) << "\n";
    }
  }
}

}  // namespace

void PrintSetSummary(const SetSummary& s, const Decoration& deco, std::ostream& out) {
  const RunSet& set = s.set;
  const RunRecord* first = !set.runs.empty() ? &set.runs.front() : &set.warmups.front();
  out << Paint("group", "1", deco.color);
  PrintLine(out, "    " + set.group_id + "  " + first->name);
  PrintField(out, "command", FormatCommand(first->command));
  out << "runs     " << set.runs.size() << " repetition(s), " << s.counted.size()
      << " counted (status ok)";
  if (!set.warmups.empty()) out << ", " << set.warmups.size() << " warm-up(s) not counted";
  out << "\n\n";

  Table runs({"rep", "run", "status", "duration", ""}, {0, 3});
  auto add_run = [&](const RunRecord& r) {
    auto d = s.durations.find(r.id);
    const bool ok = r.status == RunStatus::kOk;
    runs.Add({IsWarmup(r) ? "warm-up" : std::to_string(r.repetition), r.id.substr(0, 8),
              Paint(RunStatusText(r), "31", deco.color && !ok),
              d == s.durations.end() ? std::string("-") : FormatDuration(d->second),
              IsWarmup(r) || ok ? "" : "not counted"});
  };
  for (const RunRecord& r : set.warmups) add_run(r);
  for (const RunRecord& r : set.runs) add_run(r);
  runs.Print(out, "  ");

  if (s.figures.empty()) {
    out << "\nno repetition completed with status ok: nothing to count\n";
    return;
  }
  out << "\n"
      << Paint("statistics", "1", deco.color)
      << " (mean ± sample sd, 95 % confidence interval of the mean, outliers beyond Tukey's "
         "1.5 IQR fences)\n";
  std::vector<std::string> header = {"figure", "n",   "mean ± sd", "median",
                                     "min",    "max", "95 % CI",   "outliers"};
  if (deco.sparklines) header.push_back("runs");
  Table t(header, {1, 2, 3, 4, 5, 6});
  for (const FigureStats& f : s.figures) {
    const Description& d = f.stats;
    auto v = [&](double x) { return FormatValue(f.unit, x); };
    std::string ci = d.ci_low ? v(*d.ci_low) + " .. " + v(*d.ci_high) : "-";
    std::string outliers;
    for (size_t i : d.outliers) {
      outliers += (outliers.empty() ? "#" : ", #") + std::to_string(f.repetitions[i]) + " (" +
                  v(f.values[i]) + ")";
    }
    std::vector<Cell> row = {Paint(FigureLabel(f.name), "1", deco.color && f.headline),
                             std::to_string(d.n),
                             MeanSd(f),
                             v(d.median),
                             v(d.min),
                             v(d.max),
                             ci,
                             Paint(outliers, "33", deco.color)};
    if (deco.sparklines) row.push_back(Sparkline(f.values));
    t.Add(std::move(row));
  }
  t.Print(out, "  ");
}

namespace {

// The column of set i: A, B, ... Z, then #27, #28, ...
std::string SetLetter(size_t i) {
  return i < 26 ? std::string(1, static_cast<char>('A' + i)) : "#" + std::to_string(i + 1);
}

// What the sets compared are, a line each, the baseline first.
void PrintComparedSets(const Comparison& c, std::ostream& out) {
  Table sets({"", ""});
  for (size_t i = 0; i < c.sets.size(); ++i) {
    const SetSummary& s = c.sets[i];
    std::string what = s.set.Label() + ": " + std::to_string(s.counted.size()) + " run(s)";
    if (s.set.is_group() && s.counted.size() < s.set.runs.size()) {
      what += " counted of " + std::to_string(s.set.runs.size());
    }
    sets.Add({SetLetter(i), what + (i == 0 ? "  (baseline)" : "")});
  }
  sets.PrintBody(out, "  ");
  out << "\n";
}

// What the comparison table holds, for the notes under it.
struct ComparisonMarks {
  bool any_ratio = false, any_test = false, outliers = false;
};

// A change against the baseline: its percentage and its test (or "ratio"), coloured when
// significant.
void AddChangeCells(const FigureChange& ch, const Decoration& deco, std::vector<Cell>& row,
                    ComparisonMarks& marks) {
  std::string change = ch.relative ? FormatPercentChange(*ch.relative) : "-";
  std::string verdict;
  if (!ch.test) {
    marks.any_ratio = true;
    verdict = "ratio, single run";
  } else {
    marks.any_test = true;
    verdict = FormatPValue(ch.test->p_value) + (*ch.significant ? " significant" : "");
  }
  // Every figure here costs something: lower is better.
  const bool worse = ch.relative && *ch.relative > 0;
  const char* sgr = !ch.significant.value_or(false) ? "2" : worse ? "31" : "32";
  row.push_back(Paint(change, sgr, deco.color));
  row.push_back(Paint(verdict, sgr, deco.color));
}

// What "change", "ratio" and the outliers in the table mean, as far as it has them.
void PrintComparisonNotes(const Comparison& c, const ComparisonMarks& marks, std::ostream& out) {
  out << "\nchange: mean against " << SetLetter(0) << "'s";
  if (marks.any_test) {
    out << "; significant: p < " << c.options.alpha << " in a two-sided "
        << (c.options.test == CompareTest::kWelch ? "Welch's t-test" : "Mann-Whitney U test")
        << " over the repetitions";
  }
  out << "\n";
  if (marks.any_ratio) {
    out << "ratio: a side with a single run has no spread to test; repeat it with "
           "footprint run -r N\n";
  }
  // No test: no advice.
  if (marks.outliers && marks.any_test && c.options.test == CompareTest::kWelch) {
    out << "outliers: some repetitions lie beyond 1.5 IQR; --test mann-whitney does not assume "
           "normal data\n";
  }
}

}  // namespace

void PrintComparison(const Comparison& c, const Decoration& deco, std::ostream& out) {
  PrintComparedSets(c, out);
  std::vector<std::string> header = {"figure", SetLetter(0)};
  std::vector<size_t> right = {1};
  for (size_t i = 1; i < c.sets.size(); ++i) {
    header.push_back(SetLetter(i));
    header.push_back("vs " + SetLetter(0));
    header.push_back("");
    right.push_back(header.size() - 3);
    right.push_back(header.size() - 2);
  }
  Table t(header, right);
  ComparisonMarks marks;
  for (const FigureComparison& f : c.figures) {
    std::vector<Cell> row = {Paint(FigureLabel(f.name), "1", deco.color && f.headline),
                             f.sets[0] ? MeanSd(*f.sets[0]) : "-"};
    marks.outliers |= f.sets[0] && !f.sets[0]->stats.outliers.empty();
    for (size_t i = 1; i < c.sets.size(); ++i) {
      row.push_back(f.sets[i] ? MeanSd(*f.sets[i]) : "-");
      marks.outliers |= f.sets[i] && !f.sets[i]->stats.outliers.empty();
      if (const std::optional<FigureChange>& ch = f.changes[i]) {
        AddChangeCells(*ch, deco, row, marks);
      } else {
        row.insert(row.end(), {"-", ""});
      }
    }
    t.Add(std::move(row));
  }
  t.Print(out, "  ");
  PrintVerdicts(c, deco, out);
  PrintComparisonNotes(c, marks, out);
}

}  // namespace footprint::cli
