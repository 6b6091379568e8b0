#include "probe/cpu_ring_probe.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "probe/perf_probe.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace {

// 16 pages of 24-byte samples: 2.7 s at 1 kHz per CPU, ten drains' worth.
constexpr size_t kRingDataPages = 16;

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// Copies `n` bytes at ring offset `at` (records may wrap around the end).
void CopyFromRing(const char* data, uint64_t size, uint64_t at, void* dst, size_t n) {
  const uint64_t start = at % size;
  const size_t first = static_cast<size_t>(std::min<uint64_t>(n, size - start));
  std::memcpy(dst, data + start, first);
  std::memcpy(static_cast<char*>(dst) + first, data, n - first);
}

std::string DescribeCgroupPerfError(int error) {
  if (error != EACCES && error != EPERM) return DescribePerfError(error);
  auto paranoid = ReadWholeFile("/proc/sys/kernel/perf_event_paranoid");
  return std::string("the kernel refused perf events on the run's cgroup (perf_event_open: ") +
         std::strerror(error) + ") with kernel.perf_event_paranoid=" +
         (paranoid.ok() ? std::string(Trim(*paranoid)) : "unknown") +
         "; they need root or CAP_PERFMON, or kernel.perf_event_paranoid<=0";
}

}  // namespace

void CpuCountTimeline::Add(size_t cpu, int64_t t_ns, uint64_t count, bool sampled) {
  Points& p = points_[cpu];
  if (!p.list.empty() && t_ns <= p.list.back().t_ns) return;
  if (p.first > 0 && p.first * 2 >= p.list.size()) {  // amortised: each point moves once
    p.list.erase(p.list.begin(), p.list.begin() + static_cast<ptrdiff_t>(p.first));
    p.first = 0;
  }
  p.list.push_back({t_ns, count, sampled});
}

int64_t CpuCountTimeline::KnownUntil() const {
  int64_t until = INT64_MAX;
  for (const Points& p : points_) {
    until = std::min(until, p.list.empty() ? INT64_MIN : p.list.back().t_ns);
  }
  return points_.empty() ? INT64_MIN : until;
}

double CpuCountTimeline::SumAt(int64_t t_ns) {
  double sum = 0;
  for (Points& p : points_) {
    if (p.list.empty()) continue;
    size_t& i = p.first;
    while (i + 1 < p.list.size() && p.list[i + 1].t_ns <= t_ns) ++i;
    const Point& a = p.list[i];
    if (t_ns <= a.t_ns || i + 1 == p.list.size()) {
      sum += static_cast<double>(a.count);
      continue;
    }
    sum += Between(a, p.list[i + 1], t_ns);
  }
  return sum;
}

double CpuCountTimeline::Between(const Point& a, const Point& b, int64_t t_ns) {
  const auto ca = static_cast<double>(a.count), cb = static_cast<double>(b.count);
  if (a.sampled && !b.sampled) return std::min(cb, ca + static_cast<double>(t_ns - a.t_ns));
  if (!a.sampled && b.sampled) return std::max(ca, cb - static_cast<double>(b.t_ns - t_ns));
  return ca + (cb - ca) * static_cast<double>(t_ns - a.t_ns) / static_cast<double>(b.t_ns - a.t_ns);
}

double CpuCountTimeline::Latest() const {
  double sum = 0;
  for (const Points& p : points_)
    sum += p.list.empty() ? 0.0 : static_cast<double>(p.list.back().count);
  return sum;
}

CpuRingProbe::CpuRingProbe(const RunCgroup& cgroup, int64_t interval_ns)
    : cgroup_(cgroup), interval_ns_(interval_ns) {}

CpuRingProbe::~CpuRingProbe() {
  const size_t bytes = (1 + kRingDataPages) * PageSize();
  for (Ring& r : rings_) {
    if (r.map != nullptr) ::munmap(r.map, bytes);
    if (r.fd >= 0) ::close(r.fd);
  }
}

Result<std::unique_ptr<CpuRingProbe>> CpuRingProbe::Open(const RunCgroup& cgroup,
                                                         int64_t interval_ns) {
  if (cgroup.v2_dir_fd() < 0 || !cgroup.has_cpu()) {
    return Unsupported("the run has no cgroup v2 directory with cpu.stat to count on");
  }
  std::unique_ptr<CpuRingProbe> probe(new CpuRingProbe(cgroup, interval_ns));
  const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
  const size_t bytes = (1 + kRingDataPages) * PageSize();
  for (long cpu = 0; cpu < cpus; ++cpu) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = static_cast<uint64_t>(interval_ns);
    attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_READ;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;  // footprint's timeline
    Ring ring;
    ring.fd = PerfEventOpen(attr, cgroup.v2_dir_fd(), static_cast<int>(cpu), PERF_FLAG_PID_CGROUP);
    if (ring.fd < 0 && errno == ENODEV) continue;  // an offline CPU runs nothing
    if (ring.fd < 0) return Unsupported(DescribeCgroupPerfError(errno));
    probe->rings_.push_back(ring);
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
    if (map == MAP_FAILED) {
      return Unsupported(std::string("mmap of a perf ring buffer: ") + std::strerror(errno) +
                         "; raise kernel.perf_event_mlock_kb");
    }
    probe->rings_.back().map = map;
  }
  if (probe->rings_.empty()) return Unsupported("no online CPU accepted a perf event");
  probe->timeline_ = CpuCountTimeline(probe->rings_.size());
  return probe;
}

