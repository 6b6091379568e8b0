// Internals of plan parsing shared by the parsers (plan.cc: footprint's YAML; radt_plan.cc:
// radT's CSV and YAML sweeps) and the CSV status writer.
#ifndef FOOTPRINT_EXPERIMENT_PLAN_H_
#define FOOTPRINT_EXPERIMENT_PLAN_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "footprint/experiment.h"
#include "footprint/status.h"

namespace footprint::experiment {

// One field of a CSV record: `raw` exactly as written (blanks and quotes included), `value`
// unquoted and trimmed.
struct CsvField {
  std::string raw;
  std::string value;
};

struct CsvRecord {
  int line = 0;  // 1-based line where the record starts
  std::vector<CsvField> fields;
};

// Splits CSV text into records: ',' separates fields, a field may be double-quoted (with ""
// for a quote, and commas or newlines inside), blanks around fields are not part of the value.
// Blank lines and lines starting with '#' are skipped. InvalidArgument for an unterminated
// quote or text after a closing quote.
Result<std::vector<CsvRecord>> TokenizeCsv(std::string_view text);

// A field for a CSV file: quoted when it holds a comma, quote, newline or edge blanks.
std::string CsvQuote(std::string_view value);

bool IsFile(const std::string& path);
// `path` made absolute against the current folder.
std::string Absolute(const std::string& path);

// Sets run.command (and run.interpreter, run.script) for a plan's File with its arguments:
// scripts run with the interpreter their extension implies, anything else is executed
// (looked up in PATH when it has no '/'). A relative File that exists next to the plan is
// taken from there.
void ResolveCommand(const std::string& file, const std::vector<std::string>& args,
                    const std::string& plan_dir, const std::string& python, PlannedRun& run);
// Devices: '+'-separated GPU indices or UUIDs; empty or "-" for none.
Status ParseDevices(std::string_view text, PlannedRun& run);
// Collocation: "-" (none), "mps", "mps:PCT" (active-thread percentage), or a MIG profile.
Status ParseCollocation(std::string_view text, PlannedRun& run);
// YAML: InvalidArgument "line N: what" at `node`'s line.
Status YamlError(const YAML::Node& node, const std::string& what);
// The value of `node`, which must be a scalar (`key` names it in the error).
Result<std::string> Scalar(const YAML::Node& node, const std::string& key);
// A mapping of NAME: VALUE scalars.
Result<std::map<std::string, std::string>> ScalarMap(const YAML::Node& node,
                                                     const std::string& key);
// A scalar or a list of them.
Result<std::vector<std::string>> ScalarList(const YAML::Node& node, const std::string& key);
// InvalidArgument when two runs share a key.
Status CheckKeysUnique(const ExperimentPlan& plan);

// The plan's workloads by (experiment, workload), in order of first appearance: finding one
// takes log time, so that expanding a plan stays linear in its size.
class Workloads {
 public:
  explicit Workloads(ExperimentPlan& plan) : plan_(plan) {}
  // The workload's entry, appended when new. Valid until the next call.
  PlannedWorkload& For(const std::string& experiment, const std::string& workload) {
    auto [it, added] = index_.try_emplace({experiment, workload}, plan_.workloads.size());
    if (added) plan_.workloads.push_back({experiment, workload, {}});
    return plan_.workloads[it->second];
  }

 private:
  ExperimentPlan& plan_;
  std::map<std::pair<std::string, std::string>, size_t> index_;
};

// A plan in radT's YAML sweep format (top-level `method`, `parameters`; radt_plan.cc).
Result<ExperimentPlan> ParseRadtSweep(const YAML::Node& root, const std::string& text,
                                      const std::string& path, const PlanOptions& options);

}  // namespace footprint::experiment

#endif  // FOOTPRINT_EXPERIMENT_PLAN_H_
