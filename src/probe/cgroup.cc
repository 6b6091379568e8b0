#include "probe/cgroup.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "util/proc_parse.h"
#include "util/strings.h"

namespace footprint {
namespace {

struct Mount {
  std::string root;   // path inside the hierarchy that is mounted
  std::string point;  // where it is mounted
};

// Maps a path from /proc/self/cgroup onto the filesystem through the hierarchy's mount.
std::string DirFor(const Mount& m, const std::string& cgroup_path) {
  std::string rel = cgroup_path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  if (rel == "/") rel.clear();
  return m.point + rel;
}

bool IsWritableDir(const std::string& dir) { return ::access(dir.c_str(), W_OK) == 0; }

// Removes run cgroups that a footprint killed by SIGKILL left behind: empty ones (rmdir fails
// on a cgroup with processes) older than a minute, so that a cgroup another footprint has
// just made for a command that has not joined it yet is never touched.
void RemoveStaleRunCgroups(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (dir == nullptr) return;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, "footprint-", 10) != 0) continue;
    std::string path = parent + "/" + e->d_name;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && now - st.st_mtime > 60) {
      ::rmdir(path.c_str());
    }
  }
  ::closedir(dir);
}

}  // namespace

CgroupSupport DetectCgroups(const std::string& proc_root) {
  CgroupSupport s;
  std::optional<Mount> v2, cpuacct, memory;
  if (auto text = ReadWholeFile(proc_root + "/self/mountinfo"); text.ok()) {
    for (std::string_view line : Split(*text, '\n')) {
      size_t dash = line.find(" - ");
      if (dash == std::string_view::npos) continue;
      auto left = Split(line.substr(0, dash), ' ');
      auto right = Split(line.substr(dash + 3), ' ');
      if (left.size() < 5 || right.size() < 3) continue;
      Mount m{std::string(left[3]), std::string(left[4])};
      if (right[0] == "cgroup2") {
        v2 = m;
      } else if (right[0] == "cgroup") {
        for (std::string_view opt : Split(right[2], ',')) {
          if (opt == "cpuacct") cpuacct = m;
          if (opt == "memory") memory = m;
        }
      }
    }
  }
  std::string v2_path, cpuacct_path, memory_path;
  if (auto text = ReadWholeFile(proc_root + "/self/cgroup"); text.ok()) {
    for (std::string_view line : Split(*text, '\n')) {
      auto parts = Split(line, ':');
      if (parts.size() < 3) continue;
      std::string path(line.substr(parts[0].size() + parts[1].size() + 2));
      if (parts[0] == "0" && parts[1].empty()) v2_path = path;
      for (std::string_view c : Split(parts[1], ',')) {
        if (c == "cpuacct") cpuacct_path = path;
        if (c == "memory") memory_path = path;
      }
    }
  }
  if (v2 && !v2_path.empty()) {
    std::string dir = DirFor(*v2, v2_path);
    if (IsWritableDir(dir)) {
      s.v2_dir = dir;
      auto subtree = ReadWholeFile(dir + "/cgroup.subtree_control");
      if (subtree.ok()) {
        for (std::string_view c : Split(Trim(*subtree), ' ')) s.v2_memory |= (c == "memory");
      }
    }
  }
  if (cpuacct && !cpuacct_path.empty()) {
    std::string dir = DirFor(*cpuacct, cpuacct_path);
    if (IsWritableDir(dir)) s.v1_cpuacct_dir = dir;
  }
  if (memory && !memory_path.empty()) {
    std::string dir = DirFor(*memory, memory_path);
    if (IsWritableDir(dir)) s.v1_memory_dir = dir;
  }
  if (s.v2_dir.empty() && s.v1_cpuacct_dir.empty()) {
    s.why_no_cpu = (v2 || cpuacct)
                       ? "no permission to create a cgroup here (run as root, or in a "
                         "delegated cgroup such as a systemd user scope with Delegate=yes)"
                       : "neither a cgroup v2 hierarchy nor a v1 cpuacct controller is mounted";
  }
  if (!s.v2_memory && s.v1_memory_dir.empty()) {
    if (memory && s.v1_memory_dir.empty()) {
      s.why_no_memory = "the v1 memory controller is mounted but not writable by this user";
    } else if (!s.v2_dir.empty()) {
      s.why_no_memory = "the memory controller is not enabled for child cgroups of " + s.v2_dir +
                        " (cgroup.subtree_control lacks 'memory')";
    } else {
      s.why_no_memory = "no writable memory cgroup (neither v2 with the memory controller nor v1)";
    }
  }
  return s;
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::Create(const CgroupSupport& support,
                                                     const std::string& name) {
  std::unique_ptr<RunCgroup> cg(new RunCgroup());
  std::string error;
  auto make = [&](const std::string& parent, const char* threads_file) -> std::string {
    if (parent.empty()) return {};
    RemoveStaleRunCgroups(parent);
    std::string dir = parent + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      error = "cannot create cgroup " + dir + ": " + std::strerror(errno);
      return {};
    }
    int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot open " + dir + "/cgroup.procs: " + std::strerror(errno);
      ::rmdir(dir.c_str());
      return {};
    }
    cg->dirs_.push_back(dir);
    cg->parents_.push_back(parent);
    cg->join_fds_.push_back(fd);
    if (cg->procs_path_.empty()) {
      cg->procs_path_ = dir + "/cgroup.procs";
      cg->threads_path_ = dir + "/" + threads_file;
    }
    return dir;
  };

  std::string v2 = make(support.v2_dir, "cgroup.threads");
  if (!v2.empty()) {
    cg->cpu_usage_ = KernelFile(v2 + "/cpu.stat");
    if (cg->cpu_usage_.is_open()) {
      cg->cpu_kind_ = CpuKind::kV2;
      cg->cpu_dir_ = v2;
    }
    if (support.v2_memory) {
      cg->memory_peak_ = KernelFile(v2 + "/memory.peak");
      cg->memory_stat_ = KernelFile(v2 + "/memory.stat");
      cg->memory_v2_ = cg->memory_peak_.is_open();
    }
  }
  if (cg->cpu_kind_ == CpuKind::kNone) {
    std::string v1 = make(support.v1_cpuacct_dir, "tasks");
    if (!v1.empty()) {
      cg->cpu_usage_ = KernelFile(v1 + "/cpuacct.usage");
      if (cg->cpu_usage_.is_open()) {
        cg->cpu_kind_ = CpuKind::kV1;
        cg->cpu_dir_ = v1;
      }
    }
  }
  if (!cg->memory_peak_.is_open()) {
    std::string v1 = make(support.v1_memory_dir, "tasks");
    if (!v1.empty()) {
      cg->memory_peak_ = KernelFile(v1 + "/memory.max_usage_in_bytes");
      cg->memory_stat_ = KernelFile(v1 + "/memory.stat");
    }
  }
  if (cg->dirs_.empty()) {
    return Unsupported(error.empty() ? "no usable cgroup hierarchy" : error);
  }
  return cg;
}

