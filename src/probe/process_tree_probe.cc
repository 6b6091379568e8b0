#include "probe/process_tree_probe.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "util/proc_parse.h"
#include "util/strings.h"

namespace footprint {
namespace {

constexpr MetricId kTreeMetrics[] = {
    MetricId::kCpu,     MetricId::kMemory,    MetricId::kMemoryRssSum, MetricId::kPageCache,
    MetricId::kThreads, MetricId::kProcesses, MetricId::kIoRead,       MetricId::kIoWrite};

void RaisePeak(std::atomic<int64_t>& peak, int64_t value) {
  if (value > peak.load(std::memory_order_relaxed)) peak.store(value, std::memory_order_relaxed);
}

// Reads a whole (possibly large) kernel file into `buf`, reusing its capacity.
bool ReadInto(const std::string& path, std::string& buf) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  buf.clear();
  char chunk[4096];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace

ProcessTreeProbe::ProcessTreeProbe(Options options)
    : options_(std::move(options)),
      ns_per_tick_(1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK))),
      slot_(kMetricCount, -1),
      page_size_(::sysconf(_SC_PAGESIZE)) {
  // Kernels built without CONFIG_PROC_CHILDREN have no children files: scan all of /proc.
  const std::string self_task = options_.proc_root + "/" + std::to_string(options_.monitor_pid) +
                                "/task/" + std::to_string(options_.monitor_pid) + "/children";
  scan_ =
      options_.force_proc_scan || (options_.cgroup == nullptr && !KernelFile(self_task).is_open());
  if (options_.cgroup != nullptr) {
    cgroup_procs_ = KernelFile(options_.cgroup->procs_path());
    cgroup_threads_ = KernelFile(options_.cgroup->threads_path());
  }
  if (options_.foreign_root) {
    root_stat_ =
        KernelFile(options_.proc_root + "/" + std::to_string(options_.monitor_pid) + "/stat");
  }
  entries_.reserve(64);
  members_.reserve(64);
  list_buf_.reserve(4096);
}

std::vector<SeriesSpec> ProcessTreeProbe::Series(const MetricSet& wanted) {
  std::vector<SeriesSpec> specs;
  for (MetricId m : kTreeMetrics) {
    if (!wanted.test(static_cast<size_t>(m)) ||
        options_.served_elsewhere.test(static_cast<size_t>(m))) {
      continue;
    }
    if (m == MetricId::kPageCache && !memory_from_cgroup()) continue;  // nothing to read it from
    slot_[static_cast<size_t>(m)] = static_cast<int>(specs.size());
    specs.push_back({m, options_.entity});
  }
  return specs;
}

void ProcessTreeProbe::AddChildren(const KernelFile& children) {
  if (children.ReadAll(list_buf_)) {
    ForEachPid(list_buf_, [&](pid_t child) { members_.push_back(child); });
  }
}

void ProcessTreeProbe::AddChildrenOfAllThreads(pid_t pid) {
  // A child forked by a thread is listed under that thread only.
  const std::string task_dir = options_.proc_root + "/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    if (ReadInto(task_dir + "/" + e->d_name + "/children", list_buf_)) {
      ForEachPid(list_buf_, [&](pid_t child) { members_.push_back(child); });
    }
  }
  ::closedir(dir);
}

void ProcessTreeProbe::ListMembers() {
  members_.clear();
  if (options_.cgroup != nullptr) {
    if (cgroup_procs_.ReadAll(list_buf_)) {
      ForEachPid(list_buf_, [&](pid_t pid) { members_.push_back(pid); });
    }
    return;
  }
  if (options_.include_monitor) {
    // The program's own threads come and go: Sample() lists them on every pass while it walks
    // down from the program itself.
    members_.push_back(options_.monitor_pid);
    if (!scan_) return;
  }
  // Walk down from footprint's own threads (fixed once sampling runs); members_ grows while
  // Sample() scans it, breadth first.
  if (scan_) {
    ScanAllProcesses();
    return;
  }
  if (options_.foreign_root) monitor_children_.clear();  // its threads come and go
  if (monitor_children_.empty()) {
    const std::string task_dir =
        options_.proc_root + "/" + std::to_string(options_.monitor_pid) + "/task";
    if (DIR* dir = ::opendir(task_dir.c_str())) {
      while (dirent* e = ::readdir(dir)) {
        if (e->d_name[0] != '.')
          monitor_children_.emplace_back(task_dir + "/" + e->d_name + "/children");
      }
      ::closedir(dir);
    }
  }
  for (const KernelFile& f : monitor_children_) AddChildren(f);
}

