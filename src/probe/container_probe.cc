#include "probe/container_probe.h"

#include <algorithm>

namespace footprint {
namespace {

constexpr MetricId kContainerMetrics[] = {MetricId::kCpu,       MetricId::kMemory,
                                          MetricId::kPageCache, MetricId::kProcesses,
                                          MetricId::kIoRead,    MetricId::kIoWrite};

// What the container holds, as footprint counts memory: its anonymous pages, the files it maps
// and its shared memory and tmpfs files (which a container's memory limit counts too, and
// which `docker stats` users miss when a container is killed with low stats).
int64_t HeldBytes(const RunCgroup::MemoryStat& m) { return m.anon + m.file_mapped + m.shmem; }

// The same from the charge, when it is known: the charge less the page cache it does not hold
// (neither mapped nor shmem). memory.stat's counters are flushed lazily, and one CI run read a
// container's stat without the 32 MiB it had just written to /dev/shm while the charge held
// them; the charge is exact at every read, and a stale split moves only the page cache.
int64_t HeldBytes(const RunCgroup::MemoryStat& m, std::optional<int64_t> charge) {
  const int64_t per_stat = HeldBytes(m);
  if (!charge) return per_stat;
  const int64_t unheld_cache = std::max<int64_t>(0, m.page_cache - m.shmem - m.file_mapped);
  return std::max(per_stat, *charge - unheld_cache);
}

// meta.sources.KEY says both where the run's own figure came from and that the container's,
// from `source` of its cgroup, is added to it. Alone (an attached container's run) it is the
// container's.
void JoinSource(nlohmann::json& meta, const char* key, const std::string& source) {
  nlohmann::json& sources = meta["sources"];
  if (!sources.is_object()) sources = nlohmann::json::object();
  const std::string own = sources.value(key, std::string());
  sources[key] = own.empty() ? "the container's cgroup (" + source + ")"
                             : own + ", plus the container's cgroup (" + source + ")";
}

}  // namespace

std::vector<SeriesSpec> ContainerProbe::Series(const MetricSet& wanted) {
  std::vector<SeriesSpec> specs;
  for (MetricId m : kContainerMetrics) {
    if (!wanted.test(static_cast<size_t>(m))) continue;
    slot_[static_cast<size_t>(m)] = static_cast<int>(specs.size());
    specs.push_back({m, "container"});
  }
  return specs;
}

ContainerProbe::Reading ContainerProbe::Read() const {
  return {cgroup_->CpuUserSystemNs(), cgroup_->ReadMemoryStat(), cgroup_->MemoryCurrentBytes(),
          cgroup_->IoBytes(), cgroup_->PidsCurrent()};
}

void ContainerProbe::Begin(int64_t t0_ns) {
  baseline_ = Read();
  for (CounterRate* r : {&cpu_rate_, &read_rate_, &write_rate_}) r->StartAtZero(t0_ns);
}

void ContainerProbe::Keep(const Reading& r) {
  if (r.cpu_ns) {
    const auto base = baseline_.cpu_ns.value_or(std::make_pair(int64_t{0}, int64_t{0}));
    cpu_ns_.first = std::max(cpu_ns_.first, r.cpu_ns->first - base.first);
    cpu_ns_.second = std::max(cpu_ns_.second, r.cpu_ns->second - base.second);
  }
  if (r.io_bytes) {
    const auto base = baseline_.io_bytes.value_or(std::make_pair(int64_t{0}, int64_t{0}));
    io_bytes_.first = std::max(io_bytes_.first, r.io_bytes->first - base.first);
    io_bytes_.second = std::max(io_bytes_.second, r.io_bytes->second - base.second);
  }
  if (r.memory) {
    peak_memory_ = std::max(peak_memory_, HeldBytes(*r.memory, r.current_bytes));
    peak_shm_ = std::max(peak_shm_, r.memory->shmem);
    peak_page_cache_ = std::max(peak_page_cache_, r.memory->page_cache);
    if (r.current_bytes) {
      peak_engine_memory_ =
          std::max(peak_engine_memory_, *r.current_bytes - r.memory->inactive_file);
    }
  }
  if (r.pids) peak_pids_ = std::max(peak_pids_, *r.pids);
}

void ContainerProbe::Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) {
  const Reading r = Read();
  if (!r.cpu_ns && !r.memory) return;
  read_once_ = true;
  Keep(r);
  auto emit = [&](MetricId m, std::optional<double> v) {
    const int s = slot_[static_cast<size_t>(m)];
    if (v && s >= 0 && due.test(static_cast<size_t>(m))) out.Add(s, *v);
  };
  if (r.cpu_ns) {
    emit(MetricId::kCpu,
         cpu_rate_.Next(now_ns, static_cast<double>(cpu_ns_.first + cpu_ns_.second), 100.0));
  }
  if (r.memory) {
    emit(MetricId::kMemory, static_cast<double>(HeldBytes(*r.memory, r.current_bytes)));
    emit(MetricId::kPageCache, static_cast<double>(r.memory->page_cache));
  }
  if (r.pids) emit(MetricId::kProcesses, static_cast<double>(*r.pids));
  if (r.io_bytes) {
    emit(MetricId::kIoRead, read_rate_.Next(now_ns, static_cast<double>(io_bytes_.first), 1e9));
    emit(MetricId::kIoWrite, write_rate_.Next(now_ns, static_cast<double>(io_bytes_.second), 1e9));
  }
}

