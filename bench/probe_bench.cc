// Cost of one sample of footprint's probes (Google Benchmark).
//
// BM_TreeSample/N          ProcessTreeProbe::Sample over N idle processes (children of this
//                          benchmark process, found by walking /proc/PID/task/TID/children,
//                          which is what `footprint run --no-cgroup` does), every tree metric.
// BM_TreeSampleNoIo/N      the same without io.read/io.write (so /proc/PID/io is not read).
// BM_TreeSampleScan/N      the same with force_proc_scan: the tree is found by reading the
//                          stat file of every process on the machine (kernels without
//                          children files).
// BM_TreeSampleCgroup/N    the same with the N processes in a cgroup of their own, enumerated
//                          from its cgroup.procs and CPU from its cpu.stat (what `footprint
//                          run` does by default). Skipped where no cgroup can be created.
// BM_SystemSample          SystemProbe::Sample (/proc/stat and /proc/meminfo).
// BM_RaplSample           RaplProbe::Sample of energy.cpu and energy.dram over a fake powercap
//                          tree of 2 packages and 2 DRAM zones (4 kept-open energy_uj files;
//                          the real sysfs files are read the same way, their kernel side
//                          costs an MSR read each).
// BM_PerfSample            PerfProbe::Sample of the three perf.* metrics on a live `sleep`
//                          that the events were attached to before its exec (3 read(2)s of
//                          inherited counters). Counts the hardware events where the machine
//                          has them, else the software events task-clock, context-switches
//                          and page-faults (FOOTPRINT_PERF_EVENTS's path; the read is alike).
// BM_PassAfterSleep/N/S    a whole pass's probe work (tree over N processes, walk mode, then
//                          the system probe) taken after sleeping S µs, as the sampler does
//                          between deadlines: thread CPU per pass, caches as cold as the sleep
//                          leaves them (S = 0: back to back). Manual time = that CPU time.
// BM_SleepOnly/S           nothing but sleeping S µs and waking up, as the sampler does
//                          between deadlines: its CPU time per iteration is what a wake-up
//                          costs (the timer's and the scheduler's work, charged to the thread
//                          that sleeps). At S = 1000 it is the floor of any sampler at 1 kHz.
// BM_GpuSample/G           GpuProbe::Sample of the device GPU metrics on G fake GPUs (the fake
//                          libnvidia-ml.so.1 of the tests, tests/fakes/fake_nvml.c), each
//                          listing 10 processes of the tree (idle children) and one foreign
//                          one, with per-process utilisation; the tree was sampled in the same
//                          pass, as in a run. Manual time = the GPU probe's CPU time per pass:
//                          footprint's own cost, since the fake answers from memory (a real
//                          NVML call enters the driver and costs more). Skipped when the tests
//                          (and so the fake) are not built.
// BM_ProcFileRead/F        one pread of file F of an idle child (stat, io, children, ...) or
//                          of the machine (/proc/stat, /proc/meminfo) through KernelFile,
//                          the way the probes read them: where the per-process cost goes.
//
// Counters: `per_process` is the CPU time of one sample divided by N (seconds; the console
// shows it with an SI prefix, e.g. 3.1u = 3.1 µs); `processes` is how many processes the
// probe saw in its last sample (must equal N, else the benchmark reports an error).
#include <benchmark/benchmark.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "footprint/metrics.h"
#include "probe/cgroup.h"
#include "probe/gpu_probe.h"
#include "probe/perf_probe.h"
#include "probe/process_tree_probe.h"
#include "probe/rapl_probe.h"
#include "probe/system_probe.h"
#include "util/clock.h"

extern char** environ;

namespace footprint {
namespace {

// Discards what a probe emits (it must still be produced).
class NullOut final : public SampleOut {
 public:
  void Add(int series, double value) override {
    benchmark::DoNotOptimize(series);
    benchmark::DoNotOptimize(value);
    ++count_;
  }
  int64_t count() const { return count_; }

 private:
  int64_t count_ = 0;
};

// N idle `sleep` processes, children of this process; killed and reaped on destruction.
class IdleChildren {
 public:
  explicit IdleChildren(int n) {
    pids_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      char arg0[] = "sleep";
      char arg1[] = "100000";
      char* argv[] = {arg0, arg1, nullptr};
      pid_t pid = -1;
      if (::posix_spawn(&pid, "/bin/sleep", nullptr, nullptr, argv, environ) != 0) {
        ok_ = false;
        return;
      }
      pids_.push_back(pid);
    }
  }
  ~IdleChildren() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
  }
  IdleChildren(const IdleChildren&) = delete;
  IdleChildren& operator=(const IdleChildren&) = delete;