void ProcessTreeProbe::ScanAllProcesses() {
  parents_.clear();
  DIR* dir = ::opendir(options_.proc_root.c_str());
  if (dir == nullptr) return;
  char buf[1024];
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    KernelFile f(options_.proc_root + "/" + e->d_name + "/stat");
    if (auto st = ParseProcStat(f.Read(buf, sizeof buf))) parents_.emplace_back(st->pid, st->ppid);
  }
  ::closedir(dir);
  // Breadth first from footprint: members_ grows while it is scanned.
  std::vector<pid_t> frontier = {options_.monitor_pid};
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (const auto& [pid, ppid] : parents_) {
      if (ppid == frontier[i]) {
        frontier.push_back(pid);
        members_.push_back(pid);
      }
    }
  }
}

ProcessTreeProbe::Entry* ProcessTreeProbe::Read(pid_t pid, ProcessFigures& f) {
  const bool statm = options_.cgroup != nullptr;
  char buf[1024];
  auto parse = [&](std::string_view text) {
    if (text.empty()) return false;
    if (statm) {
      std::optional<ProcStatm> m = ParseProcStatm(text);
      if (!m) return false;
      f.rss_pages = m->resident;
      f.shared_pages = m->shared;
      f.live = m->resident > 0 || m->size > 0;
      return true;
    }
    std::optional<ProcStat> st = ParseProcStat(text);
    if (!st) return false;
    f.live = st->state != 'Z' && st->state != 'X';
    f.rss_pages = f.live ? st->rss_pages : 0;
    f.threads = f.live ? st->num_threads : 0;
    f.user_ticks = static_cast<int64_t>(st->utime) + st->cutime;
    f.cpu_ticks = f.user_ticks + static_cast<int64_t>(st->stime) + st->cstime;
    return true;
  };
  auto it = entries_.find(pid);
  if (it != entries_.end()) {
    if (parse(it->second.stat.Read(buf, sizeof buf))) return &it->second;
    entries_.erase(it);  // exited; the PID may already belong to a new process
  }
  Entry e;
  e.stat =
      KernelFile(options_.proc_root + "/" + std::to_string(pid) + (statm ? "/statm" : "/stat"));
  if (!parse(e.stat.Read(buf, sizeof buf))) return nullptr;  // gone, or unreadable
  return &entries_.emplace(pid, std::move(e)).first->second;
}

void ProcessTreeProbe::Begin(int64_t t0_ns) {
  if (!attached_) return;  // the in-process API: the tree counted before, the first pass is 0
  for (Rate* r : {&cpu_, &read_, &write_}) r->rate.StartAtZero(t0_ns);
}

void ProcessTreeProbe::EmitRate(Rate& r, int64_t value, int64_t now_ns, double scale, int series,
                                SampleOut& out) {
  r.current = std::max(r.current, value);
  if (series < 0) return;
  if (auto rate = r.rate.Next(now_ns, static_cast<double>(r.current), scale)) {
    out.Add(series, *rate);
  }
}

namespace {
struct Discard final : SampleOut {
  void Add(int, double) override {}
};
}  // namespace

int64_t ProcessTreeProbe::CountLiveProcesses() {
  Discard discard;
  Sample(options_.env->MonotonicNs(), MetricSet(),
         discard);  // nothing due: membership and counts only
  return last_processes_.load(std::memory_order_relaxed);
}

