// Groups: the repetitions of one command (`footprint run -r N --warmup W`) and their
// statistics, per run total.
//
// A group is the runs sharing a `group_id`. Measured repetitions are numbered 1..N
// (`RunRecord::repetition`); warm-ups are stored with negative repetitions (-W..-1) and never
// enter statistics; a run outside any group has no group id and repetition 0.
//
// What users type to name a set of runs (docs/cli.md):
//   group:ID | group:PREFIX (4+ characters) | group:last | group:RUN   -> a group
//   RUN+RUN+... (each as ResolveRun; for what names no run)              -> those runs as one
//                                                                           set (the web UI's
//                                                                           hand-picked
//                                                                           repetitions)
//   RUN (ResolveRun: id, prefix, last)                                   -> that run alone,
//                                                                           or its group when
//                                                                           `as_group` is set
//   NAME (a run name)                                   -> the group of its latest run when
//                                                          that run is a repetition (`run -r N
//                                                          -n NAME`), saying so in `chosen`;
//                                                          else that run alone, as RUN
// Statistics of a group use its measured repetitions whose status is ok (a failed repetition
// is listed but not counted), and so do the runs of RUN+RUN; a run named alone counts whatever
// its status.
//
// Figures: every total in `run_totals` of the counted runs (so totals added by future probes
// take part without code changes), plus `cpu_s` = cpu_user_s + cpu_system_s. The headline
// figures come first: duration_s, cpu_s, peak_memory_bytes and every energy total (`*_j`).
// A figure whose values are all non-negative (every cost) has its 95 % interval cut at 0.
//
// Thread-safety: free functions; the Store they are given must not be shared concurrently.
#ifndef FOOTPRINT_GROUPS_H_
#define FOOTPRINT_GROUPS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/stats.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

inline bool IsWarmup(const RunRecord& run) { return run.repetition < 0; }

// Runs measured as one for statistics: a group's repetitions, or one run alone.
struct RunSet {
  std::string spec;                // as the user wrote it
  std::string group_id;            // empty: a single run
  std::vector<RunRecord> runs;     // measured repetitions by repetition number, or the one run
  std::vector<RunRecord> warmups;  // the group's warm-ups, oldest first
  // Set when a run name was taken to mean the group of its latest run: one sentence saying so,
  // for the user (the CLI prints it as a note). Empty otherwise.
  std::string chosen;
  bool is_group() const { return !group_id.empty(); }
  // "group", "runs" (RUN+RUN) or "run": the `kind` of compare --json.
  std::string_view kind() const { return is_group() ? "group" : runs.size() > 1 ? "runs" : "run"; }
  // "group 3f2a1b2c (name)" or "run 9c1e5d7a (name)", for people.
  std::string Label() const;
};

// Resolves `spec` (see above) among `runs` (oldest first). NotFound / InvalidArgument (an
// ambiguous prefix) as ResolveRun.
Result<RunSet> ResolveRunSet(const std::vector<RunRecord>& runs, std::string_view spec,
                             bool as_group = false);

// The unit of a run total, from its name's suffix: s, bytes, J, W, or count.
std::string_view TotalUnit(std::string_view total_name);
// "duration", "cpu time", "peak memory", "gpu energy": a run total's name for people.
std::string FigureLabel(std::string_view total_name);

// One figure over the counted runs of a set.
struct FigureStats {
  std::string name;  // a run total name, or cpu_s
  std::string unit;
  bool headline = false;
  std::vector<double> values;        // one per run that has the figure, in run order
  std::vector<std::string> run_ids;  // the runs of `values`
  std::vector<int> repetitions;      // the runs' repetition numbers (0 for a single run)
  Description stats;
};

struct SetSummary {
  RunSet set;
  std::vector<RunRecord> counted;           // the runs whose totals enter the statistics
  std::vector<FigureStats> figures;         // headline figures first
  std::map<std::string, double> durations;  // run id -> duration_s, for every run and warm-up
  const FigureStats* Find(std::string_view name) const;
};

Result<SetSummary> SummarizeSet(Store& store, RunSet set);

// The `show --json` object of a group (docs/cli.md): group, runs, warmups, figures.
std::string SetSummaryJson(const SetSummary& summary, int indent = 2);

}  // namespace footprint

#endif  // FOOTPRINT_GROUPS_H_
