// The DCGM source against the fake libdcgm.so.4 (tests/fakes/fake_dcgm.c), on the fake's manual
// clock: connection and embedded mode, what each GPU and GPU instance supports and why not,
// values in footprint's units, other users' watches left alone, and the GPU probe taking from
// DCGM what GPM lacks, saying which source served each metric.
#include "probe/dcgm_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "fake_env.h"
#include "fake_nvml.h"
#include "probe/gpm_source.h"
#include "probe/gpu_probe.h"
#include "util/clock.h"

namespace footprint {
namespace {

using json = nlohmann::json;

// The fake's test hooks, from the copy the source loaded.
template <typename F>
F Hook(const char* name) {
  void* handle = ::dlopen(FP_FAKE_DCGM, RTLD_NOW | RTLD_NOLOAD);
  F f = handle != nullptr ? reinterpret_cast<F>(::dlsym(handle, name)) : nullptr;
  if (handle != nullptr) ::dlclose(handle);
  return f;
}
void SetTimeMs(long long ms) { Hook<void (*)(long long)>("fake_dcgm_set_time_ms")(ms); }
int Watchers(unsigned short field, unsigned group = 1, unsigned id = 0) {
  return Hook<int (*)(unsigned short, unsigned, unsigned)>("fake_dcgm_watchers")(field, group, id);
}
long long IntervalUs(unsigned short field, unsigned group = 1, unsigned id = 0) {
  return Hook<long long (*)(unsigned short, unsigned, unsigned)>("fake_dcgm_watch_interval_us")(
      field, group, id);
}

class DcgmSourceTest : public ::testing::Test {
 protected:
  std::unique_ptr<DcgmSource> Open(const std::string& script, std::string* why) {
    std::ofstream(dir_.File("dcgm")) << "clock manual\n" << script;
    env_.vars["FAKE_DCGM_SCRIPT"] = dir_.File("dcgm");
    ::setenv("FAKE_DCGM_SCRIPT", dir_.File("dcgm").c_str(), 1);
    env_.libraries["libdcgm.so.4"] = FP_FAKE_DCGM;
    return DcgmSource::Open(env_, why);
  }
  static GpuEntity Gpu(unsigned index) {
    GpuEntity e;
    e.entity = "gpu:" + std::to_string(index);
    e.index = index;
    return e;
  }
  static size_t Slot(MetricId m) {
    return static_cast<size_t>(GpuMetricSlot(m)) - kFirstGpuActivitySlot;
  }

