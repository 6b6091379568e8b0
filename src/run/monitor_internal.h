// What RunMonitored shares with the other ways of measuring a run (the Slurm step agent).
#ifndef FOOTPRINT_RUN_MONITOR_INTERNAL_H_
#define FOOTPRINT_RUN_MONITOR_INTERNAL_H_

#include <nlohmann/json.hpp>

#include "footprint/monitor.h"
#include "sampler/sampler.h"

namespace footprint {

// The interval of each metric the options select (0 for the others).
MetricIntervals ResolveIntervals(const MonitorOptions& o);

// The metrics given an interval of their own (--interval METRIC=...): the probes read them at
// each of their deadlines instead of spacing costly reads out.
MetricSet ExactIntervals(const MonitorOptions& o);

// meta.intervals_ns: each sampled metric's interval, by name.
nlohmann::json IntervalsMeta(const MetricIntervals& intervals);

// Checks the sampling options alone (intervals, flush interval, metrics): InvalidArgument.
Status ValidateSampling(const MonitorOptions& o);

}  // namespace footprint

#endif  // FOOTPRINT_RUN_MONITOR_INTERNAL_H_
