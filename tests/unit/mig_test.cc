// MIG profiles (footprint/mig.h): the tables' shape and the smallest profile that fits.
#include "footprint/mig.h"

#include <gtest/gtest.h>

#include <string>

namespace footprint {
namespace {

TEST(MigGpus, EachTableGrowsAndFillsTheGpu) {
  ASSERT_EQ(MigGpus().size(), 4u);
  for (const MigGpu& gpu : MigGpus()) {
    const MigProfile* last = nullptr;
    for (const MigProfile& p : gpu.profiles) {
      if (last) {  // ordered by compute slices, then memory
        EXPECT_TRUE(
            p.compute_slices > last->compute_slices ||
            (p.compute_slices == last->compute_slices && p.memory_eighths > last->memory_eighths))
            << gpu.name << " " << p.name;
      }
      EXPECT_LE(p.compute_slices * p.instances, 7) << p.name;
      EXPECT_LE(p.memory_eighths * p.instances, 8) << p.name;
      // The name says the memory, rounded: "3g.20gb" on a 40 GB GPU is 4/8 of it.
      const std::string name(p.name);
      const double named_gb = std::stod(name.substr(name.find('.') + 1));
      EXPECT_NEAR(named_gb, gpu.profile_gib(p), 1.0) << gpu.name << " " << p.name;
      last = &p;
    }
    EXPECT_EQ(gpu.profiles.back().compute_slices, 7);
    EXPECT_EQ(gpu.profiles.back().memory_eighths, 8);
  }
}

TEST(FindMigGpu, TakesNvmlNames) {
  EXPECT_EQ(FindMigGpu("NVIDIA A100-SXM4-40GB")->name, "A100-40GB");
  EXPECT_EQ(FindMigGpu("NVIDIA A100 80GB PCIe")->name, "A100-80GB");
  EXPECT_EQ(FindMigGpu("NVIDIA H100 80GB HBM3")->name, "H100-80GB");
  EXPECT_EQ(FindMigGpu("NVIDIA H200")->name, "H200-141GB");
  EXPECT_EQ(FindMigGpu("H100-80GB")->name, "H100-80GB");
  EXPECT_EQ(FindMigGpu("NVIDIA H100 NVL"), nullptr);  // 94 GB: tables of its own
  EXPECT_EQ(FindMigGpu("NVIDIA GeForce RTX 4090"), nullptr);
}

TEST(SmallestFittingProfile, TheFewestSlicesThatHoldThePeakAndItsMargin) {
  const MigGpu& a100 = *FindMigGpu("A100-40GB");
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_EQ(SmallestFittingProfile(a100, 4.5 * gib)->name, "1g.5gb");   // 4.95 GiB with 10 %
  EXPECT_EQ(SmallestFittingProfile(a100, 4.6 * gib)->name, "1g.10gb");  // 5.06 GiB
  EXPECT_EQ(SmallestFittingProfile(a100, 7.1 * gib)->name, "1g.10gb");
  EXPECT_EQ(SmallestFittingProfile(a100, 9.5 * gib)->name, "3g.20gb");  // 10.45: past 10 GiB
  EXPECT_EQ(SmallestFittingProfile(a100, 36 * gib)->name, "7g.40gb");
  EXPECT_FALSE(SmallestFittingProfile(a100, 37 * gib));
  EXPECT_EQ(SmallestFittingProfile(a100, 37 * gib, 0.0)->name, "7g.40gb");
}

}  // namespace
}  // namespace footprint
