#include "probe/perf_probe.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "util/file.h"
#include "util/strings.h"

namespace footprint {
namespace {

using json = nlohmann::json;

constexpr std::array<MetricId, 3> kMetrics = {MetricId::kPerfInstructions, MetricId::kPerfCycles,
                                              MetricId::kPerfCacheMisses};

// The events `perf stat -e NAME` knows by these names.
const std::vector<PerfEvent>& KnownEvents() {
  static const std::vector<PerfEvent> kEvents = {
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions"},
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles"},
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "cache-misses"},
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "cache-references"},
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches"},
      {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "branch-misses"},
      {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "task-clock"},
      {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "cpu-clock"},
      {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches"},
      {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations"},
      {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults"},
  };
  return kEvents;
}

int TryOpen(perf_event_attr& attr, pid_t pid) { return PerfEventOpen(attr, pid, /*cpu=*/-1, 0); }

}  // namespace

int PerfEventOpen(perf_event_attr& attr, pid_t pid, int cpu, unsigned long flags) {
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, pid, cpu, /*group_fd=*/-1,
                                    flags | PERF_FLAG_FD_CLOEXEC));
}

std::string PerfTotalName(MetricId metric) {
  switch (metric) {
    case MetricId::kPerfInstructions:
      return "perf_instructions";
    case MetricId::kPerfCycles:
      return "perf_cycles";
    default:
      return "perf_cache_misses";
  }
}

PerfEvent DefaultPerfEvent(MetricId metric) {
  switch (metric) {
    case MetricId::kPerfInstructions:
      return KnownEvents()[0];
    case MetricId::kPerfCycles:
      return KnownEvents()[1];
    default:
      return KnownEvents()[2];
  }
}