  bool ok() const { return ok_; }
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  std::vector<pid_t> pids_;
  bool ok_ = true;
};

MetricSet TreeMetrics(bool with_io) {
  MetricSet m = DefaultMetrics();
  if (!with_io) {
    m.reset(static_cast<size_t>(MetricId::kIoRead));
    m.reset(static_cast<size_t>(MetricId::kIoWrite));
  }
  return m;
}

void RunTreeSample(benchmark::State& state, ProcessTreeProbe& probe, const MetricSet& metrics,
                   int64_t n) {
  NullOut out;
  probe.Series(metrics);
  // Warm up: the first sample opens every process's files; the steady state is measured.
  probe.Sample(MonotonicNs(), metrics, out);
  probe.Sample(MonotonicNs(), metrics, out);
  if (probe.last_process_count() != n) {
    state.SkipWithError(("the probe saw " + std::to_string(probe.last_process_count()) +
                         " processes instead of " + std::to_string(n))
                            .c_str());
    return;
  }
  for (auto _ : state) {
    probe.Sample(MonotonicNs(), metrics, out);
  }
  state.counters["processes"] = static_cast<double>(probe.last_process_count());
  state.counters["per_process"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
}

void TreeSample(benchmark::State& state, bool with_io, bool scan) {
  const int64_t n = state.range(0);
  IdleChildren children(static_cast<int>(n));
  if (!children.ok()) {
    state.SkipWithError("cannot start the idle children");
    return;
  }
  ProcessTreeProbe::Options opt;
  opt.monitor_pid = ::getpid();
  opt.force_proc_scan = scan;
  ProcessTreeProbe probe(opt);
  RunTreeSample(state, probe, TreeMetrics(with_io), n);
}

void BM_TreeSample(benchmark::State& state) { TreeSample(state, true, false); }
void BM_TreeSampleNoIo(benchmark::State& state) { TreeSample(state, false, false); }
void BM_TreeSampleScan(benchmark::State& state) { TreeSample(state, true, true); }

void BM_TreeSampleCgroup(benchmark::State& state) {
  static const CgroupSupport support = DetectCgroups();
  auto cg = RunCgroup::Create(support, "footprint-bench-" + std::to_string(::getpid()));
  if (!cg.ok()) {
    state.SkipWithError(("no cgroup: " + cg.status().message()).c_str());
    return;
  }
  const int64_t n = state.range(0);
  {
    IdleChildren children(static_cast<int>(n));
    if (!children.ok()) {
      state.SkipWithError("cannot start the idle children");
      return;
    }
    for (pid_t pid : children.pids()) {
      if (!(*cg)->Join(pid).ok()) {
        state.SkipWithError("cannot move a child into the cgroup");
        return;
      }
    }
    ProcessTreeProbe::Options opt;
    opt.monitor_pid = ::getpid();
    opt.cgroup = cg->get();
    ProcessTreeProbe probe(opt);
    RunTreeSample(state, probe, TreeMetrics(true), n);
  }  // children reaped before the cgroup is removed
}

void BM_SystemSample(benchmark::State& state) {
  SystemProbe probe(Env::Default());
  MetricSet metrics = DefaultMetrics();
  probe.Series(metrics);
  NullOut out;
  probe.Sample(MonotonicNs(), metrics, out);
  for (auto _ : state) {
    probe.Sample(MonotonicNs(), metrics, out);
  }
  if (out.count() == 0) state.SkipWithError("the system probe emitted nothing");
}

MetricSet Only(std::initializer_list<MetricId> ids) {
  MetricSet m;
  for (MetricId id : ids) m.set(static_cast<size_t>(id));
  return m;
}

void BM_RaplSample(benchmark::State& state) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "fp-rapl-XXXXXX").string();
  const std::string root = mkdtemp(tmpl.data());
  for (auto [zone, name] : {std::pair{"intel-rapl:0", "package-0"},
                            {"intel-rapl:0:0", "dram"},
                            {"intel-rapl:1", "package-1"},
                            {"intel-rapl:1:0", "dram"}}) {
    const std::string dir = root + "/class/powercap/" + zone;
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/name") << name << "\n";
    std::ofstream(dir + "/max_energy_range_uj") << "262143328850\n";
    std::ofstream(dir + "/energy_uj") << "123456789012\n";
  }
  {
    RaplProbe probe(root);
    const MetricSet energy = Only({MetricId::kEnergyCpu, MetricId::kEnergyDram});
    if (probe.Series(energy).size() != 2) state.SkipWithError("the fake tree was not found");
    NullOut out;
    for (auto _ : state) probe.Sample(MonotonicNs(), energy, out);
  }
  std::filesystem::remove_all(root);
}