std::vector<SeriesSpec> CpuRingProbe::Series(const MetricSet& wanted) {
  wanted_ = wanted.test(static_cast<size_t>(MetricId::kCpu));
  if (!wanted_) return {};
  return {{MetricId::kCpu, "tree"}};
}

MetricSet CpuRingProbe::Buffered() const {
  MetricSet m;
  m.set(static_cast<size_t>(MetricId::kCpu));
  return m;
}

void CpuRingProbe::Drain(size_t cpu) {
  Ring& ring = rings_[cpu];
  auto* page = static_cast<perf_event_mmap_page*>(ring.map);
  const uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  const char* data = static_cast<const char*>(ring.map) + page->data_offset;
  uint64_t tail = page->data_tail;
  while (tail < head) {
    perf_event_header header;
    CopyFromRing(data, page->data_size, tail, &header, sizeof header);
    uint64_t body[2];  // SAMPLE: time, count; LOST: id, how many
    CopyFromRing(data, page->data_size, tail + sizeof header, body, sizeof body);
    if (header.type == PERF_RECORD_SAMPLE) {
      timeline_.Add(cpu, static_cast<int64_t>(body[0]), body[1], /*sampled=*/true);
      ++kernel_samples_;
    } else if (header.type == PERF_RECORD_LOST) {
      lost_ += body[1];  // the counts are absolute: the series interpolates over the gap
    }
    tail += header.size;
  }
  __atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
  uint64_t count = 0;
  if (::read(ring.fd, &count, sizeof count) == sizeof count) {
    // On the kernel's clock, as the ring's records are, not the Env's: a driven clock would
    // misplace the count among them.
    timeline_.Add(cpu, MonotonicNs(), count, /*sampled=*/false);
  }
}

void CpuRingProbe::Begin(int64_t t0_ns) {
  // The command waits at the start gate: its count so far is the series' zero at t0.
  for (size_t cpu = 0; cpu < rings_.size(); ++cpu) {
    uint64_t count = 0;
    if (::read(rings_[cpu].fd, &count, sizeof count) == sizeof count) {
      timeline_.Add(cpu, t0_ns, count, /*sampled=*/false);
    }
  }
  last_sum_ = timeline_.SumAt(t0_ns);
  next_tick_ns_ = t0_ns + interval_ns_;
  usage_at_t0_ns_ = cgroup_.CpuUsageNs().value_or(0);
}

double CpuRingProbe::LevelToCpuStat(double ring_ns) const {
  const std::optional<int64_t> usage = cgroup_.CpuUsageNs();
  if (!usage || ring_ns < kLevelWindowNs) return 1.0;
  const double owed = static_cast<double>(*usage - usage_at_t0_ns_) - emitted_ns_;
  return std::clamp(owed / ring_ns, 0.5, 2.0);
}

void CpuRingProbe::Sample(int64_t /*now_ns*/, const MetricSet& due, SampleOut& out) {
  if (!wanted_ || !due.test(static_cast<size_t>(MetricId::kCpu))) return;
  for (size_t cpu = 0; cpu < rings_.size(); ++cpu) Drain(cpu);
  const int64_t known = timeline_.KnownUntil();
  const double scale = LevelToCpuStat(timeline_.Latest() - last_sum_);
  const double percent_per_ns = 100.0 / static_cast<double>(interval_ns_);
  for (; next_tick_ns_ <= known; next_tick_ns_ += interval_ns_) {
    const double sum = timeline_.SumAt(next_tick_ns_);
    const double ns = (sum - last_sum_) * scale;
    out.AddAt(0, next_tick_ns_, ns * percent_per_ns);
    emitted_ns_ += ns;
    last_sum_ = sum;
  }
}

void CpuRingProbe::Finish(ProbeFindings& findings) {
  if (!wanted_) return;
  findings.meta["cpu_sampler"] = {{"sampler", "ring"},
                                  {"event", "cpu-clock on the run's cgroup, per CPU"},
                                  {"cpus", rings_.size()},
                                  {"interval_ns", interval_ns_},
                                  {"counted_ns", last_sum_},
                                  {"emitted_ns", emitted_ns_},
                                  {"kernel_samples", kernel_samples_},
                                  {"lost_samples", lost_}};
  if (lost_ > 0) {
    // The counts are exact, so the totals hold; only where in time the CPU was is a guess.
    findings.warnings.push_back(
        "the kernel dropped " + std::to_string(lost_) +
        " cpu ring samples (footprint drained too late): cpu is interpolated over those gaps; "
        "its total is exact");
  }
}

}  // namespace footprint
