#include "session/descendants.h"

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "util/file.h"
#include "util/proc_parse.h"

namespace footprint {

std::vector<pid_t> ChildrenOf(const std::string& proc_root, pid_t pid) {
  std::vector<pid_t> children;
  std::error_code ec;
  const std::string tasks = proc_root + "/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    auto listed = ReadWholeFile(task.path().string() + "/children");
    if (listed.ok()) ForEachPid(*listed, [&](pid_t c) { children.push_back(c); });
  }
  return children;
}

std::vector<pid_t> Descendants(Env& env) {
  const std::string proc_root = env.ProcRoot();
  std::vector<pid_t> found, queue = {::getpid()};
  while (!queue.empty()) {
    const pid_t pid = queue.back();
    queue.pop_back();
    for (pid_t child : ChildrenOf(proc_root, pid)) {
      found.push_back(child);
      queue.push_back(child);
    }
  }
  return found;
}

std::vector<ProcessCpu> DescendantCpu(Env& env) {
  const double seconds_per_tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::vector<ProcessCpu> out;
  for (pid_t pid : Descendants(env)) {
    auto text = ReadWholeFile(env.ProcRoot() + "/" + std::to_string(pid) + "/stat");
    std::optional<ProcStat> st = text.ok() ? ParseProcStat(*text) : std::nullopt;
    if (!st) continue;  // gone meanwhile: its parent's account has it
    out.push_back(
        {pid, st->starttime,
         static_cast<double>(st->utime + static_cast<uint64_t>(st->cutime)) * seconds_per_tick,
         static_cast<double>(st->stime + static_cast<uint64_t>(st->cstime)) * seconds_per_tick});
  }
  return out;
}

CpuSeconds CpuBetween(const std::vector<ProcessCpu>& before, const std::vector<ProcessCpu>& after) {
  auto find = [](const std::vector<ProcessCpu>& in, const ProcessCpu& p) -> const ProcessCpu* {
    for (const ProcessCpu& q : in) {
      if (q.pid == p.pid && q.start_ticks == p.start_ticks) return &q;
    }
    return nullptr;
  };
  CpuSeconds used;
  for (const ProcessCpu& p : after) {
    const ProcessCpu* then = find(before, p);
    used.user_s += p.user_s - (then ? then->user_s : 0);
    used.system_s += p.system_s - (then ? then->system_s : 0);
  }
  for (const ProcessCpu& p : before) {
    if (find(after, p)) continue;
    used.user_s -= p.user_s;
    used.system_s -= p.system_s;
  }
  return used;
}

}  // namespace footprint