Result<PerfEvent> PerfEventByName(std::string_view name) {
  std::string known;
  for (const PerfEvent& e : KnownEvents()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  return NotFound("unknown perf event '" + std::string(name) + "'; known events: " + known);
}

std::optional<double> ScaledCount(const PerfReading& r) {
  if (r.time_enabled_ns == 0) return 0.0;           // not enabled yet: nothing was counted
  if (r.time_running_ns == 0) return std::nullopt;  // enabled but never on the PMU
  if (r.time_running_ns >= r.time_enabled_ns) return static_cast<double>(r.count);
  return static_cast<double>(r.count) * static_cast<double>(r.time_enabled_ns) /
         static_cast<double>(r.time_running_ns);
}

namespace {

// Whether the kernel lists a hardware (CPU) PMU: x86 "cpu" (hybrid "cpu_core", "cpu_atom"),
// Arm "armv8_..." / "arm_...".
bool HasHardwarePmu(const std::string& sys_root) {
  std::error_code ec;
  for (const auto& d :
       std::filesystem::directory_iterator(sys_root + "/bus/event_source/devices", ec)) {
    const std::string name = d.path().filename().string();
    if (name == "cpu" || name.rfind("cpu_", 0) == 0 || name.rfind("arm", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string DescribePerfError(int error, const std::string& proc_root,
                              const std::string& sys_root) {
  const std::string call = std::string("perf_event_open: ") + std::strerror(error);
  const std::string no_counters =
      "; on a virtual machine enable its virtual PMU (KVM/QEMU: -cpu host; VMware: "
      "'virtualize CPU performance counters'), or run on bare metal";
  switch (error) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      return "the CPU or hypervisor exposes no such hardware counter (" + call + ")" + no_counters;
    case EACCES:
    case EPERM: {
      if (!HasHardwarePmu(sys_root)) {
        return "this machine has no hardware counters at all (no CPU PMU under " + sys_root +
               "/bus/event_source/devices; " + call + "), so no permission would help" +
               no_counters;
      }
      auto paranoid = ReadWholeFile(proc_root + "/sys/kernel/perf_event_paranoid");
      std::string level = paranoid.ok() ? std::string(Trim(*paranoid)) : "unknown";
      return "the kernel refused (" + call + ") with kernel.perf_event_paranoid=" + level +
             "; allow it with: sudo sysctl kernel.perf_event_paranoid=1 (or run footprint as "
             "root, or give it CAP_PERFMON)";
    }
    case ENOSYS:
      return "this kernel has no perf events (built without CONFIG_PERF_EVENTS)";
    case EMFILE:
    case ENFILE:
      return "too many open files (" + call + "); raise the limit with ulimit -n";
    default:
      return "the kernel does not accept this event (" + call + ")";
  }
}

PerfOpen OpenPerfEvent(const PerfEvent& event, pid_t pid) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.disabled = 1;
  attr.enable_on_exec = 1;
  attr.inherit = 1;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  PerfOpen out;
  out.fd = TryOpen(attr, pid);
  if (out.fd < 0 && (errno == EACCES || errno == EPERM)) {
    // kernel.perf_event_paranoid=2 (the usual default) allows user-space counting only.
    const int first_error = errno;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    out.fd = TryOpen(attr, pid);
    out.user_only = out.fd >= 0;
    if (out.fd < 0) errno = first_error;
  }
  if (out.fd < 0) out.error = DescribePerfError(errno);
  return out;
}

Result<PerfProbe::Options> PerfProbe::Options::FromEnv(Env& env) {
  Options o;
  const std::optional<std::string> spec = env.Var("FOOTPRINT_PERF_EVENTS");
  if (!spec || spec->empty()) return o;
  for (std::string_view item : Split(*spec, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    Result<MetricId> metric = MetricByName(Trim(item.substr(0, std::min(eq, item.size()))));
    size_t slot = 0;
    while (slot < kMetrics.size() && (!metric.ok() || kMetrics[slot] != *metric)) ++slot;
    if (eq == std::string_view::npos || slot == kMetrics.size()) {
      return InvalidArgument("FOOTPRINT_PERF_EVENTS: '" + std::string(item) +
                             "' is not METRIC=EVENT with METRIC one of perf.instructions, "
                             "perf.cycles, perf.cache_misses; unset it to count the defaults");
    }
    Result<PerfEvent> event = PerfEventByName(Trim(item.substr(eq + 1)));
    if (!event.ok()) {
      return InvalidArgument("FOOTPRINT_PERF_EVENTS: " + event.status().message());
    }
    o.events[slot] = *event;
  }
  o.substituted_by = "FOOTPRINT_PERF_EVENTS";
  return o;
}

PerfProbe::PerfProbe() : PerfProbe(Options()) {}

PerfProbe::PerfProbe(Options options) : options_(std::move(options)) {
  for (size_t i = 0; i < kMetrics.size(); ++i) counters_[i].metric = kMetrics[i];
}

PerfProbe::~PerfProbe() {
  for (Counter& c : counters_) {
    if (c.fd >= 0) ::close(c.fd);
  }
}

std::vector<SeriesSpec> PerfProbe::Series(const MetricSet& wanted) {
  std::vector<SeriesSpec> specs;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    Counter& c = counters_[i];
    c.wanted = wanted.test(static_cast<size_t>(c.metric));
    if (!c.wanted) continue;
    // Capabilities once, on footprint itself: the command's events open the same way.
    PerfOpen probe = OpenPerfEvent(options_.events[i], 0);
    if (probe.fd < 0) {
      c.error = probe.error;
      continue;
    }
    ::close(probe.fd);
    c.series = static_cast<int>(specs.size());
    specs.push_back({c.metric, "tree"});
  }
  return specs;
}

void PerfProbe::AttachToCommand(pid_t command) {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    Counter& c = counters_[i];
    if (c.series < 0 || c.fd >= 0) continue;
    PerfOpen opened = OpenPerfEvent(options_.events[i], command);
    c.fd = opened.fd;
    c.user_only = opened.user_only;
    if (c.fd < 0) c.error = opened.error;
  }
}

void PerfProbe::Begin(int64_t t0_ns) {
  for (Counter& c : counters_) {
    if (c.fd >= 0) c.rate.StartAtZero(t0_ns);  // open once attached: counting from the exec
  }
}

std::optional<PerfReading> PerfProbe::Read(int fd) {
  uint64_t values[3];
  if (fd < 0 || ::read(fd, values, sizeof values) != static_cast<ssize_t>(sizeof values)) {
    return std::nullopt;
  }
  return PerfReading{values[0], values[1], values[2]};
}

void PerfProbe::Sample(int64_t now_ns, const MetricSet& due, SampleOut& out) {
  for (Counter& c : counters_) {
    if (c.fd < 0 || !due.test(static_cast<size_t>(c.metric))) continue;
    std::optional<PerfReading> r = Read(c.fd);
    if (!r) {
      c.read_failed = true;
      continue;
    }
    c.last_reading = *r;
    c.multiplexed |= r->time_running_ns < r->time_enabled_ns;
    std::optional<double> count = ScaledCount(*r);
    if (!count) continue;  // never on the PMU since it was enabled: unknown, not 0
    // A scaled estimate can step back a little when multiplexing shifts: no rate then.
    if (auto rate = c.rate.Next(now_ns, *count, 1e9)) out.Add(c.series, *rate);
  }
}

std::optional<double> PerfProbe::CountOf(MetricId metric) const {
  for (const Counter& c : counters_) {
    if (c.metric == metric && c.fd >= 0) {
      if (std::optional<PerfReading> r = Read(c.fd)) return ScaledCount(*r);
    }
  }
  return std::nullopt;
}

void PerfProbe::Finish(ProbeFindings& findings) {
  json events = json::object();
  json unavailable = json::object();
  UnavailableMetrics missing;
  bool any_wanted = false;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    Counter& c = counters_[i];
    if (!c.wanted) continue;
    any_wanted = true;
    const std::string metric(InfoOf(c.metric).name);
    std::optional<PerfReading> r = Read(c.fd);
    if (r) c.last_reading = *r;
    // GCC's -Wmaybe-uninitialized misreads an optional<double> passed on to json here.
    const std::optional<double> scaled = r ? ScaledCount(*r) : std::nullopt;
    const bool known = c.fd >= 0 && scaled.has_value();
    const double count = scaled.value_or(0.0);
    if (!known) {
      std::string why = !c.error.empty() ? c.error
                        : c.fd >= 0 && r ? "the counter never ran on the PMU (it was always "
                                           "multiplexed out)"
                                         : "the counter could not be read";
      unavailable[metric] = why;
      missing.Add(metric, why);
    } else {
      findings.totals[PerfTotalName(c.metric)] = count;
    }
    if (c.fd >= 0) {
      c.multiplexed |= c.last_reading.time_running_ns < c.last_reading.time_enabled_ns;
      events[metric] = {{"event", options_.events[i].name},
                        {"count", c.last_reading.count},
                        {"time_enabled_ns", c.last_reading.time_enabled_ns},
                        {"time_running_ns", c.last_reading.time_running_ns},
                        {"multiplexed", c.multiplexed},
                        {"user_space_only", c.user_only}};
      events[metric]["scaled_count"] = known ? json(count) : json(nullptr);
      ::close(c.fd);
      c.fd = -1;
    }
  }
  if (!any_wanted) return;
  json meta = {{"inherited_by_children", true}, {"events", events}};
  if (!unavailable.empty()) meta["unavailable"] = unavailable;
  if (!options_.substituted_by.empty()) {
    meta["substituted_by"] = options_.substituted_by;
    std::string list;
    for (size_t i = 0; i < kMetrics.size(); ++i) {
      if (!counters_[i].wanted || options_.events[i].name == DefaultPerfEvent(kMetrics[i]).name) {
        continue;
      }
      list += (list.empty() ? "" : ", ") + std::string(InfoOf(kMetrics[i]).name) + " counts " +
              options_.events[i].name;
    }
    if (!list.empty()) {
      findings.warnings.push_back(list + " (substituted by " + options_.substituted_by +
                                  ", a test hook; unset it to count the hardware events)");
    }
  }
  missing.Warn(findings.warnings);
  findings.meta["perf"] = std::move(meta);
}

}  // namespace footprint
