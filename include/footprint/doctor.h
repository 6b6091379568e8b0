// Doctor: what footprint can measure on this machine, and for each thing it cannot, why and
// what would enable it. Every check exercises the real mechanism (it creates and removes a
// cgroup, reads the files the probes read, loads NVML and calls each GPU function once), so its
// answer is the sampler's answer.
//
// Thread-safety: RunDoctor may be called from any thread; it changes nothing lasting.
#ifndef FOOTPRINT_DOCTOR_H_
#define FOOTPRINT_DOCTOR_H_

#include <string>
#include <vector>

#include "footprint/env.h"

namespace footprint {

struct DoctorCheck {
  std::string name;  // e.g. "cgroup cpu"
  bool ok = false;
  std::string detail;   // what is used, or why not and how to enable it
  std::string metrics;  // metrics or totals that depend on it
  // Further facts, one per line: for a GPU, each GPU metric and whether it can be measured
  // there (and why not). Empty for most checks.
  std::vector<std::string> lines;
};

// The checks, in the order `footprint doctor` prints them. Vendor libraries (NVML, its activity
// sources), CUDA_VISIBLE_DEVICES, PATH, the sysfs root and $FOOTPRINT_DB come from `env`; the
// process tree, cgroup, perf and container checks, and libpq (loaded once per process), are
// this machine's.
std::vector<DoctorCheck> RunDoctor(Env& env = Env::Default());

}  // namespace footprint

#endif  // FOOTPRINT_DOCTOR_H_