  testing::TempDir dir_;
  FakeEnv env_;
};

constexpr char kA100[] = R"(
gpu sm_active=0.42 sm_occupancy=0.2 tensor=0.3 dram=0.55 fp32=0.1 pcie_tx=1000000 pcie_rx=2500000 nvlink_tx=7 unsupported=1012
)";

TEST_F(DcgmSourceTest, HostEngineFirstEmbeddedWhenAskedThenWhyNot) {
  std::string why;
  auto s = Open(kA100, &why);
  ASSERT_NE(s, nullptr) << why;
  EXPECT_EQ(s->mode(), "host engine at 127.0.0.1");
  s.reset();
  s = Open(std::string("hostengine 0\n") + kA100, &why);
  EXPECT_EQ(s, nullptr);  // embedded DCGM loads its modules at every run: only when asked
  EXPECT_NE(why.find("no host engine at 127.0.0.1 (DCGM_ST_CONNECTION_NOT_VALID(-21)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("set FOOTPRINT_DCGM=embedded"), std::string::npos) << why;
  env_.vars["FOOTPRINT_DCGM"] = "embedded";
  s = Open(std::string("hostengine 0\n") + kA100, &why);
  ASSERT_NE(s, nullptr) << why;
  EXPECT_EQ(s->mode(), "embedded");
  s.reset();
  s = Open(std::string("hostengine 0\nembedded 0\n") + kA100, &why);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(why.find("embedded DCGM would not start"), std::string::npos) << why;
  env_.vars.erase("FOOTPRINT_DCGM");
  env_.libraries.clear();  // no libdcgm at all
  EXPECT_EQ(DcgmSource::Open(env_, &why), nullptr);
  EXPECT_NE(why.find("DCGM: libdcgm is not installed"), std::string::npos) << why;
  env_.vars["FOOTPRINT_DCGM"] = "off";
  EXPECT_EQ(DcgmSource::Open(env_, &why), nullptr);
  EXPECT_EQ(why, "DCGM: not asked (FOOTPRINT_DCGM=off)");
}

TEST_F(DcgmSourceTest, ProbeSaysWhichFieldsAndWhyNotAndLeavesNoWatch) {
  std::string why;
  auto s = Open(kA100, &why);
  ASSERT_NE(s, nullptr) << why;
  GpuActivitySupport support = s->Probe(Gpu(0), nullptr);
  EXPECT_TRUE(support[Slot(MetricId::kGpuSmActive)].ok);
  EXPECT_EQ(support[Slot(MetricId::kGpuSmActive)].how,
            "DCGM field 1002 (SM_ACTIVE), host engine at 127.0.0.1, watched every 100 ms");
  EXPECT_FALSE(support[Slot(MetricId::kGpuNvlinkRx)].ok);
  EXPECT_EQ(support[Slot(MetricId::kGpuNvlinkRx)].why,
            "DCGM: DCGM field 1012 (NVLINK_RX_BYTES): DCGM_ST_NOT_SUPPORTED(-6) This request is "
            "not supported");
  EXPECT_EQ(Watchers(1002), 0);  // the probe's own watch is gone
  // A GPU without the profiling module's support refuses the watch: every field says why.
  s.reset();
  s = Open("gpu profiling=0\n", &why);
  ASSERT_NE(s, nullptr);
  support = s->Probe(Gpu(0), nullptr);
  for (const GpuSupport& f : support) {
    EXPECT_FALSE(f.ok);
    EXPECT_NE(f.why.find("DCGM_ST_PROFILING_NOT_SUPPORTED"), std::string::npos) << f.why;
  }
}

TEST_F(DcgmSourceTest, ValuesInFootprintsUnitsOncePerDcgmUpdate) {
  std::string why;
  auto s = Open(kA100, &why);
  ASSERT_NE(s, nullptr) << why;
  const int slot = s->Watch(Gpu(0), nullptr, GpuActivitySet().set(), &why);
  ASSERT_GE(slot, 0) << why;
  EXPECT_EQ(IntervalUs(1002), DcgmSource::kWatchIntervalUs);
  GpuActivity v;
  SetTimeMs(50);
  EXPECT_EQ(s->Read(slot, 0, v, &why), GpuActivitySource::ReadStatus::kTooSoon);  // no value yet
  SetTimeMs(120);
  ASSERT_EQ(s->Read(slot, 0, v, &why), GpuActivitySource::ReadStatus::kValues) << why;
  EXPECT_DOUBLE_EQ(v[Slot(MetricId::kGpuSmActive)], 42);  // ratio -> %
  EXPECT_DOUBLE_EQ(v[Slot(MetricId::kGpuDramActive)], 55);
  EXPECT_DOUBLE_EQ(v[Slot(MetricId::kGpuPcieRx)], 2500000);  // bytes/s as they are
  EXPECT_DOUBLE_EQ(v[Slot(MetricId::kGpuNvlinkTx)], 7);
  EXPECT_TRUE(std::isnan(v[Slot(MetricId::kGpuNvlinkRx)]));  // unsupported: no value, never 0
  SetTimeMs(150);                                            // the same DCGM window
  EXPECT_EQ(s->Read(slot, 0, v, &why), GpuActivitySource::ReadStatus::kTooSoon);
  SetTimeMs(210);
  EXPECT_EQ(s->Read(slot, 0, v, &why), GpuActivitySource::ReadStatus::kValues);
}

TEST_F(DcgmSourceTest, OtherUsersWatchesAreSpedUpNeverStopped) {
  std::string why;
  auto s = Open(std::string("other_watch field=1002 entity=0 interval_us=1000000\n") + kA100, &why);
  ASSERT_NE(s, nullptr) << why;
  EXPECT_EQ(IntervalUs(1002), 1000000);
  ASSERT_GE(s->Watch(Gpu(0), nullptr, GpuActivitySet().set(), &why), 0) << why;
  EXPECT_EQ(Watchers(1002), 2);
  EXPECT_EQ(IntervalUs(1002), DcgmSource::kWatchIntervalUs);
  s.reset();  // footprint is done
  EXPECT_EQ(Watchers(1002), 1);
  EXPECT_EQ(IntervalUs(1002), 1000000);
}

TEST_F(DcgmSourceTest, MigDevicesAreTheirGpuInstances) {
  std::string why;
  auto s = Open(R"(
gpu sm_active=0.9
gpu_i gpu=0 gi=1 sm_active=0.25
gpu_i gpu=0 gi=2 sm_active=0.35
)",
                &why);
  ASSERT_NE(s, nullptr) << why;
  GpuEntity mig = Gpu(0);
  mig.entity = "gpu:0/mig:1";
  mig.mig_index = 1;
  mig.gpu_instance_id = 2;
  const int slot = s->Watch(mig, nullptr, GpuActivitySet().set(), &why);
  ASSERT_GE(slot, 0) << why;
  SetTimeMs(100);
  GpuActivity v;
  ASSERT_EQ(s->Read(slot, 0, v, &why), GpuActivitySource::ReadStatus::kValues) << why;
  EXPECT_DOUBLE_EQ(v[Slot(MetricId::kGpuSmActive)], 35);
  mig.gpu_instance_id = 7;
  EXPECT_EQ(s->Watch(mig, nullptr, GpuActivitySet().set(), &why), -1);
  EXPECT_EQ(why, "DCGM lists no GPU instance for gpu:0/mig:1");
}

// DCGM is opened only when GPM leaves a metric unserved: no connection on a Hopper GPU.
TEST_F(DcgmSourceTest, LaterSourcesAreOpenedOnlyForWhatTheEarlierOnesLack) {
  testing::FakeNvmlScript nvml_script("gpu uuid=GPU-0000 gpm=1\ngpu uuid=GPU-1111 gpm=0\n");
  auto lib = nvml::Library::Open(testing::FakeNvmlPath("full"));
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto inventory = ListGpus(**lib);
  ASSERT_TRUE(inventory.ok());
  int opened = 0;
  GpuActivitySources sources;
  sources.list.push_back(std::make_unique<GpmSource>(*lib));
  sources.pending.push_back([&](std::string* why) -> std::unique_ptr<GpuActivitySource> {
    ++opened;
    *why = "DCGM: not here";
    return nullptr;
  });
  GpuCapabilities caps;
  std::array<int, kGpuActivityCount> chosen;
  ChooseActivitySources(sources, (*inventory)[0], nullptr, caps, chosen);  // an H100: GPM
  EXPECT_EQ(opened, 0);
  EXPECT_EQ(chosen[0], 0);
  ChooseActivitySources(sources, (*inventory)[1], nullptr, caps, chosen);  // no GPM: DCGM?
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(chosen[0], -1);
  EXPECT_NE(caps[kFirstGpuActivitySlot].why.find("DCGM: not here"), std::string::npos)
      << caps[kFirstGpuActivitySlot].why;
  ChooseActivitySources(sources, (*inventory)[1], nullptr, caps, chosen);
  EXPECT_EQ(opened, 1);  // tried once
}

// The GPU probe with both sources: GPM serves what it has (an H100 without NVLink metrics here),
// DCGM the rest, and meta says which served each.
TEST_F(DcgmSourceTest, GpuProbeTakesEachMetricFromTheFirstSourceThatHasIt) {
  std::string why;
  auto dcgm = Open("gpu sm_active=0.5 nvlink_tx=4096 nvlink_rx=8192\n", &why);
  ASSERT_NE(dcgm, nullptr) << why;
  testing::FakeNvmlScript nvml_script(
      "clock manual\ngpu uuid=GPU-0000 util=90 gpm=1 sm_active=80 "
      "gpm_unsupported=nvlink_tx,nvlink_rx\n");
  const std::string nvml_path = testing::FakeNvmlPath("full");
  auto lib = nvml::Library::Open(nvml_path);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  GpuProbe::Options options{*lib, nullptr, std::nullopt, "", {}};
  options.activity.list.push_back(std::make_unique<GpmSource>(*lib));
  options.activity.list.push_back(std::move(dcgm));
  GpuProbe probe(std::move(options));
  MetricSet wanted;
  for (MetricId m : {MetricId::kGpuSmActive, MetricId::kGpuNvlinkTx, MetricId::kGpuNvlinkRx}) {
    wanted.set(static_cast<size_t>(m));
  }
  std::vector<SeriesSpec> specs = probe.Series(wanted);
  ASSERT_EQ(specs.size(), 3u);
  struct Out final : SampleOut {
    std::map<int, double> last;
    void Add(int series, double value) override { last[series] = value; }
  } out;
  const int64_t t0 = MonotonicNs();
  for (int ms = 0; ms <= 300; ms += 50) {
    testing::SetFakeNvmlTimeMs(nvml_path, ms);
    SetTimeMs(ms);
    probe.Sample(t0 + int64_t{ms} * kNsPerMs, wanted, out);
  }
  std::map<std::string, double> by_metric;
  for (const auto& [series, value] : out.last) {
    by_metric[std::string(InfoOf(specs[static_cast<size_t>(series)].metric).name)] = value;
  }
  EXPECT_DOUBLE_EQ(by_metric["gpu.sm_active"], 80);    // GPM's, not DCGM's 50
  EXPECT_DOUBLE_EQ(by_metric["gpu.nvlink.tx"], 4096);  // DCGM's
  EXPECT_DOUBLE_EQ(by_metric["gpu.nvlink.rx"], 8192);
  const json activity = probe.Meta()["devices"]["gpu:0"]["activity"];
  EXPECT_EQ(activity["gpu.sm_active"], "NVML GPM, metric SM_UTIL");
  EXPECT_EQ(activity["gpu.nvlink.tx"],
            "DCGM field 1011 (NVLINK_TX_BYTES), host engine at 127.0.0.1, watched every 100 ms");
}

}  // namespace
}  // namespace footprint
