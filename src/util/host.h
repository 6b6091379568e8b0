// Facts about this machine and its processes: names, the boot, a process's start time. What
// tells a live monitor from a dead one (a PID is only unique with its start time and boot).
#ifndef FOOTPRINT_UTIL_HOST_H_
#define FOOTPRINT_UTIL_HOST_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace footprint {

std::string HostName();
// The effective user's name in the password database; else `user_variable` (USER, as the
// caller's Env has it: util sits below the Env); else the uid.
std::string UserName(const std::optional<std::string>& user_variable);
std::string CurrentDir();
// /proc/sys/kernel/random/boot_id: changes with every boot.
std::string BootId();
// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or nullopt
// when there is no such process.
std::optional<uint64_t> StartTicks(pid_t pid);

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_HOST_H_
