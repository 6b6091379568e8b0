// GPU notes of a run, for people reading `footprint show`: what they must know to trust its GPU
// figures. Utilisation near 100 % while few SMs are active is the misleading case: NVML's
// utilisation is the share of time any kernel ran, even on one SM of 132. A scope (or a whole
// run) shorter than the energy counter's update period — or, without a counter, than the
// interval at which power is sampled and integrated — cannot be told apart from 0 J or from one
// counter step; a GPU lost mid-run was measured only until then; an attribution to the tree
// that could not be made is unknown, not 0.
//
// Thread-safety: pure functions of their arguments.
#ifndef FOOTPRINT_GPU_REPORT_H_
#define FOOTPRINT_GPU_REPORT_H_

#include <string>
#include <vector>

#include "footprint/report.h"

namespace footprint {

// One sentence per note, in the order: a device busy by NVML's utilisation (mean >= 50 %) on few
// SMs (mean gpu.sm_active under half of it), energy resolution (run, then scopes), lost GPUs,
// unknown attributions, unsupported fields. Empty when the run measured no GPU.
std::vector<std::string> GpuNotes(const RunSummary& summary);

}  // namespace footprint

#endif  // FOOTPRINT_GPU_REPORT_H_
