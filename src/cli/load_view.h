// The summary of a load (footprint load; meta `load`, include/footprint/load.h) for people:
// printed by `footprint load` when it ends and by `footprint show`.
#ifndef FOOTPRINT_CLI_LOAD_VIEW_H_
#define FOOTPRINT_CLI_LOAD_VIEW_H_

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace footprint::cli {

// A few lines, each starting with `prefix`: the queries and their rate, the latency
// percentiles, validity and early stopping, and the cost per query from `totals` (CPU, and
// energy where measured).
void PrintLoadSummary(const nlohmann::json& load, const std::map<std::string, double>& totals,
                      const std::string& prefix, std::ostream& out);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_LOAD_VIEW_H_