void ContainerProbe::Finish(ProbeFindings& findings) {
  auto& t = findings.totals;
  auto& meta = findings.meta["container"];
  meta["figures_from"] =
      cgroup_->cpu_source() + (cgroup_->has_memory() ? ", " + cgroup_->memory_source() : "");
  if (did_not_run_) {
    meta["read"] = false;
    return;
  }
  if (!read_once_) {
    meta["read"] = false;
    findings.warnings.push_back(
        "the container's cgroup could not be read: its figures are not in this run");
    return;
  }
  meta["read"] = true;
  const double user_s = static_cast<double>(cpu_ns_.first) / 1e9;
  const double system_s = static_cast<double>(cpu_ns_.second) / 1e9;
  t["container_cpu_user_s"] = user_s;
  t["container_cpu_system_s"] = system_s;
  t["cpu_user_s"] += user_s;
  t["cpu_system_s"] += system_s;
  JoinSource(findings.meta, "cpu", cgroup_->cpu_source());
  if (cgroup_->has_memory()) {
    t["container_memory_peak_bytes"] = static_cast<double>(peak_memory_);
    t["container_engine_memory_peak_bytes"] = static_cast<double>(peak_engine_memory_);
    t["container_shm_peak_bytes"] = static_cast<double>(peak_shm_);
    t["container_page_cache_peak_bytes"] = static_cast<double>(peak_page_cache_);
    t["peak_memory_bytes"] += static_cast<double>(peak_memory_);
    JoinSource(findings.meta, "peak_memory",
               "memory.stat anon + mapped files + shmem, or the charge less its other page "
               "cache where that is more (sampled)");
  }
  if (baseline_.io_bytes) {
    t["container_io_read_bytes"] = static_cast<double>(io_bytes_.first);
    t["container_io_write_bytes"] = static_cast<double>(io_bytes_.second);
    t["io_read_bytes"] += static_cast<double>(io_bytes_.first);
    t["io_write_bytes"] += static_cast<double>(io_bytes_.second);
    JoinSource(findings.meta, "io", cgroup_->io_source());
  }
  if (baseline_.pids) t["container_pids_peak"] = static_cast<double>(peak_pids_);
}

const std::vector<pid_t>& ContainerMembers::MembersAt(int64_t now_ns) {
  cgroup_->ListPids(container_);
  members_ = tree_ ? tree_->MembersAt(now_ns) : std::vector<pid_t>();
  members_.insert(members_.end(), container_.begin(), container_.end());
  return members_;
}

}  // namespace footprint