void BM_PerfSample(benchmark::State& state) {
  PerfProbe::Options options;
  if (OpenPerfEvent(options.events[0], 0).fd < 0) {  // no PMU here: software events
    options.events = {*PerfEventByName("context-switches"), *PerfEventByName("task-clock"),
                      *PerfEventByName("page-faults")};
  }
  PerfProbe probe(options);
  const MetricSet perf =
      Only({MetricId::kPerfInstructions, MetricId::kPerfCycles, MetricId::kPerfCacheMisses});
  if (probe.Series(perf).size() != 3) {
    state.SkipWithError("perf_event_open refused every event");
    return;
  }
  // A child that waits for us, then execs sleep: the events start at its exec.
  int gate[2];
  if (::pipe(gate) != 0) return state.SkipWithError("pipe failed");
  pid_t child = ::fork();
  if (child == 0) {
    char c;
    ::close(gate[1]);
    if (::read(gate[0], &c, 1) != 1) _exit(1);
    ::execl("/bin/sleep", "sleep", "100000", static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(gate[0]);
  probe.AttachToCommand(child);
  (void)!::write(gate[1], "x", 1);
  ::close(gate[1]);
  NullOut out;
  probe.Sample(MonotonicNs(), perf, out);  // the first reading: rates start at the second
  for (auto _ : state) probe.Sample(MonotonicNs(), perf, out);
  if (out.count() == 0) state.SkipWithError("the perf probe emitted nothing");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

void BM_PassAfterSleep(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t sleep_us = state.range(1);
  IdleChildren children(static_cast<int>(n));
  if (!children.ok()) {
    state.SkipWithError("cannot start the idle children");
    return;
  }
  ProcessTreeProbe::Options opt;
  opt.monitor_pid = ::getpid();
  ProcessTreeProbe tree(opt);
  SystemProbe system(Env::Default());
  const MetricSet metrics = DefaultMetrics();
  tree.Series(metrics);
  system.Series(metrics);
  NullOut out;
  for (int i = 0; i < 2; ++i) {
    tree.Sample(MonotonicNs(), metrics, out);
    system.Sample(MonotonicNs(), metrics, out);
  }
  if (tree.last_process_count() != n) {
    state.SkipWithError("the probe did not see every child");
    return;
  }
  const timespec pause = TimespecOf(sleep_us * 1000);
  for (auto _ : state) {
    if (sleep_us > 0) ::clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
    const int64_t cpu0 = ThreadCpuNs();
    tree.Sample(MonotonicNs(), metrics, out);
    system.Sample(MonotonicNs(), metrics, out);
    state.SetIterationTime(static_cast<double>(ThreadCpuNs() - cpu0) / 1e9);
  }
}

void BM_SleepOnly(benchmark::State& state) {
  const timespec pause = TimespecOf(state.range(0) * 1000);
  for (auto _ : state) ::clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, nullptr);
}

void BM_GpuSample(benchmark::State& state) {
#ifndef FP_FAKE_NVML
  state.SkipWithError("the fake NVML library is built with the tests (FOOTPRINT_BUILD_TESTS)");
#else
  const int64_t gpus = state.range(0);
  IdleChildren children(10);
  if (!children.ok()) {
    state.SkipWithError("cannot start the idle children");
    return;
  }
  // The script names the children's PIDs literally, so the fake reads no file per call.
  char dir_template[] = "/tmp/fp-bench-nvml-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string script = dir + "/script";
  {
    std::ofstream out(script);
    for (int64_t g = 0; g < gpus; ++g) {
      out << "gpu uuid=GPU-" << g << " util=50 power_mw=250000\n";
      for (pid_t pid : children.pids()) {
        out << "process gpu=" << g << " kind=compute pid=" << pid << " memory=1048576\n"
            << "putil gpu=" << g << " pid=" << pid << " sm=5\n";
      }
      out << "process gpu=" << g << " kind=compute pid=1 memory=1048576\n";
    }
  }
  ::setenv("FAKE_NVML_SCRIPT", script.c_str(), 1);
  {
    auto lib = nvml::Library::Open(FP_FAKE_NVML);
    if (!lib.ok()) {
      state.SkipWithError(lib.status().message().c_str());
      return;
    }
    ProcessTreeProbe::Options opt;
    opt.monitor_pid = ::getpid();
    ProcessTreeProbe tree(opt);
    GpuProbe gpu({*lib, &tree, std::nullopt, ""});
    MetricSet tree_metrics = TreeMetrics(false), gpu_metrics;
    // The device metrics: the activity ones (SM active, ...) come from GPM or DCGM, which
    // this probe is given none of here.
    for (size_t i = 0; i < kFirstGpuActivitySlot; ++i) {
      gpu_metrics.set(static_cast<size_t>(kGpuMetrics[i]));
    }
    tree.Series(tree_metrics);
    const size_t series = gpu.Series(gpu_metrics).size();
    NullOut out;
    for (auto _ : state) {
      const int64_t now = MonotonicNs();
      tree.Sample(now, tree_metrics, out);
      const int64_t cpu0 = ThreadCpuNs();
      gpu.Sample(now, gpu_metrics, out);
      state.SetIterationTime(static_cast<double>(ThreadCpuNs() - cpu0) / 1e9);
    }
    if (series != static_cast<size_t>(gpus) * kFirstGpuActivitySlot) {
      state.SkipWithError("the GPU probe did not declare every metric of every GPU");
    }
    state.counters["per_gpu"] = benchmark::Counter(
        static_cast<double>(gpus),
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  }
  ::unsetenv("FAKE_NVML_SCRIPT");
  std::remove(script.c_str());
  ::rmdir(dir.c_str());
#endif
}

// One pread from offset 0 of an already open kernel file, as KernelFile::Read does.
void BM_ProcFileRead(benchmark::State& state, const char* file) {
  IdleChildren child(1);
  if (!child.ok()) {
    state.SkipWithError("cannot start the idle child");
    return;
  }
  const std::string pid = std::to_string(child.pids()[0]);
  std::string path = file;
  if (path.rfind("/proc/", 0) != 0) {
    path = "/proc/" + pid + "/" + (path == "children" ? "task/" + pid + "/children" : path);
  }
  KernelFile f(path);
  if (!f.is_open()) {
    state.SkipWithError(("cannot open " + path).c_str());
    return;
  }
  static char buf[16384];
  for (auto _ : state) {
    std::string_view text = f.Read(buf, sizeof buf);
    benchmark::DoNotOptimize(text.data());
  }
}

BENCHMARK(BM_TreeSample)->Arg(1)->Arg(10)->Arg(100);
BENCHMARK(BM_TreeSampleNoIo)->Arg(1)->Arg(10)->Arg(100);
BENCHMARK(BM_TreeSampleScan)->Arg(1)->Arg(10)->Arg(100);
BENCHMARK(BM_TreeSampleCgroup)->Arg(1)->Arg(10)->Arg(100);
BENCHMARK(BM_SystemSample);
BENCHMARK(BM_RaplSample);
BENCHMARK(BM_PerfSample);
// Fixed iteration counts: the sleeps, not the measured time, set how long these take.
BENCHMARK(BM_PassAfterSleep)->Args({10, 0})->Iterations(20000)->UseManualTime();
BENCHMARK(BM_PassAfterSleep)->Args({10, 1000})->Iterations(500)->UseManualTime();
BENCHMARK(BM_PassAfterSleep)->Args({10, 10000})->Iterations(100)->UseManualTime();
BENCHMARK(BM_PassAfterSleep)->Args({10, 100000})->Iterations(20)->UseManualTime();
BENCHMARK(BM_SleepOnly)->Arg(1000)->Iterations(2000);
BENCHMARK(BM_GpuSample)->Arg(1)->Arg(8)->UseManualTime();
BENCHMARK_CAPTURE(BM_ProcFileRead, stat, "stat");
BENCHMARK_CAPTURE(BM_ProcFileRead, io, "io");
BENCHMARK_CAPTURE(BM_ProcFileRead, children, "children");
BENCHMARK_CAPTURE(BM_ProcFileRead, statm, "statm");
BENCHMARK_CAPTURE(BM_ProcFileRead, status, "status");
BENCHMARK_CAPTURE(BM_ProcFileRead, proc_stat, "/proc/stat");
BENCHMARK_CAPTURE(BM_ProcFileRead, proc_meminfo, "/proc/meminfo");

}  // namespace
}  // namespace footprint

BENCHMARK_MAIN();
