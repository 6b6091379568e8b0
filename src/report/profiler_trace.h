// The profiler's own traces of a run, on the run's clock: the PyTorch-profiler windows that
// footprint.profile stored (docs/profiling.md), for `footprint export --format trace`.
#ifndef FOOTPRINT_REPORT_PROFILER_TRACE_H_
#define FOOTPRINT_REPORT_PROFILER_TRACE_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "footprint/status.h"
#include "footprint/store.h"

namespace footprint {

// A window's Chrome trace read back at most this large; a larger one is left out (and said).
inline constexpr size_t kMaxProfilerTraceBytes = size_t{256} << 20;

// The operator and kernel events (`X`, `i`, `C`, `B`, `E`) of every trace a
// `profiler.window` value of the run names, `ts` moved onto the run's clock (µs since its
// start) by the window's `trace_to_footprint_us`, `args.window` naming the trace. CPU events
// keep their thread id (footprint's scopes of that thread share its track); device events
// (kernels, copies, sets) get the thread id 1000000000 + their stream and a `thread_name`.
// `pid` is left for the caller. `notes` says which traces could not be read, and why.
Result<std::vector<nlohmann::json>> ProfilerTraceEvents(Store& store, const RunRecord& run,
                                                        const std::vector<ValueRecord>& values,
                                                        std::vector<std::string>& notes);

}  // namespace footprint

#endif  // FOOTPRINT_REPORT_PROFILER_TRACE_H_
