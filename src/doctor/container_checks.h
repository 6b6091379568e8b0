// doctor's container checks (docs/containers.md#doctor): which engines are here and whether a
// container they start can be measured, and if not exactly why.
#ifndef FOOTPRINT_DOCTOR_CONTAINER_CHECKS_H_
#define FOOTPRINT_DOCTOR_CONTAINER_CHECKS_H_

#include <vector>

#include "footprint/doctor.h"

namespace footprint {

// "container cgroups": whether footprint can make a container's parent cgroup at the
// hierarchies' roots (made and removed, as a run does); then one check per engine on PATH
// ("container podman", ...) with its version and what stops its containers from running or
// being measured here, or one "containers" check saying that no engine is installed.
void AddContainerChecks(std::vector<DoctorCheck>& checks);

}  // namespace footprint

#endif  // FOOTPRINT_DOCTOR_CONTAINER_CHECKS_H_
