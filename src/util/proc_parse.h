// Parsers for the /proc and cgroup files footprint reads. Pure functions over text, so they
// are tested table-driven over checked-in fixtures; they never allocate on success.
#ifndef FOOTPRINT_UTIL_PROC_PARSE_H_
#define FOOTPRINT_UTIL_PROC_PARSE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace footprint {

// The fields of /proc/PID/stat that footprint uses. Times are in clock ticks (USER_HZ).
struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t ppid = 0;
  uint64_t utime = 0, stime = 0;   // this process (all its threads)
  int64_t cutime = 0, cstime = 0;  // its children that it waited for
  int64_t num_threads = 0;
  uint64_t starttime = 0;  // ticks after boot; with pid, identifies the process
  int64_t rss_pages = 0;
};

// Parses /proc/PID/stat. The command name may contain spaces and ')' so fields are read
// from the LAST ')'. nullopt when the text is truncated or malformed.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// The first fields of /proc/PID/statm, in pages. `shared` is the resident file-backed and
// shared-memory pages (RssFile + RssShmem); resident - shared is the anonymous part.
struct ProcStatm {
  int64_t size = 0;
  int64_t resident = 0;
  int64_t shared = 0;
};
std::optional<ProcStatm> ParseProcStatm(std::string_view text);

struct ProcIo {
  uint64_t read_bytes = 0;   // bytes this process (and its waited children) caused to be read
  uint64_t write_bytes = 0;  // ... written, from storage
};
std::optional<ProcIo> ParseProcIo(std::string_view text);

// The aggregate "cpu" line of /proc/stat, in ticks.
struct SysCpuTimes {
  uint64_t busy = 0;   // user+nice+system+irq+softirq+steal
  uint64_t total = 0;  // busy + idle + iowait
};
std::optional<SysCpuTimes> ParseProcStatCpu(std::string_view text);

struct MemInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};
std::optional<MemInfo> ParseMemInfo(std::string_view text);

// Finds "KEY VALUE" (cgroup cpu.stat, memory.stat) or "KEY: VALUE kB" (/proc status) lines;
// returns the integer VALUE of the first line whose first word is `key`.
std::optional<int64_t> FindKeyedValue(std::string_view text, std::string_view key);

// Calls f(pid) for each whitespace-separated integer in `text` (cgroup.procs, children).
template <typename F>
void ForEachPid(std::string_view text, F&& f) {
  int64_t v = -1;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v * 10) + (c - '0');
    } else if (v >= 0) {
      f(static_cast<pid_t>(v));
      v = -1;
    }
  }
  if (v >= 0) f(static_cast<pid_t>(v));
}

}  // namespace footprint

#endif  // FOOTPRINT_UTIL_PROC_PARSE_H_
