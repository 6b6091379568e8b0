// MLPerf's log files for a `footprint load` run (--mlperf-log DIR), in the layout LoadGen
// writes them, so that MLPerf's own tools (tools/submission/log_parser.py of
// mlcommons/inference and the submission checker) read a footprint run:
//   mlperf_log_summary.txt   the human summary: SUT name, scenario, mode, the scenario's result
//                            line, "Result is : VALID/INVALID", early stopping, the statistics
//                            and the test parameters
//   mlperf_log_detail.txt    one `:::MLLOG {json}` line per key (key, value, time_ms,
//                            namespace, event_type, metadata), the keys the checker reads
//   mlperf_log_accuracy.json accuracy mode: every answered sample (load_samples.h)
#ifndef FOOTPRINT_LOAD_MLPERF_LOG_H_
#define FOOTPRINT_LOAD_MLPERF_LOG_H_

#include <string>
#include <vector>

#include "footprint/load.h"
#include "footprint/status.h"

namespace footprint {

// LoadGen's name of a scenario: "SingleStream", "MultiStream", "Server", "Offline" (defined in
// load.cc, on the row of the scenario's words that ParseScenario and ScenarioName read).
std::string MlperfScenarioName(Scenario scenario);

// Whether LoadGen would call the run VALID: valid against the bound when there is one, else
// every query answered, the load done and (single, multi, server) early stopping met.
bool MlperfValid(const LoadSummary& summary);

// The detail log's text: `:::MLLOG ` and a JSON object per line.
std::string MlperfDetailLog(const LoadSummary& summary);
// The summary log's text.
std::string MlperfSummaryLog(const LoadSummary& summary);

// Writes the files into `dir` (an existing folder); IoError naming the file that failed.
Status WriteMlperfLogs(const std::string& dir, const LoadSummary& summary,
                       const std::vector<QueryRecord>& queries);

}  // namespace footprint

#endif  // FOOTPRINT_LOAD_MLPERF_LOG_H_
