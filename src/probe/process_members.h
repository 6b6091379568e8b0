// The processes whose share of a GPU a run claims (the GPU probe's .tree metrics): the
// command's tree, a container's cgroup, or both (docs/containers.md#gpu). NVML names processes
// by their PIDs in the host's namespace, which is what every source here lists.
#ifndef FOOTPRINT_PROBE_PROCESS_MEMBERS_H_
#define FOOTPRINT_PROBE_PROCESS_MEMBERS_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace footprint {

class ProcessMembers {
 public:
  virtual ~ProcessMembers() = default;
  // The members at `now_ns`, listed once per sampling pass; the reference is valid until the
  // next call. On the sampler thread only.
  virtual const std::vector<pid_t>& MembersAt(int64_t now_ns) = 0;
};

}  // namespace footprint

#endif  // FOOTPRINT_PROBE_PROCESS_MEMBERS_H_
