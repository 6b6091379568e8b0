#include "run/command_cpu.h"

#include <unistd.h>

#include "util/proc_parse.h"

namespace footprint {
namespace {

// The cgroup v2 path of `pid` ("0::/PATH" in /proc/PID/cgroup); empty on a v1-only system.
std::string CgroupPath(const std::string& proc_dir) {
  auto text = ReadWholeFile(proc_dir + "/cgroup");
  if (!text.ok()) return "";
  const size_t at = text->find("0::");
  if (at == std::string::npos) return "";
  const size_t end = text->find('\n', at);
  return text->substr(at + 3, end == std::string::npos ? std::string::npos : end - at - 3);
}

}  // namespace

CommandCpu::CommandCpu(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  // A cgroup of the command's own (not footprint's, which would count footprint too).
  const std::string cgroup = CgroupPath(proc);
  if (!cgroup.empty() && cgroup != CgroupPath("/proc/self")) {
    file_ = KernelFile("/sys/fs/cgroup" + cgroup + "/cpu.stat");
    from_cgroup_ = file_.is_open();
  }
  if (!from_cgroup_) file_ = KernelFile(proc + "/stat");
  if (file_.is_open()) source_ = from_cgroup_ ? "cgroup" : "process";
}

std::optional<double> CommandCpu::Read() const {
  char buf[1024];
  const std::string_view text = file_.Read(buf, sizeof buf);
  if (text.empty()) return std::nullopt;
  if (from_cgroup_) {
    auto usec = FindKeyedValue(text, "usage_usec");
    if (!usec) return std::nullopt;
    return static_cast<double>(*usec) / 1e6;
  }
  auto stat = ParseProcStat(text);
  if (!stat) return std::nullopt;
  return static_cast<double>(stat->utime + stat->stime) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace footprint
