// The GPU probe against the fake libnvidia-ml.so.1, on the fake's manual clock, with a real
// process tree: an idle child of this test, whose PID the fake reads from the script's
// pids_file. The probe's Env is a FakeEnv whose clock is each pass's time, to which the fake's
// costly calls add exactly their scripted cost: what is spaced out by cost is exact.
#include "probe/gpu_probe.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "fake_env.h"
#include "fake_nvml.h"
#include "probe/container_probe.h"
#include "probe/gpm_source.h"
#include "probe/process_tree_probe.h"
#include "util/clock.h"

extern char** environ;

namespace footprint {
namespace {

using json = nlohmann::json;
using testing::FakeNvmlPath;
using testing::FakeNvmlScript;

// Every GPU metric, and nothing else: the tree probe then samples nothing itself.
MetricSet GpuMetrics() {
  MetricSet set;
  for (MetricId m : kGpuMetrics) set.set(static_cast<size_t>(m));
  return set;
}

struct Outcome {
  // "metric@entity" -> (ms, value) of every sample
  std::map<std::string, std::vector<std::pair<int, double>>> series;
  json meta;
  std::map<std::string, double> totals;
  std::vector<std::string> warnings;

  double Last(const std::string& key) const {
    auto it = series.find(key);
    if (it == series.end() || it->second.empty()) {
      ADD_FAILURE() << "no samples of " << key;
      return -1;
    }
    return it->second.back().second;
  }
  bool Has(const std::string& key) const { return series.count(key) > 0; }
};

// Where the fake NVML's costly calls spend their time (SetFakeNvmlCostHook).
FakeEnv* cost_clock = nullptr;
void SpendOnTheCostClock(long long us) { cost_clock->Advance(us * 1000); }

class Recorder final : public SampleOut {
 public:
  Recorder(const std::vector<SeriesSpec>& specs, Outcome& out) : specs_(specs), out_(out) {}
  void Add(int series, double value) override {
    const SeriesSpec& s = specs_[static_cast<size_t>(series)];
    out_.series[std::string(InfoOf(s.metric).name) + "@" + s.entity].emplace_back(now_ms, value);
  }
  int now_ms = 0;

 private:
  const std::vector<SeriesSpec>& specs_;
  Outcome& out_;
};

class GpuProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char arg0[] = "/bin/sleep";
    char arg1[] = "60";
    char* argv[] = {arg0, arg1, nullptr};
    ASSERT_EQ(posix_spawn(&child_, argv[0], nullptr, nullptr, argv, environ), 0);
  }
  void TearDown() override {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
  }

  // Runs the probe over `duration_ms`, a pass every `step_ms`, against `variant` of the fake
  // with `script` (in which PIDS names the file holding the tree's PID). The run's processes
  // are the tree's, or `members` when given.
  Outcome Drive(const std::string& script, int duration_ms, int step_ms,
                const std::string& variant = "full",
                std::optional<std::string> visible = std::nullopt,
                ProcessMembers* members = nullptr) {
    Outcome result;
    std::string text = "clock manual\n" + script;
    FakeNvmlScript fake("");
    const std::string pids = fake.File("pids");
    std::ofstream(pids) << child_ << "\n";
    for (size_t at; (at = text.find("PIDS")) != std::string::npos;) text.replace(at, 4, pids);
    std::ofstream(fake.path()) << text;

    const std::string path = FakeNvmlPath(variant);
    auto lib = nvml::Library::Open(path);
    if (!lib.ok()) {
      ADD_FAILURE() << lib.status().message();
      return result;
    }
    ProcessTreeProbe tree(ProcessTreeProbe::Options{getpid(), nullptr, nullptr, "/proc"});
    EXPECT_TRUE(tree.Series(GpuMetrics()).empty());  // membership only, on the GPU probe's call
    FakeEnv env;
    cost_clock = &env;
    testing::SetFakeNvmlCostHook(path, &SpendOnTheCostClock);
    GpuProbe::Options options{*lib, members ? members : &tree, visible, visible ? "test" : "", {},
                              &env};
    options.activity.list.push_back(std::make_unique<GpmSource>(*lib));
    GpuProbe probe(std::move(options));
    EXPECT_EQ(probe.problem(), "");
    std::vector<SeriesSpec> specs = probe.Series(GpuMetrics());
    Recorder out(specs, result);
    const int64_t t0 = kNsPerSec;  // the probe's clock has run a while, as a machine's has
    for (int ms = 0; ms <= duration_ms; ms += step_ms) {
      testing::SetFakeNvmlTimeMs(path, ms);
      const int64_t now_ns = t0 + int64_t{ms} * kNsPerMs;
      env.Advance(std::max<int64_t>(0, now_ns - env.MonotonicNs()));  // past the last costs
      out.now_ms = ms;
      probe.Sample(now_ns, GpuMetrics(), out);
    }
    ProbeFindings findings{result.totals, result.meta, result.warnings};
    probe.Finish(findings);
    testing::SetFakeNvmlCostHook(path, nullptr);
    return result;
  }

