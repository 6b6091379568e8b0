// Internals of plan parsing shared by the parsers (plan.cc: footprint's YAML; radt_plan.cc:
// radT's CSV and YAML sweeps) and the CSV status writer.
#ifndef FOOTPRINT_EXPERIMENT_PLAN_H_
#define FOOTPRINT_EXPERIMENT_PLAN_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
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
// Blank lines and lines starting with '#' are skipped, and a UTF-8 byte order mark at the start.
// InvalidArgument for an unterminated quote, text after a closing quote, and as soon as there
// are more than `max_rows` records after the first (the header) or a record has more than
// `max_fields` fields: what the text makes is bounded before it is made.
Result<std::vector<CsvRecord>> TokenizeCsv(std::string_view text, size_t max_rows = SIZE_MAX,
                                           size_t max_fields = SIZE_MAX);

// A field for a CSV file: quoted when it holds a comma, quote, newline or edge blanks.
std::string CsvQuote(std::string_view value);

bool IsFile(const std::string& path);
// `path` made absolute against the current folder.
std::string Absolute(const std::string& path);
// `path` as the file system names it (realpath): absolute, with every "..", "." and
// symbolic link resolved; lexically normalized where it does not exist. A plan's identity:
// `csv/../plan.csv` typed in one folder and `plan.csv` in another are one plan.
std::string CanonicalPath(const std::string& path);
// A file a plan names (a script, an input), as stored with its runs: absolute, its own name
// as written, and its folder as written unless that holds "." or ".." (or "//"), then as the
// file system names it: `csv/../pytorch/train.py` is `pytorch/train.py`, `/bin/echo` stays
// (a script that is a link keeps its name: radT starts a script in the folder it is named in).
std::string NamedFilePath(const std::string& path);

// Sets run.command (and run.interpreter, run.script) for a plan's File with its arguments:
// scripts run with the interpreter their extension implies, anything else is executed
// (looked up in PATH when it has no '/'). A relative File that exists next to the plan is
// taken from there.
void ResolveCommand(const std::string& file, const std::vector<std::string>& args,
                    const std::string& plan_dir, const std::string& python, PlannedRun& run);
// `--devices cpu`: every run of the plan on the CPU, as written for GPUs (radT's `Devices 0`):
// its Devices and GPU collocation (MPS, MIG) set aside, CUDA_VISIBLE_DEVICES empty so that
// the command sees no GPU. Returns how many runs named a GPU.
size_t MapDevicesToCpu(ExperimentPlan& plan);
// A YAML plan's parameter as YAML's core schema types the text of a plain scalar: integer,
// float, true/false, null, else the string itself (meta.params keeps the types).
nlohmann::json YamlTypedValue(const std::string& text);
// Devices: '+'-separated GPU indices or UUIDs; empty or "-" for none.
Status ParseDevices(std::string_view text, PlannedRun& run);
// Collocation: "-" (none), "mps", "mps:PCT" (active-thread percentage), or a MIG profile.
Status ParseCollocation(std::string_view text, PlannedRun& run);
// YAML: InvalidArgument "line N: what" at `node`'s line.
Status YamlError(const YAML::Node& node, const std::string& what);
// Parses YAML text (its first document) into a tree. Text that would make more than
// `max_nodes` nodes (keys, values, lists, mappings; an alias counted as the nodes it repeats,
// which is what a walk over the tree visits) is refused first, by a pass that builds nothing:
// yaml-cpp's tree takes about 500 bytes a node. An alias inside the node it names (a loop) is
// refused too. InvalidArgument "line N: what" for these and for text that is not YAML.
Result<YAML::Node> LoadYaml(const std::string& text, int64_t max_nodes);
// InvalidArgument naming the first key of the mapping `node` that is not in `known`, and the
// known ones (a typo must not be ignored silently); `where` ("model", empty at the top) is
// put before the key. InvalidArgument when `node` is not a mapping.
Status CheckKnownKeys(const YAML::Node& node, const std::string& where,
                      const std::set<std::string>& known);
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