const std::vector<pid_t>& ProcessTreeProbe::MembersAt(int64_t now_ns) {
  if (members_listed_ns_ != now_ns) {
    Discard discard;
    Sample(now_ns, MetricSet(), discard);
  }
  return members_;
}

int64_t ProcessTreeProbe::FootprintThreadsCpuNs() const {
  Env& env = *options_.env;
  int64_t ns = env.CpuNs(CLOCK_THREAD_CPUTIME_ID);
  const size_t n = excluded_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) ns += env.CpuNs(excluded_clocks_[i]);
  return ns;
}

void ProcessTreeProbe::AddRootWaitedFor(int64_t& cpu_ticks, int64_t& user_ticks) {
  char buf[1024];
  if (std::optional<ProcStat> st = ParseProcStat(root_stat_.Read(buf, sizeof buf))) {
    cpu_ticks += st->cutime + st->cstime;
    user_ticks += st->cutime;
  }
}

void ProcessTreeProbe::ReadMembers(bool want_io, bool want_threads) {
  const RunCgroup* cgroup = options_.cgroup;
  ListMembers();
  for (size_t i = 0; i < members_.size(); ++i) {  // members_ may grow during the walk
    pid_t pid = members_[i];
    ProcessFigures f;
    Entry* e = Read(pid, f);
    if (e == nullptr) continue;
    e->generation = generation_;
    tree_.cpu_ticks += f.cpu_ticks;
    tree_.user_ticks += f.user_ticks;
    tree_.processes += f.live;
    tree_.threads += f.threads;
    tree_.rss_pages += f.rss_pages;
    tree_.largest_rss_pages = std::max(tree_.largest_rss_pages, f.rss_pages);
    tree_.largest_shared_pages = std::max(tree_.largest_shared_pages, f.shared_pages);
    if (want_io) {
      if (!e->io.is_open())
        e->io = KernelFile(options_.proc_root + "/" + std::to_string(pid) + "/io");
      char iobuf[512];
      if (auto io = ParseProcIo(e->io.Read(iobuf, sizeof iobuf))) {
        tree_.read_bytes += static_cast<int64_t>(io->read_bytes);
        tree_.write_bytes += static_cast<int64_t>(io->write_bytes);
      }
    }
    if (cgroup == nullptr && !scan_) {
      if (f.threads == 1) {
        if (!e->children.is_open()) {
          e->children = KernelFile(options_.proc_root + "/" + std::to_string(pid) + "/task/" +
                                   std::to_string(pid) + "/children");
        }
        AddChildren(e->children);
      } else {
        AddChildrenOfAllThreads(pid);
      }
    }
  }
  if (entries_.size() > members_.size()) {
    std::erase_if(entries_, [&](const auto& kv) { return kv.second.generation != generation_; });
  }
  if (cgroup != nullptr && want_threads && cgroup_threads_.ReadAll(list_buf_)) {
    tree_.threads = 0;
    ForEachPid(list_buf_, [&](pid_t) { ++tree_.threads; });
  }
}

void ProcessTreeProbe::Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) {
  auto is_due = [&](MetricId m) { return due.test(static_cast<size_t>(m)); };
  const bool want_io = is_due(MetricId::kIoRead) || is_due(MetricId::kIoWrite);
  const MetricSet exact = due & options_.exact_intervals;
  auto exact_due = [&](std::initializer_list<MetricId> metrics) {
    return std::any_of(metrics.begin(), metrics.end(),
                       [&](MetricId m) { return exact.test(static_cast<size_t>(m)); });
  };
  // Nothing due: MembersAt or CountLiveProcesses, which want the members now.
  const bool members_now = options_.cgroup == nullptr || due.none() ||
                           members_budget_.Due(now_ns) ||
                           exact_due({MetricId::kMemoryRssSum, MetricId::kThreads,
                                      MetricId::kProcesses, MetricId::kIoRead, MetricId::kIoWrite});
  if (members_now) RefreshMembers(now_ns, due, want_io);
  if (is_due(MetricId::kCpu)) SampleCpu(now_ns, out);
  if (members_now) EmitMemberSums(now_ns, due, want_io, out);
  if (memory_from_cgroup() && (is_due(MetricId::kMemory) || is_due(MetricId::kPageCache))) {
    SampleCgroupMemory(now_ns, due, exact_due({MetricId::kMemory, MetricId::kPageCache}), out);
  }
}

