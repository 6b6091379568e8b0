#include "probe/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

// The cgroup hierarchies mounted (/proc/self/mountinfo), one per controller footprint reads.
struct CgroupMounts {
  std::optional<Mount> v2, cpuacct, memory, blkio, pids;
};

// Where a process sits in each hierarchy (/proc/PID/cgroup); "" when not in it.
struct CgroupPaths {
  std::string v2, cpuacct, memory, blkio, pids;
};

// Sets the field of each v1 controller named in `names` (comma-separated, as mountinfo's
// options and /proc/PID/cgroup's second field list them) to `value`; other names are ignored.
template <typename PerController, typename Value>
void AssignPerController(std::string_view names, PerController& fields, const Value& value) {
  for (std::string_view c : Split(names, ',')) {
    if (c == "cpuacct") fields.cpuacct = value;
    if (c == "memory") fields.memory = value;
    if (c == "blkio") fields.blkio = value;
    if (c == "pids") fields.pids = value;
  }
}

// The hierarchies as /proc/self/mountinfo shows them; every cgroup mount point is also added
// to `all_roots`.
CgroupMounts ReadCgroupMounts(const std::string& proc_root, std::vector<std::string>& all_roots) {
  CgroupMounts mounts;
  auto text = ReadWholeFile(proc_root + "/self/mountinfo");
  if (!text.ok()) return mounts;
  for (std::string_view line : Split(*text, '\n')) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    auto left = Split(line.substr(0, dash), ' ');
    auto right = Split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    Mount m{std::string(left[3]), std::string(left[4])};
    if (right[0] == "cgroup2" || right[0] == "cgroup") all_roots.push_back(m.point);
    if (right[0] == "cgroup2") {
      mounts.v2 = m;
    } else if (right[0] == "cgroup") {
      AssignPerController(right[2], mounts, m);
    }
  }
  return mounts;
}

// The cgroups of process `who` ("self" or a PID) in each hierarchy.
CgroupPaths ReadCgroupPaths(const std::string& proc_root, const std::string& who) {
  CgroupPaths paths;
  auto text = ReadWholeFile(proc_root + "/" + who + "/cgroup");
  if (!text.ok()) return paths;
  for (std::string_view line : Split(*text, '\n')) {
    auto parts = Split(line, ':');
    if (parts.size() < 3) continue;
    std::string path(line.substr(parts[0].size() + parts[1].size() + 2));
    if (parts[0] == "0" && parts[1].empty()) paths.v2 = path;
    AssignPerController(parts[1], paths, path);
  }
  return paths;
}

// The hierarchies as /proc/self/mountinfo shows them and the cgroups of process `who` ("self"
// or a PID) in them; a directory is kept only when `usable` says so.
CgroupSupport Locate(const std::string& proc_root, const std::string& who,
                     bool (*usable)(const std::string&)) {
  CgroupSupport s;
  const CgroupMounts mounts = ReadCgroupMounts(proc_root, s.all_roots);
  auto root = [](const std::optional<Mount>& m) { return m ? m->point : std::string(); };
  s.v2_root = root(mounts.v2);
  s.v1_cpuacct_root = root(mounts.cpuacct);
  s.v1_memory_root = root(mounts.memory);
  s.v1_blkio_root = root(mounts.blkio);
  s.v1_pids_root = root(mounts.pids);
  const CgroupPaths paths = ReadCgroupPaths(proc_root, who);
  if (mounts.v2 && !paths.v2.empty()) {
    std::string dir = DirFor(*mounts.v2, paths.v2);
    if (usable(dir)) {
      s.v2_dir = dir;
      auto subtree = ReadWholeFile(dir + "/cgroup.subtree_control");
      if (subtree.ok()) {
        for (std::string_view c : Split(Trim(*subtree), ' ')) s.v2_memory |= (c == "memory");
      }
      // Another process's cgroup is read, not made: its own memory files say.
      if (who != "self") s.v2_memory = ::access((dir + "/memory.peak").c_str(), R_OK) == 0;
    }
  }
  auto dir_of = [&](const std::optional<Mount>& m, const std::string& path) {
    std::string dir = m && !path.empty() ? DirFor(*m, path) : "";
    return !dir.empty() && usable(dir) ? dir : "";
  };
  s.v1_cpuacct_dir = dir_of(mounts.cpuacct, paths.cpuacct);
  s.v1_memory_dir = dir_of(mounts.memory, paths.memory);
  if (who != "self") {  // io and pids: for a container's cgroups only
    s.v1_blkio_dir = dir_of(mounts.blkio, paths.blkio);
    s.v1_pids_dir = dir_of(mounts.pids, paths.pids);
  }
  return s;
}