  pid_t child_ = -1;
};

constexpr char kShared[] = R"(
pids_file PIDS
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-0000 memory_total=85899345920 memory_used=3221225472 util=75 power_mw=300000 energy_period_ms=100 sm_clock=1980 temperature=61
process gpu=0 kind=compute pid=tree memory=1073741824
process gpu=0 kind=compute pid=1 memory=2147483648
putil gpu=0 pid=tree sm=60
putil gpu=0 pid=1 sm=20
)";

TEST_F(GpuProbeTest, ScriptedValuesComeOut) {
  Outcome o = Drive(kShared, 1000, 50);
  for (const auto& [ms, v] : o.series["gpu@gpu:0"]) EXPECT_EQ(v, 75) << ms;
  EXPECT_EQ(o.series["gpu@gpu:0"].size(), 21u);
  EXPECT_EQ(o.Last("gpu.memory@gpu:0"), 3221225472.0);
  EXPECT_EQ(o.Last("gpu.power@gpu:0"), 300);
  EXPECT_EQ(o.Last("gpu.sm_clock@gpu:0"), 1980);
  EXPECT_EQ(o.Last("gpu.temperature@gpu:0"), 61);
  // The tree's memory and SMs, not the foreign process's.
  for (const auto& [ms, v] : o.series["gpu.memory.tree@gpu:0"]) EXPECT_EQ(v, 1073741824.0) << ms;
  for (const auto& [ms, v] : o.series["gpu.tree@gpu:0"]) EXPECT_EQ(v, 60) << ms;
}

// What an idle H100 showed: nvmlDeviceGetMemoryInfo said 480 MiB used where nvidia-smi (the _v2
// call) said 0; footprint's peak was 480 MiB above nvidia-smi's for a whole run.
TEST_F(GpuProbeTest, MemoryTheDriverReservesIsNotUsedMemory) {
  constexpr char kReserved[] = R"(
gpu uuid=GPU-0000 memory_total=85899345920 memory_used=1073741824 memory_reserved=503316480
)";
  EXPECT_EQ(Drive(kReserved, 100, 100).Last("gpu.memory@gpu:0"), 1073741824.0);
  // A driver without the _v2 call counts it in.
  EXPECT_EQ(Drive(kReserved, 100, 100, "minimal").Last("gpu.memory@gpu:0"),
            1073741824.0 + 503316480.0);
}

TEST_F(GpuProbeTest, EnergyFromTheCounterWithItsUpdatePeriod) {
  Outcome o = Drive(kShared, 1000, 50);
  // 300 W for 1 s; the counter steps every 100 ms, and t = 1000 ms is a step.
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy@gpu:0"), 300);
  EXPECT_EQ(o.series["gpu.energy@gpu:0"].front().second, 0);
  // Between steps the counter stands still: the sample at 150 ms still reads 100 ms' energy.
  EXPECT_DOUBLE_EQ(o.series["gpu.energy@gpu:0"][3].second, 30);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_EQ(dev["energy_source"], "counter");
  EXPECT_DOUBLE_EQ(dev["energy_update_period_ms"].get<double>(), 100);
  EXPECT_FALSE(dev["energy_update_period_is_upper_bound"].get<bool>());
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 300);
}

