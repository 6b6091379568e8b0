// Terminal views of statistics: a group's repetitions (`show group:ID`) and comparisons
// (`compare`), as aligned tables with units scaled for people.
#ifndef FOOTPRINT_CLI_STATS_VIEW_H_
#define FOOTPRINT_CLI_STATS_VIEW_H_

#include <ostream>
#include <string>
#include <string_view>

#include "cli/format.h"
#include "footprint/compare.h"
#include "footprint/groups.h"

namespace footprint::cli {

void PrintSetSummary(const SetSummary& summary, const Decoration& deco, std::ostream& out);
void PrintComparison(const Comparison& comparison, const Decoration& deco, std::ostream& out);

}  // namespace footprint::cli

#endif  // FOOTPRINT_CLI_STATS_VIEW_H_