Status RunCgroup::Join(pid_t pid) const {
  const std::string text = std::to_string(pid);
  for (size_t i = 0; i < join_fds_.size(); ++i) {
    if (::write(join_fds_[i], text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return IoError("cannot move the command into the cgroup " + dirs_[i] + ": " +
                     std::strerror(errno) + "; try footprint run --no-cgroup");
    }
  }
  return Status::Ok();
}

RunCgroup::~RunCgroup() {
  for (int fd : join_fds_) ::close(fd);
  for (size_t i = 0; i < dirs_.size(); ++i) {
    // Processes that outlived the run (daemons the command started) go back to footprint's
    // own cgroup so that the directory can be removed; they keep running.
    if (auto procs = ReadWholeFile(dirs_[i] + "/cgroup.procs"); procs.ok()) {
      ForEachPid(*procs, [&](pid_t pid) {
        (void)WriteFile(parents_[i] + "/cgroup.procs", std::to_string(pid));
      });
    }
    ::rmdir(dirs_[i].c_str());
  }
}

std::optional<int64_t> RunCgroup::CpuUsageNs() const {
  char buf[512];
  std::string_view text = cpu_usage_.Read(buf, sizeof buf);
  if (text.empty()) return std::nullopt;
  if (cpu_kind_ == CpuKind::kV2) {
    auto usec = FindKeyedValue(text, "usage_usec");
    if (!usec) return std::nullopt;
    return *usec * 1000;
  }
  return ParseInt(text);
}

std::optional<std::pair<int64_t, int64_t>> RunCgroup::CpuUserSystemNs() const {
  if (cpu_kind_ == CpuKind::kV2) {
    char buf[512];
    std::string_view text = cpu_usage_.Read(buf, sizeof buf);
    auto user = FindKeyedValue(text, "user_usec");
    auto sys = FindKeyedValue(text, "system_usec");
    if (!user || !sys) return std::nullopt;
    return std::make_pair(*user * 1000, *sys * 1000);
  }
  if (cpu_kind_ == CpuKind::kV1) {
    auto user = ReadWholeFile(cpu_dir_ + "/cpuacct.usage_user");
    auto sys = ReadWholeFile(cpu_dir_ + "/cpuacct.usage_sys");
    if (!user.ok() || !sys.ok()) return std::nullopt;
    auto u = ParseInt(*user), s = ParseInt(*sys);
    if (!u || !s) return std::nullopt;
    return std::make_pair(*u, *s);
  }
  return std::nullopt;
}

std::optional<int64_t> RunCgroup::MemoryPeakBytes() const {
  char buf[64];
  std::string_view text = memory_peak_.Read(buf, sizeof buf);
  if (text.empty()) return std::nullopt;
  return ParseInt(text);
}

std::optional<RunCgroup::MemoryStat> RunCgroup::ReadMemoryStat() const {
  char buf[8192];  // memory.stat is 1-2 KiB
  std::string_view text = memory_stat_.Read(buf, sizeof buf);
  auto anon = FindKeyedValue(text, memory_v2_ ? "anon" : "rss");
  auto mapped = FindKeyedValue(text, memory_v2_ ? "file_mapped" : "mapped_file");
  auto cache = FindKeyedValue(text, memory_v2_ ? "file" : "cache");
  if (!anon || !mapped || !cache) return std::nullopt;
  return MemoryStat{*anon, *mapped, *cache};
}

std::string RunCgroup::cpu_source() const {
  switch (cpu_kind_) {
    case CpuKind::kV2:
      return "cgroup v2 cpu.stat";
    case CpuKind::kV1:
      return "cgroup v1 cpuacct";
    case CpuKind::kNone:
      break;
  }
  return "";
}

std::string RunCgroup::memory_source() const {
  if (!memory_peak_.is_open()) return "";
  return memory_v2_ ? "cgroup v2 memory.peak" : "cgroup v1 memory.max_usage_in_bytes";
}

}  // namespace footprint