TEST_F(GpuProbeTest, CounterUpdatingAsOftenAsItIsReadGivesAnUpperBound) {
  // Read every 100 ms, as often as the counter steps: it changes at every reading, and could
  // as well step faster.
  Outcome o = Drive(kShared, 2000, 100);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_DOUBLE_EQ(dev["energy_update_period_ms"].get<double>(), 100);
  EXPECT_TRUE(dev["energy_update_period_is_upper_bound"].get<bool>());
}

// What an H100 showed: a reading of the energy counter costs 4 ms. Read every 100 ms, that was 4 %
// of a core; footprint reads it at most every 100 x its cost (exactly, on the driven clock), and
// once more at the end, so the run's energy stays exact.
TEST_F(GpuProbeTest, CostlyEnergyCounterIsReadSeldomAndOnceMoreAtTheEnd) {
  std::string script = kShared;
  script.replace(script.find("energy_period_ms=100"), 20,
                 "energy_period_ms=100 energy_cost_us=4000");
  Outcome o = Drive(script, 2000, 100);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_EQ(dev["energy_read_gap_ms"].get<double>(), 400);
  EXPECT_EQ(o.series["gpu.energy@gpu:0"].size(), 6u);              // 0, 400 .. 2000 ms; not 21
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 600);              // 300 W for 2 s, to the end
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 0.75 * 600);  // the tree's 60 of 80 % SM
}

// And one reading there took 22 ms, where the others took 4: the next ones are put off by the
// typical cost, not by that one (which would have left 2.2 s without a reading).
TEST_F(GpuProbeTest, OneSlowEnergyReadingDoesNotPutTheNextOnesOff) {
  std::string script = kShared;
  script.replace(script.find("energy_period_ms=100"), 20,
                 "energy_period_ms=100 energy_cost_us=200 energy_spike_at_ms=500 "
                 "energy_spike_us=30000");
  Outcome o = Drive(script, 2000, 50);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_EQ(dev["energy_read_gap_ms"].get<double>(), 20);  // the spike alone: 3,000 ms
  EXPECT_EQ(o.series["gpu.energy@gpu:0"].size(), 41u);     // every pass; the spike alone: 12
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 600);
}

// And per-process utilisation costs 1.6 ms there: asked at most every 100 x its cost, the tree's
// SM figure is still there at every pass (NVML keeps the samples; the newest stand between).
TEST_F(GpuProbeTest, CostlyPerProcessUtilisationIsAskedSeldom) {
  Outcome o = Drive(std::string("putil_cost_us 2000\n") + kShared, 1000, 50);
  EXPECT_EQ(o.meta["gpu"]["devices"]["gpu:0"]["process_utilization_read_gap_ms"].get<double>(),
            200);
  ASSERT_EQ(o.series["gpu.tree@gpu:0"].size(), 21u);
  for (const auto& [ms, v] : o.series["gpu.tree@gpu:0"]) EXPECT_EQ(v, 60) << ms;
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 0.75 * o.totals.at("gpu_energy_j"));
}

TEST_F(GpuProbeTest, SlowCounterPeriodIsFoundBetweenReadings) {
  std::string script = kShared;
  script.replace(script.find("energy_period_ms=100"), 20, "energy_period_ms=300");
  Outcome o = Drive(script, 3000, 50);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_DOUBLE_EQ(dev["energy_update_period_ms"].get<double>(), 300);
  EXPECT_FALSE(dev["energy_update_period_is_upper_bound"].get<bool>());
  // 250 ms read every 100 ms: changes 200 and 300 ms apart, 250 ms on average.
  script = kShared;
  script.replace(script.find("energy_period_ms=100"), 20, "energy_period_ms=250");
  const json between = Drive(script, 3000, 100).meta["gpu"]["devices"]["gpu:0"];
  EXPECT_NEAR(between["energy_update_period_ms"].get<double>(), 250, 10);
  EXPECT_FALSE(between["energy_update_period_is_upper_bound"].get<bool>());
}

