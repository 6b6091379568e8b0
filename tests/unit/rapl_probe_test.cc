// The RAPL probe against fake powercap trees (this machine has no RAPL): domain discovery and
// de-duplication, wrap-around, unreadable counters, and the warning when there is nothing.
#include "probe/rapl_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_env.h"
#include "footprint/api.h"
#include "probe_test_util.h"
#include "test_util.h"

namespace footprint {
namespace {

using json = nlohmann::json;
using testing::Findings;
using testing::RecordingOut;
using testing::TempDir;

// A fake sysfs root with powercap zones: zone -> (name, energy_uj, max_energy_range_uj).
class FakePowercap {
 public:
  std::string root() const { return dir_.path(); }
  std::string Zone(const std::string& zone) const {
    return dir_.path() + "/class/powercap/" + zone;
  }
  void Add(const std::string& zone, const std::string& name, uint64_t energy_uj,
           uint64_t max_uj = 1'000'000) {
    std::filesystem::create_directories(Zone(zone));
    Write(zone, "name", name + "\n");
    Write(zone, "max_energy_range_uj", std::to_string(max_uj) + "\n");
    SetEnergy(zone, energy_uj);
  }
  // Rewrites the file in place, as the kernel's counter changes under an open descriptor.
  void SetEnergy(const std::string& zone, uint64_t uj) {
    Write(zone, "energy_uj", std::to_string(uj) + "\n");
  }
  void Write(const std::string& zone, const std::string& file, const std::string& text) {
    std::ofstream(Zone(zone) + "/" + file, std::ios::trunc) << text;
  }

 private:
  TempDir dir_;
};

MetricSet Energy() {
  MetricSet m;
  m.set(static_cast<size_t>(MetricId::kEnergyCpu));
  m.set(static_cast<size_t>(MetricId::kEnergyDram));
  return m;
}

TEST(WrappedDelta, ForwardAndAcrossTheWrap) {
  EXPECT_EQ(WrappedDelta(100, 250, 1000), 150u);
  EXPECT_EQ(WrappedDelta(100, 100, 1000), 0u);
  EXPECT_EQ(WrappedDelta(900, 50, 1000), 150u);  // 100 to the wrap, 50 after it
  EXPECT_EQ(WrappedDelta(1000, 0, 1000), 0u);
}

TEST(DiscoverRapl, CountsPackagesAndDramOnceAndListsTheRest) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 10);
  fake.Add("intel-rapl:0:0", "core", 10);
  fake.Add("intel-rapl:0:1", "uncore", 10);
  fake.Add("intel-rapl:0:2", "dram", 10);
  fake.Add("intel-rapl:1", "package-1", 10);
  fake.Add("intel-rapl:1:0", "dram", 10);
  fake.Add("intel-rapl:2", "psys", 10);
  fake.Add("intel-rapl-mmio:0", "package-0", 10);  // the same package through MMIO
  std::filesystem::create_directories(fake.root() + "/class/powercap/intel-rapl");  // no zone
  RaplDiscovery d = DiscoverRapl(fake.root());
  EXPECT_TRUE(d.why_unavailable.empty()) << d.why_unavailable;
  std::map<std::string, const RaplDomain*> by_zone;
  for (const RaplDomain& dom : d.domains) by_zone[dom.zone] = &dom;
  ASSERT_EQ(by_zone.size(), 8u);
  auto counted = [&](const char* zone) { return by_zone.at(zone)->counted; };
  EXPECT_TRUE(counted("intel-rapl:0"));
  EXPECT_TRUE(counted("intel-rapl:1"));
  EXPECT_TRUE(counted("intel-rapl:0:2"));
  EXPECT_TRUE(counted("intel-rapl:1:0"));  // a second socket's DRAM is not a duplicate
  EXPECT_FALSE(counted("intel-rapl:0:0"));
  EXPECT_FALSE(counted("intel-rapl:0:1"));
  EXPECT_FALSE(counted("intel-rapl:2"));
  EXPECT_FALSE(counted("intel-rapl-mmio:0"));
  EXPECT_EQ(by_zone.at("intel-rapl:0:2")->kind, RaplDomain::Kind::kDram);
  EXPECT_EQ(by_zone.at("intel-rapl:1")->kind, RaplDomain::Kind::kPackage);
  EXPECT_EQ(by_zone.at("intel-rapl:0")->max_range_uj, 1'000'000u);
  for (const RaplDomain& dom : d.domains) EXPECT_TRUE(dom.unreadable.empty()) << dom.zone;
}

TEST(DiscoverRapl, MmioZoneCountsWhenItIsTheOnlyInterface) {
  FakePowercap fake;
  fake.Add("intel-rapl-mmio:0", "package-0", 10);
  RaplDiscovery d = DiscoverRapl(fake.root());
  ASSERT_EQ(d.domains.size(), 1u);
  EXPECT_TRUE(d.domains[0].counted);
}

