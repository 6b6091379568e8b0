// Plot: one self-contained HTML file of interactive charts over chosen runs.
//
// The file holds the charting library (Apache ECharts, embedded into footprint at build time
// from npm), footprint's front end (web/plot.js, web/plot.css) and the data as one JSON
// document, so it opens offline and fetches nothing. Charts: a time series per sampled metric
// (runs overlaid, scopes as labelled bands), bars of scope durations and run totals, curves of
// scalar values (loss, accuracy) by step, confusion-matrix heat maps and parallel coordinates
// of hyperparameter sets (docs/plot.md).
//
// Every series is read in one pass and downsampled on the fly with LTTB to at most
// `max_points` points, so the file stays small and quick however long the run. The samples
// themselves (full resolution, for the page's CSV download) are embedded while the plot holds
// at most `raw_limit` of them in all; beyond that the page's CSV holds the displayed points
// and names `footprint export`.
//
// Thread-safety: free functions; the Store they are given must not be shared concurrently.
#ifndef FOOTPRINT_REPORT_PLOT_H_
#define FOOTPRINT_REPORT_PLOT_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "footprint/env.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// What a set of runs holds that can be plotted: the choices of the menu and of -t / -d.
struct PlotCatalog {
  struct Metric {
    std::string name;
    std::string kind;  // "samples", "values", "confusion matrix" or "hyperparameters"
    std::string unit;  // of sampled metrics
  };
  std::vector<Metric> metrics;      // sampled metrics in order of first appearance, then values
  std::vector<std::string> scopes;  // scope names in order of first appearance
};

// The catalogue of `runs` (a list of the metrics and scopes present in any of them).
Result<PlotCatalog> CatalogRuns(Store& store, const std::vector<RunRecord>& runs);

struct PlotOptions {
  std::vector<std::string> metrics;  // names from the catalogue; empty: all
  std::vector<std::string> scopes;   // names from the catalogue; empty: all
  size_t max_points = 4000;          // per series on display (LTTB); at least 3
  size_t raw_limit = 200'000;        // samples embedded at full resolution, in all
  std::string title;                 // empty: from the runs' names
  bool no_metrics = false;           // scopes only: no metric's chart, whatever `metrics` says
  // Its wall clock dates the page and ends the durations of runs still running.
  Env* env = &Env::Default();
};

// What WritePlot wrote.
struct PlotStats {
  size_t charts = 0;         // charts the page draws
  size_t series = 0;         // sampled series read
  size_t samples = 0;        // samples read
  size_t points = 0;         // sampled points embedded for display
  bool complete_csv = true;  // every sample is embedded at full resolution
};

// Writes the HTML page of `runs` (at least one) to `out`. A metric or scope name that none of
// the runs holds is InvalidArgument naming what they do hold; Unsupported when this footprint
// was built without the charting library (FOOTPRINT_BUILD_PLOT=OFF).
Result<PlotStats> WritePlot(Store& store, const std::vector<RunRecord>& runs,
                            const PlotOptions& options, std::ostream& out);

// The JSON document that WritePlot embeds in its page (runs, metrics with their downsampled
// series, bands, scopes, totals, curves, confusion, hyperparameters; docs/plot.md), which the
// web UI (footprint serve) fetches and draws with the same code. Errors as WritePlot.
Result<std::string> PlotDataJson(Store& store, const std::vector<RunRecord>& runs,
                                 const PlotOptions& options, PlotStats* stats = nullptr);

// The samples of one run's sampled series taken after `after_ns` (ns since the run's start),
// each series downsampled with LTTB to at most `max_points`: what a page showing a live run
// appends. {"run", "status", "duration_s", "after_ns", "metrics": [as PlotDataJson, each
// series with "end_ns", the time of its last sample], "samples"}. `metrics` empty: all. A run
// still running lasts until `env`'s wall clock (RunDuration).
Result<std::string> LiveSeriesJson(Store& store, const RunRecord& run,
                                   const std::vector<std::string>& metrics, size_t max_points,
                                   int64_t after_ns, Env& env);

// Whether the charting library was embedded at build time.
bool PlotAvailable();

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_PLOT_H_