TEST_F(GpuProbeTest, SharedDeviceEnergyIsSplitBySmShare) {
  Outcome o = Drive(kShared, 1000, 50);
  // The tree has 60 of the 80 % SM utilisation on the device: 3/4 of its energy.
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy.tree@gpu:0"), 225);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 225);
  EXPECT_TRUE(o.warnings.empty());
}

TEST_F(GpuProbeTest, PassingProcessListErrorsDoNotCancelTheAttribution) {
  // The process lists fail with NVML_ERROR_UNKNOWN from 300 to 450 ms: that energy waits for
  // the next share instead of ending the attribution.
  std::string script = kShared;
  script.replace(script.find("temperature=61"), 14,
                 "temperature=61 fail=processes fail_from_ms=300 fail_until_ms=450");
  Outcome o = Drive(script, 1000, 50);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 300);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 225);
  EXPECT_TRUE(o.warnings.empty());
  // Gaps while it failed, not zeros.
  for (const auto& [ms, v] : o.series["gpu.energy.tree@gpu:0"]) {
    EXPECT_FALSE(ms >= 300 && ms < 450) << ms;
  }
}

TEST_F(GpuProbeTest, EnergyRefusedMidRunIsUnknownNotPartial) {
  std::string script = kShared;
  script.replace(script.find("temperature=61"), 14,
                 "temperature=61 fail=energy fail_from_ms=400 fail_code=3");
  Outcome o = Drive(script, 1000, 50);
  EXPECT_EQ(o.totals.count("gpu_energy_j"), 0u);
  EXPECT_EQ(o.totals.count("gpu_energy_tree_j"), 0u);
  ASSERT_FALSE(o.warnings.empty());
  EXPECT_NE(o.warnings[0].find("GPU energy of the run is unknown"), std::string::npos);
  // Refused 0.4 s into the run, and never asked again (the time stays that of the refusal).
  EXPECT_NE(o.meta["gpu"]["unsupported"]["gpu.energy@gpu:0"].get<std::string>().find(
                "0.400 s into the run"),
            std::string::npos)
      << o.meta["gpu"]["unsupported"].dump();
  for (const auto& [ms, v] : o.series["gpu.energy@gpu:0"]) EXPECT_LT(ms, 400);
}

TEST_F(GpuProbeTest, ExclusiveDeviceEnergyIsAllTheTrees) {
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-0000 power_mw=200000 energy_period_ms=100
process gpu=0 kind=compute pid=tree memory=1000
)",
                    500, 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy@gpu:0"), 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy.tree@gpu:0"), 100);
}

TEST_F(GpuProbeTest, IdleSharedDeviceIsSplitByProcesses) {
  // Nobody uses the SMs (no per-process samples): the tree and process 1 hold it equally.
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-0000 power_mw=100000 energy_period_ms=100
process gpu=0 kind=compute pid=tree memory=1000
process gpu=0 kind=graphics pid=1 memory=1000
)",
                    1000, 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy@gpu:0"), 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy.tree@gpu:0"), 50);
  for (const auto& [ms, v] : o.series["gpu.tree@gpu:0"]) EXPECT_EQ(v, 0) << ms;
}