TEST(DiscoverRapl, NoPowercapSaysWhyAndHow) {
  TempDir empty;
  RaplDiscovery d = DiscoverRapl(empty.path());
  EXPECT_TRUE(d.domains.empty());
  EXPECT_NE(d.why_unavailable.find("no RAPL domains"), std::string::npos) << d.why_unavailable;
  EXPECT_NE(d.why_unavailable.find(empty.path() + "/class/powercap"), std::string::npos);
  EXPECT_NE(d.why_unavailable.find("modprobe intel_rapl_msr"), std::string::npos);

  std::filesystem::create_directories(empty.path() + "/class/powercap");
  d = DiscoverRapl(empty.path());
  EXPECT_NE(d.why_unavailable.find("no RAPL domains under"), std::string::npos);
}

TEST(RaplProbe, SumsPackagesAcrossAWrapAndReportsTotals) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 990'000, 1'000'000);
  fake.Add("intel-rapl:0:0", "core", 5);
  fake.Add("intel-rapl:0:1", "dram", 100);
  fake.Add("intel-rapl:1", "package-1", 2'000'000, 50'000'000);
  fake.Add("intel-rapl-mmio:0", "package-0", 990'000);

  RaplProbe probe(fake.root());
  std::vector<SeriesSpec> specs = probe.Series(Energy());
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].metric, MetricId::kEnergyCpu);
  EXPECT_EQ(specs[0].entity, "system");
  EXPECT_EQ(specs[1].metric, MetricId::kEnergyDram);

  RecordingOut out;
  probe.Sample(0, Energy(), out);  // the run's start: nothing yet
  EXPECT_DOUBLE_EQ(out.values.at(0), 0.0);
  EXPECT_DOUBLE_EQ(out.values.at(1), 0.0);

  fake.SetEnergy("intel-rapl:0", 999'000);    // +9 000 uJ
  fake.SetEnergy("intel-rapl:1", 3'000'000);  // +1 000 000 uJ
  fake.SetEnergy("intel-rapl:0:1", 600);      // +500 uJ
  fake.SetEnergy("intel-rapl:0:0", 900'000);  // a part of package-0: never added
  probe.Sample(1, Energy(), out);
  EXPECT_DOUBLE_EQ(out.values.at(0), 1.009);
  EXPECT_DOUBLE_EQ(out.values.at(1), 0.0005);

  fake.SetEnergy("intel-rapl:0", 4'000);  // wrapped: 1 000 to the top, then 4 000
  probe.Sample(2, Energy(), out);
  EXPECT_DOUBLE_EQ(out.values.at(0), 1.014);

  fake.SetEnergy("intel-rapl:1", 3'500'000);  // after the last sample: Finish reads it
  auto [totals, meta, warnings] = Findings::Of(probe);
  EXPECT_DOUBLE_EQ(totals.at("cpu_energy_j"), 1.514);
  EXPECT_DOUBLE_EQ(totals.at("dram_energy_j"), 0.0005);
  EXPECT_TRUE(warnings.empty());
  ASSERT_TRUE(meta.contains("rapl"));
  std::map<std::string, json> domains;
  for (const json& d : meta["rapl"]["domains"]) domains[d["zone"]] = d;
  EXPECT_EQ(domains["intel-rapl:0"]["wraps"], 1);
  EXPECT_EQ(domains["intel-rapl:0"]["counted_in"], "energy.cpu");
  EXPECT_EQ(domains["intel-rapl:0:1"]["counted_in"], "energy.dram");
  EXPECT_TRUE(domains["intel-rapl:0:0"]["counted_in"].is_null());
  EXPECT_TRUE(domains["intel-rapl-mmio:0"]["counted_in"].is_null());
  EXPECT_NE(domains["intel-rapl-mmio:0"]["why_not_counted"].get<std::string>().find("duplicate"),
            std::string::npos);
}

TEST(RaplProbe, NothingAskedNothingDone) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 1);
  RaplProbe probe(fake.root());
  MetricSet other;
  other.set(static_cast<size_t>(MetricId::kCpu));
  EXPECT_TRUE(probe.Series(other).empty());
  auto [totals, meta, warnings] = Findings::Of(probe);
  EXPECT_TRUE(totals.empty());
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(meta.contains("rapl"));
}

