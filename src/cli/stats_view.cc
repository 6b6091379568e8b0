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

std::string PValue(double p) {
  if (p < 0.001) return "p<0.001";
  char buf[24];
  std::snprintf(buf, sizeof buf, "p=%.3f", p);
  return buf;
}

}  // namespace

std::string FigureLabel(std::string_view name) {
  if (name == "duration_s") return "duration";
  if (name == "cpu_s") return "cpu time";
  if (name == "max_process_peak_bytes") return "largest process";
  if (name == "monitor_cpu_s") return "footprint cpu";
  if (name == "monitor_peak_rss_bytes") return "footprint rss";
  for (std::string_view suffix : {"_s", "_bytes", "_j", "_w"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.remove_suffix(suffix.size());
      break;
    }
  }
  std::string label(name);
  for (char& c : label) {
    if (c == '_') c = ' ';
  }
  return label;
}

void PrintSetSummary(const SetSummary& s, const Decoration& deco, std::ostream& out) {
  const RunSet& set = s.set;
  const RunRecord* first = !set.runs.empty() ? &set.runs.front() : &set.warmups.front();
  out << Paint("group", "1", deco.color) << "    " << set.group_id << "  " << Inert(first->name)
      << "\n"
      << "command  " << FormatCommand(first->command) << "\n"
      << "runs     " << set.runs.size() << " repetition(s), " << s.counted.size()
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

void PrintComparison(const Comparison& c, const Decoration& deco, std::ostream& out) {
  auto letter = [](size_t i) {
    return i < 26 ? std::string(1, static_cast<char>('A' + i)) : "#" + std::to_string(i + 1);
  };
  Table sets({"", ""});
  for (size_t i = 0; i < c.sets.size(); ++i) {
    const SetSummary& s = c.sets[i];
    std::string what = s.set.Label() + ": " + std::to_string(s.counted.size()) + " run(s)";
    if (s.set.is_group() && s.counted.size() < s.set.runs.size()) {
      what += " counted of " + std::to_string(s.set.runs.size());
    }
    sets.Add({letter(i), what + (i == 0 ? "  (baseline)" : "")});
  }
  sets.PrintBody(out, "  ");
  out << "\n";

  std::vector<std::string> header = {"figure", letter(0)};
  std::vector<size_t> right = {1};
  for (size_t i = 1; i < c.sets.size(); ++i) {
    header.push_back(letter(i));
    header.push_back("vs " + letter(0));
    header.push_back("");
    right.push_back(header.size() - 3);
    right.push_back(header.size() - 2);
  }
  Table t(header, right);
  bool any_ratio = false, outliers = false;
  for (const FigureComparison& f : c.figures) {
    std::vector<Cell> row = {Paint(FigureLabel(f.name), "1", deco.color && f.headline),
                             f.sets[0] ? MeanSd(*f.sets[0]) : "-"};
    outliers |= f.sets[0] && !f.sets[0]->stats.outliers.empty();
    for (size_t i = 1; i < c.sets.size(); ++i) {
      row.push_back(f.sets[i] ? MeanSd(*f.sets[i]) : "-");
      outliers |= f.sets[i] && !f.sets[i]->stats.outliers.empty();
      const std::optional<FigureChange>& ch = f.changes[i];
      if (!ch) {
        row.insert(row.end(), {"-", ""});
        continue;
      }
      std::string change = ch->relative ? FormatPercentChange(*ch->relative) : "-";
      std::string verdict;
      if (!ch->test) {
        any_ratio = true;
        verdict = "ratio, single run";
      } else {
        verdict = PValue(ch->test->p_value) + (*ch->significant ? " significant" : "");
      }
      // Every figure here costs something: lower is better.
      const bool worse = ch->relative && *ch->relative > 0;
      const char* sgr = !ch->significant.value_or(false) ? "2" : worse ? "31" : "32";
      row.push_back(Paint(change, sgr, deco.color));
      row.push_back(Paint(verdict, sgr, deco.color));
    }
    t.Add(std::move(row));
  }
  t.Print(out, "  ");
  out << "\nchange: mean against " << letter(0) << "'s; significant: p < " << c.options.alpha
      << " in a two-sided "
      << (c.options.test == CompareTest::kWelch ? "Welch's t-test" : "Mann-Whitney U test")
      << " over the repetitions\n";
  if (any_ratio) {
    out << "ratio: a side with a single run has no spread to test; repeat it with "
           "footprint run -r N\n";
  }
  if (outliers && c.options.test == CompareTest::kWelch) {
    out << "outliers: some repetitions lie beyond 1.5 IQR; --test mann-whitney does not assume "
           "normal data\n";
  }
}

}  // namespace footprint::cli
