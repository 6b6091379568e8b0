// UMLAUT's databases brought into a footprint store (`footprint import`).
//
// UMLAUT (github hpides/End-to-end-ML-System-Benchmark) writes two tables: benchmark_metadata
// (uuid, meta_description, meta_name, meta_start_time) and measurement (uuid,
// measurement_datetime, measurement_description, measurement_type, measurement_data,
// measurement_unit, measured_method_name), its series as JSON encoded twice. Each UMLAUT run
// becomes a footprint run with the same id, so importing again adds nothing:
//   memory, gpumemory (MiB)  -> series memory, gpu.memory (bytes)
//   cpu, gpu (%), gpupower (W) -> series cpu, gpu, gpu.power
//   time                     -> a scope named after the measured function, ending when logged
//   gputime, latency, throughput, energy (µJ) -> values gpu_time_s, latency, throughput,
//                               energy.cpu (J) of that scope
//   tta, loss                -> values accuracy, loss at steps 0, 1, ... in a scope named by
//                               the description; timed tta -> value time_to_accuracy
//   confusion-matrix, hyperparameters -> footprint's confusion matrix and hyperparameter sets
// A series lies in the scope of its function; each function's metric descriptions are kept as
// value umlaut.supervision, as footprint.umlaut writes them. A run's totals are what its rows
// determine: duration_s (its span) and peak_memory_bytes (its largest memory sample, said in
// meta.sources). A run without meta_name (UMLAUT's first versions) is named after the file.
// UMLAUT's times are local and naive: they are read in this machine's time zone.
#ifndef FOOTPRINT_STORE_UMLAUT_IMPORT_H_
#define FOOTPRINT_STORE_UMLAUT_IMPORT_H_

#include <string>
#include <vector>

#include "footprint/progress.h"
#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// What importing one UMLAUT run did.
struct ImportedRun {
  std::string id;
  std::string name;
  bool already_there = false;  // a run with that id was in the store: nothing written
  size_t series = 0, samples = 0, scopes = 0, values = 0;
  std::vector<std::string> unmapped;  // "power: 2 rows (why)", one entry per cause
};

// Imports every run of the UMLAUT database at `path` (opened read-only, left untouched) into
// `store`. kDatabase when `path` is not an UMLAUT database; a run that fails half-way stays
// in the store as interrupted and the error says which. `progress` hears of each run imported.
Result<std::vector<ImportedRun>> ImportUmlautDatabase(const std::string& path, Store& store,
                                                      const ProgressFn& progress = {});

}  // namespace footprint

#endif  // FOOTPRINT_STORE_UMLAUT_IMPORT_H_
