// Sets of runs as a benchmark table (Markdown) or as hyperfine's JSON (report/export.h).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "footprint/stats.h"
#include "report/export.h"
#include "util/json_bounded.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

struct SetFigures {
  SetSummary summary;
  const FigureStats* duration = nullptr;
};

Result<std::vector<SetFigures>> Summarize(Store& store, std::span<const RunSet> sets) {
  std::vector<SetFigures> out;
  for (const RunSet& set : sets) {
    FP_ASSIGN_OR_RETURN(SetSummary summary, SummarizeSet(store, set));
    SetFigures f{std::move(summary)};
    f.duration = f.summary.Find("duration_s");
    if (f.summary.counted.empty() || f.duration == nullptr || f.duration->values.empty()) {
      return InvalidArgument(f.summary.set.Label() +
                             " has no run to count (no repetition ended ok); export its runs "
                             "with --format csv or json instead");
    }
    out.push_back(std::move(f));
  }
  return out;
}

double MeanOf(const SetFigures& f, std::string_view name) {
  const FigureStats* figure = f.summary.Find(name);
  return figure == nullptr ? 0.0 : figure->stats.mean;
}

json HyperfineResult(const SetFigures& f) {
  const Description& d = f.duration->stats;
  const RunRecord& first = f.summary.counted.front();
  json result = {{"command", ShellCommandLine(first.command)},
                 {"mean", d.mean},
                 {"stddev", OrNull(d.sd)},
                 {"median", d.median},
                 {"user", MeanOf(f, "cpu_user_s")},
                 {"system", MeanOf(f, "cpu_system_s")},
                 {"min", d.min},
                 {"max", d.max},
                 {"times", f.duration->values}};
  // hyperfine's memory_usage_byte is each run's largest process high-water mark (wait4's
  // ru_maxrss), which is footprint's max_process_peak_bytes.
  const FigureStats* hwm = f.summary.Find("max_process_peak_bytes");
  if (hwm != nullptr && hwm->values.size() == f.duration->values.size()) {
    json bytes = json::array();
    for (double v : hwm->values) bytes.push_back(static_cast<uint64_t>(v));
    result["memory_usage_byte"] = bytes;
  }
  json exit_codes = json::array();
  for (const RunRecord& run : f.summary.counted) {
    exit_codes.push_back(OrNull(run.exit_code));
  }
  result["exit_codes"] = exit_codes;
  const json meta = ParseStoredJson(first.meta_json);
  if (meta.is_object() && meta.contains("params") && meta["params"].is_object() &&
      !meta["params"].empty()) {
    result["parameters"] = meta["params"];
  }
  return result;
}

// "12.3" or "12.3 ± 0.4", with `decimals`.
std::string PlusMinus(double value, std::optional<double> sd, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string out = buf;
  if (sd) {
    std::snprintf(buf, sizeof buf, " ± %.*f", decimals, *sd);
    out += buf;
  }
  return out;
}

// Mean ± sd of a figure, scaled by `scale`.
std::string MeanSd(const Description& d, double scale, int decimals) {
  return PlusMinus(d.mean * scale, d.sd ? std::optional<double>(*d.sd * scale) : std::nullopt,
                   decimals);
}

// A cell of stored text: '|' would end it and a line break the row.
std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (char c : Inert(text)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The mean relative to the fastest set's, ± the uncertainty of that ratio, as hyperfine writes
// it; none for the fastest itself.
std::string Relative(const Description& d, const Description& fastest) {
  return PlusMinus(d.mean / fastest.mean, &d == &fastest ? std::nullopt : RatioSd(fastest, d), 2);
}

// `text`, as Markdown code.
std::string Code(std::string_view text) {
  std::string out = "`";
  out += text;
  out += '`';
  return out;
}

// "| a | b |\n", appended cell by cell.
void AppendRow(std::string& out, const std::vector<std::string>& cells) {
  out += '|';
  for (const std::string& cell : cells) {
    out += ' ';
    out += cell;
    out += " |";
  }
  out += '\n';
}

std::string MarkdownTable(const std::vector<SetFigures>& sets) {
  // One unit for the table, from the first set, as hyperfine chooses it.
  const bool seconds = sets.front().duration->stats.mean >= 1.0;
  const double scale = seconds ? 1.0 : 1e3;
  const int decimals = seconds ? 3 : 1;
  const std::string unit = seconds ? " [s]" : " [ms]";
  const Description* fastest = &sets.front().duration->stats;
  std::set<std::string> energies;  // every headline energy any set measured
  for (const SetFigures& f : sets) {
    if (f.duration->stats.mean < fastest->mean) fastest = &f.duration->stats;
    for (const FigureStats& figure : f.summary.figures) {
      if (figure.headline && figure.unit == "J") energies.insert(figure.name);
    }
  }
  // Strings are built by appending: GCC 12 at -O3 misreports "literal" + std::string as an
  // overlapping copy (-Wrestrict), which -Werror turns into a failed build.
  auto with_unit = [&](std::string name) { return name += unit; };
  std::vector<std::string> header = {"Run",
                                     "Command",
                                     "Runs",
                                     with_unit("Mean"),
                                     with_unit("Min"),
                                     with_unit("Max"),
                                     "Relative",
                                     with_unit("User"),
                                     with_unit("System"),
                                     "Peak memory [MiB]"};
  std::vector<std::string> rule = {":---", ":---"};
  rule.resize(header.size(), "---:");
  for (const std::string& name : energies) {
    header.push_back(MarkdownCell(FigureLabel(name)) += " [J]");
    rule.push_back("---:");
  }
  std::string out;
  AppendRow(out, header);
  AppendRow(out, rule);
  for (const SetFigures& f : sets) {
    const Description& d = f.duration->stats;
    auto mean_sd = [&](std::string_view name, double figure_scale, int figure_decimals) {
      const FigureStats* figure = f.summary.Find(name);
      return figure ? MeanSd(figure->stats, figure_scale, figure_decimals) : std::string("—");
    };
    std::vector<std::string> row = {
        MarkdownCell(f.summary.set.Label()),
        Code(MarkdownCell(ShellCommandLine(f.summary.counted.front().command))),
        std::to_string(d.n),
        MeanSd(d, scale, decimals),
        PlusMinus(d.min * scale, std::nullopt, decimals),
        PlusMinus(d.max * scale, std::nullopt, decimals),
        Relative(d, *fastest),
        mean_sd("cpu_user_s", scale, decimals),
        mean_sd("cpu_system_s", scale, decimals),
        mean_sd("peak_memory_bytes", 1.0 / (1 << 20), 1)};
    for (const std::string& name : energies) row.push_back(mean_sd(name, 1.0, 1));
    AppendRow(out, row);
  }
  return out;
}

}  // namespace

Status ExportSets(Store& store, std::span<const RunSet> sets, ExportFormat format,
                  std::ostream& out) {
  if (sets.empty()) return InvalidArgument("nothing to export: name runs or groups with -u");
  FP_ASSIGN_OR_RETURN(std::vector<SetFigures> figures, Summarize(store, sets));
  if (format == ExportFormat::kHyperfine) {
    json results = json::array();
    for (const SetFigures& f : figures) results.push_back(HyperfineResult(f));
    out << JsonText(json{{"results", results}}, 2) << "\n";
  } else {
    out << MarkdownTable(figures);
  }
  out.flush();
  if (!out) return IoError("cannot write the export (disk full, or the reader went away?)");
  return Status::Ok();
}

}  // namespace footprint
