#include "footprint/doctor.h"

#include <sqlite3.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "doctor/container_checks.h"
#include "footprint/profiler.h"
#include "footprint/store.h"
#include "probe/cgroup.h"
#include "probe/cpu_ring_probe.h"
#include "probe/gpu_activity.h"
#include "probe/gpu_devices.h"
#include "probe/nvml.h"
#include "probe/perf_probe.h"
#include "probe/rapl_probe.h"
#include "run/run_metadata.h"
#include "store/libpq.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/proc_parse.h"
#include "util/strings.h"

namespace footprint {
namespace {

// The line saying which GPUs `env`'s CUDA_VISIBLE_DEVICES leaves to runs, or "" when it is not
// set.
std::string VisibleDevicesLine(Env& env, const std::vector<GpuEntity>& gpus) {
  const std::optional<std::string> visible = env.Var("CUDA_VISIBLE_DEVICES");
  if (!visible) return "";
  GpuSelection sel = SelectGpus(gpus, visible);
  std::string chosen;
  for (size_t i : sel.entities) chosen += (chosen.empty() ? "" : " ") + gpus[i].entity;
  return "CUDA_VISIBLE_DEVICES='" + *visible + "': runs measure " +
         (chosen.empty() ? "no GPU" : chosen) +
         (sel.ignored.empty() ? "" : " (" + sel.ignored + ")");
}

// One GPU or MIG device: what it is, and whether and how each GPU metric is read on it.
DoctorCheck GpuEntityCheck(nvml::Library& nvml, GpuActivitySources& activity,
                           const std::vector<GpuEntity>& gpus, const GpuEntity& g) {
  DoctorCheck d{g.entity, false, g.name, "GPU metrics of " + g.entity};
  if (g.handle == nullptr) return d;  // NVML could not open it; the name says why
  if (!g.uuid.empty()) d.detail += ", " + g.uuid;
  if (g.memory_total_bytes) {
    d.detail += ", " + FormatBytes(static_cast<double>(*g.memory_total_bytes));
  }
  if (g.is_mig()) {
    if (g.gpu_instance_id) d.detail += ", GPU instance " + std::to_string(*g.gpu_instance_id);
    if (g.compute_instance_id) {
      d.detail += ", compute instance " + std::to_string(*g.compute_instance_id);
    }
  } else {
    d.detail += ", MIG " + g.mig_mode;
  }
  GpuCapabilities caps = ProbeGpuCapabilities(nvml, g, /*have_tree=*/true);
  std::array<int, kGpuActivityCount> chosen;
  ChooseActivitySources(activity, g, g.is_mig() ? &gpus[static_cast<size_t>(g.parent)] : nullptr,
                        caps, chosen);
  for (size_t k = 0; k < kGpuMetrics.size(); ++k) {
    d.ok = d.ok || caps[k].ok;
    d.lines.push_back(std::string(InfoOf(kGpuMetrics[k]).name) + ": " +
                      (caps[k].ok ? "yes, " + caps[k].how : "no, " + caps[k].why));
  }
  return d;
}

// "nvml": whether NVML loads; then one check per GPU and MIG device with each GPU metric.
void AddGpuChecks(Env& env, std::vector<DoctorCheck>& checks) {
  std::string enables;
  for (MetricId m : kGpuMetrics)
    enables += (enables.empty() ? "" : ", ") + std::string(InfoOf(m).name);
  DoctorCheck c{"nvml", false, "", enables};
  auto lib = nvml::Library::Open(env);
  if (!lib.ok()) {
    c.detail = lib.status().message();
    checks.push_back(c);
    return;
  }
  nvml::Library& nvml = **lib;
  auto gpus = ListGpus(nvml);
  c.detail = nvml.path() + ", driver " + nvml.DriverVersion() + ", NVML " + nvml.NvmlVersion();
  for (const std::string& f : nvml.MissingOptional()) {
    c.lines.push_back(f + " is not exported (an older driver): the metrics that need it are off");
  }
  if (!gpus.ok()) {
    c.detail += ": " + gpus.status().message();
    checks.push_back(c);
    return;
  }
  c.ok = true;
  GpuActivitySources activity = OpenActivitySources(env, *lib);
  size_t whole = 0;
  for (const GpuEntity& g : *gpus) whole += !g.is_mig();
  c.detail += ", " + std::to_string(whole) + " GPU(s)";
  if (std::string line = VisibleDevicesLine(env, *gpus); !line.empty()) c.lines.push_back(line);
  checks.push_back(c);
  for (const GpuEntity& g : *gpus) checks.push_back(GpuEntityCheck(nvml, activity, *gpus, g));
}

// Nsight Systems and Nsight Compute, which radT's profiler listeners start (docs/profiling.md).
void AddProfilerChecks(Env& env, std::vector<DoctorCheck>& checks) {
  for (const auto& [tool, listeners] :
       {std::pair{"nsys", "nsys, nsysraw"}, std::pair{"ncu", "ncu, ncuraw, ncuattach"}}) {
    DoctorCheck c{std::string("profiler ") + tool, false, "",
                  std::string("the listeners ") + listeners + " (run --profiler, plans)"};
    auto path = FindOnPath(env, tool);
    c.ok = path.has_value();
    if (!path) {
      c.detail = std::string(tool) + " is not on PATH: runs that ask for it go on unprofiled";
    } else {
      c.detail = *path + ": " + ProfilerVersion(*path).value_or("its --version failed");
    }
    checks.push_back(c);
  }
}

// Which sampler `footprint run` uses for the tree's cpu (--cpu-sampler auto), opened as a
// run opens it, on a cgroup like the run's.
DoctorCheck CpuSamplerCheck(const RunCgroup* cgroup) {
  DoctorCheck c{"cpu sampler", false, "", "cpu at 1 ms without 1,000 wake-ups a second"};
  Result<std::unique_ptr<CpuRingProbe>> ring =
      cgroup ? CpuRingProbe::Open(*cgroup, kNsPerMs) : Unsupported("the run has no cgroup");
  c.ok = ring.ok();
  c.detail = c.ok ? "ring for cpu intervals under 10 ms: the kernel samples the run's cgroup "
                    "into a ring buffer (perf cpu-clock per CPU), drained 4 times a second"
                  : "timer: cpu.stat read at each interval, because " + ring.status().message();
  return c;
}

DoctorCheck ProcessTreeCheck(const std::string& self) {
  DoctorCheck c{"process tree", false, "", "cpu, memory, threads, processes"};
  auto stat = ReadWholeFile(self + "/stat");
  if (!stat.ok()) {
    c.detail = "/proc is not readable (" + stat.status().message() + "); mount procfs";
  } else if (!ParseProcStat(*stat)) {
    c.detail = "/proc/PID/stat has an unexpected format";
  } else {
    c.ok = true;
    c.detail = "/proc/PID/stat readable";
  }
  return c;
}

DoctorCheck TreeWalkCheck(const std::string& self) {
  DoctorCheck c{"tree walk", false, "", "process tree membership without a cgroup"};
  KernelFile children(self + "/task/" + std::to_string(::getpid()) + "/children");
  c.ok = children.is_open();
  c.detail = c.ok ? "/proc/PID/task/TID/children available"
                  : "/proc/PID/task/TID/children missing (kernel built without "
                    "CONFIG_PROC_CHILDREN); the tree is found by scanning all of /proc";
  return c;
}

DoctorCheck SubreaperCheck() {
  DoctorCheck c{"subreaper", false, "", "double-forked processes stay in the tree"};
  int old = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &old);
  c.ok = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  prctl(PR_SET_CHILD_SUBREAPER, old);
  c.detail = c.ok ? "prctl(PR_SET_CHILD_SUBREAPER) works"
                  : "prctl(PR_SET_CHILD_SUBREAPER) refused (Linux 3.4 or later is needed)";
  return c;
}

DoctorCheck IoAccountingCheck(const std::string& self) {
  DoctorCheck c{"io accounting", false, "", "io.read, io.write, io_read_bytes, io_write_bytes"};
  auto io = ReadWholeFile(self + "/io");
  c.ok = io.ok() && ParseProcIo(*io).has_value();
  c.detail = c.ok ? "/proc/PID/io readable"
                  : "/proc/PID/io not readable (kernel without CONFIG_TASK_IO_ACCOUNTING, or "
                    "processes of other users need CAP_SYS_PTRACE)";
  return c;
}

// "cgroup cpu", "cgroup memory" and the cpu sampler, on a cgroup made as a run makes one.
void AddCgroupChecks(std::vector<DoctorCheck>& checks) {
  CgroupSupport support = DetectCgroups();
  DoctorCheck cpu{"cgroup cpu", false, "", "exact cpu and cpu_user_s/cpu_system_s of the tree"};
  DoctorCheck mem{"cgroup memory", false, "",
                  "memory and peak_memory_bytes count shared pages once, page cache apart"};
  auto cg = RunCgroup::Create(support, "footprint-doctor-" + std::to_string(::getpid()));
  if (cg.ok()) {
    cpu.ok = (*cg)->has_cpu() && (*cg)->CpuUsageNs().has_value();
    mem.ok = (*cg)->has_memory() && (*cg)->ReadMemoryStat().has_value();
    cpu.detail = cpu.ok ? (*cg)->cpu_source() + " in a cgroup per run" : support.why_no_cpu;
    mem.detail = mem.ok ? (*cg)->memory_source() + " and memory.stat in a cgroup per run"
                        : support.why_no_memory;
  } else {
    cpu.detail = support.why_no_cpu.empty() ? cg.status().message() : support.why_no_cpu;
    mem.detail = support.why_no_memory.empty() ? cg.status().message() : support.why_no_memory;
  }
  if (!cpu.ok) {
    cpu.detail +=
        "; totals fall back to wait4 rusage (exact for every process that is waited "
        "for)";
  }
  if (!mem.ok) mem.detail += "; the peak falls back to sampled RSS and process high-water marks";
  checks.push_back(cpu);
  checks.push_back(mem);
  checks.push_back(CpuSamplerCheck(cg.ok() ? cg->get() : nullptr));
}

DoctorCheck SystemCheck() {
  DoctorCheck c{"system", false, "", "sys.cpu, sys.memory"};
  KernelFile stat("/proc/stat"), meminfo("/proc/meminfo");
  c.ok = stat.is_open() && meminfo.is_open();
  c.detail =
      c.ok ? "/proc/stat and /proc/meminfo readable" : "/proc/stat or /proc/meminfo not readable";
  return c;
}

// Opt-in: energy.cpu / energy.dram. Reads the counters as the probe will.
DoctorCheck RaplCheck(Env& env) {
  DoctorCheck c{"rapl", false, "", "energy.cpu, energy.dram, cpu_energy_j, dram_energy_j"};
  RaplDiscovery rapl = DiscoverRapl(env.SysRoot());
  std::string readable, unreadable, other;
  for (const RaplDomain& d : rapl.domains) {
    if (!d.counted) {
      other += (other.empty() ? "" : ", ") + d.name + " (" + d.zone + ")";
    } else if (d.unreadable.empty()) {
      readable += (readable.empty() ? "" : ", ") + d.name + " (" + d.zone + ")";
    } else if (unreadable.empty()) {
      unreadable = d.unreadable;
    }
  }
  c.ok = !readable.empty();
  if (!rapl.why_unavailable.empty()) {
    c.detail = rapl.why_unavailable;
  } else if (c.ok) {
    c.detail = "domains counted: " + readable;
    if (!other.empty()) c.detail += "; not added (parts, containers or duplicates): " + other;
    if (!unreadable.empty()) c.detail += "; some are unreadable: " + unreadable;
  } else {
    c.detail =
        unreadable.empty() ? "no package or DRAM domain under " + rapl.powercap_dir : unreadable;
  }
  return c;
}

// Opt-in: the hardware counters, opened on footprint itself as they are on a command.
void AddPerfChecks(std::vector<DoctorCheck>& checks) {
  for (MetricId metric :
       {MetricId::kPerfInstructions, MetricId::kPerfCycles, MetricId::kPerfCacheMisses}) {
    const PerfEvent event = DefaultPerfEvent(metric);
    const std::string metric_name(InfoOf(metric).name);
    DoctorCheck c{"perf " + event.name, false, "", metric_name + ", " + PerfTotalName(metric)};
    PerfOpen opened = OpenPerfEvent(event, 0);
    c.ok = opened.fd >= 0;
    if (c.ok) {
      ::close(opened.fd);
      c.detail = "perf_event_open(" + event.name + ") works, inherited by child processes" +
                 (opened.user_only ? "; user space only (kernel.perf_event_paranoid)" : "");
    } else {
      c.detail = opened.error;
    }
    checks.push_back(c);
  }
}

DoctorCheck DatabaseCheck(Env& env) {
  DoctorCheck c{"database", true, "", "storage of runs"};
  c.detail = "SQLite " + std::string(sqlite3_libversion()) + ", schema v" +
             std::to_string(kSchemaVersion) + ", default " +
             RedactedLocation(DefaultStoreLocation(env));
  return c;
}

DoctorCheck PostgresqlCheck() {
  DoctorCheck c{"postgresql", false, "", "postgresql:// databases (docs/cluster.md)"};
  // The real machine's: libpq is loaded once per process (pq::Load), whichever Env asks first.
  auto lib = pq::Load(Env::Default());
  c.ok = lib.ok();
  if (c.ok) {
    const int version = (*lib)->lib_version();
    c.detail = "libpq " + std::to_string(version / 10000) + "." + std::to_string(version % 10000) +
               " loads; it is used only for such a URI";
  } else {
    c.detail = lib.status().message();
  }
  return c;
}

}  // namespace

std::vector<DoctorCheck> RunDoctor(Env& env) {
  std::vector<DoctorCheck> checks;
  const std::string self = "/proc/" + std::to_string(::getpid());
  checks.push_back(ProcessTreeCheck(self));
  checks.push_back(TreeWalkCheck(self));
  checks.push_back(SubreaperCheck());
  checks.push_back(IoAccountingCheck(self));
  AddCgroupChecks(checks);
  checks.push_back(SystemCheck());
  AddGpuChecks(env, checks);
  AddContainerChecks(checks);
  checks.push_back(RaplCheck(env));
  AddPerfChecks(checks);
  checks.push_back(DatabaseCheck(env));
  checks.push_back(PostgresqlCheck());
  AddProfilerChecks(env, checks);
  return checks;
}

}  // namespace footprint