bool IsDir(const std::string& dir) {
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

CgroupSupport CgroupsOfProcess(pid_t pid, const std::string& proc_root) {
  return Locate(proc_root, std::to_string(pid), IsDir);
}

namespace {

// Why no cgroup can be made where the hierarchies are mounted read-only (footprint runs in a
// container that was given no writable cgroup), or "" (also when none is mounted).
std::string ReadOnlyHierarchies(const CgroupSupport& s) {
  bool any = false;
  for (const std::string& root : {s.v2_root, s.v1_cpuacct_root}) {
    if (root.empty()) continue;
    struct statvfs fs;
    if (::statvfs(root.c_str(), &fs) != 0 || (fs.f_flag & ST_RDONLY) == 0) return "";
    any = true;
  }
  if (!any) return "";
  return "the cgroup hierarchies are mounted read-only (in a container: run it with "
         "--privileged, which gives it a writable cgroup of its own; docs/containers.md#image)";
}

}  // namespace

CgroupSupport DetectCgroups(const std::string& proc_root) {
  CgroupSupport s = Locate(proc_root, "self", IsWritableDir);
  const bool v2 = !s.v2_root.empty(), cpuacct = !s.v1_cpuacct_root.empty();
  const bool memory = !s.v1_memory_root.empty();
  const std::string read_only = ReadOnlyHierarchies(s);
  if (s.v2_dir.empty() && s.v1_cpuacct_dir.empty()) {
    s.why_no_cpu = !read_only.empty() ? read_only
                   : (v2 || cpuacct)
                       ? "no permission to create a cgroup here (run as root, or in a "
                         "delegated cgroup such as a systemd user scope with "
                         "Delegate=yes)"
                       : "neither a cgroup v2 hierarchy nor a v1 cpuacct controller "
                         "is mounted";
  }
  if (!s.v2_memory && s.v1_memory_dir.empty()) {
    if (!read_only.empty()) {
      s.why_no_memory = read_only;
    } else if (memory && s.v1_memory_dir.empty()) {
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

CgroupSupport AtHierarchyRoots(const CgroupSupport& own) {
  CgroupSupport s = own;
  auto writable = [](const std::string& root) { return IsWritableDir(root) ? root : ""; };
  s.v2_dir = writable(own.v2_root);
  s.v1_cpuacct_dir = writable(own.v1_cpuacct_root);
  s.v1_memory_dir = writable(own.v1_memory_root);
  s.v1_blkio_dir = writable(own.v1_blkio_root);
  s.v1_pids_dir = writable(own.v1_pids_root);
  s.v2_memory = false;
  if (auto subtree = ReadWholeFile(s.v2_dir + "/cgroup.subtree_control");
      !s.v2_dir.empty() && subtree.ok()) {
    for (std::string_view c : Split(Trim(*subtree), ' ')) s.v2_memory |= (c == "memory");
  }
  s.why_no_cpu.clear();
  s.why_no_memory.clear();
  const std::string rootless =
      "no permission to create a cgroup at the root of the hierarchy (rootless: run footprint "
      "as root, or see docs/containers.md#rootless)";
  if (s.v2_dir.empty() && s.v1_cpuacct_dir.empty()) {
    const bool mounted = !own.v2_root.empty() || !own.v1_cpuacct_root.empty();
    const std::string read_only = ReadOnlyHierarchies(own);
    s.why_no_cpu = !mounted            ? "neither a cgroup v2 hierarchy nor a v1 cpuacct "
                                         "controller is mounted"
                   : read_only.empty() ? rootless
                                       : read_only;
  }
  if (!s.v2_memory && s.v1_memory_dir.empty()) s.why_no_memory = rootless;
  return s;
}

bool RemoveEmptyCgroupTree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> children;
    while (dirent* e = ::readdir(d)) {
      if (e->d_type == DT_DIR && e->d_name[0] != '.') children.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
    for (const std::string& child : children) RemoveEmptyCgroupTree(child);
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::Create(const CgroupSupport& support,
                                                     const std::string& name) {
  return Open(support, name, /*create=*/true);
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::Observe(const CgroupSupport& dirs) {
  return Open(dirs, "", /*create=*/false);
}

std::string RunCgroup::AddHierarchy(const std::string& parent, const std::string& name, bool create,
                                    const char* threads_file, std::string& error) {
  if (parent.empty()) return {};
  std::string dir = create ? parent + "/" + name : parent;
  if (create) {
    RemoveStaleRunCgroups(parent);
    if (::mkdir(dir.c_str(), 0755) != 0) {
      error = "cannot create cgroup " + dir + ": " + std::strerror(errno);
      return {};
    }
  }
  int fd = create ? ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC) : -1;
  if (create && fd < 0) {
    error = "cannot open " + dir + "/cgroup.procs: " + std::strerror(errno);
    ::rmdir(dir.c_str());
    return {};
  }
  dirs_.push_back(dir);
  parents_.push_back(parent);
  if (fd >= 0) {
    join_fds_.push_back(fd);
    const bool v1 = std::string_view(threads_file) == "tasks";
    self_join_fds_.push_back(v1 ? ::open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC) : fd);
    if (!v1) v2_dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (procs_path_.empty()) {
    procs_path_ = dir + "/cgroup.procs";
    threads_path_ = dir + "/" + threads_file;
  }
  return dir;
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::Open(const CgroupSupport& support,
                                                   const std::string& name, bool create) {
  std::unique_ptr<RunCgroup> cg(new RunCgroup());
  cg->owned_ = create;
  std::string error;
  auto make = [&](const std::string& parent, const char* threads_file) {
    return cg->AddHierarchy(parent, name, create, threads_file, error);
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
      cg->memory_current_ = KernelFile(v2 + "/memory.current");
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
      cg->memory_current_ = KernelFile(v1 + "/memory.usage_in_bytes");
    }
  }
  cg->OpenCounters(support, v2, make(support.v1_blkio_dir, "tasks"),
                   make(support.v1_pids_dir, "tasks"));
  if (cg->dirs_.empty()) {
    return Unsupported(!error.empty()                ? error
                       : !support.why_no_cpu.empty() ? support.why_no_cpu
                                                     : "no usable cgroup hierarchy");
  }
  return cg;
}

namespace {

// Recent kernels count a v1 blkio cgroup's bytes only where a throttling limit applies: every
// block device gets one far above any device's speed (1 TiB/s), which limits nothing. Measured
// on Linux 6.18: 0 bytes without it for 8 MiB of O_DIRECT writes, 8 MiB with it, also after
// the writer's child cgroup was removed.
void CountBlockIo(const std::string& blkio_dir) {
  DIR* d = ::opendir("/sys/block");
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    auto dev = ReadWholeFile(std::string("/sys/block/") + e->d_name + "/dev");
    if (!dev.ok()) continue;
    const std::string limit = std::string(Trim(*dev)) + " 1099511627776";
    for (const char* file :
         {"/blkio.throttle.read_bps_device", "/blkio.throttle.write_bps_device"}) {
      (void)WriteFile(blkio_dir + file, limit);
    }
  }
  ::closedir(d);
}

}  // namespace

void RunCgroup::OpenCounters(const CgroupSupport& support, const std::string& v2_dir,
                             const std::string& blkio_dir, const std::string& pids_dir) {
  if (!v2_dir.empty()) events_ = KernelFile(v2_dir + "/cgroup.events");
  if (!blkio_dir.empty()) {
    if (owned_) CountBlockIo(blkio_dir);
    io_stat_ = KernelFile(blkio_dir + "/blkio.throttle.io_service_bytes_recursive");
  } else if (!v2_dir.empty() && !support.v1_blkio_root.empty()) {
    // v1 owns the io controller: v2's io.stat would stay empty.
  } else if (!v2_dir.empty()) {
    io_stat_ = KernelFile(v2_dir + "/io.stat");
    io_v2_ = true;
  }
  if (!pids_dir.empty()) {
    pids_current_ = KernelFile(pids_dir + "/pids.current");
  } else if (!v2_dir.empty() && support.v1_pids_root.empty()) {
    pids_current_ = KernelFile(v2_dir + "/pids.current");
  }
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

int RunCgroup::JoinCallingThread(bool in_v2, size_t& failed) const noexcept {
  for (size_t i = 0; i < self_join_fds_.size(); ++i) {
    if (in_v2 && self_join_fds_[i] == join_fds_[i]) continue;  // forked into it
    if (self_join_fds_[i] < 0) {
      failed = i;
      return EBADF;
    }
    if (::write(self_join_fds_[i], "0", 1) != 1) {
      failed = i;
      return errno;
    }
  }
  return 0;
}

RunCgroup::~RunCgroup() {
  for (size_t i = 0; i < self_join_fds_.size(); ++i) {
    if (self_join_fds_[i] != join_fds_[i] && self_join_fds_[i] >= 0) ::close(self_join_fds_[i]);
  }
  if (v2_dir_fd_ >= 0) ::close(v2_dir_fd_);
  for (int fd : join_fds_) ::close(fd);
  if (!owned_) return;
  for (size_t i = 0; i < dirs_.size(); ++i) {
    // Processes that outlived the run (daemons the command started) go back to footprint's
    // own cgroup so that the directory can be removed; they keep running.
    if (auto procs = ReadWholeFile(dirs_[i] + "/cgroup.procs"); procs.ok()) {
      ForEachPid(*procs, [&](pid_t pid) {
        (void)WriteFile(parents_[i] + "/cgroup.procs", std::to_string(pid));
      });
    }
    RemoveEmptyCgroupTree(dirs_[i]);
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
  if (cpu_kind_ != CpuKind::kV1) return std::nullopt;
  // cpuacct.usage is exact (the scheduler's runtime); cpuacct.usage_user and usage_sys count
  // whole ticks and, on a busy machine, missed most of them (68 of a 300 ms burn here), so
  // they cannot make the total. cpuacct.stat's ticks only split it, all to user when they
  // saw nothing, as the kernel's cputime_adjust does for v2's cpu.stat.
  const std::optional<int64_t> total = CpuUsageNs();
  auto stat = ReadWholeFile(cpu_dir_ + "/cpuacct.stat");
  if (!total || !stat.ok()) return std::nullopt;
  const int64_t user_ticks = FindKeyedValue(*stat, "user").value_or(0);
  const int64_t system_ticks = FindKeyedValue(*stat, "system").value_or(0);
  if (system_ticks <= 0) return std::make_pair(*total, int64_t{0});
  const int64_t system_ns = static_cast<int64_t>(static_cast<double>(*total) * system_ticks /
                                                 (user_ticks + system_ticks));
  return std::make_pair(*total - system_ns, system_ns);
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
  auto anon = FindKeyedValue(text, memory_v2_ ? "anon" : "total_rss");
  auto mapped = FindKeyedValue(text, memory_v2_ ? "file_mapped" : "total_mapped_file");
  auto cache = FindKeyedValue(text, memory_v2_ ? "file" : "total_cache");
  auto shmem = FindKeyedValue(text, memory_v2_ ? "shmem" : "total_shmem");
  auto inactive = FindKeyedValue(text, memory_v2_ ? "inactive_file" : "total_inactive_file");
  if (!anon || !mapped || !cache) return std::nullopt;
  return MemoryStat{*anon, *mapped, *cache, shmem.value_or(0), inactive.value_or(0)};
}

std::optional<int64_t> RunCgroup::MemoryCurrentBytes() const {
  char buf[64];
  return ParseInt(memory_current_.Read(buf, sizeof buf));
}

std::optional<std::pair<int64_t, int64_t>> RunCgroup::IoBytes() const {
  if (!io_stat_.is_open()) return std::nullopt;
  char buf[8192];
  std::string_view text = io_stat_.Read(buf, sizeof buf);
  int64_t read = 0, written = 0;
  // v2: "MAJ:MIN rbytes=N wbytes=N ..." per device; v1: "MAJ:MIN Read N", "MAJ:MIN Write N".
  for (std::string_view line : Split(text, '\n')) {
    auto words = Split(line, ' ');
    if (io_v2_) {
      for (std::string_view w : words) {
        if (w.starts_with("rbytes=")) read += ParseInt(w.substr(7)).value_or(0);
        if (w.starts_with("wbytes=")) written += ParseInt(w.substr(7)).value_or(0);
      }
    } else if (words.size() == 3 && words[1] == "Read") {
      read += ParseInt(words[2]).value_or(0);
    } else if (words.size() == 3 && words[1] == "Write") {
      written += ParseInt(words[2]).value_or(0);
    }
  }
  return std::make_pair(read, written);
}

std::optional<int64_t> RunCgroup::PidsCurrent() const {
  char buf[64];
  return ParseInt(pids_current_.Read(buf, sizeof buf));
}

namespace {

// Calls `visit` with the cgroup.procs text of each cgroup in `dirs` and below them, until it
// returns true.
template <typename Visit>
void VisitCgroupProcs(std::vector<std::string> pending, Visit visit) {
  while (!pending.empty()) {
    std::string dir = std::move(pending.back());
    pending.pop_back();
    if (auto procs = ReadWholeFile(dir + "/cgroup.procs"); procs.ok() && visit(*procs)) return;
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.') pending.push_back(dir + "/" + e->d_name);
      }
      ::closedir(d);
    }
  }
}

}  // namespace

bool RunCgroup::Populated() const {
  char buf[256];
  if (events_.is_open() && FindKeyedValue(events_.Read(buf, sizeof buf), "populated") == 1) {
    return true;
  }
  // v1 hierarchies (an engine's helpers may be in them only: podman's conmon is not in v2).
  bool populated = false;
  VisitCgroupProcs(dirs_, [&](std::string_view procs) { return populated = !Trim(procs).empty(); });
  return populated;
}

void RunCgroup::ListPids(std::vector<pid_t>& out) const {
  out.clear();
  if (dirs_.empty()) return;
  VisitCgroupProcs({dirs_[0]}, [&](std::string_view procs) {
    for (std::string_view line : Split(procs, '\n')) {
      if (auto pid = ParseInt(Trim(line))) out.push_back(static_cast<pid_t>(*pid));
    }
    return false;
  });
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

std::string RunCgroup::io_source() const {
  if (!io_stat_.is_open()) return "";
  return io_v2_ ? "cgroup v2 io.stat" : "cgroup v1 blkio.throttle.io_service_bytes_recursive";
}

std::string RunCgroup::memory_source() const {
  if (!memory_peak_.is_open()) return "";
  return memory_v2_ ? "cgroup v2 memory.peak" : "cgroup v1 memory.max_usage_in_bytes";
}

}  // namespace footprint