void ProcessTreeProbe::RefreshMembers(int64_t now_ns, const MetricSet& due, bool want_io) {
  const bool want_threads = due.test(static_cast<size_t>(MetricId::kThreads));
  ++generation_;
  tree_ = TreeSums{};
  // A foreign root's waited-for children before its live ones: a task it reaps in between
  // is then missing from this pass (the next one has it), never counted twice (the kernel
  // adds a child's times to its parent before the child's /proc entry goes).
  if (options_.foreign_root && due.test(static_cast<size_t>(MetricId::kCpu))) {
    AddRootWaitedFor(tree_.cpu_ticks, tree_.user_ticks);
  }
  if (options_.cgroup != nullptr) {
    members_budget_.Make(*options_.env, now_ns, [&] { ReadMembers(want_io, want_threads); });
  } else {
    ReadMembers(want_io, want_threads);
  }
  members_listed_ns_ = now_ns;
  last_processes_.store(tree_.processes, std::memory_order_relaxed);
}

void ProcessTreeProbe::SampleCpu(int64_t now_ns, SampleOut& out) {
  const RunCgroup* cgroup = options_.cgroup;
  const ReapedTotals* reaped = options_.reaped;
  user_ticks_ = std::max(user_ticks_, tree_.user_ticks);
  system_ticks_ = std::max(system_ticks_, tree_.cpu_ticks - tree_.user_ticks);
  std::optional<int64_t> cum = cgroup ? cgroup->CpuUsageNs() : std::nullopt;
  if (!cum) {
    cum = static_cast<int64_t>(static_cast<double>(tree_.cpu_ticks) * ns_per_tick_) +
          (reaped ? reaped->cpu_ns.load(std::memory_order_relaxed) : 0);
  }
  if (options_.include_monitor) *cum -= FootprintThreadsCpuNs();
  EmitRate(cpu_, *cum, now_ns, 100.0, slot_[static_cast<size_t>(MetricId::kCpu)], out);
}

void ProcessTreeProbe::EmitMemberSums(int64_t now_ns, const MetricSet& due, bool want_io,
                                      SampleOut& out) {
  auto emit = [&](MetricId m, double v) { Emit(due, m, v, out); };
  const int64_t rss_bytes = tree_.rss_pages * page_size_;
  RaisePeak(peak_rss_sum_, rss_bytes);
  RaisePeak(peak_process_rss_, tree_.largest_rss_pages * page_size_);
  emit(MetricId::kMemoryRssSum, static_cast<double>(rss_bytes));
  if (!memory_from_cgroup()) {
    RaisePeak(peak_memory_, rss_bytes);
    emit(MetricId::kMemory, static_cast<double>(rss_bytes));
  }
  emit(MetricId::kThreads, static_cast<double>(tree_.threads));
  emit(MetricId::kProcesses, static_cast<double>(tree_.processes));
  if (!want_io) return;
  int64_t read_bytes = tree_.read_bytes, write_bytes = tree_.write_bytes;
  if (const ReapedTotals* reaped = options_.reaped) {
    read_bytes += reaped->read_bytes.load(std::memory_order_relaxed);
    write_bytes += reaped->write_bytes.load(std::memory_order_relaxed);
  }
  if (due.test(static_cast<size_t>(MetricId::kIoRead))) {
    EmitRate(read_, read_bytes, now_ns, 1e9, slot_[static_cast<size_t>(MetricId::kIoRead)], out);
  }
  if (due.test(static_cast<size_t>(MetricId::kIoWrite))) {
    EmitRate(write_, write_bytes, now_ns, 1e9, slot_[static_cast<size_t>(MetricId::kIoWrite)], out);
  }
}