TEST(RaplProbe, AskedForButAbsentWarnsOnceAndStoresNoZero) {
  TempDir empty;
  RaplProbe probe(empty.path());
  EXPECT_TRUE(probe.Series(Energy()).empty());
  auto [totals, meta, warnings] = Findings::Of(probe);
  EXPECT_FALSE(totals.count("cpu_energy_j"));  // unknown, never 0
  EXPECT_FALSE(totals.count("dram_energy_j"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(warnings[0].starts_with("energy.cpu, energy.dram: no RAPL domains")) << warnings[0];
  EXPECT_NE(warnings[0].find("footprint doctor explains"), std::string::npos);
  EXPECT_EQ(meta["rapl"]["unavailable"]["energy.cpu"].get<std::string>().find("no RAPL"), 0u);
}

TEST(RaplProbe, PackageWithoutDramWarnsForDramOnly) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 1);
  RaplProbe probe(fake.root());
  ASSERT_EQ(probe.Series(Energy()).size(), 1u);
  RecordingOut out;
  probe.Sample(0, Energy(), out);
  auto [totals, meta, warnings] = Findings::Of(probe);
  EXPECT_DOUBLE_EQ(totals.at("cpu_energy_j"), 0.0);  // measured: nothing was used
  EXPECT_FALSE(totals.count("dram_energy_j"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(warnings[0].starts_with("energy.dram: no RAPL DRAM domain")) << warnings[0];
}

TEST(RaplProbe, UnreadableCounterSaysRootOnlyAndHowToAllowIt) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 1);
  ::chmod(fake.Zone("intel-rapl:0").c_str(), 0755);
  ::chmod((fake.Zone("intel-rapl:0") + "/energy_uj").c_str(), 0400);
  for (std::string dir = fake.Zone("intel-rapl:0"); dir.size() > fake.root().size();) {
    dir = dir.substr(0, dir.rfind('/'));
    ::chmod(dir.c_str(), 0755);
  }
  // As the kernel does for energy_uj since 5.10: readable by root only. Root reads anything,
  // so the discovery runs in a child that gave root up.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) _exit(3);
    RaplDiscovery d = DiscoverRapl(fake.root());
    std::string why = d.domains.empty() ? "no domain" : d.domains[0].unreadable;
    (void)!::write(pipe_fds[1], why.data(), why.size());
    _exit(0);
  }
  ::close(pipe_fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) why.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(why.find("readable by root only"), std::string::npos) << why;
  EXPECT_NE(why.find("CVE-2020-8694"), std::string::npos) << why;
  EXPECT_NE(why.find("chmod a+r"), std::string::npos) << why;
}

TEST(RaplProbe, CounterThatCannotBeReadIsNotUsed) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 1);
  std::filesystem::remove(fake.Zone("intel-rapl:0") + "/energy_uj");
  std::filesystem::create_directory(fake.Zone("intel-rapl:0") + "/energy_uj");  // EISDIR
  RaplProbe probe(fake.root());
  EXPECT_TRUE(probe.Series(Energy()).empty());
  auto [totals, meta, warnings] = Findings::Of(probe);
  EXPECT_FALSE(totals.count("cpu_energy_j"));
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("energy_uj cannot be read"), std::string::npos) << warnings[0];
}

TEST(RaplProbe, ProgramsMeasuringThemselvesGetEnergyWhenTheyAskForIt) {
  FakePowercap fake;
  fake.Add("intel-rapl:0", "package-0", 1'000);
  FakeEnv env;
  env.real_clock = true;
  env.sys_root = fake.root();
  TempDir dir;
  BenchmarkOptions o;
  o.env = &env;
  o.db = dir.File("fp.db");
  o.join = false;
  o.interval_ns = 10'000'000;
  o.metrics = DefaultMetrics() | Energy();
  auto bm = Benchmark::Open(o);
  ASSERT_TRUE(bm.ok()) << bm.status().message();
  const std::string run_id = (*bm)->run_id();
  // The first pass reads the energy baseline; a sample of that pass in the database says it
  // happened, however busy the machine.
  auto first_pass_stored = [&] {
    if (!(*bm)->Flush().ok()) return false;
    auto reader = OpenStore(dir.File("fp.db"), {.read_only = true});
    if (!reader.ok()) return false;
    auto series = (*reader)->ListSeries(run_id);
    size_t samples = 0;
    for (const SeriesRecord& s : series.ok() ? *series : std::vector<SeriesRecord>{}) {
      (void)(*reader)->ScanSamples(s.id, [&](int64_t, double) { ++samples; });
    }
    return samples > 0;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!first_pass_stored() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fake.SetEnergy("intel-rapl:0", 251'000);
  ASSERT_TRUE((*bm)->Close().ok());
  auto store = OpenStore(dir.File("fp.db"), {.read_only = true});
  ASSERT_TRUE(store.ok());
  auto totals = (*store)->LoadTotals(run_id);
  ASSERT_TRUE(totals.ok());
  EXPECT_DOUBLE_EQ(totals->at("cpu_energy_j"), 0.25);
  EXPECT_FALSE(totals->count("dram_energy_j"));
  auto run = (*store)->GetRun(run_id);
  auto meta = json::parse(run->meta_json);
  ASSERT_EQ(meta["warnings"].size(), 1u);  // DRAM was asked for too, and this fake has none
  EXPECT_TRUE(meta["warnings"][0].get<std::string>().starts_with("energy.dram: "));
}

}  // namespace
}  // namespace footprint
