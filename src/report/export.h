// Export: runs out of the database as CSV, JSON, or a Chrome Trace Event file (Perfetto), and
// sets of runs (groups, or runs alone) as a benchmark table in Markdown or hyperfine's JSON.
//
// Everything is streamed: samples go from the database to the output through a small buffer,
// so a run of 10 M samples exports in seconds with bounded memory. The formats (columns and
// fields) are documented in docs/cli.md and pinned by the golden files in tests/golden/.
//
// - csv: one table, one row per total, scope, value and sample, with a `kind` column;
// - json: {"format": "footprint-export", "version": 1, "runs": [{run, totals, scopes, values,
//   series: [{..., samples: [[t_ns, value], ...]}]}]};
// - trace: Chrome Trace Event JSON: a process per run (named by 'M' events), scopes as
//   complete 'X' events on their thread's track, metrics and scalar values as counter 'C'
//   events; timestamps in µs since each run's start.
// - markdown: hyperfine's table (Command, Mean ± sd, Min, Max, Relative to the fastest), then
//   user and system CPU, peak memory and energy where measured; one row per set;
// - hyperfine: {"results": [...]}, one result per set with hyperfine's fields (command, mean,
//   stddev, median, user, system, min, max, times, memory_usage_byte, exit_codes,
//   parameters), so that hyperfine's scripts read it. A set's figures are its statistics
//   (footprint/groups.h: ok repetitions, warm-ups left out).
//
// Thread-safety: free functions; the Store must not be shared concurrently.
#ifndef FOOTPRINT_REPORT_EXPORT_H_
#define FOOTPRINT_REPORT_EXPORT_H_

#include <ostream>
#include <span>
#include <string_view>

#include "footprint/groups.h"
#include "footprint/progress.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

enum class ExportFormat { kCsv, kJson, kTrace, kMarkdown, kHyperfine };

// "csv", "json", "trace", "markdown" (or "md") or "hyperfine"; InvalidArgument otherwise.
Result<ExportFormat> ParseExportFormat(std::string_view name);
// Whether `format` writes sets of runs (ExportSets) rather than runs (ExportRuns).
bool ExportsSets(ExportFormat format);

// Writes `runs` in `format` to `out`. IoError when the output fails (e.g. the disk is full),
// the store's error when reading fails; what was written so far stays written. `progress`
// hears of each sampled series written (csv, json, trace), out of all the runs' series.
Status ExportRuns(Store& store, std::span<const RunRecord> runs, ExportFormat format,
                  std::ostream& out, ProgressFn progress = {});
// Writes one row or result per set in `format` (markdown or hyperfine), as ExportRuns.
// InvalidArgument when a set has no run to count (a group whose repetitions all failed).
Status ExportSets(Store& store, std::span<const RunSet> sets, ExportFormat format,
                  std::ostream& out);

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_EXPORT_H_