void ProcessTreeProbe::Emit(const MetricSet& due, MetricId m, double value, SampleOut& out) const {
  const int series = slot_[static_cast<size_t>(m)];
  if (due.test(static_cast<size_t>(m)) && series >= 0) out.Add(series, value);
}

void ProcessTreeProbe::SampleCgroupMemory(int64_t now_ns, const MetricSet& due, bool exact,
                                          SampleOut& out) {
  const RunCgroup& cgroup = *options_.cgroup;
  const std::optional<int64_t> charge = cgroup.MemoryCurrentBytes();
  if (charge && MemoryStatDue(now_ns, *charge, exact)) {
    // A high-water mark that changed since the last memory.stat was reached since then (or
    // since someone reset it): the charge's peak between the two reads.
    const std::optional<int64_t> hwm = cgroup.MemoryPeakBytes();
    const bool new_peak = hwm && *hwm != last_charge_peak_;
    if (hwm) last_charge_peak_ = *hwm;
    const auto stat =
        memory_budget_.Make(*options_.env, now_ns, [&] { return cgroup.ReadMemoryStat(); });
    const int64_t held = stat ? HeldPerStat(*stat) : 0;
    const std::optional<int64_t> unheld = stat ? *charge - held : unheld_;
    if (new_peak && unheld) {
      // Less the larger unheld part of the two reads: page cache that grew in between is not
      // taken for memory.
      RaisePeak(peak_memory_, *hwm - std::max(*unheld, unheld_.value_or(*unheld)));
    }
    if (stat) {
      RaisePeak(peak_memory_, held);
      unheld_ = unheld;
      charge_at_stat_ = *charge;
      held_at_stat_ = held;
      RaisePeak(peak_page_cache_, stat->page_cache);
      Emit(due, MetricId::kPageCache, static_cast<double>(stat->page_cache), out);
    }
  }
  // Not a peak: page cache that grew since the last memory.stat is in it (the next one's
  // high-water mark settles the peak).
  if (!charge || !unheld_) return;
  const int64_t held = std::max(*charge - *unheld_, tree_.largest_rss_pages * page_size_);
  Emit(due, MetricId::kMemory, static_cast<double>(held), out);
}

bool ProcessTreeProbe::MemoryStatDue(int64_t now_ns, int64_t charge, bool exact) const {
  if (exact || memory_budget_.Due(now_ns)) return true;
  // The charge moved by more than a sixteenth of what was held: memory or page cache, which
  // only memory.stat tells apart, so it is read sooner (at up to 4 times its share of a core).
  constexpr int64_t kMovedAtLeast = 1 << 20;
  const int64_t moved =
      charge > charge_at_stat_ ? charge - charge_at_stat_ : charge_at_stat_ - charge;
  return moved > std::max(held_at_stat_ / 16, kMovedAtLeast) &&
         memory_budget_.DueAtShare(now_ns, 4 * kKernelReadShare);
}

int64_t ProcessTreeProbe::HeldPerStat(const RunCgroup::MemoryStat& stat) const {
  // Anonymous pages are charged to the cgroup that touched them: the tree's, each once. File
  // pages are charged to whoever read them first, so libraries cached before the run are not
  // in file_mapped: the largest process's own mapped files stand in when they are more.
  const int64_t held =
      stat.anon + std::max(stat.file_mapped, tree_.largest_shared_pages * page_size_);
  return std::max(held, tree_.largest_rss_pages * page_size_);
}

void ProcessTreeProbe::Finish(ProbeFindings& findings) {
  NoteSpacedReads("tree processes", members_budget_, findings.meta);
  NoteSpacedReads("tree memory.stat", memory_budget_, findings.meta);
}

}  // namespace footprint
