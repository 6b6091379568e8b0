// The reproducibility record of an experiment's run (meta.repro): what would be needed to run
// it again and to tell why two runs differ.
//
//   {"command": [...], "params": {...}, "env": {NAME: value, secrets "<redacted>"},
//    "script": {"path", "git": {commit, dirty, branch}},
//    "interpreter": {"path", "version", "packages": {name: version}},   // Python: installed
//    "driver": "550.54.15",                                             // NVIDIA, when present
//    "inputs": {path: sha256}}
//
// Thread-safety: ReproCache is not thread-safe; the functions are otherwise pure or only read
// files and start the interpreter.
#ifndef FOOTPRINT_EXPERIMENT_REPRO_H_
#define FOOTPRINT_EXPERIMENT_REPRO_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "footprint/experiment.h"

namespace footprint::experiment {

// Whether an environment variable's value must not be stored: its name contains TOKEN,
// SECRET, PASSWORD, PASSWD, KEY, CREDENTIAL, AUTH, COOKIE or SESSION (case-insensitive).
bool IsSecretName(std::string_view name);

// The environment a run's command sees (footprint's own, with the plan's variables on top),
// secrets redacted.
nlohmann::json FilteredEnvironment(const std::map<std::string, std::string>& overrides);

// sha256 of a file's content, "" when it cannot be read.
std::string FileSha256(const std::string& path);

// What is costly to find and the same for every run of an experiment: interpreter versions
// and package lists (asked once per interpreter), file hashes, git state per folder, the driver.
class ReproCache {
 public:
  nlohmann::json Interpreter(const std::string& name);
  std::string Sha256(const std::string& path);
  nlohmann::json Git(const std::string& dir);
  std::string DriverVersion();  // "" without the NVIDIA driver

 private:
  std::map<std::string, nlohmann::json> interpreters_, git_;
  std::map<std::string, std::string> hashes_;
  std::optional<std::string> driver_;
};

// The record of one planned run (see the file comment).
nlohmann::json ReproRecord(const PlannedRun& run, ReproCache& cache);

// One line per difference between the repro records of two runs' meta (JSON text):
// "env PATH differs", "interpreter package numpy: 1.24.2 vs 1.26.0", "input data.csv differs",
// "script git commit: 1a2b3c vs 4d5e6f", ... Empty when either has no record.
std::vector<std::string> ReproDifferences(const std::string& meta_a, const std::string& meta_b);

}  // namespace footprint::experiment

#endif  // FOOTPRINT_EXPERIMENT_REPRO_H_