TEST_F(GpuProbeTest, SharedDeviceWithoutPerProcessUtilisationIsUnknownNotZero) {
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-0000 power_mw=100000 unsupported=putil
process gpu=0 kind=compute pid=tree memory=1000
process gpu=0 kind=compute pid=1 memory=1000
)",
                    500, 100);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 50);
  EXPECT_EQ(o.totals.count("gpu_energy_tree_j"), 0u);
  EXPECT_NE(o.meta["gpu"]["devices"]["gpu:0"]["energy_tree_unknown"].get<std::string>().find(
                "other processes share gpu:0"),
            std::string::npos);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("unknown"), std::string::npos);
  EXPECT_FALSE(o.Has("gpu.tree@gpu:0"));
  EXPECT_NE(o.meta["gpu"]["unsupported"]["gpu.tree@gpu:0"].get<std::string>().find(
                "NVML_ERROR_NOT_SUPPORTED"),
            std::string::npos);
}

TEST_F(GpuProbeTest, PerProcessSamplesStandBetweenDriverPeriods) {
  // The driver samples every 100 ms, footprint every 20 ms: passes in between keep the value.
  Outcome o = Drive(std::string("putil_period_ms 100\n") + kShared, 400, 20);
  ASSERT_EQ(o.series["gpu.tree@gpu:0"].size(), 21u);
  for (const auto& [ms, v] : o.series["gpu.tree@gpu:0"]) EXPECT_EQ(v, 60) << ms;
}

TEST_F(GpuProbeTest, WithoutTheCounterPowerIsIntegrated) {
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-0000 power_mw=250000 unsupported=energy
)",
                    1000, 50);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy@gpu:0"), 250);
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_EQ(dev["energy_source"], "power integration");
  EXPECT_FALSE(dev.contains("energy_update_period_ms"));
}

TEST_F(GpuProbeTest, OldDriverWithoutOptionalFunctions) {
  Outcome o = Drive(kShared, 1000, 100, "minimal");
  EXPECT_EQ(o.meta["gpu"]["devices"]["gpu:0"]["energy_source"], "power integration");
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy@gpu:0"), 300);
  // No per-process utilisation on a shared device: the tree's energy is unknown, its memory is
  // still known (unversioned process lists).
  EXPECT_EQ(o.totals.count("gpu_energy_tree_j"), 0u);
  EXPECT_EQ(o.Last("gpu.memory.tree@gpu:0"), 1073741824.0);
  EXPECT_NE(o.meta["gpu"]["unsupported"]["gpu.tree@gpu:0"].get<std::string>().find(
                "nvmlDeviceGetProcessUtilization is not exported"),
            std::string::npos);
  const json& missing = o.meta["gpu"]["missing_functions"];
  EXPECT_NE(std::find(missing.begin(), missing.end(), "nvmlDeviceGetTotalEnergyConsumption"),
            missing.end());
}

TEST_F(GpuProbeTest, MigDevicesRecordWhatTheyCannotMeasure) {
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-aaaa mig=1 power_mw=400000 util=50
mig gpu=0 uuid=MIG-1111 memory_used=5000 gi=1 ci=0 unsupported=util,power,energy,clock,temperature,putil
process gpu=0 mig=0 kind=compute pid=tree memory=4096
)",
                    500, 100);
  EXPECT_FALSE(o.Has("gpu@gpu:0/mig:0"));
  EXPECT_NE(o.meta["gpu"]["unsupported"]["gpu@gpu:0/mig:0"].get<std::string>().find(
                "NVML_ERROR_NOT_SUPPORTED"),
            std::string::npos);
  EXPECT_EQ(o.Last("gpu.memory@gpu:0/mig:0"), 5000);
  EXPECT_EQ(o.Last("gpu.memory.tree@gpu:0/mig:0"), 4096);
  // The GPU holds the processes of its MIG devices.
  EXPECT_EQ(o.Last("gpu.memory.tree@gpu:0"), 4096);
  EXPECT_DOUBLE_EQ(o.Last("gpu.energy.tree@gpu:0"), 200);
  EXPECT_EQ(o.meta["gpu"]["devices"]["gpu:0/mig:0"]["gpu_instance_id"], 1);
}

