#include "util/proc_parse.h"

#include <charconv>

#include "util/strings.h"

namespace footprint {
namespace {

// Reads the next space-separated integer field from `s` starting at `pos`.
template <typename T>
bool NextField(std::string_view s, size_t& pos, T& out) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), out);
  if (ec != std::errc()) return false;
  pos = static_cast<size_t>(ptr - s.data());
  return true;
}

bool SkipFields(std::string_view s, size_t& pos, int n) {
  for (int i = 0; i < n; ++i) {
    while (pos < s.size() && s[pos] == ' ') ++pos;
    if (pos >= s.size()) return false;
    while (pos < s.size() && s[pos] != ' ') ++pos;
  }
  return true;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  ProcStat st;
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  auto pid = ParseInt(text.substr(0, open));
  if (!pid) return std::nullopt;
  st.pid = static_cast<pid_t>(*pid);
  size_t pos = close + 1;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos >= text.size()) return std::nullopt;
  st.state = text[pos++];
  // Fields after state (numbered as in proc(5)): 4 ppid ... 14 utime 15 stime 16 cutime
  // 17 cstime 18 priority 19 nice 20 num_threads 21 itrealvalue 22 starttime 23 vsize 24 rss.
  if (!NextField(text, pos, st.ppid)) return std::nullopt;
  if (!SkipFields(text, pos, 9)) return std::nullopt;  // 5..13
  if (!NextField(text, pos, st.utime) || !NextField(text, pos, st.stime) ||
      !NextField(text, pos, st.cutime) || !NextField(text, pos, st.cstime)) {
    return std::nullopt;
  }
  if (!SkipFields(text, pos, 2)) return std::nullopt;  // 18, 19
  if (!NextField(text, pos, st.num_threads)) return std::nullopt;
  if (!SkipFields(text, pos, 1)) return std::nullopt;  // 21
  if (!NextField(text, pos, st.starttime)) return std::nullopt;
  if (!SkipFields(text, pos, 1)) return std::nullopt;  // 23
  if (!NextField(text, pos, st.rss_pages)) return std::nullopt;
  return st;
}

std::optional<int64_t> FindKeyedValue(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key) continue;
    char sep = line[key.size()];
    if (sep != ' ' && sep != ':' && sep != '\t') continue;
    std::string_view rest = Trim(line.substr(key.size() + 1));
    size_t end = rest.find(' ');
    if (auto v = ParseInt(rest.substr(0, end))) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ProcStatm> ParseProcStatm(std::string_view text) {
  ProcStatm m;
  size_t pos = 0;
  if (!NextField(text, pos, m.size) || !NextField(text, pos, m.resident) ||
      !NextField(text, pos, m.shared) || m.size < 0 || m.resident < 0 || m.shared < 0) {
    return std::nullopt;
  }
  return m;
}

std::optional<ProcIo> ParseProcIo(std::string_view text) {
  auto r = FindKeyedValue(text, "read_bytes");
  auto w = FindKeyedValue(text, "write_bytes");
  if (!r || !w || *r < 0 || *w < 0) return std::nullopt;
  return ProcIo{static_cast<uint64_t>(*r), static_cast<uint64_t>(*w)};
}

std::optional<SysCpuTimes> ParseProcStatCpu(std::string_view text) {
  if (text.substr(0, 4) != "cpu ") return std::nullopt;
  size_t pos = 4;
  uint64_t f[8] = {};  // user nice system idle iowait irq softirq steal
  int n = 0;
  while (n < 8 && NextField(text, pos, f[n])) ++n;
  if (n < 4) return std::nullopt;
  SysCpuTimes t;
  t.busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  t.total = t.busy + f[3] + f[4];
  return t;
}

std::optional<MemInfo> ParseMemInfo(std::string_view text) {
  auto total = FindKeyedValue(text, "MemTotal");
  auto avail = FindKeyedValue(text, "MemAvailable");
  if (!total || !avail) return std::nullopt;
  return MemInfo{static_cast<uint64_t>(*total) * 1024, static_cast<uint64_t>(*avail) * 1024};
}

}  // namespace footprint
