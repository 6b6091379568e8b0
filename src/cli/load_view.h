// The summary of a load (footprint load; meta `load`, include/footprint/load.h) for people:
// printed by `footprint load` when it ends and by `footprint show`.
#ifndef FOOTPRINT_CLI_LOAD_VIEW_H_
#define FOOTPRINT_CLI_LOAD_VIEW_H_

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "footprint/report.h"

namespace footprint::cli {

// A few lines, each starting with `prefix`: the queries and their rate, the latency
// percentiles, validity and early stopping, and the cost per query: CPU from `totals`, energy
// over the load's window where `energy` has it (else the run's total, said so).
void PrintLoadSummary(const nlohmann::json& load, const std::map<std::string, double>& totals,
                      const std::vector<LoadEnergy>& energy, const std::string& prefix,
                      std::ostream& out);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_LOAD_VIEW_H_