TEST_F(GpuProbeTest, LostGpuStopsBeingSampled) {
  Outcome o = Drive(R"(
pids_file PIDS
gpu uuid=GPU-0000 power_mw=300000 lost_after_ms=500 util=10
gpu uuid=GPU-1111 power_mw=100000 util=20
)",
                    1000, 100);
  EXPECT_EQ(o.series["gpu@gpu:0"].back().first, 400);
  EXPECT_EQ(o.series["gpu@gpu:1"].back().first, 1000);  // the other GPU goes on
  const json& dev = o.meta["gpu"]["devices"]["gpu:0"];
  EXPECT_DOUBLE_EQ(dev["lost_at_s"].get<double>(), 0.5);
  EXPECT_NE(dev["lost_reason"].get<std::string>().find("NVML_ERROR_GPU_IS_LOST"),
            std::string::npos);
  // Energy up to the last reading: 300 W for 400 ms, plus 100 W for 1 s.
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 120 + 100);
  ASSERT_FALSE(o.warnings.empty());
  EXPECT_NE(o.warnings[0].find("gpu:0"), std::string::npos);
  EXPECT_NE(o.warnings[0].find("lost 0.500 s into the run"), std::string::npos) << o.warnings[0];
}

TEST_F(GpuProbeTest, VisibleDevicesLimitTheEntities) {
  Outcome o = Drive(R"(
gpu uuid=GPU-0000
gpu uuid=GPU-1111
)",
                    100, 100, "full", "GPU-1111");
  EXPECT_FALSE(o.Has("gpu@gpu:0"));
  EXPECT_TRUE(o.Has("gpu@gpu:1"));
  EXPECT_EQ(o.meta["gpu"]["selection"]["list"], "GPU-1111");
}

// An H100 running a kernel on one SM: NVML's utilisation says busy, GPM says 0.71 % of the SMs.
constexpr char kGpm[] = R"(
pids_file PIDS
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-0000 util=88 gpm=1 sm_active=0.71 sm_occupancy=0.011 tensor=0 dram=0.001 fp64=0 fp32=0.5 fp16=0 pcie_tx=0.25 pcie_rx=2 nvlink_tx=0 nvlink_rx=0
)";

TEST_F(GpuProbeTest, GpmActivityFromTwoSamplesPerInterval) {
  Outcome o = Drive(kGpm, 1000, 50);
  // A value every 100 ms from the second sample on (NVIDIA's shortest interval), each computed
  // from that pass's sample and the previous one: 10 values over 1 s of passes every 50 ms.
  const auto& sm = o.series["gpu.sm_active@gpu:0"];
  ASSERT_EQ(sm.size(), 10u);
  for (size_t i = 0; i < sm.size(); ++i) {
    EXPECT_EQ(sm[i].first, 100 * static_cast<int>(i + 1));
    EXPECT_DOUBLE_EQ(sm[i].second, 0.71);
  }
  EXPECT_DOUBLE_EQ(o.Last("gpu@gpu:0"), 88);
  EXPECT_DOUBLE_EQ(o.Last("gpu.sm_occupancy@gpu:0"), 0.011);
  EXPECT_DOUBLE_EQ(o.Last("gpu.fp32_active@gpu:0"), 0.5);
  EXPECT_DOUBLE_EQ(o.Last("gpu.tensor_active@gpu:0"), 0);
  EXPECT_DOUBLE_EQ(o.Last("gpu.pcie.tx@gpu:0"), 0.25 * 1024 * 1024);  // MiB/s -> bytes/s
  EXPECT_DOUBLE_EQ(o.Last("gpu.pcie.rx@gpu:0"), 2.0 * 1024 * 1024);
  EXPECT_EQ(o.meta["gpu"]["devices"]["gpu:0"]["activity"]["gpu.sm_active"],
            "NVML GPM, metric SM_UTIL");
  EXPECT_FALSE(o.meta["gpu"]["unsupported"].contains("gpu.sm_active@gpu:0"));
}

TEST_F(GpuProbeTest, GpmAtOneKilohertzStillSpansAHundredMilliseconds) {
  Outcome o = Drive(kGpm, 500, 1);
  const auto& sm = o.series["gpu.sm_active@gpu:0"];
  ASSERT_EQ(sm.size(), 5u);  // not 500 values of samples 1 ms apart
  for (size_t i = 0; i < sm.size(); ++i) EXPECT_EQ(sm[i].first, 100 * static_cast<int>(i + 1));
  EXPECT_EQ(o.series["gpu@gpu:0"].size(), 501u);  // the other metrics keep their pace
}

TEST_F(GpuProbeTest, DeviceWithoutGpmRecordsWhyNotZero) {
  Outcome o = Drive(R"(
gpu name="NVIDIA A100-SXM4-80GB" uuid=GPU-0000 util=90
)",
                    500, 100);
  EXPECT_TRUE(o.Has("gpu@gpu:0"));
  for (const char* m : {"gpu.sm_active", "gpu.tensor_active", "gpu.nvlink.rx"}) {
    const std::string key = std::string(m) + "@gpu:0";
    EXPECT_FALSE(o.Has(key)) << key;
    EXPECT_EQ(o.meta["gpu"]["unsupported"][key],
              "NVML GPM: gpu:0 (NVIDIA A100-SXM4-80GB) does not support GPM (Hopper or later "
              "GPUs)");
  }
}

TEST_F(GpuProbeTest, DriverWithoutGpmSaysWhichSymbolIsMissing) {
  Outcome o = Drive(kGpm, 300, 100, "minimal");
  EXPECT_FALSE(o.Has("gpu.sm_active@gpu:0"));
  EXPECT_NE(o.meta["gpu"]["unsupported"]["gpu.sm_active@gpu:0"].get<std::string>().find(
                "nvmlGpmQueryDeviceSupport is not exported by"),
            std::string::npos);
}

TEST_F(GpuProbeTest, GpmMetricsTheDeviceLacksAreUnsupportedOneByOne) {
  Outcome o = Drive(R"(
gpu uuid=GPU-0000 gpm=1 sm_active=40 nvlink_tx=7 gpm_unsupported=nvlink_tx,nvlink_rx
)",
                    300, 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.sm_active@gpu:0"), 40);
  EXPECT_FALSE(o.Has("gpu.nvlink.tx@gpu:0"));
  EXPECT_EQ(o.meta["gpu"]["unsupported"]["gpu.nvlink.tx@gpu:0"],
            "NVML GPM: metric NVLINK_TOTAL_TX_PER_SEC: NVML_ERROR_NOT_SUPPORTED (Not Supported)");
}

TEST_F(GpuProbeTest, GpmPerMigInstance) {
  Outcome o = Drive(R"(
gpu uuid=GPU-aaaa mig=1 gpm=1 sm_active=60
mig gpu=0 uuid=MIG-1111 gi=1 ci=0 sm_active=25 unsupported=util
mig gpu=0 uuid=MIG-2222 gi=2 ci=0 sm_active=35 unsupported=util
)",
                    300, 100);
  EXPECT_DOUBLE_EQ(o.Last("gpu.sm_active@gpu:0"), 60);
  EXPECT_DOUBLE_EQ(o.Last("gpu.sm_active@gpu:0/mig:0"), 25);
  EXPECT_DOUBLE_EQ(o.Last("gpu.sm_active@gpu:0/mig:1"), 35);
  EXPECT_EQ(o.meta["gpu"]["devices"]["gpu:0/mig:1"]["activity"]["gpu.sm_active"],
            "NVML GPM, metric SM_UTIL of GPU instance 2");
}

TEST_F(GpuProbeTest, FailingGpmSamplesAreCountedAndTheValuesResume) {
  Outcome o = Drive(R"(
gpu uuid=GPU-0000 gpm=1 sm_active=30 fail=gpm fail_from_ms=250 fail_until_ms=550
)",
                    1000, 50);
  std::vector<int> at;
  for (const auto& [ms, v] : o.series["gpu.sm_active@gpu:0"]) at.push_back(ms);
  // Values until the samples fail, none while they do, and at the first pass after: the mean
  // from the last good sample (200 ms) to it (550 ms).
  EXPECT_EQ(at, (std::vector<int>{100, 200, 550, 650, 750, 850, 950}))
      << ::testing::PrintToString(at);
  const json& errors = o.meta["gpu"]["devices"]["gpu:0"]["errors"]["gpu.sm_active"];
  EXPECT_EQ(errors["count"], 5);  // the passes at 300, 350, ..., 500
  EXPECT_NE(errors["last"].get<std::string>().find("from nvmlGpmSampleGet"), std::string::npos);
}

TEST(GpuProbeOpenTest, NoGpuMetricNoNvml) {
  FakeEnv env;  // no NVML library
  json meta;
  MetricSet cpu_only;
  cpu_only.set(static_cast<size_t>(MetricId::kCpu));
  EXPECT_EQ(GpuProbe::Open(env, cpu_only, nullptr, std::nullopt, meta), nullptr);
  EXPECT_FALSE(meta.contains("gpu"));  // not even looked for
  EXPECT_EQ(GpuProbe::Open(env, GpuMetrics(), nullptr, std::nullopt, meta), nullptr);
  EXPECT_NE(meta["gpu"]["unavailable"].get<std::string>().find("/nonexistent"), std::string::npos);
}

// A container's GPU use (docs/containers.md#gpu): NVML's processes are found in the cgroup the
// engine put the container in, here a folder laid out as one (cgroup.procs, a child cgroup).
class ContainerGpuTest : public GpuProbeTest {
 protected:
  // The container's cgroup: `top` in its cgroup.procs, `nested` in a child cgroup's.
  std::unique_ptr<RunCgroup> ContainerCgroup(const std::string& top, const std::string& nested) {
    std::filesystem::create_directories(dir_.File("libpod-1/init"));
    std::ofstream(dir_.File("libpod-1/cgroup.procs")) << top;
    std::ofstream(dir_.File("libpod-1/init/cgroup.procs")) << nested;
    CgroupSupport dirs;
    dirs.v2_dir = dir_.File("libpod-1");
    auto cgroup = RunCgroup::Observe(dirs);
    EXPECT_TRUE(cgroup.ok());
    return cgroup.ok() ? std::move(cgroup).value() : nullptr;
  }
  testing::TempDir dir_;
};

TEST_F(ContainerGpuTest, AttachedContainerClaimsItsProcessesShare) {
  // The container holds the scripted "tree" process (SM 60 of 80): 3/4 of the energy.
  auto cgroup = ContainerCgroup(std::to_string(child_) + "\n", "");
  ContainerMembers members(cgroup.get());
  Outcome o = Drive(kShared, 1000, 50, "full", std::nullopt, &members);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 300);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 225);
}

TEST_F(ContainerGpuTest, ContainerAndClientTogether) {
  // PID 1 (SM 20) is in the container's child cgroup, the tree's process with the client: the
  // run holds all 80 % of the SMs in use, so all the energy.
  auto cgroup = ContainerCgroup("", "1\n");
  ProcessTreeProbe tree(ProcessTreeProbe::Options{getpid(), nullptr, nullptr, "/proc"});
  ContainerMembers members(cgroup.get());
  members.set_tree(&tree);
  Outcome o = Drive(kShared, 1000, 50, "full", std::nullopt, &members);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 300);
}

TEST_F(ContainerGpuTest, EmptyContainerClaimsNothing) {
  auto cgroup = ContainerCgroup("", "");
  ContainerMembers members(cgroup.get());
  Outcome o = Drive(kShared, 1000, 50, "full", std::nullopt, &members);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_j"), 300);
  EXPECT_DOUBLE_EQ(o.totals.at("gpu_energy_tree_j"), 0);
}

}  // namespace
}  // namespace footprint
